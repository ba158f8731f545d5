"""Realistic benchmark Experiments (the runner's dict) for the report tests: five strategies × 20 questions.

Every per-cell figure comes from small fixed patterns, so the aggregates are known by hand: recall means are
recursive 0.85, contextual_retrieval 0.80, fixed_size 0.70, semantic 0.60, semantic_parent_child 0.45.
"""

from __future__ import annotations

import copy
import math
import statistics
from typing import Any

STRATEGIES = ("fixed_size", "recursive", "semantic", "contextual_retrieval", "semantic_parent_child")
N_QUESTIONS = 20
# Recall of each strategy on question i is PATTERN[i % 5]: four cycles over 20 questions, so the mean is the
# pattern's mean.
RECALL_PATTERNS = {
    "recursive": (1.0, 1.0, 0.75, 1.0, 0.5),  # 0.85
    "contextual_retrieval": (1.0, 0.75, 0.75, 1.0, 0.5),  # 0.80
    "fixed_size": (1.0, 0.5, 0.75, 0.75, 0.5),  # 0.70
    "semantic": (0.75, 0.5, 0.5, 0.75, 0.5),  # 0.60
    "semantic_parent_child": (0.5, 0.25, 0.5, 0.75, 0.25),  # 0.45
}
# Context tokens per question (tok@k): the mean of base + (i % 3) * 10 over 20 questions is base + 9.5.
TOKENS_BASE = {
    "fixed_size": 2560,
    "recursive": 2300,
    "semantic": 900,
    "contextual_retrieval": 2600,
    "semantic_parent_child": 400,
}
HOSTILE_QUESTION = 'What does <script>window.__pwned = 1</script> clause & "section" 3 say?'
HOSTILE_ANSWER = 'It says <img src=x onerror="window.__pwned = 2"> nothing [Source 1]'
FARSI_QUESTION = "مدت قرارداد چند ماه است؟"


def key(strategy: str) -> str:
    return f"{strategy}/dense/k5"


def document_text(paragraphs: int = 12) -> str:
    """A markdown document with English sections, a Farsi paragraph and hostile markup in its text."""
    parts = ["# Service contract\n"]
    for i in range(paragraphs):
        parts.append(f"## Clause {i + 1}\n")
        parts.append(
            f"The supplier shall deliver item {i + 1} within {10 + i} days of the order. Payment is due thirty days "
            f"after delivery, and late payment accrues interest at 1.{i} percent per month.\n"
        )
        if i == 2:
            parts.append('Hostile text: <script>window.__pwned = 3</script> and </span><b onclick="x()">bold</b>\n')
        if i == 4:
            parts.append("مدت این قرارداد دوازده ماه است و با توافق طرفین تمدید می‌شود.\n")
    return "\n".join(parts)


def _stats(values: list[float]) -> dict[str, Any]:
    mean = statistics.fmean(values)
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    half = 1.96 * std / math.sqrt(len(values))
    return {"mean": mean, "std": std, "ci_low": mean - half, "ci_high": mean + half, "n": len(values)}


