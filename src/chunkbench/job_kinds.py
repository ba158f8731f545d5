"""The job kinds chunkbench runs in the background, registered with ``jobs.execution`` by every process that runs jobs
(the API at start, ``chunkbench worker``). A kind's payload is JSON, so a worker on another machine re-plans it from
the database: the same validation the API did, on the state it finds (a document deleted meanwhile is a 404 on the
job). The work itself is the domain's one function (``indexing.processing.run``, ``indexing.corpus_job.run``,
``benchmarking.runner.execute``), the same one ``?wait=true`` and the CLI call.
"""

from __future__ import annotations

from typing import Any

from chunkbench.benchmarking import experiments, runner
from chunkbench.benchmarking.model import Experiment
from chunkbench.chunking.base import registry_fingerprint
from chunkbench.config import Settings
from chunkbench.errors import InvalidRequestError, JobCancelledError
from chunkbench.indexing import corpus_job, processing
from chunkbench.indexing.schemas import CorpusProcessOut, ProcessIn
from chunkbench.jobs.execution import (
    FanOut,
    JobCall,
    JobKind,
    JobTaskFailedError,
    Progress,
    StopCheck,
    Task,
    TaskOutcome,
    elapsed_ms,
    register_kind,
    set_registry_fingerprint,
)
from chunkbench.models import StrategyName
from chunkbench.storage.db import Database
from chunkbench.storage.vectors import get_vector_store


def _settings(call: JobCall) -> Settings:
    assert call.settings is not None  # the API's and the worker's runners always carry them
    return call.settings


def process_document(call: JobCall, progress: Progress, stop: StopCheck) -> dict[str, Any]:
    settings = _settings(call)
    out = processing.process(
        call.database, settings, get_vector_store(settings), call.payload["document_id"],
        ProcessIn(**call.payload["body"]), tenant_id=call.tenant_id, progress=progress, stop=stop,
    )  # fmt: skip
    return out.model_dump(mode="json")


def _corpus_plan(call: JobCall) -> corpus_job.CorpusPlan:
    with call.database.session() as session:
        return corpus_job.plan(
            session, _settings(call), call.payload["corpus"], ProcessIn(**call.payload["body"]),
            tenant_id=call.tenant_id,
        )  # fmt: skip


def process_corpus(call: JobCall, progress: Progress, stop: StopCheck) -> FanOut:
    """A corpus job's first task: the plan, then one task per batch of documents × strategy (any worker runs each;
    the strategies of one batch take turns, as each claims the batch's documents) and a closing task."""
    plan = _corpus_plan(call)
    total = len(plan.document_ids)
    if stop():
        raise JobCancelledError(
            f"Cancelled after 0 of {total} documents (0 chunks indexed); nothing changed. Process the corpus again "
            "to do them.",
            documents_done=0,
            documents_total=total,
        )
    size = _settings(call).corpus_task_documents
    batches = [plan.document_ids[i : i + size] for i in range(0, total, size)]
    pinned = {"corpus_model_id": plan.request.corpus.id, "boundary_model_id": _boundary_id(plan)}
    tasks = [
        Task(
            name="batch",
            args={"documents": list(batch), "strategy": name.value, **pinned},
            label=f"{_span(number, size, len(batch), total)} · {name.value}",
            group=name.value,
            size=len(batch),
            lock=f"batch-{number}",
        )
        for number, batch in enumerate(batches)
        for name, _ in plan.request.strategies
    ]
    progress(0.0, f"{total} documents × {len(plan.request.strategies)} strategies: {len(tasks)} tasks")
    return FanOut(tasks)


def _boundary_id(plan: corpus_job.CorpusPlan) -> str | None:
    return plan.request.boundary.id if plan.request.boundary else None


def _span(number: int, size: int, count: int, total: int) -> str:
    first = number * size + 1
    return f"documents {first}–{first + count - 1} of {total}"


def corpus_batch(call: JobCall, args: dict[str, Any], progress: Progress, stop: StopCheck) -> dict[str, Any]:
    """One batch of a corpus job with one strategy: ``corpus_job.run`` on that part of the plan (re-made here from
    the database, with the models the first task chose: a corpus whose languages changed meanwhile is refused)."""
    plan = _corpus_plan(call)
    if (plan.request.corpus.id, _boundary_id(plan)) != (args["corpus_model_id"], args["boundary_model_id"]):
        raise InvalidRequestError(
            f"The corpus '{plan.corpus_name}' changed while it was being processed: its models would now be "
            f"{plan.request.corpus.id} (not {args['corpus_model_id']}). Process the corpus again.",
            corpus=plan.corpus_name,
        )
    part = corpus_job.narrowed(plan, args["documents"], StrategyName(args["strategy"]))
    settings = _settings(call)
    out = corpus_job.run(
        call.database, settings, get_vector_store(settings), part, progress, stop, counts_in_message=False
    )
    return {"out": out.model_dump(mode="json"), "units": out.documents, "chunks": out.chunks}


