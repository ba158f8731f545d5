"""Domain errors. The hierarchy is the documentation: each class knows its HTTP status and a message
that tells the user what to do. Routes never catch and re-shape exceptions; ``app.py`` maps them."""

from __future__ import annotations

from typing import Any


class ChunkbenchError(Exception):
    """Base of every error chunkbench raises on purpose."""

    status_code: int = 500
    code: str = "internal_error"
    # Response headers the status calls for (WWW-Authenticate on a 401, Retry-After on a 429).
    headers: dict[str, str] | None = None

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"error": self.code, "message": self.message}
        if self.details:
            body["details"] = self.details
        return body


class NotFoundError(ChunkbenchError):
    status_code = 404
    code = "not_found"


class DocumentNotFoundError(NotFoundError):
    code = "document_not_found"


class CorpusNotFoundError(NotFoundError):
    code = "corpus_not_found"


class NotInCorpusError(NotFoundError):
    """The document exists but is not a member of the corpus it is to be removed from."""

    code = "not_in_corpus"


class InvalidRequestError(ChunkbenchError):
    """The request itself is wrong (bad parameter, bad path)."""

    status_code = 400
    code = "invalid_request"


class PathOutsideDataDirError(InvalidRequestError):
    code = "path_outside_data_dir"


class AmbiguousDocumentError(InvalidRequestError):
    """A filename that several documents share (in different folders): the source key tells them apart."""

    code = "ambiguous_document"


class InvalidCorpusNameError(InvalidRequestError):
    status_code = 422
    code = "invalid_corpus_name"


class DocumentProcessingError(ChunkbenchError):
    """A file could not be turned into a document (docs/api.md)."""

    status_code = 400
    code = "document_processing_error"


class EmptyDocumentError(DocumentProcessingError):
    code = "empty_document"


class CorruptDocumentError(DocumentProcessingError):
    code = "corrupt_document"


class EncryptedDocumentError(DocumentProcessingError):
    code = "encrypted_document"


class ScannedPdfError(DocumentProcessingError):
    """The Text-layer Gate refused a PDF that has (almost) no extractable text."""

    # A readable, well-formed PDF whose content cannot be used without OCR: unprocessable, not malformed.
    status_code = 422
    code = "scanned_pdf"


class TooLittleTextError(DocumentProcessingError):
    """A PDF with a text layer and no scanned page, but fewer real characters than the floor
    (``CHUNKBENCH_PDF_MIN_REAL_CHARS``): nothing to answer a question from."""

    status_code = 422
    code = "too_little_text"


class ArchiveBombError(DocumentProcessingError):
    code = "archive_bomb"


class ConversionError(DocumentProcessingError):
    """An external converter (LibreOffice) failed or timed out."""

    code = "conversion_failed"


class OcrFailedError(ConversionError):
    """Tesseract failed or timed out on a page (CHUNKBENCH_OCR=on)."""

    code = "ocr_failed"


class UnsupportedFileTypeError(DocumentProcessingError):
    status_code = 415
    code = "unsupported_file_type"


class ConverterUnavailableError(UnsupportedFileTypeError):
    """The format is supported, but the converter it needs is not installed on this machine."""

    code = "converter_unavailable"


class FileTooLargeError(DocumentProcessingError):
    status_code = 413
    code = "file_too_large"


class ChunkingError(ChunkbenchError):
    """A strategy could not run: unknown name, bad parameters, missing Boundary embeddings."""

    status_code = 400
    code = "chunking_error"


class MissingExtraError(ChunkingError):
    """A strategy runs a library that is not installed (an optional extra): the message names the install command."""

    code = "missing_extra"


class MissingGrammarError(ChunkingError):
    """A code strategy has no tree-sitter grammar for the language and cannot fetch one: the message says how."""

    code = "missing_grammar"


class EmbeddingError(ChunkbenchError):
    """An embedding provider failed or is not available (model not installed, server down)."""

    status_code = 400
    code = "embedding_error"


class VectorStoreError(ChunkbenchError):
    """Qdrant refused or failed an operation (docs/api.md)."""

    status_code = 400
    code = "vector_store_error"


class EmbeddingCacheError(ChunkbenchError):
    """The embedding cache file cannot be changed (permissions, a corrupt file); embedding itself still works."""

    status_code = 500
    code = "embedding_cache_error"


class DatabaseUnavailableError(ChunkbenchError):
    """The metadata store cannot be reached (server down, wrong host or credentials, connection lost)."""

    status_code = 503
    code = "database_unavailable"


class LlmError(ChunkbenchError):
    """The LLM answered, but not usably (bad JSON, refused request, unknown model)."""

    status_code = 502
    code = "llm_error"


class LlmUnavailableError(LlmError):
    """The configured LLM server cannot be reached, timed out, or kept failing after retries."""

    status_code = 503
    code = "llm_unavailable"


class LlmContextExceededError(LlmError):
    """The prompt (plus the tokens asked for) does not fit the model's context window."""

    status_code = 400
    code = "llm_context_exceeded"


class LlmModelFileError(ChunkbenchError):
    """The GGUF model file to serve is missing, not a file, or cannot be read."""

    status_code = 400
    code = "llm_model_file"


