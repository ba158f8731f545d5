"""The LLM client: chat completions from any OpenAI-compatible server, with bounded retries and clear errors.

Retries are the ``openai`` client's own (``max_retries`` = CHUNKBENCH_LLM_MAX_RETRIES): 408, 409, 429, 5xx,
timeouts and connection errors, after ``Retry-After``/``retry-after-ms`` when the server sends one (a wait
beyond the client's limit is not retried), else after exponential backoff with jitter. This module turns
what is left over into typed errors that say what to check.

``openai`` is imported when a client is built, never at import of chunkbench (it slows CLI start-up).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from chunkbench.config import Settings
from chunkbench.errors import LlmError, LlmUnavailableError

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Local servers (Ollama, LM Studio, llama.cpp) ignore the key, but the client refuses to start without one.
_DUMMY_API_KEY = "not-needed"
_HEALTH_TIMEOUT_S = 10.0
# The openai client numbers each try of a request in this header (0 = the first); an error carries its request.
_RETRY_COUNT_HEADER = "x-stainless-retry-count"

Message = dict[str, str]


@dataclass(frozen=True)
class ChatResult:
    """One completion: its text, token usage, the model that answered, and what it took to get it."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    model: str
    latency_ms: float
    attempts: int


def _is_unavailable(status: int) -> bool:
    """A status that means the server is busy, slow or broken (503 for us), not that it refused the request (502)."""
    return status in (408, 429) or status >= 500