def corpus_close(call: JobCall, outcomes: list[TaskOutcome]) -> dict[str, Any]:
    """The job's result from its tasks' results; or the task that failed (for good: a domain error, or an unexpected
    one on every attempt), named; or how far a Cancel let it get."""
    plan = _corpus_plan(call)
    if failed := [o for o in outcomes if o.status == "failed"]:
        error = failed[0].error or {}
        raise JobTaskFailedError(
            f"{failed[0].label} failed: {error.get('message', 'no message')} The other batches are kept; process the "
            "corpus again once the cause is fixed (the finished documents are skipped).",
            task=failed[0].label,
            cause=error.get("error"),
            attempts=error.get("attempts", 1),
        )
    if any(o.status != "succeeded" for o in outcomes):
        total, done = len(plan.document_ids), _documents_done(outcomes)
        chunks = sum(
            int((o.result or {}).get("chunks", 0))
            if o.status == "succeeded"
            else int(_details(o).get("chunks_indexed", 0))
            for o in outcomes
        )
        raise JobCancelledError(
            f"Cancelled after {done} of {total} documents ({chunks} chunks indexed); the finished documents are kept. "
            f"Process the corpus again to do the other {total - done}: the finished ones are skipped.",
            documents_done=done,
            documents_total=total,
        )
    parts = [CorpusProcessOut.model_validate(o.result["out"]) for o in outcomes if o.result]
    return corpus_job.merged(plan, parts, elapsed_ms(call)).model_dump(mode="json")


def _details(outcome: TaskOutcome) -> dict[str, Any]:
    """What a cancelled task's JobCancelledError said of how far it got."""
    return (outcome.error or {}).get("details") or {}


def _documents_done(outcomes: list[TaskOutcome]) -> int:
    """Documents every strategy finished: per batch, the fewest any of its strategies' tasks finished."""
    per_batch: dict[tuple[str, ...], int] = {}
    for outcome in outcomes:
        batch = tuple(outcome.args["documents"])
        if outcome.status == "succeeded":
            units = int((outcome.result or {}).get("units", len(batch)))
        else:  # cancelled: how far its own run got
            units = int(_details(outcome).get("documents_done", 0))
        per_batch[batch] = min(per_batch.get(batch, units), units)
    return sum(per_batch.values())


def benchmark(call: JobCall, progress: Progress, stop: StopCheck) -> dict[str, Any] | FanOut:
    """A benchmark's first task: the run begins and its cells left are shared out, ``benchmark_task_cells`` per
    task, then a closing task aggregates and decides. A pruned run (successive halving decides each rung from the
    last) runs whole, in this one task."""
    settings = _settings(call)
    experiment_id = call.payload["experiment_id"]
    with call.database.session() as session:
        row = experiments.get(session, experiment_id, tenant_id=call.tenant_id)
        pruned = Experiment.from_row(row).config.prune is not None
    if pruned or stop():
        row = runner.execute(
            call.database, settings, get_vector_store(settings), experiment_id,
            tenant_id=call.tenant_id, progress=progress, stop=stop,
        )  # fmt: skip
        return {"experiment_id": row.id}
    _, todo = runner.begin(call.database, experiment_id, tenant_id=call.tenant_id)
    size = settings.benchmark_task_cells
    batches = [todo[i : i + size] for i in range(0, len(todo), size)]
    return FanOut([
        Task(name="cells", args={"cells": [list(cell) for cell in batch]},
             label=f"cells {n * size + 1}–{n * size + len(batch)} of {len(todo)}", group="cells", size=len(batch))
        for n, batch in enumerate(batches)
    ])  # fmt: skip


def benchmark_cells(call: JobCall, args: dict[str, Any], progress: Progress, stop: StopCheck) -> dict[str, Any]:
    settings = _settings(call)
    written = runner.run_some(
        call.database, settings, get_vector_store(settings), call.payload["experiment_id"],
        [tuple(cell) for cell in args["cells"]], tenant_id=call.tenant_id, progress=progress, stop=stop,
    )  # fmt: skip
    return {"units": len(args["cells"]), "written": written}


def benchmark_close(call: JobCall, outcomes: list[TaskOutcome]) -> dict[str, Any]:
    failed = next((o for o in outcomes if o.status == "failed"), None)
    failure = None
    if failed is not None:
        error = failed.error or {}
        failure = JobTaskFailedError(
            f"{failed.label} failed: {error.get('message', 'no message')} The cells written are kept: resume the "
            "Experiment once the cause is fixed.",
            task=failed.label,
            cause=error.get("error"),
        )
    row = runner.close(call.database, _settings(call), call.payload["experiment_id"], tenant_id=call.tenant_id,
                       failure=failure)  # fmt: skip
    return {"experiment_id": row.id}


def recover_worker(database: Database, settings: Settings, token: str) -> None:
    """What a worker known to be gone had claimed: its documents mid-processing are failed and their partial points
    removed (``indexing.processing.fail_interrupted``), so the retried task claims and processes them again."""
    processing.fail_interrupted(database, settings, owner_token=token)


def register_all() -> None:
    set_registry_fingerprint(registry_fingerprint)
    register_kind(processing.JOB_KIND, process_document)
    register_kind(corpus_job.JOB_KIND, JobKind(process_corpus, {"batch": corpus_batch}, corpus_close))
    register_kind(runner.JOB_KIND, JobKind(benchmark, {"cells": benchmark_cells}, benchmark_close))
