"""What a corpus job did so far: per strategy and document, the outcomes (processed, skipped, failed), the stage
timings, the totals, and the progress it reports.

Separate from ``indexing.corpus_job`` (the plan and the run) because every step of the run writes to it and none
of it needs the plan: it counts, times and reports, and hands the strategies' outcomes to the job's result.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from chunkbench.errors import ChunkbenchError
from chunkbench.indexing.pipeline import STAGES
from chunkbench.indexing.schemas import CorpusDocumentOutcome, CorpusStrategyOut, StrategyOutcome
from chunkbench.models import StrategyName
from chunkbench.progress import Progress


class Tally:
    """What the job did so far: per strategy and document, totals, and the progress it reports."""

    def __init__(
        self, names: list[StrategyName], total: int, progress: Progress, counts_in_message: bool = True
    ) -> None:
        self.counts_in_message = counts_in_message
        self.names = names
        self.total = total
        self.filenames: dict[str, str] = {}
        self.outcomes: dict[StrategyName, list[CorpusDocumentOutcome]] = {name: [] for name in self.names}
        self.timings: dict[StrategyName, dict[str, float]] = {name: dict.fromkeys(STAGES, 0.0) for name in self.names}
        self.done = 0
        self.chunks = 0
        self._progress = progress

    def add(self, name: StrategyName, document_id: str, status: str, chunk_count: int = 0, **error: Any) -> None:
        filename = self.filenames.get(document_id)
        outcome = CorpusDocumentOutcome(
            document_id=document_id, filename=filename, status=status, chunk_count=chunk_count, **error
        )
        self.outcomes[name].append(outcome)
        if status == "processed":
            self.chunks += chunk_count

    def add_outcome(self, document_id: str, outcome: StrategyOutcome) -> None:
        if outcome.status == "completed":
            self.add(outcome.strategy, document_id, "processed", outcome.chunk_count)
        else:
            self.add(outcome.strategy, document_id, "failed", error=outcome.error, message=outcome.message)

    def add_failure(self, names: Iterable[StrategyName], document_id: str, exc: ChunkbenchError) -> None:
        for name in names:
            self.add(name, document_id, "failed", error=exc.code, message=exc.message)

    def report(self, stage: str, documents_done: int = 0, *, in_flight: float = 0.0) -> None:
        """Progress: the documents finished, plus ``in_flight`` documents' worth of the batch in hand (cut, and the
        share embedded so far), so the fraction moves while a batch is cut and embedded, not only when it is
        written. A task of a fanned-out job reports the stage alone (its job counts documents over all tasks)."""
        self.done += documents_done
        fraction = min(1.0, (self.done + in_flight) / self.total) if self.total else 1.0
        counts = f"{self.done}/{self.total} documents · {self.chunks} chunks · " if self.counts_in_message else ""
        self._progress(fraction, counts + stage)

    def strategies(self) -> list[CorpusStrategyOut]:
        """Each strategy's outcomes so far, as the job's result reports them (``corpus_job`` adds the totals)."""
        strategies = []
        for name in self.names:
            outcomes, timings = self.outcomes[name], self.timings[name]
            count = Counter(outcome.status for outcome in outcomes)
            strategies.append(
                CorpusStrategyOut(
                    strategy=name,
                    processed=count["processed"],
                    skipped=count["skipped"],
                    failed=count["failed"],
                    chunks=sum(o.chunk_count for o in outcomes if o.status == "processed"),
                    duration_ms=int(sum(timings.values()) * 1000),
                    timings=timings,
                    documents=outcomes,
                )
            )
        return strategies
