"""Chunk sizes that fit the Corpus model (issue 23): size defaults follow what the model reads whole, and a size
beyond it is flagged when the request is planned, before any chunk is made."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy.orm import Session

from chunkbench.chunking.base import StrategyParams, readable_sizes, size_defaults, strategy_class, validate_params
from chunkbench.embedding import roles
from chunkbench.embedding.registry import EmbeddingModelSpec, get_spec
from chunkbench.embedding.roles import EmbeddingRole
from chunkbench.errors import ChunkingError
from chunkbench.models import StrategyName


@dataclass(frozen=True)
class SizeWarning:
    """A strategy's size parameter larger than what the Corpus model reads whole: accepted, with this warning."""

    strategy: str
    param: str
    value: int
    readable: int  # the largest value of ``param`` the model still reads whole
    model_id: str
    window_tokens: int | None  # the model's window in its own tokens
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "beyond_window", **asdict(self)}


def size_warning(strategy: str, param: str, value: int, readable: int, spec: EmbeddingModelSpec) -> SizeWarning:
    """The warning for ``strategy``'s ``param`` = ``value`` over ``readable`` on the Corpus model ``spec``."""
    window = f"its window is {spec.max_input_tokens} of its own tokens" if spec.max_input_tokens else "its window"
    message = (
        f"{strategy}: {param}={value} is beyond what {spec.id} reads whole ({window}: {param} up to {readable} "
        f"cl100k tokens of English prose); most of these chunks would be embedded from their beginning only. Use "
        f"{param}={readable} or less (the default for this model), or a Corpus model with a larger window."
    )
    return SizeWarning(strategy, param, value, readable, spec.id, spec.max_input_tokens, message)


def fit_to_model(
    strategies: tuple[tuple[StrategyName, StrategyParams], ...],
    given: Mapping[StrategyName, set[str]],
    spec: EmbeddingModelSpec,
) -> tuple[tuple[tuple[StrategyName, StrategyParams], ...], tuple[SizeWarning, ...]]:
    """``strategies`` with each size parameter not in ``given`` (the request's, Settings' or a variant's) set to the
    Corpus model's default, and a warning per size still beyond what the model reads whole."""
    fitted: list[tuple[StrategyName, StrategyParams]] = []
    warnings: list[SizeWarning] = []
    for name, params in strategies:
        defaults = {k: v for k, v in size_defaults(name, spec.readable_chunk_tokens).items() if k not in given[name]}
        if defaults and any(getattr(params, key) != value for key, value in defaults.items()):
            try:
                params = validate_params(name, {**params.model_dump(), **defaults})
            except ChunkingError as exc:
                chosen = ", ".join(f"{key}={value}" for key, value in defaults.items())
                raise ChunkingError(
                    f"{exc} ({chosen} is the default for the Corpus model {spec.id}: give it explicitly to use "
                    "another value.)"
                ) from exc
        fitted.append((name, params))
        for param, readable in readable_sizes(name, spec.readable_chunk_tokens).items():
            value = getattr(params, param)
            if value > readable:
                warnings.append(size_warning(name.value, param, value, readable, spec))
    return tuple(fitted), tuple(warnings)


def given_sizes(name: StrategyName, request_params: Mapping[str, Any], settings_params: Mapping[str, Any]) -> set[str]:
    """The size parameters of ``name`` chosen by someone (the request, Settings, a variant's pin): kept as given."""
    cls = strategy_class(name)
    pinned = set(cls.variant.params) if cls.variant is not None else set()
    return (set(request_params) | set(settings_params) | pinned) & set(cls.size_params)


def model_sizes(name: StrategyName | str, spec: EmbeddingModelSpec) -> dict[str, dict[str, int]]:
    """What ``GET /strategies`` and ``chunkbench strategies`` show for one Corpus model: each size parameter's
    default and the largest value the model reads whole (empty for a model that reads any size)."""
    return {
        "size_defaults": size_defaults(name, spec.readable_chunk_tokens),
        "readable_sizes": readable_sizes(name, spec.readable_chunk_tokens),
    }


def corpus_spec(session: Session, corpus_model_id: str | None) -> EmbeddingModelSpec:
    """The Corpus model sizes are shown for: the one named (an unknown id is a 400 listing the known ones), else
    the Admin Corpus role's."""
    return get_spec(corpus_model_id or roles.get_role_model_id(session, EmbeddingRole.CORPUS))
