"""LLM-as-judge (docs/benchmarks.md): one answer scored for context relevance, answer similarity and faithfulness
(1–10), a hallucination flag and a reasoning, with tolerant parsing, corrective retries and repeats.

A judge's output is never turned into NaN: a reply that cannot be repaired is retried with a message naming
what was wrong, every failure is counted, and a verdict with no usable repeat carries ``error`` and ``None``
metrics.

Parsing choices (``parse_verdict``):

* the JSON object may be wrapped in ```` ```json ```` fences or prose, have trailing commas, single quotes,
  Python literals (``True``/``None``), unquoted keys or be cut short (``json_repair`` mends all of these), and
  keys in another case/spelling (``"Context Relevance"``); a reply with no object at all is read as
  ``key: value`` lines;
* scores may be numbers or strings (``8``, ``"8"``, ``8.0``, ``"8/10"``, ``"4/5"`` → 8, ``"8 out of 10"``);
  fractional scores are rounded half up to integers;
* out of range: a score in [0, 1) is clamped to 1 (judges write 0 for "none at all"); anything below 0 or
  above 10 is an error (a model answering 85 is on another scale, and guessing which one would invent a
  number), so ``judge`` retries with the error in the corrective message;
* ``hallucination`` may be a boolean, ``"yes"``/``"no"``/``"true"``/``"false"``/``"y"``/``"n"`` or 0/1;
* a missing ``reasoning`` becomes ``""`` (it explains, it does not score); a missing score or hallucination
  flag is an error that names the keys.

Transport errors (``judge``): an ``LlmError`` or ``LlmUnavailableError`` uses up one attempt of that repeat
and is counted as a failure; the next attempt resends the same request. When no repeat succeeded and every
failure was an ``LlmUnavailableError`` (the server is down or keeps rate-limiting, after the client's own
retries), the last one is re-raised: a benchmark run should stop with the server's message rather than
record a column of failed verdicts. Any other outcome returns a verdict.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import json_repair

from chunkbench.errors import LlmError, LlmUnavailableError
from chunkbench.llm.client import ChatResult, JsonSchema, record_repair
from chunkbench.llm.prompts import JUDGE_KEYS, Message, judge_messages

SCORE_KEYS = ("context_relevance", "answer_similarity", "faithfulness")
MIN_SCORE, MAX_SCORE = 1, 10
JSON_MODE = {"type": "json_object"}
# The verdict's shape, sent where the server supports schemas (llama.cpp makes it a grammar): the reply then parses
# as it is. The reasoning is bounded so a verbose judge is not cut by max_tokens mid-object.
_SCORE = {"type": "integer", "minimum": MIN_SCORE, "maximum": MAX_SCORE}
VERDICT_SCHEMA = JsonSchema(
    "judge_verdict",
    {
        "type": "object",
        "properties": {
            **dict.fromkeys(SCORE_KEYS, _SCORE),
            "hallucination": {"type": "boolean"},
            "reasoning": {"type": "string", "maxLength": 300},
        },
        "required": [*SCORE_KEYS, "hallucination", "reasoning"],
        "additionalProperties": False,
    },
)


class JudgeParseError(ValueError):
    """A judge reply that cannot be repaired into a verdict; the message names what is missing or invalid."""


class ChatClient(Protocol):
    """What the judge needs of an LLM client (``chunkbench.llm.client.LlmClient`` is one)."""

    def chat(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        response_format: dict[str, Any] | None = None,
        json_schema: JsonSchema | None = None,
    ) -> ChatResult: ...


# --------------------------------------------------------------------------- parsing

_KEY_VALUE_LINE = re.compile(r"^[\s\-*#>\"']*([A-Za-z][A-Za-z _\-]*?)[\s\"'*]*[:=]\s*(.+?)\s*,?\s*$", re.MULTILINE)
_FRACTION = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*(?:/|out\s+of)\s*(\d+(?:\.\d+)?)\s*$", re.IGNORECASE)
_NUMBER = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*(?:points?)?\s*$", re.IGNORECASE)
_TRUE_WORDS = frozenset({"true", "yes", "y", "1"})
_FALSE_WORDS = frozenset({"false", "no", "n", "0", "none"})


def _squash(key: str) -> str:
    return re.sub(r"[^a-z]", "", key.lower())


# Keys as models actually spell them, squashed (lowercase letters only) → our key.
_KEY_ALIASES: dict[str, str] = {_squash(key): key for key in JUDGE_KEYS} | {
    "contextrelevancescore": "context_relevance",
    "answersimilarityscore": "answer_similarity",
    "faithfulnessscore": "faithfulness",
    "hallucinated": "hallucination",
    "hallucinations": "hallucination",
    "ishallucination": "hallucination",
    "hashallucination": "hallucination",
    "reason": "reasoning",
    "reasons": "reasoning",
    "explanation": "reasoning",
    "justification": "reasoning",
    "rationale": "reasoning",
}


def _json_object(text: str) -> dict[str, Any] | None:
    """The reply's first JSON object, repaired by ``json_repair`` (fences and prose around it, trailing commas,
    single quotes, Python literals, unquoted keys, an object cut short by max_tokens); None when there is none."""
    try:
        value = json_repair.loads(text)
    except (ValueError, RecursionError):  # nesting beyond its parser's depth
        return None
    if isinstance(value, list):  # several objects in the reply: the first one
        value = next((item for item in value if isinstance(item, dict)), None)
    return value if isinstance(value, dict) and value else None


def _is_plain_json(text: str) -> bool:
    """A reply that is one JSON object as it stands (no fences, prose or mending needed)."""
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def _key_value_lines(text: str) -> dict[str, Any]:
    """``Key: value`` lines of a reply that holds no JSON object, for the keys we know."""
    found: dict[str, Any] = {}
    for match in _KEY_VALUE_LINE.finditer(text):
        key = _KEY_ALIASES.get(_squash(match.group(1)))
        if key and key not in found:
            found[key] = match.group(2).strip().strip("\"'")
    return found


def _canonical_keys(raw: dict[str, Any]) -> dict[str, Any]:
    """Our keys from the model's spelling; one level of nesting (``{"scores": {...}}``) is flattened."""
    result: dict[str, Any] = {}
    for name, value in raw.items():
        key = _KEY_ALIASES.get(_squash(str(name)))
        if key is not None:
            result.setdefault(key, value)
        elif isinstance(value, dict):
            for inner_name, inner_value in value.items():
                inner_key = _KEY_ALIASES.get(_squash(str(inner_name)))
                if inner_key is not None:
                    result.setdefault(inner_key, inner_value)
    return result


