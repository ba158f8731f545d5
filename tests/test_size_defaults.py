"""Size defaults that fit the Corpus model (issue 23): defaults follow what the model reads whole, given sizes are
kept, and a size beyond the model's window is flagged before processing (plan, API 202/200, CLI)."""

from __future__ import annotations

import json
import time

import pytest
from typer.testing import CliRunner

from chunkbench.chunking.base import readable_sizes, size_defaults, validate_params
from chunkbench.chunking.strategies.contextual_retrieval import CONTEXT_PREFIX_TOKENS
from chunkbench.cli import app
from chunkbench.config import get_settings
from chunkbench.embedding.registry import get_spec
from chunkbench.indexing.sizes import fit_to_model
from chunkbench.models import StrategyName
from chunkbench.storage.repositories import CorpusRepository
from chunkbench.text.tokens import get_tokenizer

MINILM = get_spec("all-MiniLM-L6-v2")
READABLE = MINILM.readable_chunk_tokens
# Sentences that do not repeat in a row, so BPE counts stay ordinary prose.
SENTENCES = [
    "The harbour master logged every ship that entered the bay before sunrise.",
    "Fishermen sold their catch at the market square while gulls circled overhead.",
    "A storm in the north delayed the ferry by almost three hours that week.",
    "The lighthouse keeper repaired the lamp with parts ordered from the capital.",
    "Children learned to swim in the shallow water behind the old stone pier.",
]
PROSE = "# Harbour\n\n" + "\n\n".join(" ".join(SENTENCES[(i + j) % 5] for j in range(5)) for i in range(24)) + "\n"


def test_minilm_size_defaults_follow_what_it_reads_whole():
    assert READABLE is not None and READABLE < 256  # word pieces: MiniLM cannot read 512 cl100k tokens whole
    assert size_defaults(StrategyName.FIXED_SIZE, READABLE) == {"chunk_size": READABLE}
    assert size_defaults(StrategyName.RECURSIVE, READABLE) == {"chunk_size": READABLE}
    assert size_defaults(StrategyName.SEMANTIC, READABLE) == {"max_tokens": READABLE}
    # Only the children of semantic_parent_child are embedded; their own default (256) is cut to what fits.
    assert size_defaults(StrategyName.SEMANTIC_PARENT_CHILD, READABLE) == {"child_max_tokens": min(256, READABLE)}
    # Contextual retrieval embeds a prefix in front of each chunk: the chunk gets what is left.
    contextual = size_defaults(StrategyName.CONTEXTUAL_RETRIEVAL, READABLE)
    assert contextual == {"chunk_size": READABLE - CONTEXT_PREFIX_TOKENS}
    assert readable_sizes(StrategyName.CONTEXTUAL_RETRIEVAL, READABLE) == contextual


def test_the_registry_holds_the_measured_readable_sizes():
    # perf/defaults.py measured them; a registry edit without a new measurement (or the reverse) fails here.
    from pathlib import Path

    measured = json.loads((Path(__file__).parents[1] / "perf" / "results" / "defaults.json").read_text())["read"]
    chosen = measured["chosen"]
    assert chosen["all-MiniLM-L6-v2"]["default_chunk_tokens"] == READABLE
    assert (
        get_spec("all-mpnet-base-v2").readable_chunk_tokens
        == chosen["all-mpnet-base-v2 (MiniLM's tokenizer)"]["default_chunk_tokens"]
    )
    assert (
        get_spec("nomic-embed-text-v2-moe").readable_chunk_tokens
        == chosen["multilingual-e5-small"]["default_chunk_tokens"]
    )
    assert measured["by_text"]["english prose"][str(READABLE)]["all-MiniLM-L6-v2"]["read_whole"] >= 0.95


def test_models_with_a_large_or_no_window_keep_the_strategies_own_defaults():
    assert size_defaults(StrategyName.FIXED_SIZE, get_spec("text-embedding-3-small").readable_chunk_tokens) == {
        "chunk_size": 512
    }
    # e5's engine reads a long text as the mean of its windows: no size follows it, nothing is flagged.
    e5 = get_spec("multilingual-e5-small")
    assert size_defaults(StrategyName.FIXED_SIZE, e5.readable_chunk_tokens) == {}
    params = ((StrategyName.FIXED_SIZE, validate_params(StrategyName.FIXED_SIZE, {"chunk_size": 2048})),)
    assert fit_to_model(params, {StrategyName.FIXED_SIZE: {"chunk_size"}}, e5)[1] == ()