class NotGgufError(LlmModelFileError):
    """The model file does not start with the GGUF magic: llama.cpp serves GGUF files only."""

    code = "not_gguf"


class QueryError(ChunkbenchError):
    """A query cannot run as asked (document not processed with that strategy, reranker missing…)."""

    status_code = 400
    code = "query_error"


class CollectionMissingError(QueryError):
    """A search named a (strategy, Corpus model) collection that does not exist: nothing was processed that way."""


class NotIndexedError(ChunkbenchError):
    """A query names a (document, strategy, Corpus model) whose points were removed (a wipe, a dropped collection,
    a failed upsert): the run is marked not indexed until the document is processed again."""

    status_code = 409
    code = "not_indexed"


class PluginError(ChunkbenchError):
    """A plugin under CHUNKBENCH_PLUGINS_DIR failed to import or registered something invalid; start is refused."""

    status_code = 500
    code = "plugin_error"


class LanguageNotCoveredError(InvalidRequestError):
    """A document is in a language its Corpus or Boundary model does not cover (``allow_language_mismatch``
    accepts it, with a warning on the run)."""

    code = "language_not_covered"


class EvaluationError(InvalidRequestError):
    """An evaluation cannot run as asked: missing or malformed documents or questions, unknown document ids,
    references that do not match their document, bad evaluation options."""

    code = "evaluation_error"


class InvalidStateTransitionError(ChunkbenchError):
    status_code = 409
    code = "invalid_state_transition"


class BenchmarkError(ChunkbenchError):
    """A benchmark request that cannot run as given (unprocessed strategy, judge without an LLM, …)."""

    status_code = 400
    code = "benchmark_error"


class QuestionDocumentError(BenchmarkError):
    """A corpus benchmark's question names a document that is not in the corpus."""

    code = "question_document_not_in_corpus"


class JobCancelledError(ChunkbenchError):
    """Long work stopped at a safe point (between cells, documents or strategies) because its job was cancelled;
    what it finished is kept, and running it again (or resuming the Experiment) does the rest."""

    status_code = 409
    code = "cancelled"


class JobNotActiveError(ChunkbenchError):
    """A job that has already ended (or a run no job of this server drives) cannot be cancelled."""

    status_code = 409
    code = "job_not_active"


class ExperimentStateError(ChunkbenchError):
    """An Experiment in a state that forbids the operation (resume a completed run, report a missing one)."""

    status_code = 409
    code = "experiment_state_error"


class QuestionSetError(ChunkbenchError):
    """A question file cannot be read as a question set; ``details.problems`` names file, line/row and field."""

    status_code = 422
    code = "invalid_question_set"


class QuestionFileNotFoundError(NotFoundError):
    code = "question_file_not_found"


class QuestionNotFoundError(NotFoundError):
    """A question (or one of its references) that the question file does not hold."""

    code = "question_not_found"


class QuestionFileExistsError(ChunkbenchError):
    """An upload or generation would overwrite a question file without being asked to."""

    status_code = 409
    code = "question_file_exists"


class LlmNotConfiguredError(ChunkbenchError):
    """A feature that needs an LLM (question generation) was asked for, but no LLM is configured."""

    status_code = 503
    code = "llm_not_configured"


class AuthenticationError(ChunkbenchError):
    """No usable API key: the ``Authorization: Bearer`` header is missing or malformed, or the key is unknown or
    revoked (one answer for all, so a caller learns nothing about which keys exist)."""

    status_code = 401
    code = "unauthorized"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message, **details)
        self.headers = {"WWW-Authenticate": "Bearer"}


class PermissionDeniedError(ChunkbenchError):
    """A valid key without the scope the endpoint needs (``admin`` for ``/admin/*``, ``operator`` for what acts on
    the whole deployment)."""

    status_code = 403
    code = "forbidden"


class RateLimitedError(ChunkbenchError):
    """The tenant spent its request budget; ``Retry-After`` says in how many seconds one more request fits."""

    status_code = 429
    code = "rate_limited"

    def __init__(self, message: str, *, retry_after_s: int, **details: Any) -> None:
        super().__init__(message, retry_after_s=retry_after_s, **details)
        self.headers = {"Retry-After": str(retry_after_s)}


class TenantNotFoundError(NotFoundError):
    code = "tenant_not_found"


class ApiKeyNotFoundError(NotFoundError):
    code = "api_key_not_found"


class TenantExistsError(ChunkbenchError):
    status_code = 409
    code = "tenant_exists"


class CorpusExistsError(ChunkbenchError):
    status_code = 409
    code = "corpus_exists"


class InsecureBindError(ChunkbenchError):
    """``serve`` asked to listen beyond loopback while authentication is off."""

    status_code = 400
    code = "insecure_bind"


class DependencyUnavailableError(ChunkbenchError):
    """The configuration asks for an optional extra that is not installed (e.g. the Presidio PII detector)."""

    status_code = 503
    code = "dependency_unavailable"


class OcrUnavailableError(DependencyUnavailableError):
    """OCR is on (CHUNKBENCH_OCR=on) but the Tesseract binary or a language pack it needs is not installed."""

    code = "ocr_unavailable"


class LocalLlmUnavailableError(DependencyUnavailableError):
    """Serving a model in process needs xllamacpp (the ``llm`` extra), which is not installed."""

    code = "llm_server_missing"