def _server_message(exc: Any) -> str:
    """The ``error.message`` of an OpenAI-style error body, else the exception's own text."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str) and error:
            return error
    return str(getattr(exc, "message", exc))


class LlmClient:
    """Chat with the configured model; the openai client retries 429, 5xx, timeouts and connection errors."""

    def __init__(self, settings: Settings) -> None:
        import openai

        self._openai = openai
        self.base_url = (settings.llm_base_url or OPENAI_DEFAULT_BASE_URL).rstrip("/")
        self.model = settings.llm_model
        self.temperature = settings.llm_temperature
        self.max_tokens = settings.llm_max_tokens
        self.timeout_s = settings.llm_timeout_s
        self.max_retries = settings.llm_max_retries
        self._client = openai.OpenAI(
            base_url=self.base_url,
            api_key=settings.llm_api_key or _DUMMY_API_KEY,
            timeout=settings.llm_timeout_s,
            max_retries=settings.llm_max_retries,
        )

    def chat(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> ChatResult:
        """One completion of ``messages``; raises LlmUnavailableError (503) or LlmError (502)."""
        request: dict[str, Any] = {
            "model": self.model,
            "messages": list(messages),
            "temperature": self.temperature if temperature is None else temperature,
            "max_tokens": max_tokens or self.max_tokens,
        }
        if response_format is not None:
            request["response_format"] = response_format
        started = time.perf_counter()
        try:
            # The raw response says how many retries the client took; parse() gives the completion.
            raw = self._client.chat.completions.with_raw_response.create(**request)
            response = raw.parse()
        except self._openai.APIStatusError as exc:
            if not _is_unavailable(exc.status_code):
                raise self._refused(exc) from exc
            raise self._unavailable(exc, f"HTTP {exc.status_code}: {_server_message(exc)}") from exc
        except self._openai.APITimeoutError as exc:
            raise self._unavailable(exc, f"no answer within {self.timeout_s:g} s") from exc
        except self._openai.APIConnectionError as exc:
            raise self._unavailable(exc, f"connection failed: {exc.__cause__ or exc}") from exc
        except self._openai.OpenAIError as exc:
            raise LlmError(
                f"The LLM server at {self.base_url} sent an unusable response for model '{self.model}': {exc}",
                url=self.base_url,
                model=self.model,
            ) from exc
        return self._result(response, started, raw.retries_taken + 1)

    def health(self) -> dict[str, Any]:
        """``{ok, models, model_available, error}`` from ``GET /models``; never raises."""
        try:
            probe = self._client.with_options(timeout=min(self.timeout_s, _HEALTH_TIMEOUT_S), max_retries=0)
            page = probe.models.list()
            models = sorted(str(model.id) for model in page.data)
        except Exception as exc:  # health reports every failure instead of raising it
            message = _server_message(exc) if isinstance(exc, self._openai.APIStatusError) else str(exc)
            return {
                "ok": False,
                "models": [],
                "model_available": False,
                "error": f"{type(exc).__name__} from {self.base_url}: {message}",
            }
        return {"ok": True, "models": models, "model_available": self.model in models, "error": None}

    def _unavailable(self, exc: Any, problem: str) -> LlmUnavailableError:
        """The error for a server that stayed busy, broken, slow or unreachable through the client's retries."""
        try:
            attempts = int(exc.request.headers[_RETRY_COUNT_HEADER]) + 1
        except (AttributeError, KeyError, TypeError, ValueError):
            attempts = self.max_retries + 1
        response = getattr(exc, "response", None)
        rate_limited = getattr(response, "status_code", None) == 429
        wait = None
        if rate_limited and response is not None:  # a 429 has a response
            milliseconds = response.headers.get("retry-after-ms")
            wait = response.headers.get("retry-after") or (f"{milliseconds} ms" if milliseconds else None)
        if wait and attempts <= self.max_retries:
            # Retries were left: the client gave up because the server asked for a longer wait than it allows.
            hint = f"The server asks to wait (Retry-After: {wait}), longer than the client will: try again later."
        elif rate_limited:
            hint = (
                "The server keeps rate-limiting: wait, lower the request volume, or raise CHUNKBENCH_LLM_MAX_RETRIES."
            )
        else:
            hint = (
                "Is the LLM server running and CHUNKBENCH_LLM_BASE_URL right? "
                "A slow local model may need a larger CHUNKBENCH_LLM_TIMEOUT_S."
            )
        return LlmUnavailableError(
            f"The LLM server at {self.base_url} (model '{self.model}') failed after {attempts} "
            f"attempt{'s' if attempts != 1 else ''} ({problem}). {hint}",
            url=self.base_url,
            model=self.model,
            attempts=attempts,
        )

    def _refused(self, exc: Any) -> LlmError:
        status = exc.status_code
        if status in (401, 403):
            hint = "Check CHUNKBENCH_LLM_API_KEY."
        elif status == 404:
            hint = (
                f"Is '{self.model}' served there? GET {self.base_url}/models lists the served models; "
                "set CHUNKBENCH_LLM_MODEL to one of them."
            )
        else:
            hint = "Check the model name, CHUNKBENCH_LLM_MAX_TOKENS and the server's limits."
        return LlmError(
            f"The LLM server at {self.base_url} refused the request for model '{self.model}' "
            f"(HTTP {status}: {_server_message(exc)}). {hint}",
            url=self.base_url,
            model=self.model,
            status=status,
        )

    def _result(self, response: Any, started: float, attempts: int) -> ChatResult:
        # Imported here like ``openai``: prometheus_client adds ~0.1 s to every CLI start otherwise.
        from chunkbench.metrics import LLM_TOKENS

        usage = getattr(response, "usage", None)
        prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        # Counted before the answer is checked: an empty answer was still paid for.
        LLM_TOKENS.labels("prompt").inc(prompt_tokens)
        LLM_TOKENS.labels("completion").inc(completion_tokens)
        choices = getattr(response, "choices", None) or []
        text = (choices[0].message.content or "") if choices else ""
        if not text.strip():
            finish = choices[0].finish_reason if choices else "no choices"
            raise LlmError(
                f"The LLM server at {self.base_url} returned an empty answer for model '{self.model}' "
                f"(finish reason: {finish}).",
                url=self.base_url,
                model=self.model,
            )
        return ChatResult(
            text=text.strip(),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            model=getattr(response, "model", None) or self.model,
            latency_ms=(time.perf_counter() - started) * 1000,
            attempts=attempts,
        )


_CLIENTS_LOCK = threading.Lock()
_CLIENTS: dict[tuple[object, ...], LlmClient] = {}


def get_llm_client(settings: Settings) -> LlmClient | None:
    """The client for the configured LLM, built once per endpoint, model and key; None when none is configured."""
    if not settings.llm_configured:
        return None
    # Every setting the client reads is in the key, so changed settings never reuse a stale client.
    key = (
        settings.llm_base_url,
        settings.llm_model,
        settings.llm_api_key,
        settings.llm_temperature,
        settings.llm_max_tokens,
        settings.llm_timeout_s,
        settings.llm_max_retries,
    )
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            client = _CLIENTS[key] = LlmClient(settings)
    return client