def test_fit_keeps_given_sizes_and_warns_for_those_beyond_the_window():
    fixed, recursive = StrategyName.FIXED_SIZE, StrategyName.RECURSIVE
    strategies = (
        (fixed, validate_params(fixed, {"chunk_size": 512})),
        (recursive, validate_params(recursive, {})),
    )
    fitted, warnings = fit_to_model(strategies, {fixed: {"chunk_size"}, recursive: set()}, MINILM)
    assert dict(fitted)[fixed].chunk_size == 512  # given: kept as given
    assert dict(fitted)[recursive].chunk_size == READABLE  # not given: the model's default
    assert [(w.strategy, w.param, w.value, w.readable) for w in warnings] == [
        ("fixed_size", "chunk_size", 512, READABLE)
    ]
    message = warnings[0].message
    assert f"chunk_size={READABLE} or less" in message and "all-MiniLM-L6-v2" in message


def test_a_default_that_clashes_with_a_given_overlap_names_the_model():
    strategies = ((StrategyName.FIXED_SIZE, validate_params(StrategyName.FIXED_SIZE, {"chunk_overlap": 300})),)
    with pytest.raises(Exception, match=r"chunk_overlap \(300\) must be less than chunk_size.*all-MiniLM-L6-v2"):
        fit_to_model(strategies, {StrategyName.FIXED_SIZE: set()}, MINILM)


# --------------------------------------------------------------------------- API


def _finished(client, status_url: str) -> dict:
    """The job at ``status_url`` once it has ended (it must succeed)."""
    for _ in range(1200):
        polled = client.get(status_url).json()
        if polled["status"] in ("succeeded", "failed", "cancelled"):
            break
        time.sleep(0.1)
    assert polled["status"] == "succeeded", polled
    return polled


@pytest.fixture
def document_id(client) -> str:
    response = client.post("/documents", files={"file": ("harbour.md", PROSE.encode())})
    assert response.status_code == 201, response.text
    return response.json()["document"]["id"]


