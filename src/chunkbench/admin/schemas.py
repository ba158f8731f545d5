"""API models of the admin domain."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from chunkbench.models import StrategyName


class ModelRoleIn(BaseModel):
    model_id: str = Field(min_length=1)


class ThresholdIn(BaseModel):
    threshold: float = Field(gt=0, le=1, description="Semantic cut threshold in (0, 1]")


class CollectionIn(BaseModel):
    strategy: StrategyName
    model_id: str = Field(min_length=1)


class CollectionOut(BaseModel):
    name: str
    points: int
    dimension: int | None = None
    strategy: str | None = Field(None, description="None for collections chunkbench did not create")
    model: str | None = Field(None, description="Sanitised model id from the collection name")


class ComponentHealthOut(BaseModel):
    """One part of the system as the health check found it."""

    status: str = Field(description="ok | error; for the LLM: not_configured | reachable | unreachable")
    ok: bool = Field(description="False when the part is failing (an unconfigured LLM is fine)")
    detail: str = Field(description="What was checked, or the error")


class AdminHealthOut(BaseModel):
    """Health of the app, the database, Qdrant and the LLM (docs/api.md ``GET /admin/health``)."""

    status: str = Field(description="ok when every part is ok, else degraded")
    version: str
    app: ComponentHealthOut
    database: ComponentHealthOut
    qdrant: ComponentHealthOut
    llm: ComponentHealthOut
    scope: Literal["deployment", "tenant"] = Field(
        "deployment", description="Whose figures these are: every tenant's (the operator) or the caller's tenant's"
    )
    collections: int | None = Field(
        None, description="Qdrant collections, when Qdrant answered (a tenant admin: those holding its points)"
    )
    points: int | None = Field(None, description="Points in them (a tenant admin: its own), when Qdrant answered")


class WhoAmIOut(BaseModel):
    """The caller's key (``GET /admin/me``): what the dashboard's Admin tab shows and hides."""

    tenant_id: str
    role: Literal["operator", "admin"] = Field(
        description="operator: the whole deployment; admin: its own tenant's configuration and points"
    )
    scopes: list[str]
    key_id: str | None = Field(None, description="None with authentication off (the local user is the operator)")


class CapabilityOut(BaseModel):
    """Whether an option can work on this server now, and why not (naming the setting that enables it)."""

    available: bool
    detail: str = Field(description="What it uses, or why it cannot run and what to set")
    setting: str | None = Field(None, description="The setting that enables it, when one does")


class CapabilitiesOut(BaseModel):
    """What the forms may offer (``GET /admin/capabilities``): rerankers, the LLM-as-judge and the LLM itself."""

    llm: CapabilityOut
    judge: CapabilityOut
    rerankers: dict[str, CapabilityOut] = Field(description="Per rerank value of the query and benchmark APIs")


class EmbeddingCacheOut(BaseModel):
    """The data directory's embedding cache file: entries per model, bytes used and its bound."""

    path: str
    entries: int
    bytes: int
    max_bytes: int
    models: dict[str, int]
    enabled: bool = True


class EmbeddingCacheClearedOut(BaseModel):
    removed: int
    model_id: str | None = None


class TaskPrefixesOut(BaseModel):
    document: str
    query: str


class EmbeddingModelOut(BaseModel):
    """A registered embedding model (``EmbeddingModelSpec``) with its roles, effective threshold and availability."""

    id: str
    provider: str = Field(description="local, openai, ollama or plugin")
    model_name: str
    display_name: str
    dimension: int
    batch_size: int
    task_prefixes: TaskPrefixesOut | None
    max_input_tokens: int | None = Field(None, description="The input window in the model's tokens (None: unknown)")
    languages: list[str] | None = Field(None, description="Language codes the model covers (None: not declared)")
    languages_label: str = Field("not declared", description="The same in words: English, 93 languages, …")
    default_semantic_threshold: float
    semantic_threshold: float = Field(description="The override when one is set, else the default")
    threshold_overridden: bool
    is_corpus_default: bool
    is_boundary_default: bool
    available: bool | None = Field(description="None: a remote server, not probed")
    availability_note: str


class EmbeddingModelsOut(BaseModel):
    """The model registry with the Corpus and Boundary role defaults (``GET /admin/embedding-models``)."""

    corpus_model_id: str
    boundary_model_id: str
    models: list[EmbeddingModelOut]