def _cell(strategy: str, qi: int, *, judge: bool, neighbours: int) -> dict[str, Any]:
    recall = RECALL_PATTERNS[strategy][qi % 5]
    tokens = TOKENS_BASE[strategy] + (qi % 3) * 10
    hit = 1.0 if recall > 0 else 0.0
    mrr = (1.0, 0.5, 1.0, 0.33, 0.5)[qi % 5] * hit
    metrics: dict[str, Any] = {
        "recall": recall,
        "precision": round(recall * 0.06, 4),
        "precision_omega": round(recall * 0.3, 4),
        "iou": round(recall * 0.05, 4),
        "recall_at_k": recall,
        "hit_at_k": hit,
        "mrr": mrr,
        "ndcg_at_k": round(0.5 + 0.4 * recall, 4),
        "tok_at_k": tokens,
        "exact_match": 0.0,
        "token_f1": round(0.2 + 0.5 * recall, 4),
        "answer_similarity": round(0.4 + 0.5 * recall, 4),
        "judge_context_relevance": None,
        "judge_answer_similarity": None,
        "judge_faithfulness": None,
        "judge_hallucination": None,
    }
    judge_block = None
    if judge:
        metrics.update(
            judge_context_relevance=round(4 + 6 * recall),
            judge_answer_similarity=round(3 + 6 * recall),
            judge_faithfulness=9,
            judge_hallucination=recall < 0.5,
        )
        failures = 1 if (strategy == "semantic" and qi in (4, 9)) else 0
        judge_block = {
            "reasoning": f"The answer covers {recall:.0%} of the reference; <b>no</b> invented facts.",
            "attempts": 3 + failures,
            "failures": failures,
            "error": "judge returned invalid JSON once" if failures else None,
            "spread": {"judge_answer_similarity": 0.5},
        }
    start = 200 * qi
    hit_node = {
        "chunk_id": f"{strategy}-{qi}",
        "chunk_index": qi,
        "text": f"Clause text of chunk {qi} for {strategy}.",
        "score": round(0.4 + 0.02 * qi, 3),
        "role": "hit",
        "start_index": start,
        "end_index": start + 180,
        "token_count": 40,
        "heading_path": ["Service contract", f"Clause {qi + 1}"],
        "parent_id": None,
        "document_id": "doc_1",
        "document_name": "contract.pdf",
        "strategy_name": strategy,
    }

    def neighbour(index: int) -> dict[str, Any]:
        return {
            **hit_node,
            "chunk_id": f"{strategy}-{index}",
            "chunk_index": index,
            "score": None,
            "role": "neighbor",
            "start_index": 200 * index,
            "end_index": 200 * index + 180,
            "text": f"Neighbour chunk {index}.",
        }

    tree = None
    if strategy == "fixed_size":
        prev = [neighbour(qi - 1)] if neighbours and qi > 0 else []
        nxt = [neighbour(qi + 1)] if neighbours else []
        tree = [{**hit_node, "neighbors_prev": prev, "neighbors_next": nxt}]
    latency = {
        "embed": 3.0,
        "search": 2.0 + qi % 4,
        "expand": 0.1,
        "rerank": 0.0,
        "generate": 40.0 if judge else 5.0,
        "judge": 80.0 if judge else 0.0,
    }
    latency["total"] = round(sum(latency.values()), 3)
    prompt, completion = (300 + tokens, 60) if judge else (0, 0)
    return {
        "question_id": f"q{qi + 1}",
        "config_key": key(strategy),
        "status": "ok",
        "error": None,
        "answer": HOSTILE_ANSWER if qi == 2 else f"Answer {qi + 1} from {strategy} [Source 1]",
        "retrieved": [
            {
                "chunk_index": qi,
                "start_index": start,
                "end_index": start + 180,
                "score": 0.61,
                "role": "hit",
                "tokens": 40,
            }
        ],
        "expansion_tree": tree,
        "metrics": metrics,
        "judge": judge_block,
        "latency_ms": latency,
        "tokens": {"prompt": prompt, "completion": completion, "context": tokens},
        "cost_usd": round((prompt * 0.15 + completion * 0.6) / 1e6, 8),
    }


def _aggregate(cells: list[dict[str, Any]], keys: list[str]) -> dict[str, Any]:
    out = {}
    for k in keys:
        mine = [c for c in cells if c["config_key"] == k]
        ok = [c for c in mine if c["status"] == "ok"]
        metrics = {}
        for name in ok[0]["metrics"] if ok else []:
            values = [float(c["metrics"][name]) for c in ok if c["metrics"][name] is not None]
            metrics[name] = (
                _stats(values) if values else {"mean": None, "std": None, "ci_low": None, "ci_high": None, "n": 0}
            )
        totals = sorted(c["latency_ms"]["total"] for c in ok)
        judged = [c for c in ok if c["metrics"]["judge_hallucination"] is not None]
        out[k] = {
            "metrics": metrics,
            "hallucination_rate": (sum(bool(c["metrics"]["judge_hallucination"]) for c in judged) / len(judged))
            if judged
            else None,
            "judge_failures": sum((c["judge"] or {}).get("failures", 0) for c in ok),
            "failed_cells": len(mine) - len(ok),
            "latency_ms_p50": statistics.median(totals) if totals else None,
            "latency_ms_p95": totals[min(len(totals) - 1, math.ceil(0.95 * len(totals)) - 1)] if totals else None,
            "tokens": {
                "prompt": sum(c["tokens"]["prompt"] for c in ok),
                "completion": sum(c["tokens"]["completion"] for c in ok),
                "context_mean": statistics.fmean(c["tokens"]["context"] for c in ok) if ok else None,
            },
            "cost_usd": sum(c["cost_usd"] for c in ok),
        }
    return out


