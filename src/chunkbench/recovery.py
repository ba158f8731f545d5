"""Recovery of dead owners' work: what every entry point (the server start, every CLI command) runs before its
own work, so work a killed process left half-done never blocks the next one."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from chunkbench.benchmarking import claims
from chunkbench.config import Settings
from chunkbench.indexing import processing
from chunkbench.jobs import execution
from chunkbench.storage.db import Database

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Recovered:
    """How many of each kind of work of a dead owner were recovered."""

    jobs: int
    documents: int
    experiments: int

    def summary(self) -> str:
        """One line for a person, or "" when nothing was recovered."""
        parts = []
        if self.documents:
            parts.append(f"{self.documents} document(s) marked failed (process them again)")
        if self.jobs:
            parts.append(f"{self.jobs} job(s) marked failed (submit them again)")
        if self.experiments:
            parts.append(f"{self.experiments} benchmark(s) marked interrupted (resume them)")
        return "; ".join(parts)


def recover_dead_owners(database: Database, settings: Settings) -> Recovered:
    """Take over the work whose owner is provably dead or whose lease ran out (never a live process's): jobs and
    processing documents are marked failed, the interrupted processing runs' points and rows removed, running
    benchmarks marked interrupted."""
    recovered = Recovered(
        jobs=execution.fail_interrupted(database),
        documents=processing.fail_interrupted(database, settings),
        experiments=claims.fail_interrupted(database),
    )
    if line := recovered.summary():
        logger.warning("work of a stopped process recovered: %s", line)
    return recovered
