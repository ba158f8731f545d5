"""What the two query benchmarks (query_pipeline.py, query_scale.py) share: questions, model, top_k, timing."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from chunkbench.evaluation.datasets import DEFAULT_CHROMA_DIR

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CORPORA = DEFAULT_CHROMA_DIR / "corpora"
MODEL_ID = "all-MiniLM-L6-v2"
TOP_K = 5
WARMUP = 3

QUESTIONS = [
    "What did Franklin Roosevelt say to Congress in January 1941?",
    "What is Putin doing in Ukraine?",
    "What is Ukraine asking the United States for?",
    "How does the President describe the threat to democracy at home?",
    "What happened on January 6th?",
    "What does the speech say about NATO?",
    "How many jobs were created during this administration?",
    "What is said about inflation?",
    "How does the President propose to lower prescription drug costs?",
    "What is the cap on insulin for seniors?",
    "What does the speech say about the CHIPS and Science Act?",
    "What is proposed for child care costs?",
    "What does the President say about billionaires and taxes?",
    "What is the minimum tax rate proposed for corporations?",
    "What is said about the border and immigration?",
    "What does the President say about Roe v. Wade and reproductive freedom?",
    "What is proposed about IVF?",
    "What does the speech say about gun violence?",
    "What about the assault weapons ban?",
    "What is said about climate change and clean energy?",
    "What is the plan for housing and mortgage costs?",
    "What does the President say about student debt?",
    "What is said about Gaza and Israel?",
    "What about humanitarian aid to Gaza by sea?",
    "How does the President talk about China?",
    "What does the speech say about Social Security and Medicare?",
    "What is said about the cancer moonshot?",
    "What does the President say about junk fees?",
    "What is said about police and public safety?",
    "How does the speech end?",
]


def questions(count: int) -> list[str]:
    """The first ``count`` questions, at least ``WARMUP`` of them and at most all."""
    return QUESTIONS[: max(WARMUP, min(count, len(QUESTIONS)))]


def prepare() -> None:
    """Offline model hub; torch imported before a benchmark starts its clock, so its total leaves the import out."""
    # Weights come from folders; without these the hub client still tries the network first.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch  # noqa: F401


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


def p50_p95(values_ms: list[float]) -> dict[str, float]:
    return {"p50_ms": round(percentile(values_ms, 50), 2), "p95_ms": round(percentile(values_ms, 95), 2)}


def timed_ms(func: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = func()
    return (time.perf_counter() - start) * 1000, value


def write_results(path: Path, result: dict[str, Any], total_s: float) -> None:
    """``result`` as JSON at ``path`` with the run's total time and what the machine was doing."""
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    result = {
        **result,
        "total_runtime_s": round(total_s, 1),
        "torch_threads": torch.get_num_threads(),
        # OpenMP threads that spin after each parallel region fight for the cores of a busy machine; a server
        # subprocess inherits this environment, so both sides of a comparison run under the same policy.
        "omp_env": {key: os.environ.get(key) for key in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS")},
        "load_average_1min": os.getloadavg()[0],
    }
    path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {path.relative_to(ROOT)} (total {total_s:.0f} s)")
