"""The chunking contract: the Chunk, the ChunkingStrategy interface, its registry, and shared helpers.

Adding a strategy is one file under ``strategies/`` with a ``@register_strategy`` class (docs/architecture.md).
"""

from __future__ import annotations

import bisect
import hashlib
import inspect
import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from chunkbench.errors import ChunkingError
from chunkbench.models import DocumentTree, NodeType, StrategyName, TreeNode
from chunkbench.text.tokens import get_tokenizer


@dataclass
class Chunk:
    """A retrievable unit (docs/strategies.md) that knows exactly where it came from.

    ``markdown[start_index:end_index] == text`` always; ``enriched_content`` (contextual retrieval) is
    what gets embedded instead of ``text`` when set.
    """

    chunk_id: str
    document_id: str
    document_name: str
    strategy_name: StrategyName
    chunk_index: int
    text: str
    start_index: int
    end_index: int
    token_count: int
    character_count: int
    heading_path: list[str] = field(default_factory=list)
    parent_id: str | None = None
    enriched_content: str | None = None
    # What must be read before ``text`` to understand it, not part of its span: a table part's header rows. The
    # answerer is shown it above the text (the query pipeline reads the payload's ``context_header``).
    context_header: str | None = None
    # Parents of ``semantic_parent_child`` are stored for context, never searched directly.
    is_parent: bool = False
    # The prompt-injection verdict taken at processing time (None = not checked): stored in the point payload.
    injection_risk: float | None = None
    injection_reasons: tuple[str, ...] = ()

    @property
    def embedding_text(self) -> str:
        return self.enriched_content if self.enriched_content is not None else self.text


@dataclass(frozen=True)
class ChunkingInput:
    """What a strategy reads: the document's markdown and tree (offsets point into the markdown)."""

    document_id: str
    document_name: str
    markdown: str
    tree: DocumentTree
    title: str | None = None
    # The programming language of a code document (``documents.code_language``); None for prose.
    code_language: str | None = None


class BoundaryEmbedder(Protocol):
    """The Boundary model as the semantic strategies see it."""

    # Read-only (properties): a frozen dataclass implements them as well as a plain attribute does.
    @property
    def model_id(self) -> str: ...

    @property
    def threshold(self) -> float: ...

    def embed(self, texts: list[str]) -> np.ndarray:
        """One L2-normalised row per text."""
        ...


class ContextPrefixer(Protocol):
    """Writes the context prefix of each chunk for contextual retrieval."""

    mode: str  # "llm" or "deterministic": stored with the run

    def prefixes(self, document: ChunkingInput, chunks: list[Chunk]) -> list[str]: ...


# What a chunk with a context prefix is embedded as: the prefix, a blank line, then the chunk's own text.
_CONTEXT_SEPARATOR = "\n\n"


def with_context(prefix: str, text: str) -> str:
    """The text a chunk is embedded as behind ``prefix`` (the text alone when the prefix is blank)."""
    prefix = prefix.strip()
    return f"{prefix}{_CONTEXT_SEPARATOR}{text}" if prefix else text


def context_prefix(text: str, enriched_content: str | None) -> str | None:
    """The prefix :func:`with_context` put before ``text`` in ``enriched_content``; None when nothing was put there
    (no enrichment, a blank prefix, or an enrichment of another shape)."""
    if enriched_content is None or enriched_content == text:
        return None
    suffix = f"{_CONTEXT_SEPARATOR}{text}"
    if not enriched_content.endswith(suffix):
        return None
    return enriched_content[: -len(suffix)] or None