def make_experiment(*, judge: bool = False, neighbours: int = 0) -> dict[str, Any]:
    """A completed Experiment whose decision names recursive/dense/k5 the winner on recall."""
    keys = [key(s) for s in STRATEGIES]
    questions = []
    for i in range(N_QUESTIONS):
        text = f"What is the delivery time of item {i + 1}?"
        if i == 2:
            text = HOSTILE_QUESTION
        elif i == 4:
            text = FARSI_QUESTION
        questions.append(
            {
                "id": f"q{i + 1}",
                "question": text,
                "expected_answer": f"{10 + i} days" if i != 7 else None,
                "category": "delivery",
                "difficulty": ("easy", "medium", "hard")[i % 3],
                "references": [{"start_index": 200 * i, "end_index": 200 * i + 80, "content": "…"}],
            }
        )
    cells = [_cell(s, qi, judge=judge, neighbours=neighbours) for qi in range(N_QUESTIONS) for s in STRATEGIES]
    aggregate = _aggregate(cells, keys)
    means = {k: aggregate[k]["metrics"]["recall"]["mean"] for k in keys}
    leader = key("recursive")
    experiment = {
        "id": "exp_3f2a9c",
        "name": "contract-v2 strategies",
        "status": "completed",
        "error": None,
        "created_at": "2026-11-29T16:02:11Z",
        "finished_at": "2026-11-29T16:04:40Z",
        "document": {"id": "doc_1", "filename": "contract.pdf", "tokens": 12345},
        "config": {
            "strategies": list(STRATEGIES),
            "retrievers": ["dense"],
            "top_k": [5],
            "neighbor_prev": neighbours,
            "neighbor_next": neighbours,
            "rerank": "none",
            "answer_mode": "llm" if judge else "extractive",
            "judge": judge,
            "judge_repeats": 3 if judge else 1,
            "primary_metric": "recall",
            "question_set": "contract.json",
            "seed": 0,
        },
        "provenance": {
            "corpus_model": "all-MiniLM-L6-v2",
            "boundary_model": "all-MiniLM-L6-v2",
            "llm_model": "fake-llm" if judge else None,
            "library_versions": {"chunkbench": "0.1.0", "qdrant-client": "1.15.0"},
            "strategy_runs": {s: {"run_id": f"run_{s}", "params": {"chunk_size": 512}} for s in STRATEGIES},
            "python": "3.11.2",
            "platform": "Linux-6.1-x86_64",
        },
        "configurations": [
            {
                "key": key(s),
                "strategy": s,
                "retriever": "dense",
                "top_k": 5,
                "neighbor_prev": neighbours,
                "neighbor_next": neighbours,
                "rerank": "none",
            }
            for s in STRATEGIES
        ],
        "questions": questions,
        "cells": cells,
        "aggregate": aggregate,
        "decision": {
            "metric": "recall",
            "status": "winner",
            "best": leader,
            "leader": leader,
            "prob_best": {
                key("recursive"): 0.93,
                key("contextual_retrieval"): 0.07,
                key("fixed_size"): 0.0,
                key("semantic"): 0.0,
                key("semantic_parent_child"): 0.0,
            },
            "means": means,
            "diff_to_leader": {
                k: [means[k] - means[leader], means[k] - means[leader] - 0.1, min(means[k] - means[leader] + 0.1, 0.0)]
                for k in keys
            },
            "ruled_out": [key("fixed_size"), key("semantic"), key("semantic_parent_child")],
            "contenders": [leader, key("contextual_retrieval")],
            "runner_up": key("contextual_retrieval"),
            "questions_needed": None,
            "tie_break": None,
            "reasons": ["recursive/dense/k5 is ahead of every other configuration in 93% of bootstrap resamples."],
            "n_questions": N_QUESTIONS,
            "dropped_questions": 0,
            "confidence": 0.95,
            # The Decision's context cost per configuration is its mean tok@k, as the runner stores it.
            "costs": {k: aggregate[k]["metrics"]["tok_at_k"]["mean"] for k in keys},
            "cost_margin": 0.1,
            "tied": False,
            "min_questions": 5,
        },
        "cost": {
            "estimated_usd": 0.01 if judge else 0.0,
            "actual_usd": sum(c["cost_usd"] for c in cells),
            "tokens": {
                "embedding": 1234,
                "prompt": sum(c["tokens"]["prompt"] for c in cells),
                "completion": sum(c["tokens"]["completion"] for c in cells),
            },
        },
    }
    return experiment