def _score(key: str, value: Any) -> int:
    """An integer 1–10 from the forms models write; a ``JudgeParseError`` when there is none."""
    if isinstance(value, dict):
        # {"score": 8, "reason": "..."}
        inner = {_squash(str(k)): v for k, v in value.items()}
        if "score" in inner:
            return _score(key, inner["score"])
    number: float | None = None
    if isinstance(value, bool) or value is None:
        number = None
    elif isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        if fraction := _FRACTION.match(value):
            numerator, denominator = float(fraction.group(1)), float(fraction.group(2))
            number = numerator * MAX_SCORE / denominator if denominator > 0 else None
        elif plain := _NUMBER.match(value):
            number = float(plain.group(1))
    if number is None or not math.isfinite(number):
        raise JudgeParseError(f"{key} must be a number from {MIN_SCORE} to {MAX_SCORE}, got {value!r}")
    if number < 0 or number > MAX_SCORE:
        raise JudgeParseError(f"{key} must be from {MIN_SCORE} to {MAX_SCORE}, got {value!r}")
    # Round half up (7.5 → 8): Python's round() would send 8.5 to 8 and 7.5 to 8 alike.
    return max(MIN_SCORE, math.floor(number + 0.5))


def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().strip(".!").lower()
        if word in _TRUE_WORDS:
            return True
        if word in _FALSE_WORDS:
            return False
    raise JudgeParseError(f"hallucination must be true or false, got {value!r}")


def parse_verdict(text: str) -> dict[str, Any]:
    """``{context_relevance, answer_similarity, faithfulness: int 1–10, hallucination: bool, reasoning: str}``
    from a judge reply, repaired where possible; ``JudgeParseError`` names what is missing or invalid."""
    if not text or not text.strip():
        raise JudgeParseError("the reply is empty")
    raw = _json_object(text)
    if raw is None:
        # No object: ``key: value`` lines, then let the checks below name what is missing.
        raw = _key_value_lines(text)
        if not raw:
            raise JudgeParseError(
                "the reply's JSON object could not be parsed" if "{" in text else "the reply holds no JSON object"
            )
    values = _canonical_keys(raw)
    missing = [key for key in (*SCORE_KEYS, "hallucination") if key not in values]
    if missing:
        raise JudgeParseError(f"missing key{'s' if len(missing) > 1 else ''}: {', '.join(missing)}")
    problems: list[str] = []
    verdict: dict[str, Any] = {}
    for key in SCORE_KEYS:
        try:
            verdict[key] = _score(key, values[key])
        except JudgeParseError as exc:
            problems.append(str(exc))
    try:
        verdict["hallucination"] = _flag(values["hallucination"])
    except JudgeParseError as exc:
        problems.append(str(exc))
    if problems:
        raise JudgeParseError("; ".join(problems))
    reasoning = values.get("reasoning")
    verdict["reasoning"] = "" if reasoning is None else str(reasoning).strip()
    return verdict


# --------------------------------------------------------------------------- judging


