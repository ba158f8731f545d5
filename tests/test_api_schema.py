"""schemathesis against the app's own OpenAPI schema, in-process (ASGI): a bounded, derandomized run that
must find no server error, no response outside the declared schema and no undeclared status code."""

from __future__ import annotations

from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.python import asgi
from schemathesis.specs.openapi.checks import response_schema_conformance, status_code_conformance

from chunkbench.app import create_app
from chunkbench.config import Settings
from fake_openai import running_fake_openai

# Examples per operation: with about 45 operations the run takes ~35 s here. Derandomized: the same cases on
# every run, so a failure reproduces.
MAX_EXAMPLES = 8
CHECKS = [not_a_server_error, response_schema_conformance, status_code_conformance]


def _run_operation(operation: schemathesis.APIOperation) -> None:
    @given(case=operation.as_strategy())
    @settings(max_examples=MAX_EXAMPLES, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    def run(case: schemathesis.Case) -> None:
        case.call_and_validate(checks=CHECKS)

    run()


@pytest.mark.model
def test_the_api_conforms_to_its_schema(tmp_path: Path) -> None:
    failures: dict[str, str] = {}
    operations = 0
    # An LLM is configured (the local fake): features that need one answer as in service, instead of a 503
    # "no LLM configured" that would count as a server error.
    with running_fake_openai() as llm:
        app_settings = Settings(
            _env_file=None, data_dir=tmp_path / "data", llm_base_url=llm.url, llm_model="fake-model", llm_max_retries=0
        )
        schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(app_settings))
        try:
            for result in schema.get_all_operations():
                operation = result.ok()
                operations += 1
                try:
                    _run_operation(operation)
                except (Exception, BaseExceptionGroup) as exc:  # collected: one run reports every failing operation
                    failures[operation.label] = str(exc)[:3000]
        finally:
            asgi.shutdown_lifespans()  # schemathesis started the app's lifespan; end it (database, Qdrant, jobs)
    assert operations >= 40  # every route was exercised, none silently dropped from the schema
    assert not failures, "\n\n".join(f"{label}:\n{message}" for label, message in failures.items())
