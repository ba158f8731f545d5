"""A corpus processed as one job, through the real app and CLI: embedding batched across documents, current
documents skipped, failing ones recorded while the others go on, validation before any job."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from typer.testing import CliRunner

from chunkbench.app import create_app
from chunkbench.cli import app as cli_app
from chunkbench.config import Settings, get_settings
from chunkbench.models import DocumentTree, NodeType, TreeNode
from chunkbench.plugins import isolated_registries
from chunkbench.storage.db import Database
from chunkbench.storage.repositories import CorpusRepository
from chunkbench.storage.schema import DocumentRow, JobRow, StrategyRunRow
from chunkbench.storage.vectors import get_vector_store
from fake_openai import FakeOpenAI, running_fake_openai

REMOTE_MODEL = "text-embedding-3-small"
TOPICS = ["rivers", "forests", "deserts", "glaciers"]
STRATEGIES = ["fixed_size", "recursive"]
BODY = {
    "strategies": STRATEGIES,
    "corpus_model_id": REMOTE_MODEL,
    "params": {"fixed_size": {"chunk_size": 40, "chunk_overlap": 0}},
}
# A plugin Corpus model that refuses any text with this word, as a provider refuses an input (content policy,
# length): the document holding it must fail alone.
REFUSED_WORD = "FORBIDDEN"
REFUSING_PLUGIN = f'''
import numpy as np
from chunkbench.errors import EmbeddingError
from chunkbench.plugins import EmbeddingModelSpec, EmbeddingProvider, register_embedder


class RefusingProvider(EmbeddingProvider):
    def _embed(self, texts):
        if any("{REFUSED_WORD}" in text for text in texts):
            raise EmbeddingError("The embedding server refused a text of this document (content policy).")
        return np.array([[len(text) % 7 + 1.0, text.count(" ") + 1.0, 1.0] for text in texts], dtype=np.float32)


register_embedder(
    EmbeddingModelSpec(id="refusing-3", provider="plugin", model_name="refusing-3", dimension=3,
                       display_name="refuses texts with a marker word", default_semantic_threshold=0.5, batch_size=64),
    lambda spec, settings: RefusingProvider(spec),
)
'''


def document_text(topic: str, extra: str = "") -> str:
    """Two sections about ``topic`` (recursive: one chunk each; fixed_size of 40 tokens: several)."""
    sentence = f"The {topic} of the world change slowly over many thousands of years. {extra}"
    return f"## {topic.title()} today\n\n{sentence * 5}\n\n## {topic.title()} tomorrow\n\n{sentence * 4}\n"


def _upload(client: TestClient, name: str, text: str) -> str:
    response = client.post("/documents", files={"file": (name, text.encode())})
    assert response.status_code == 201, response.text
    return response.json()["document"]["id"]


def _corpus(client: TestClient, name: str, document_ids: list[str]) -> None:
    with client.app.state.database.session() as session:
        repository = CorpusRepository(session, "default")
        repository.add_documents(repository.create(name), document_ids)


def _embedding_requests(fake: FakeOpenAI) -> int:
    return sum(r.path.endswith("/embeddings") for r in fake.requests)


def _runs(client: TestClient) -> list[StrategyRunRow]:
    with client.app.state.database.session() as session:
        return list(session.scalars(select(StrategyRunRow)))


def _wait_job(client: TestClient, job_id: str) -> dict:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        job = client.get(f"/jobs/{job_id}").json()
        if job["status"] in ("succeeded", "failed"):
            return job
        time.sleep(0.1)
    pytest.fail("the corpus job did not finish")


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with running_fake_openai(dimension=1536) as server:
        yield server


@pytest.fixture
def remote_client(settings: Settings, fake: FakeOpenAI) -> Iterator[TestClient]:
    settings.openai_base_url, settings.openai_api_key, settings.llm_max_retries = fake.url, "sk-test", 0
    with TestClient(create_app(settings)) as client:
        yield client


@pytest.fixture
def corpus_ids(remote_client: TestClient) -> list[str]:
    ids = [_upload(remote_client, f"{topic}.md", document_text(topic)) for topic in TOPICS]
    _corpus(remote_client, "nature", ids)
    return ids


def test_a_corpus_job_embeds_across_documents_then_skips_what_is_current(
    remote_client: TestClient, fake: FakeOpenAI, corpus_ids: list[str], settings: Settings
):
    client = remote_client
    accepted = client.post("/corpora/nature/process", json=BODY)
    assert accepted.status_code == 202, accepted.text
    job = _wait_job(client, accepted.json()["job_id"])
    assert job["status"] == "succeeded", job
    assert job["kind"] == "process_corpus" and job["document_id"] is None
    with client.app.state.database.session() as session:
        assert session.get(JobRow, job["id"]).corpus_id is not None
    result = job["result"]
    assert (result["documents"], result["processed"], result["skipped"], result["failed"]) == (4, 4, 0, 0)
    # Every document's chunks of a strategy were embedded in one request: one per strategy for the corpus.
    assert _embedding_requests(fake) == len(STRATEGIES)

    store = get_vector_store(settings)
    counts = {}
    for document_id in corpus_ids:
        document = client.get(f"/documents/{document_id}").json()
        assert document["status"] == "indexed"
        counts[document_id] = document["chunk_counts"]
        for strategy in STRATEGIES:
            points = store.count_document(strategy, REMOTE_MODEL, tenant_id="default", document_id=document_id)
            assert points == document["chunk_counts"][strategy]
    assert {c["recursive"] for c in counts.values()} == {2}  # one chunk per section
    for row in result["strategies"]:
        assert row["processed"] == 4 and row["chunks"] == sum(c[row["strategy"]] for c in counts.values())
        assert {d["status"] for d in row["documents"]} == {"processed"}
    assert result["chunks"] == sum(sum(c.values()) for c in counts.values())
    runs = _runs(client)
    assert len(runs) == 4 * len(STRATEGIES)
    hashes = {d: client.get(f"/documents/{d}").json()["content_hash"] for d in corpus_ids}
    assert all(run.details["content_hash"] == hashes[run.document_id] for run in runs)

    # Nothing changed: every document is skipped, nothing is embedded or written again.
    again = client.post("/corpora/nature/process", params={"wait": "true"}, json=BODY)
    assert again.status_code == 200, again.text
    assert (again.json()["skipped"], again.json()["processed"]) == (4, 0)
    assert [d["chunk_count"] for d in again.json()["strategies"][0]["documents"]] == [
        counts[d]["fixed_size"] for d in corpus_ids
    ]
    assert _embedding_requests(fake) == len(STRATEGIES)
    assert len(_runs(client)) == len(runs)

    # Other fixed_size parameters: that strategy runs again on every document, recursive stays current.
    other = {**BODY, "params": {"fixed_size": {"chunk_size": 30, "chunk_overlap": 0}}}
    third = client.post("/corpora/nature/process", params={"wait": "true"}, json=other).json()
    by_strategy = {row["strategy"]: row for row in third["strategies"]}
    assert (by_strategy["fixed_size"]["processed"], by_strategy["recursive"]["skipped"]) == (4, 4)
    assert _embedding_requests(fake) == len(STRATEGIES) + 1
    assert len(_runs(client)) == len(runs) + 4


def test_batches_are_bounded_by_their_chunk_count(
    remote_client: TestClient, fake: FakeOpenAI, corpus_ids: list[str], settings: Settings
):
    settings.corpus_batch_chunks = 1  # every document closes its batch: one request per document and strategy
    result = remote_client.post("/corpora/nature/process", params={"wait": "true"}, json=BODY)
    assert result.status_code == 200, result.text
    assert result.json()["processed"] == 4
    assert _embedding_requests(fake) == 4 * len(STRATEGIES)


def test_bad_requests_are_refused_before_any_job(remote_client: TestClient, corpus_ids: list[str]):
    client = remote_client
    missing = client.post("/corpora/nowhere/process", json=BODY)
    assert missing.status_code == 404 and missing.json()["error"] == "corpus_not_found"
    with client.app.state.database.session() as session:
        CorpusRepository(session, "default").create("empty")
    empty = client.post("/corpora/empty/process", json=BODY)
    assert empty.status_code == 400 and "has no documents" in empty.json()["message"]
    stray = client.post("/corpora/nature/process", json={**BODY, "strategies": ["recursive"]})
    assert stray.status_code == 400 and "fixed_size" in stray.json()["message"]
    overlap = client.post("/corpora/nature/process", json={**BODY, "params": {"fixed_size": {"chunk_overlap": 999}}})
    assert overlap.status_code == 400
    unknown_model = client.post("/corpora/nature/process", json={**BODY, "corpus_model_id": "no-such-model"})
    assert unknown_model.status_code == 400
    assert client.get("/jobs").json() == []
    assert _runs(client) == []


@pytest.fixture
def refusing_client(settings: Settings, tmp_path: Path) -> Iterator[TestClient]:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "refusing.py").write_text(REFUSING_PLUGIN, encoding="utf-8")
    settings.plugins_dir = plugins
    with isolated_registries(), TestClient(create_app(settings)) as client:
        yield client


def _empty_document(client: TestClient) -> str:
    """A stored document without text (an old parser's output): every strategy cuts nothing from it."""
    tree = DocumentTree(root=TreeNode(node_type=NodeType.DOCUMENT, heading="Blank"))
    with client.app.state.database.session() as session:
        row = DocumentRow(
            id="b" * 32, filename="blank.md", content_hash="0" * 64, file_size=0, mime_type="text/markdown",
            parsed_text="", document_tree=tree.to_dict(), status="parsed",
        )  # fmt: skip
        session.add(row)
    return "b" * 32


def test_a_failing_document_is_recorded_and_the_others_go_on(refusing_client: TestClient, settings: Settings):
    client = refusing_client
    good = [_upload(client, f"{topic}.md", document_text(topic)) for topic in TOPICS[:3]]
    refused = _upload(client, "refused.md", document_text("oceans", extra=REFUSED_WORD))
    blank = _empty_document(client)
    _corpus(client, "mixed", [good[0], refused, good[1], blank, good[2]])
    settings.corpus_batch_chunks = 10_000  # all five in one batch: the refused text fails only its document
    body = {"strategies": ["recursive"], "corpus_model_id": "refusing-3"}
    result = client.post("/corpora/mixed/process", params={"wait": "true"}, json=body).json()
    assert (result["processed"], result["failed"], result["skipped"]) == (3, 2, 0)
    outcomes = {d["document_id"]: d for d in result["strategies"][0]["documents"]}
    assert outcomes[refused]["status"] == "failed" and "refused a text" in outcomes[refused]["message"]
    assert outcomes[blank]["status"] == "failed" and outcomes[blank]["error"] == "chunking_error"
    assert "no text to index" in outcomes[blank]["message"]
    for document_id in good:
        assert outcomes[document_id]["status"] == "processed"
        assert client.get(f"/documents/{document_id}").json()["status"] == "indexed"
    for document_id in (refused, blank):
        document = client.get(f"/documents/{document_id}").json()
        assert document["status"] == "failed" and document["error_message"]
        assert document["chunk_counts"] == {}
        runs = client.get(f"/documents/{document_id}/runs").json()
        assert [run["status"] for run in runs] == ["failed"]
    store = get_vector_store(settings)
    assert store.count_document("recursive", "refusing-3", tenant_id="default", document_id=refused) == 0

    # The failed ones are tried again (nothing current to skip), the others are skipped.
    again = client.post("/corpora/mixed/process", params={"wait": "true"}, json=body).json()
    assert (again["processed"], again["failed"], again["skipped"]) == (0, 2, 3)


def test_the_cli_processes_a_corpus_with_a_summary_and_fails_when_a_document_failed(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "refusing.py").write_text(REFUSING_PLUGIN, encoding="utf-8")
    files = tmp_path / "files"
    files.mkdir()
    for topic in TOPICS[:2]:
        (files / f"{topic}.md").write_text(document_text(topic), encoding="utf-8")
    (files / "refused.md").write_text(document_text("oceans", extra=REFUSED_WORD), encoding="utf-8")
    monkeypatch.setenv("CHUNKBENCH_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("CHUNKBENCH_PLUGINS_DIR", str(plugins))
    get_settings.cache_clear()
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(cli_app, list(args), catch_exceptions=False)

    try:
        with isolated_registries():
            ingested = json.loads(invoke("ingest", str(files), "--json").stdout)
            database = Database.from_settings(settings)
            with database.session() as session:
                repository = CorpusRepository(session, "default")
                repository.add_documents(repository.create("cli"), [r["document"]["id"] for r in ingested])

            both = invoke("process", "refused.md", "--corpus", "cli")
            assert both.exit_code == 2 and "exactly one" in both.output
            args = [
                "process",
                "--corpus",
                "cli",
                "--strategies",
                "recursive,fixed_size",
                "--corpus-model",
                "refusing-3",
            ]
            table = invoke(*args)
            assert table.exit_code == 1, table.output
            assert "failed documents" in table.stdout and "refused.md" in table.stdout
            assert "3 documents — 2 processed, 0 skipped, 1 failed" in table.stdout
            as_json = invoke(*args, "--json")
            assert as_json.exit_code == 1
            result = json.loads(as_json.stdout)
            assert [(row["strategy"], row["skipped"], row["failed"]) for row in result["strategies"]] == [
                ("recursive", 2, 1),
                ("fixed_size", 2, 1),
            ]
            with database.session() as session:
                # First run: 3 documents × 2 strategies; second: only the failed document's 2 again.
                assert session.scalar(select(func.count()).select_from(StrategyRunRow)) == 6 + 2
            database.dispose()
    finally:
        get_settings.cache_clear()