class StrategyParams(BaseModel):
    """Base of every strategy's parameters: unknown keys are an error, not silently ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True)
class Variant:
    """A strategy variant as declared (``chunking/variants.py``): its name, its base strategy, the pinned params."""

    name: str
    base: str
    params: Mapping[str, Any]

    def describe(self) -> str:
        return ", ".join(f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in self.params.items())


class ChunkingStrategy(ABC):
    """One way of cutting a document into chunks."""

    name: ClassVar[StrategyName]
    description: ClassVar[str]
    params_model: ClassVar[type[StrategyParams]]
    needs_boundary: ClassVar[bool] = False
    # Capabilities: what the query pipeline, the benchmark and the reports may do with the chunks; the core reads
    # these instead of testing a strategy's name, so a plugin strategy states its own.
    #   expands_neighbours: its chunks are contiguous windows, so Neighbor Expansion (docs/retrieval.md) applies.
    #   has_parents: it writes parent chunks, shown as context under the children that were hit.
    expands_neighbours: ClassVar[bool] = False
    has_parents: ClassVar[bool] = False
    # Parameters whose default is a Settings field (docs/configuration.md), as {parameter: Settings field name}.
    settings_defaults: ClassVar[dict[str, str]] = {}
    # The size parameters of the chunks the Corpus model embeds, as {parameter: cl100k tokens embedded with the chunk
    # beyond it (a context prefix)}: their default follows what the Corpus model reads whole (issue 23).
    size_params: ClassVar[dict[str, int]] = {}
    # Set on a variant's class only: a variant is never in a default strategy list, it is named explicitly.
    variant: ClassVar[Variant | None] = None
    # Whether "all strategies" includes it: a variant or a library's strategy (chunking/library_strategies.py) is named
    # explicitly.
    in_default_set: ClassVar[bool] = True

    def __init__(
        self,
        params: StrategyParams | None = None,
        *,
        boundary: BoundaryEmbedder | None = None,
        prefixer: ContextPrefixer | None = None,
    ) -> None:
        self.params = params if params is not None else self.params_model()
        self.boundary = boundary
        self.prefixer = prefixer
        if self.needs_boundary and boundary is None:
            # A semantic strategy never falls back to fixed cuts silently.
            raise ChunkingError(
                f"The '{self.name.value}' strategy needs Boundary model embeddings, and none were given. "
                "Configure a Boundary model (GET /admin/embedding-models) and retry."
            )

    @classmethod
    def check_available(cls) -> None:
        """Raise a 400 naming what to install when the strategy cannot run here (a library strategy's extra)."""
        return None

    @abstractmethod
    def chunk(self, document: ChunkingInput) -> list[Chunk]:
        """Cut the document; chunks come back in document order with their offsets."""

    def run_details(self) -> dict[str, Any]:
        """What the last ``chunk()`` decided beyond its parameters (threshold used, prefix mode…)."""
        return {}


_STRATEGIES: dict[StrategyName, type[ChunkingStrategy]] = {}


def register_strategy(cls: type[ChunkingStrategy]) -> type[ChunkingStrategy]:
    """Class decorator: make a strategy available by its name (a new name joins :class:`StrategyName`)."""
    cls.name = StrategyName.add(cls.name)
    _STRATEGIES[cls.name] = cls
    return cls


def load_strategies() -> None:
    """The built-in strategies, then those of installed packages (the ``chunkbench.strategies`` entry points)."""
    import chunkbench.chunking.strategies  # noqa: F401  (registers the built-in strategies)
    from chunkbench.chunking import entry_points

    entry_points.load()


def registered(name: str) -> type[ChunkingStrategy] | None:
    """The class registered under ``name`` right now (no loading), or None."""
    try:
        return _STRATEGIES.get(StrategyName(name))
    except ValueError:
        return None


def check_strategy(cls: Any) -> None:
    """What every registered strategy must be, whoever registers it (a plugin file, an entry point): a concrete
    :class:`ChunkingStrategy` with a string ``name``, a ``description`` and a :class:`StrategyParams` model."""
    import inspect

    from chunkbench.errors import PluginError

    if not (inspect.isclass(cls) and issubclass(cls, ChunkingStrategy)):
        raise PluginError(f"register_strategy needs a ChunkingStrategy subclass; got {cls!r}.")
    if inspect.isabstract(cls):
        missing = ", ".join(sorted(cls.__abstractmethods__))
        raise PluginError(f"Strategy {cls.__name__} does not implement {missing}.")
    name = getattr(cls, "name", None)
    if not isinstance(name, str):
        raise PluginError(f"Strategy {cls.__name__} has no string 'name'.")
    if not (isinstance(getattr(cls, "params_model", None), type) and issubclass(cls.params_model, StrategyParams)):
        raise PluginError(f"Strategy '{name}' needs 'params_model', a StrategyParams subclass.")
    if not isinstance(getattr(cls, "description", None), str):
        raise PluginError(f"Strategy '{name}' needs a 'description' string.")


def strategy_class(name: StrategyName | str) -> type[ChunkingStrategy]:
    load_strategies()
    try:
        return _STRATEGIES[StrategyName(name)]
    except (ValueError, KeyError) as exc:
        raise ChunkingError(f"Unknown strategy '{name}'. Known: {', '.join(s.value for s in StrategyName)}.") from exc


@dataclass(frozen=True)
class StrategyCapabilities:
    """A strategy's capabilities by name, readable for names no longer registered (a removed plugin's history)."""

    expands_neighbours: bool = False
    has_parents: bool = False


def capabilities(name: StrategyName | str) -> StrategyCapabilities:
    """The capabilities of the strategy called ``name``; none for a name that is not registered."""
    try:
        cls = strategy_class(name)
    except ChunkingError:
        return StrategyCapabilities()
    return StrategyCapabilities(cls.expands_neighbours, cls.has_parents)


def defaults_from_settings(name: StrategyName | str, settings: Any) -> dict[str, Any]:
    """The parameter defaults of ``name`` that come from ``settings`` (``ChunkingStrategy.settings_defaults``)."""
    # A Settings field left None (chunk_size) is no default: the strategy's own, or the Corpus model's, applies.
    values = {param: getattr(settings, field) for param, field in strategy_class(name).settings_defaults.items()}
    return {param: value for param, value in values.items() if value is not None}


def size_defaults(name: StrategyName | str, readable_tokens: int | None) -> dict[str, int]:
    """The defaults of ``name``'s size parameters for a Corpus model that reads ``readable_tokens`` cl100k tokens
    whole: the parameter's own default, or less where the model would not read it whole; none when the model reads
    any size (``readable_tokens`` None) and none for a size a variant pins."""
    if readable_tokens is None:
        return {}
    cls = strategy_class(name)
    pinned = cls.variant.params if cls.variant is not None else {}
    defaults: dict[str, int] = {}
    for param, extra in cls.size_params.items():
        if param in pinned:
            continue
        field = cls.params_model.model_fields[param]
        lowest = next((int(m.ge) for m in field.metadata if getattr(m, "ge", None) is not None), 1)
        defaults[param] = max(lowest, min(int(field.default), readable_tokens - extra))
    return defaults


def readable_sizes(name: StrategyName | str, readable_tokens: int | None) -> dict[str, int]:
    """The largest value of each of ``name``'s size parameters whose chunks a model reading ``readable_tokens``
    cl100k tokens whole still reads whole; none when it reads any size."""
    if readable_tokens is None:
        return {}
    return {param: readable_tokens - extra for param, extra in strategy_class(name).size_params.items()}


def all_strategies() -> list[type[ChunkingStrategy]]:
    load_strategies()
    return [_STRATEGIES[name] for name in StrategyName if name in _STRATEGIES]


def registry_fingerprint() -> str:
    """The strategy registry as a fingerprint, equal in two processes exactly when they would cut the same chunks:
    each strategy's name, class, source file's content hash and variant parameters (built-ins, installed packages,
    plugins and variants alike). A job records the API's; a worker with another one refuses the job."""
    parts = []
    for cls in all_strategies():
        source = inspect.getsourcefile(cls) or ""
        digest = hashlib.sha256(Path(source).read_bytes()).hexdigest()[:16] if source and Path(source).is_file() else ""
        variant = json.dumps(cls.variant.params, sort_keys=True, default=str) if cls.variant is not None else ""
        parts.append(f"{cls.name}|{cls.__module__}.{cls.__qualname__}|{digest}|{variant}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


def default_strategies() -> list[StrategyName]:
    """What "all strategies" means (processing's default, ``--strategies all``): chunkbench's own, not the variants
    and not the library strategies (each is named explicitly, as its library is an optional extra)."""
    return [cls.name for cls in all_strategies() if cls.in_default_set]


def validate_params(name: StrategyName | str, params: dict[str, Any] | None) -> StrategyParams:
    """A strategy's parameters from a plain dict, with a message that names every bad field."""
    cls = strategy_class(name)
    cls.check_available()
    try:
        return cls.params_model(**(params or {}))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc']) or 'params'}: {error['msg']}" for error in exc.errors()
        )
        raise ChunkingError(f"Invalid parameters for '{cls.name.value}': {problems}.") from exc


def chunk_id(strategy: StrategyName, document_id: str, index: int, *, parent: bool = False) -> str:
    """``{strategy}_{safe_doc}_{index:06d}`` (docs/strategies.md), with the document id as ``safe_doc``.

    The id, not the filename: filenames repeat across tenants and survive a replacement, and the
    point id in Qdrant is ``uuid5`` of this string, so it must be unique.
    """
    return f"{strategy.value}_{document_id}_{'p' if parent else ''}{index:06d}"


class HeadingIndex:
    """Answers "which headings is this offset under?" from the tree's node offsets."""

    def __init__(self, tree: DocumentTree) -> None:
        self._root = tree.root
        # Per node: its section children and their starts, listed once (a root can hold thousands of
        # paragraphs, and every chunk asks).
        self._sections: dict[int, tuple[list[TreeNode], list[int]]] = {}

    def _sections_of(self, node: TreeNode) -> tuple[list[TreeNode], list[int]]:
        cached = self._sections.get(id(node))
        if cached is None:
            sections = [c for c in node.children if c.node_type in (NodeType.SECTION, NodeType.ARTICLE)]
            cached = self._sections[id(node)] = (sections, [s.start_index for s in sections])
        return cached

    def path_at(self, offset: int) -> list[str]:
        """Heading texts from the outermost section to the innermost one containing ``offset``."""
        path: list[str] = []
        node = self._root
        while True:
            sections, starts = self._sections_of(node)
            position = bisect.bisect_right(starts, offset) - 1
            if position < 0 or offset >= sections[position].end_index:
                return path
            node = sections[position]
            path.append(node.heading or "")


class ChunkFactory:
    """Builds chunks of one document for one strategy: ids, indices, offsets, token counts, headings."""

    def __init__(self, strategy: StrategyName, document: ChunkingInput) -> None:
        self.strategy = strategy
        self.document = document
        self.headings = HeadingIndex(document.tree)
        self._tokenizer = get_tokenizer()

    def make(
        self,
        index: int,
        start: int,
        end: int,
        *,
        parent_id: str | None = None,
        is_parent: bool = False,
        token_count: int | None = None,
    ) -> Chunk:
        """One chunk of ``markdown[start:end]``; ``token_count`` skips the recount when the caller has it."""
        text = self.document.markdown[start:end]
        return Chunk(
            chunk_id=chunk_id(self.strategy, self.document.document_id, index, parent=is_parent),
            document_id=self.document.document_id,
            document_name=self.document.document_name,
            strategy_name=self.strategy,
            chunk_index=index,
            text=text,
            start_index=start,
            end_index=end,
            token_count=self._tokenizer.count(text) if token_count is None else token_count,
            character_count=len(text),
            heading_path=self.headings.path_at(start),
            parent_id=parent_id,
            is_parent=is_parent,
        )