@pytest.mark.model
def test_processing_uses_the_models_default_and_records_it(client, document_id):
    response = client.post(
        f"/documents/{document_id}/process", params={"wait": "true"}, json={"strategies": ["fixed_size"]}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["size_warnings"] == []
    assert body["completed"][0]["params"]["chunk_size"] == READABLE
    run = client.get(f"/documents/{document_id}/runs").json()[0]
    assert run["params"]["chunk_size"] == READABLE  # what an Experiment reads back
    chunks = client.get(f"/admin/chunks/{document_id}", params={"strategy": "fixed_size", "limit": 100}).json()
    # Every chunk is read whole by MiniLM: the default fits the model.
    assert chunks["chunks"] and not any(c["beyond_window"] for c in chunks["chunks"])
    assert max(c["token_count"] for c in chunks["chunks"]) <= READABLE


@pytest.mark.model
def test_a_size_beyond_the_window_is_flagged_in_the_202_body_before_the_work(client, document_id):
    body = {"strategies": ["fixed_size", "recursive"], "params": {"fixed_size": {"chunk_size": 512}}}
    accepted = client.post(f"/documents/{document_id}/process", json=body)
    assert accepted.status_code == 202, accepted.text
    warnings = accepted.json()["size_warnings"]
    assert [(w["kind"], w["strategy"], w["param"], w["value"]) for w in warnings] == [
        ("beyond_window", "fixed_size", "chunk_size", 512)
    ]
    assert warnings[0]["readable"] == READABLE and warnings[0]["window_tokens"] == 256
    polled = _finished(client, accepted.json()["status_url"])
    assert polled["result"]["size_warnings"] == warnings  # and in the result
    # Processed as asked: the chunks past the window are there, and the preview says so.
    chunks = client.get(f"/admin/chunks/{document_id}", params={"strategy": "fixed_size", "limit": 100}).json()
    assert any(c["beyond_window"] for c in chunks["chunks"])


@pytest.mark.model
def test_a_corpus_job_flags_a_size_beyond_the_window_in_its_202_body_and_result(client, document_id):
    with client.app.state.database.session() as session:
        repository = CorpusRepository(session, "default")
        repository.add_documents(repository.create("harbour"), [document_id])
    body = {"strategies": ["recursive"], "params": {"recursive": {"chunk_size": 300}}}
    accepted = client.post("/corpora/harbour/process", json=body)
    assert accepted.status_code == 202, accepted.text
    warnings = accepted.json()["size_warnings"]
    assert [(w["strategy"], w["value"]) for w in warnings] == [("recursive", 300)]
    assert _finished(client, accepted.json()["status_url"])["result"]["size_warnings"] == warnings
    done = client.post("/corpora/harbour/process", params={"wait": "true"}, json={"strategies": ["recursive"]})
    assert done.status_code == 200, done.text
    # Without a size: MiniLM's default, nothing flagged.
    assert done.json()["size_warnings"] == []


def test_strategies_endpoint_gives_each_models_defaults(client):
    minilm = {s["name"]: s for s in client.get("/strategies").json()}  # the Admin Corpus role: MiniLM
    assert minilm["fixed_size"]["corpus_model_id"] == "all-MiniLM-L6-v2"
    assert minilm["fixed_size"]["size_defaults"] == {"chunk_size": READABLE}
    assert minilm["fixed_size"]["readable_sizes"] == {"chunk_size": READABLE}
    assert minilm["fixed_size"]["params_schema"]["properties"]["chunk_size"]["default"] == 512  # unchanged schema
    openai = {s["name"]: s for s in client.get("/strategies", params={"corpus_model": "text-embedding-3-small"}).json()}
    assert openai["fixed_size"]["size_defaults"] == {"chunk_size": 512}
    e5 = {s["name"]: s for s in client.get("/strategies", params={"corpus_model": "multilingual-e5-small"}).json()}
    assert e5["fixed_size"]["size_defaults"] == {} and e5["fixed_size"]["readable_sizes"] == {}
    unknown = client.get("/strategies", params={"corpus_model": "no-such-model"})
    assert unknown.status_code in (400, 404) and "Known models" in unknown.json()["message"]


# --------------------------------------------------------------------------- CLI

runner = CliRunner()


@pytest.fixture
def data_dir(tmp_path, monkeypatch, database_url):
    monkeypatch.setenv("CHUNKBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CHUNKBENCH_DATABASE_URL", database_url)
    get_settings.cache_clear()
    yield tmp_path / "data"
    get_settings.cache_clear()


def _invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_cli_strategies_shows_the_models_defaults(data_dir):
    catalog = {s["name"]: s for s in json.loads(_invoke("strategies", "--json").stdout)}
    assert catalog["fixed_size"]["params"]["chunk_size"] == READABLE
    assert catalog["fixed_size"]["corpus_model_id"] == "all-MiniLM-L6-v2"
    openai = json.loads(_invoke("strategies", "--corpus-model", "text-embedding-3-large", "--json").stdout)
    assert {s["name"]: s for s in openai}["fixed_size"]["params"]["chunk_size"] == 512
    table = " ".join(_invoke("strategies").stdout.split())
    assert f"follow the Corpus model all-MiniLM-L6-v2: it reads chunks of up to {READABLE} cl100k tokens" in table


@pytest.mark.model
def test_cli_process_warns_before_the_work_and_keeps_the_given_size(data_dir, tmp_path):
    source = tmp_path / "harbour.md"
    source.write_text(PROSE)
    assert _invoke("ingest", str(source)).exit_code == 0
    result = _invoke("process", "harbour.md", "--strategies", "fixed_size", "--param", "fixed_size.chunk_size=512")
    assert result.exit_code == 0, result.stdout
    text = " ".join(result.stdout.split())
    warning = text.index("warning: fixed_size: chunk_size=512 is beyond what all-MiniLM-L6-v2 reads whole")
    assert warning < text.index(": indexed (corpus all-MiniLM-L6-v2)")  # told before the work and its result
    runs = json.loads(_invoke("process", "harbour.md", "--strategies", "fixed_size", "--json").stdout)
    assert runs["completed"][0]["params"]["chunk_size"] == READABLE and runs["size_warnings"] == []
    expected = len(get_tokenizer().encode(PROSE)) // READABLE
    assert runs["chunk_counts"]["fixed_size"] >= expected


@pytest.mark.model
def test_a_chunk_size_set_in_settings_is_kept_as_given(data_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("CHUNKBENCH_CHUNK_SIZE", "400")
    get_settings.cache_clear()
    source = tmp_path / "harbour.md"
    source.write_text(PROSE)
    assert _invoke("ingest", str(source)).exit_code == 0
    result = _invoke("process", "harbour.md", "--strategies", "recursive", "--json")
    body = json.loads(result.stdout)
    assert body["completed"][0]["params"]["chunk_size"] == 400
    assert [w["value"] for w in body["size_warnings"]] == [400]
    assert "warning: recursive: chunk_size=400" in result.stderr