@dataclass
class JudgeVerdict:
    """The judge's verdict on one answer, aggregated over ``repeats`` (means; ``spread`` when ≥ 2 succeeded).

    ``spread`` holds ``<key>_sd`` (sample SD), ``<key>_min`` and ``<key>_max`` for each score; ``samples``
    the parsed verdict of each successful repeat. With no successful repeat every metric is ``None`` and
    ``error`` says why.
    """

    context_relevance: float | None
    answer_similarity: float | None
    faithfulness: float | None
    hallucination: bool | None
    hallucination_rate: float | None
    reasoning: str
    repeats: int
    successful_repeats: int
    spread: dict[str, float]
    attempts: int
    failures: int
    error: str | None
    prompt_tokens: int
    completion_tokens: int
    model: str | None = None
    failure_messages: list[str] = field(default_factory=list)
    samples: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _correction(reply: str, problem: str) -> list[Message]:
    """The turn that tells the judge what was wrong with its reply."""
    return [
        {"role": "assistant", "content": reply},
        {
            "role": "user",
            "content": (
                f"Your reply could not be used: {problem}. Reply with only one JSON object with exactly the keys "
                f"{', '.join(JUDGE_KEYS)}; the three scores are integers from {MIN_SCORE} to {MAX_SCORE} and "
                "hallucination is true or false."
            ),
        },
    ]


def _aggregate(samples: list[dict[str, Any]]) -> tuple[dict[str, float], dict[str, float], float]:
    """Per-score means, the spread (when ≥ 2 samples) and the hallucination rate."""
    means = {key: statistics.fmean(sample[key] for sample in samples) for key in SCORE_KEYS}
    spread: dict[str, float] = {}
    if len(samples) >= 2:
        for key in SCORE_KEYS:
            values = [float(sample[key]) for sample in samples]
            spread[f"{key}_sd"] = statistics.stdev(values)
            spread[f"{key}_min"] = min(values)
            spread[f"{key}_max"] = max(values)
    rate = sum(bool(sample["hallucination"]) for sample in samples) / len(samples)
    return means, spread, rate


def judge(
    client: ChatClient,
    *,
    question: str,
    expected_answer: str,
    answer: str,
    contexts: Sequence[str],
    repeats: int = 1,
    max_attempts: int = 3,
    max_tokens: int | None = None,
) -> JudgeVerdict:
    """Ask the judge ``repeats`` times (temperature 0, JSON mode), each with up to ``max_attempts`` tries.

    A parse failure is retried with a corrective turn that quotes the error; a transport error resends the
    request. Returns the aggregated verdict; raises ``LlmUnavailableError`` only when nothing succeeded and
    every failure was one (see the module docstring).
    """
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be at least 1, got {max_attempts}")
    base = judge_messages(question, expected_answer, answer, contexts)
    samples: list[dict[str, Any]] = []
    failure_messages: list[str] = []
    attempts = prompt_tokens = completion_tokens = 0
    model: str | None = None
    last_unavailable: LlmUnavailableError | None = None
    only_unavailable = True
    for _repeat in range(repeats):
        messages = base
        for _attempt in range(max_attempts):
            attempts += 1
            try:
                result = client.chat(
                    messages,
                    temperature=0,
                    response_format=JSON_MODE,
                    json_schema=VERDICT_SCHEMA,
                    max_tokens=max_tokens,
                )
            except LlmUnavailableError as exc:
                last_unavailable = exc
                failure_messages.append(f"LLM unavailable: {exc.message}")
                continue
            except LlmError as exc:
                only_unavailable = False
                failure_messages.append(f"LLM error: {exc.message}")
                continue
            prompt_tokens += result.prompt_tokens
            completion_tokens += result.completion_tokens
            model = result.model
            try:
                samples.append(parse_verdict(result.text))
            except JudgeParseError as exc:
                record_repair("judge")
                only_unavailable = False
                failure_messages.append(f"unusable reply: {exc}")
                # Only the latest bad reply is quoted back: the context stays one correction long.
                messages = [*base, *_correction(result.text, str(exc))]
                continue
            if not _is_plain_json(result.text):
                record_repair("judge")  # usable only once mended (fences, prose, an object cut short)
            break
    if not samples and only_unavailable and last_unavailable is not None:
        raise last_unavailable
    failures = len(failure_messages)
    if not samples:
        return JudgeVerdict(
            context_relevance=None, answer_similarity=None, faithfulness=None, hallucination=None,
            hallucination_rate=None, reasoning="", repeats=repeats, successful_repeats=0, spread={},
            attempts=attempts, failures=failures,
            error=f"No usable verdict after {attempts} attempt{'s' if attempts != 1 else ''}: {failure_messages[-1]}",
            prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, model=model,
            failure_messages=failure_messages, samples=[],
        )  # fmt: skip
    means, spread, rate = _aggregate(samples)
    return JudgeVerdict(
        context_relevance=means["context_relevance"],
        answer_similarity=means["answer_similarity"],
        faithfulness=means["faithfulness"],
        # A tie between repeats counts as a hallucination: the cautious reading of a split judge.
        hallucination=rate >= 0.5,
        hallucination_rate=rate,
        reasoning=samples[0]["reasoning"],
        repeats=repeats,
        successful_repeats=len(samples),
        spread=spread,
        attempts=attempts,
        failures=failures,
        error=None,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        model=model,
        failure_messages=failure_messages,
        samples=samples,
    )
