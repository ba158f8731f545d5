"""The Python API, for notebooks: ``Workspace`` → ``ingest`` → ``process`` → ``benchmark`` → an ``Experiment``.

    from chunkbench import Workspace

    ws = Workspace("./bench-data")                  # a data folder (SQLite inside), or a database URL
    ws.ingest("docs/", corpus="handbook")
    ws.process(corpus="handbook", strategies=["fixed_size", "recursive"])
    ws.add_questions("questions.json")
    experiment = ws.benchmark(corpus="handbook", question_set="questions.json", retrievers=["dense", "hybrid"])
    experiment.decision.verdict                     # the sentence every face shows first
    experiment.table()                              # a pandas DataFrame, one row per configuration
    experiment.report("report.html")

A face like the CLI and the API (docs/architecture.md): each method builds the request the CLI builds and calls the
same service functions, so a notebook and ``chunkbench bench run`` give the same Experiment. Work runs here, in this
process, to the end (as the CLI runs it); errors are chunkbench's typed errors (``ChunkbenchError``: a ``code``, an
HTTP ``status_code`` and a message saying what to do).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from chunkbench.config import Settings
from chunkbench.errors import InvalidRequestError
from chunkbench.storage.schema import DEFAULT_TENANT

if TYPE_CHECKING:
    import pandas

    from chunkbench.benchmarking.schemas import DecisionOut
    from chunkbench.documents.schemas import IngestOut
    from chunkbench.indexing.schemas import CorpusProcessOut, ProcessOut
    from chunkbench.progress import Progress
    from chunkbench.storage.db import Database
    from chunkbench.storage.vectors import VectorStore

# The metrics an Experiment's table shows beside the primary one, as ``chunkbench bench show`` does.
TABLE_METRICS = ("recall", "precision", "iou", "mrr", "ndcg_at_k", "token_f1", "answer_similarity", "tok_at_k")


class Workspace:
    """A chunkbench data folder, or a metadata database given by URL (``postgresql+psycopg://…``, ``sqlite:///…``),
    with the vector store its settings name (Qdrant Edge under the data folder by default, or ``qdrant_url``).

    ``settings`` overrides (any ``Settings`` field: ``embedding_device``, ``qdrant_url``, …) go as keyword
    arguments; what is not given comes from the ``CHUNKBENCH_*`` environment as for the CLI."""

    def __init__(self, location: str | Path | None = None, *, tenant_id: str = DEFAULT_TENANT, **settings: Any):
        from chunkbench.extensions import load_extensions
        from chunkbench.recovery import recover_dead_owners
        from chunkbench.storage.db import Database

        if location is not None:
            text = str(location)
            key = "database_url" if "://" in text else "data_dir"
            settings.setdefault(key, text if key == "database_url" else Path(text).expanduser())
        self.settings = Settings(**settings)
        self.tenant_id = tenant_id
        load_extensions(self.settings)
        self.settings.data_dir.mkdir(parents=True, exist_ok=True)
        self.database: Database = Database.from_settings(self.settings)
        recover_dead_owners(self.database, self.settings)  # what a killed earlier run left, as every command does
        self._store: VectorStore | None = None

    @property
    def store(self) -> VectorStore:
        from chunkbench.storage.vectors import get_vector_store

        if self._store is None:
            self._store = get_vector_store(self.settings)
        return self._store

    def ingest(self, *paths: str | Path, corpus: str | None = None, verbatim: bool = False) -> list[IngestOut]:
        """Parse files and folders (searched recursively) into documents, each file on its own, as ``chunkbench
        ingest`` does; every file ingested joins ``corpus`` (made if missing). A refused file is in the results
        with its ``error``; nothing raises for it."""
        from chunkbench.documents.discovery import discover_files
        from chunkbench.documents.ingest import ingest_paths
        from chunkbench.documents.schemas import IngestOut

        found = list(discover_files([Path(p) for p in paths], self.settings))
        ingesting = ingest_paths(
            self.database, self.settings, found, tenant_id=self.tenant_id, corpus=corpus, verbatim=verbatim
        )
        return [IngestOut.of(result) for result in ingesting]

    def process(
        self,
        document: str | None = None,
        *,
        corpus: str | None = None,
        strategies: Iterable[str] | None = None,
        params: dict[str, dict[str, Any]] | None = None,
        corpus_model: str | None = None,
        boundary_model: str | None = None,
        allow_language_mismatch: bool = False,
        progress: Progress | None = None,
    ) -> ProcessOut | CorpusProcessOut:
        """Chunk, embed and index one document (id or file name) or every document of ``corpus`` with
        ``strategies`` (default: all but variants), as ``chunkbench process`` does; returns its result."""
        from chunkbench.chunking.base import default_strategies
        from chunkbench.documents.library import resolve
        from chunkbench.indexing import corpus_job, processing
        from chunkbench.indexing.schemas import ProcessIn
        from chunkbench.progress import no_progress

        if (document is None) == (corpus is None):
            raise InvalidRequestError("Give a document or corpus= (exactly one of them) to process.")
        request = ProcessIn(
            strategies=list(strategies) if strategies is not None else default_strategies(),
            corpus_model_id=corpus_model, boundary_model_id=boundary_model, params=params or {},
            allow_language_mismatch=allow_language_mismatch,
        )  # fmt: skip
        report = progress or no_progress  # a notebook shows the result
        if corpus is not None:
            return corpus_job.process(
                self.database, self.settings, self.store, corpus, request, tenant_id=self.tenant_id, progress=report
            )
        with self.database.session() as session:
            document_id = resolve(session, document or "", tenant_id=self.tenant_id).id
        return processing.process(
            self.database, self.settings, self.store, document_id, request, tenant_id=self.tenant_id, progress=report
        )

    def add_questions(self, path: str | Path, *, name: str | None = None, overwrite: bool = False) -> str:
        """Store a question file (question JSON, JSON lines or Chroma CSV) in the database, validated as an upload is,
        as ``chunkbench questions add`` does; returns the name a benchmark's ``question_set`` takes."""
        from chunkbench.evaluation import question_sets

        file = Path(path)
        with self.database.session() as session:
            info, _replaced = question_sets.save_question_file(
                session, self.settings, name or file.name, file.read_bytes(), overwrite=overwrite, limit_size=False,
                tenant_id=self.tenant_id,
            )  # fmt: skip
        return info.name

    def benchmark(
        self,
        document: str | None = None,
        *,
        corpus: str | None = None,
        question_set: str | None = None,
        questions: str | Path | list[dict[str, Any]] | None = None,
        progress: Progress | None = None,
        **fields: Any,
    ) -> Experiment:
        """Benchmark a document's or a corpus's strategies on a question set and run it to the end, as ``chunkbench
        bench run`` does: an ``Experiment`` with its Decision. ``questions`` is a question file or a list of
        questions; ``question_set`` a stored file's name; any other ``BenchmarkIn`` field (``strategies``,
        ``retrievers``, ``top_k``, ``primary_metric``, ``budget``, ``seed``, …) goes by keyword."""
        from chunkbench.benchmarking import benchmarks
        from chunkbench.benchmarking.schemas import BenchmarkIn
        from chunkbench.documents.library import resolve
        from chunkbench.evaluation.questions import load_question_set

        inline = questions
        if isinstance(questions, str | Path):  # a file in any format the question-set loader reads, as the CLI's
            inline = [question.to_dict() for question in load_question_set(Path(questions))]
        document_id = None
        if document is not None:
            with self.database.session() as session:
                document_id = resolve(session, document, tenant_id=self.tenant_id).id
        request = BenchmarkIn(
            document_id=document_id, corpus=corpus, question_set=question_set, questions=inline, **fields
        )
        row = benchmarks.run(
            self.database, self.settings, self.store, request, tenant_id=self.tenant_id, progress=progress
        )
        return self.experiment(row.id)

    def experiment(self, experiment_id: str) -> Experiment:
        """A stored Experiment by id (``chunkbench bench show``)."""
        from chunkbench.benchmarking import benchmarks

        with self.database.session() as session:
            data = benchmarks.experiment_dict(session, benchmarks.get(session, experiment_id, tenant_id=self.tenant_id))
        return Experiment(self, data)

    def close(self) -> None:
        self.database.dispose()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


class Experiment:
    """A benchmark's Experiment: ``data`` is what ``GET /benchmarks/{id}`` returns; ``decision`` its Decision."""

    def __init__(self, workspace: Workspace, data: dict[str, Any]) -> None:
        self._workspace = workspace
        self.data = data

    @property
    def id(self) -> str:
        return str(self.data["id"])

    @property
    def status(self) -> str:
        return str(self.data["status"])

    @property
    def decision(self) -> DecisionOut | None:
        """The Decision on the primary metric once the Experiment completed (None before)."""
        from chunkbench.benchmarking.schemas import DecisionOut

        decision = self.data.get("decision")
        return DecisionOut.model_validate(decision) if decision else None

    @property
    def verdict(self) -> str:
        """The sentence to read first, as every face words it (also when there is no Decision yet, and why)."""
        from chunkbench.benchmarking.report.prose import decision_sentence

        return decision_sentence(self.data)

    def table(self) -> pandas.DataFrame:
        """One row per configuration, best first as the Decision ranks them: each metric's mean (the primary one
        with its 95% interval), median latency, and P(best). Needs pandas (the ``notebook`` extra)."""
        try:
            import pandas
        except ImportError as exc:  # pragma: no cover - pandas ships with the dev and arena extras
            raise ImportError("Experiment.table() needs pandas: pip install 'chunkbench[notebook]'") from exc
        primary = self.data["config"]["primary_metric"]
        decision = self.data.get("decision") or {}
        prob_best = decision.get("prob_best", {})
        rows = []
        for key, aggregate in (self.data.get("aggregate") or {}).items():
            metrics = aggregate["metrics"]
            main = metrics.get(primary, {})
            row: dict[str, Any] = {"configuration": key, primary: main.get("mean")}
            row |= {f"{primary}_ci_low": main.get("ci_low"), f"{primary}_ci_high": main.get("ci_high")}
            row |= {name: metrics[name]["mean"] for name in TABLE_METRICS if name != primary and name in metrics}
            row |= {"latency_ms_p50": aggregate.get("latency_ms_p50"), "p_best": prob_best.get(key)}
            rows.append(row)
        # Ties broken by the configuration key, so the same Experiment always gives the same table.
        rows.sort(key=lambda r: (-(r[primary] if r[primary] is not None else float("-inf")), r["configuration"]))
        return pandas.DataFrame(rows).set_index("configuration")

    def report(
        self,
        path: str | Path,
        *,
        view: Literal["managerial", "technical", "json"] = "managerial",
        budget: int | None = None,
    ) -> Path:
        """Write the self-contained HTML report (``view``: managerial or technical) or the JSON export (``json``), as
        ``chunkbench report`` does; returns the path."""
        from chunkbench.benchmarking import benchmarks

        if view not in ("managerial", "technical", "json"):
            raise InvalidRequestError(f"view must be managerial, technical or json, not {view!r}.", view=view)
        workspace = self._workspace
        with workspace.database.session() as session:
            store = workspace.store if view == "technical" else None
            text = benchmarks.report(
                session, store, self.id, view=view, budget=budget, tenant_id=workspace.tenant_id,
            )  # fmt: skip
        target = Path(path)
        target.write_text(text, encoding="utf-8")
        return target

    def __repr__(self) -> str:
        return f"<Experiment {self.id} {self.status}: {self.verdict}>"
