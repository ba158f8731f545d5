"""The LLM client: chat completions from any OpenAI-compatible server, with bounded retries and clear errors.

Retries are the ``openai`` client's own (``max_retries`` = CHUNKBENCH_LLM_MAX_RETRIES): 408, 409, 429, 5xx,
timeouts and connection errors, after ``Retry-After``/``retry-after-ms`` when the server sends one (a wait
beyond the client's limit is not retried), else after exponential backoff with jitter. This module turns
what is left over into typed errors that say what to check.

JSON replies: a caller that wants JSON passes the reply's ``JsonSchema``; the client sends it as a
``json_schema`` ``response_format`` (llama.cpp turns it into a grammar: the reply parses by construction) when the
server supports it, learned once per client (CHUNKBENCH_LLM_JSON_SCHEMA: ``auto`` asks GET /props whether the server
is llama.cpp), else the caller's own ``response_format`` (the prompt + repair path). A server that refuses the schema
with HTTP 400 gets the request again without it, and never again after. Callers count the replies they had to
repair (``record_repair``), so a test can assert that schema-constrained replies needed none.

``openai`` is imported when a client is built, never at import of chunkbench (it slows CLI start-up).
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from chunkbench.config import Settings
from chunkbench.errors import LlmContextExceededError, LlmError, LlmUnavailableError

logger = logging.getLogger(__name__)

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Local servers (Ollama, LM Studio, llama.cpp) ignore the key, but the client refuses to start without one.
_DUMMY_API_KEY = "not-needed"
_HEALTH_TIMEOUT_S = 10.0
# The openai client numbers each try of a request in this header (0 = the first); an error carries its request.
_RETRY_COUNT_HEADER = "x-stainless-retry-count"

Message = dict[str, str]
# What llama.cpp (error type) and OpenAI (error code) call a prompt longer than the context window.
_CONTEXT_ERRORS = ("exceed_context_size_error", "context_length_exceeded")


@dataclass(frozen=True)
class JsonSchema:
    """The JSON schema of a reply, sent as ``response_format`` where the server supports it."""

    name: str
    schema: dict[str, Any]

    def response_format(self) -> dict[str, Any]:
        return {"type": "json_schema", "json_schema": {"name": self.name, "strict": True, "schema": self.schema}}


_REPAIRS_LOCK = threading.Lock()
_REPAIRS: Counter[str] = Counter()


def record_repair(caller: str) -> None:
    """Count one reply ``caller`` (judge, rerank, synthetic) could only use after repairing or re-asking."""
    with _REPAIRS_LOCK:
        _REPAIRS[caller] += 1


def repair_counts() -> dict[str, int]:
    """Repaired replies so far in this process, per caller."""
    with _REPAIRS_LOCK:
        return dict(_REPAIRS)


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
        self.json_schema_mode = settings.llm_json_schema
        # None until learned: whether the server takes a json_schema response_format (see the module docstring).
        self.json_schema_supported: bool | None = None
        self._props: dict[str, Any] | None = None
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
        json_schema: JsonSchema | None = None,
    ) -> ChatResult:
        """One completion of ``messages``; raises LlmUnavailableError (503), LlmContextExceededError (400) or
        LlmError (502). ``json_schema`` replaces ``response_format`` where the server supports schemas."""
        request: dict[str, Any] = {
            "model": self.model,
            "messages": list(messages),
            "temperature": self.temperature if temperature is None else temperature,
            "max_tokens": max_tokens or self.max_tokens,
        }
        if response_format is not None:
            request["response_format"] = response_format
        if json_schema is not None and self._schema_wanted():
            try:
                result = self._create({**request, "response_format": json_schema.response_format()})
            except LlmError as exc:
                if exc.details.get("status") != 400 or isinstance(exc, LlmContextExceededError):
                    raise
                # The server refuses the schema itself: the plain request from now on.
                logger.warning("%s refused a json_schema response_format (%s): sending without it", self.base_url, exc)
                self.json_schema_supported = False
            else:
                self.json_schema_supported = True
                return result
        return self._create(request)

    def _create(self, request: dict[str, Any]) -> ChatResult:
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

    def props(self) -> dict[str, Any]:
        """llama.cpp's ``GET /props`` (context window, model, slots), once per client; ``{}`` from other servers."""
        if self._props is None:
            root = self.base_url.removesuffix("/v1")
            try:
                with urllib.request.urlopen(f"{root}/props", timeout=min(self.timeout_s, _HEALTH_TIMEOUT_S)) as reply:
                    data = json.loads(reply.read())
            except (OSError, ValueError):  # not llama.cpp (404), unreachable, or not JSON
                data = {}
            self._props = data if isinstance(data, dict) and "default_generation_settings" in data else {}
        return self._props

    def context_window(self) -> int | None:
        """The tokens one request may hold: llama.cpp's slot context (/props), else /models metadata, else None."""
        settings = self.props().get("default_generation_settings")
        if isinstance(settings, dict) and isinstance(settings.get("n_ctx"), int):
            return int(settings["n_ctx"])
        try:
            probe = self._client.with_options(timeout=min(self.timeout_s, _HEALTH_TIMEOUT_S), max_retries=0)
            page = probe.models.list()
        except self._openai.OpenAIError:
            return None
        for model in page.data:
            if str(model.id) != self.model:
                continue
            extra = getattr(model, "model_extra", None) or {}
            meta = extra["meta"] if isinstance(extra.get("meta"), dict) else {}
            for value in (meta.get("n_ctx_train"), extra.get("context_length"), extra.get("max_model_len")):
                if isinstance(value, int):
                    return value
        return None

    def _schema_wanted(self) -> bool:
        if self.json_schema_mode == "off" or self.json_schema_supported is False:
            return False
        if self.json_schema_mode == "auto" and self.json_schema_supported is None:
            # llama.cpp answers /props; a server that does not is only sent schemas with CHUNKBENCH_LLM_JSON_SCHEMA=on.
            self.json_schema_supported = bool(self.props()) or None
            return bool(self.json_schema_supported)
        return True

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
        body = exc.body if isinstance(getattr(exc, "body", None), dict) else {}
        message = _server_message(exc)
        if status == 400 and (
            body.get("type") in _CONTEXT_ERRORS or body.get("code") in _CONTEXT_ERRORS or "context size" in message
        ):
            return self._context_exceeded(body, message)
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
            f"(HTTP {status}: {message}). {hint}",
            url=self.base_url,
            model=self.model,
            status=status,
        )

    def _context_exceeded(self, body: dict[str, Any], message: str) -> LlmContextExceededError:
        prompt_tokens, window = body.get("n_prompt_tokens"), body.get("n_ctx")
        size = f"{prompt_tokens} tokens" if isinstance(prompt_tokens, int) else "the prompt"
        limit = f" of {window} tokens" if isinstance(window, int) else ""
        return LlmContextExceededError(
            f"The prompt ({size}) does not fit the context window{limit} of model '{self.model}' at {self.base_url} "
            f"({message}). Raise CHUNKBENCH_LLM_CTX_SIZE (for `chunkbench llm serve`, --ctx-size) or the server's "
            "context size, or send less: smaller chunks, a lower top_k, fewer parent sections.",
            url=self.base_url,
            model=self.model,
            status=400,
            prompt_tokens=prompt_tokens,
            context_window=window,
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
        settings.llm_json_schema,
    )
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            client = _CLIENTS[key] = LlmClient(settings)
    return client