def make_tie() -> dict[str, Any]:
    """recursive and semantic tie on recall; semantic is chosen because its context is smaller."""
    exp = make_experiment()
    exp["decision"].update(
        status="tie_broken_by_cost",
        best=key("semantic"),
        leader=key("recursive"),
        contenders=[key("recursive"), key("semantic")],
        ruled_out=[key("semantic_parent_child")],
        runner_up=key("semantic"),
        tie_break="context cost (tok@k)",
        tied=True,
        prob_best={key("recursive"): 0.55, key("semantic"): 0.40, key("contextual_retrieval"): 0.05},
        reasons=["The recall intervals of recursive and semantic overlap; semantic needs 61% fewer context tokens."],
    )
    return exp


def make_no_winner() -> dict[str, Any]:
    """recursive leads but contextual_retrieval cannot be ruled out; 40 questions would settle it."""
    exp = make_experiment()
    # A Decision stored before cannot_tell: no runner_up, tied or min_questions.
    for name in ("runner_up", "tied", "min_questions", "cost_margin"):
        del exp["decision"][name]
    exp["decision"].update(
        status="no_clear_winner",
        best=None,
        leader=key("recursive"),
        contenders=[key("recursive"), key("contextual_retrieval")],
        ruled_out=[key("semantic"), key("semantic_parent_child")],
        prob_best={key("recursive"): 0.62, key("contextual_retrieval"): 0.38},
        questions_needed=40,
        reasons=["The paired difference recursive − contextual_retrieval is 0.05 (95% interval −0.04 to 0.14)."],
    )
    return exp


def make_failed() -> dict[str, Any]:
    """A failed run with an LLM judge: semantic_parent_child failed on every question, two more cells failed,
    and some answer metrics were not measured (None)."""
    exp = make_experiment(judge=True, neighbours=1)
    for cell in exp["cells"]:
        if cell["config_key"] == key("semantic_parent_child") or (
            cell["config_key"] == key("fixed_size") and cell["question_id"] in ("q6", "q7")
        ):
            cell.update(
                status="failed",
                error="Qdrant timed out after 30 s <retry later>",
                answer=None,
                metrics={},
                judge=None,
                expansion_tree=None,
            )
        elif cell["question_id"] == "q8":
            cell["metrics"]["answer_similarity"] = None  # q8 has no expected answer
            cell["metrics"]["exact_match"] = None
    keys = [key(s) for s in STRATEGIES]
    exp["aggregate"] = _aggregate(exp["cells"], keys)
    exp["aggregate"][key("semantic_parent_child")]["metrics"] = {}
    exp.update(status="failed", error="Qdrant timed out after 30 s", finished_at="2026-11-29T16:03:58Z")
    exp["decision"].update(
        status="insufficient_data",
        best=None,
        leader=None,
        contenders=keys,
        runner_up=None,
        ruled_out=[],
        prob_best={},
        means={},
        diff_to_leader={},
        questions_needed=None,
        # semantic_parent_child has no score on any question: none is complete.
        n_questions=0,
        dropped_questions=N_QUESTIONS,
        reasons=["semantic_parent_child/dense/k5 has no result at all."],
    )
    return exp


def make_running() -> dict[str, Any]:
    """A running Experiment: the first 7 questions have results, nothing is decided yet."""
    exp = make_experiment()
    exp["cells"] = [c for c in exp["cells"] if int(c["question_id"][1:]) <= 7]
    exp["aggregate"] = _aggregate(exp["cells"], [key(s) for s in STRATEGIES])
    exp.update(status="running", finished_at=None, decision=None)
    return exp


def variants() -> dict[str, dict[str, Any]]:
    return {
        "winner": make_experiment(),
        "tie": make_tie(),
        "no_winner": make_no_winner(),
        "judge": make_experiment(judge=True, neighbours=1),
        "failed": make_failed(),
        "running": make_running(),
    }


def deep_copy(exp: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(exp)
