"""Library strategies (chunking/library_strategies.py): a library's pieces mapped back to exact markdown spans,
whatever the library did to their text, and a library that is not installed answered with the command that
installs it."""

from __future__ import annotations

from typing import ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkbench.chunking.base import ChunkingInput, StrategyParams, register_strategy, validate_params
from chunkbench.chunking.library_strategies import LibraryStrategy, Piece, listing, locate
from chunkbench.errors import ChunkingError, MissingExtraError
from chunkbench.models import DocumentTree, NodeType, TreeNode
from chunkbench.plugins import isolated_registries

MARKDOWN = "# Leave\n\nEvery employee receives 25 days.\n\n| day | hours |\n|---|---|\n| Mon | 8 |\n\nThe end.\n"


def _document(markdown: str) -> ChunkingInput:
    root = TreeNode(node_type=NodeType.DOCUMENT, start_index=0, end_index=len(markdown), children=[])
    return ChunkingInput("d1", "handbook.md", markdown, DocumentTree(root=root))


def test_verbatim_pieces_are_found_where_they_are_and_overlaps_keep_their_order():
    text = "alpha beta gamma alpha beta delta"
    pieces = [Piece("alpha beta"), Piece("beta gamma alpha"), Piece("alpha beta delta")]
    spans, differed = locate(text, pieces, strategy="s")
    assert spans == [(0, 10), (6, 22), (17, 33)]
    assert [text[a:b] for a, b in spans] == [p.text for p in pieces]
    assert differed == 0


def test_a_reported_start_is_used_when_the_text_is_there_and_ignored_when_it_is_not():
    text = "one two one two"
    assert locate(text, [Piece("one two", start=8)], strategy="s") == ([(8, 15)], 0)
    # A start in bytes (or wrong): the text is looked for instead.
    assert locate(text, [Piece("two", start=2)], strategy="s") == ([(4, 7)], 0)


def test_rewritten_whitespace_becomes_the_span_that_covers_the_text_and_is_counted():
    pieces = [Piece("Every employee   receives\n25 days."), Piece("| day | hours |")]
    spans, differed = locate(MARKDOWN, pieces, strategy="s")
    assert MARKDOWN[slice(*spans[0])] == "Every employee receives 25 days."
    assert MARKDOWN[slice(*spans[1])] == "| day | hours |"
    assert differed == 1


def test_a_piece_whose_characters_were_rewritten_is_anchored_on_its_first_and_last_lines():
    # A splitter that drops the heading's '#' and serialises the table's row.
    pieces = [Piece("Leave\nEvery employee receives 25 days."), Piece("day = Mon, hours = 8\nThe end.")]
    spans, differed = locate(MARKDOWN, pieces, strategy="s")
    assert MARKDOWN[slice(*spans[0])] == "Leave\n\nEvery employee receives 25 days."
    assert MARKDOWN[slice(*spans[1])].endswith("The end.")
    assert differed == 2


def test_text_that_is_nowhere_in_the_document_is_an_error_naming_the_chunk():
    with pytest.raises(ChunkingError) as raised:
        locate(MARKDOWN, [Piece("Every employee"), Piece("Completely unrelated words")], strategy="acme")
    assert raised.value.message == (
        "The 'acme' strategy returned a chunk (number 2, 'Completely unrelated words') whose text is not in the "
        "document; it cannot be given exact offsets."
    )


def test_a_piece_respaced_is_found_where_it_stands_not_at_a_later_verbatim_copy():
    # Hypothesis found it: "tea cup" stands verbatim only at 12, but the library cut it from 0 ("tea\tcup"), so the
    # next piece, "cup tea cup", was looked for after 12 and was not found.
    markdown = "tea\tcup cup tea cup\n"
    spans, differed = locate(markdown, [Piece("tea cup"), Piece("cup tea cup")], strategy="s")
    assert spans == [(0, 7), (8, 19)] and differed == 1
    # Other words that spell the same characters are not the piece: "the rapist" is not "therapist".
    spans, differed = locate("the rapist; therapist", [Piece("therapist")], strategy="s")
    assert spans == [(12, 21)] and differed == 0


@settings(max_examples=60, deadline=None)
@given(
    words=st.lists(st.sampled_from(["tea", "cup", "milk", "sugar", "|", "#", "-"]), min_size=5, max_size=60),
    spaces=st.lists(st.sampled_from([" ", "  ", "\n", "\n\n", "\t"]), min_size=60, max_size=60),
    cuts=st.lists(st.integers(min_value=1, max_value=8), min_size=1, max_size=12),
)
def test_any_whitespace_rewriting_of_any_cut_maps_back_to_spans_holding_the_same_words(words, spaces, cuts):
    markdown = "".join(w + s for w, s in zip(words, spaces, strict=False))
    # The library's pieces: consecutive runs of words, joined with single spaces (its own whitespace).
    pieces, at = [], 0
    for size in cuts:
        if at >= len(words):
            break
        pieces.append(Piece(" ".join(words[at : at + size])))
        at += size
    spans, _ = locate(markdown, pieces, strategy="s")
    assert [markdown[a:b].split() for a, b in spans] == [p.text.split() for p in pieces]
    assert all(a < b for a, b in spans) and [a for a, _ in spans] == sorted(a for a, _ in spans)


class _Params(StrategyParams):
    pass


class _NotInstalled(LibraryStrategy):
    name = "acme_lines"
    description = "Lines (from a library that is not installed here)."
    params_model = _Params
    library = "acme-splitters"
    extra = "acme"
    # A dotted name under a package that is missing: find_spec raises rather than answering None.
    modules: ClassVar[tuple[str, ...]] = ("acme_splitters_not_installed.text",)

    def split(self, document):  # pragma: no cover - never reached: the library is missing
        raise AssertionError


class _Installed(_NotInstalled):
    name = "acme_words"
    library = "numpy"
    modules: ClassVar[tuple[str, ...]] = ("numpy",)

    def split(self, document):
        return [Piece(line) for line in document.markdown.splitlines() if line.strip()]


def test_a_library_that_is_not_installed_is_listed_with_its_install_command_and_refused_with_it():
    with isolated_registries():
        register_strategy(_NotInstalled)
        assert listing(_NotInstalled) == {
            "library": "acme-splitters",
            "library_version": None,
            "available": False,
            "install": "pip install 'chunkbench[acme]'",
        }
        with pytest.raises(MissingExtraError) as raised:
            validate_params("acme_lines", {})
    assert raised.value.status_code == 400
    assert raised.value.message == (
        "The 'acme_lines' strategy runs acme-splitters, which is not installed. "
        "Install it with: pip install 'chunkbench[acme]'"
    )


def test_an_installed_library_strategy_chunks_exactly_and_records_its_library():
    with isolated_registries():
        register_strategy(_Installed)
        strategy = _Installed()
        chunks = strategy.chunk(_document(MARKDOWN))
    assert [c.text for c in chunks] == [line for line in MARKDOWN.splitlines() if line.strip()]
    assert all(MARKDOWN[c.start_index : c.end_index] == c.text for c in chunks)
    details = strategy.run_details()
    assert details["library"] == "numpy" and details["library_version"] and details["text_differed"] == 0
    assert not _Installed.in_default_set
