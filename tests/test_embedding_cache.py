"""The embedding cache: every text embedded once per model — in memory, on disk across restarts and processes,
bounded, clearable — with the real MiniLM, a real OpenAI-protocol server for the task prefixes, real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import numpy as np
import pytest
from typer.testing import CliRunner

from chunkbench.cli import app as cli_app
from chunkbench.config import Settings, get_settings
from chunkbench.embedding import roles
from chunkbench.embedding.cache import EMBEDDINGS, EmbeddingCache, cache_key, close_disk_caches, disk_cache
from chunkbench.embedding.providers import get_provider
from chunkbench.embedding.registry import get_spec
from fake_openai import FakeOpenAI, running_fake_openai
from test_embedding import NOMIC
from test_queries import HANDBOOK

MINILM = get_spec("all-MiniLM-L6-v2")
TEXTS = ["Paid annual leave is 25 days.", "Hotels are reimbursed up to 150 euros.", "The desk answers in a day."]


@pytest.fixture
def ollama(settings: Settings) -> Iterator[tuple[Settings, FakeOpenAI]]:
    """Settings whose Ollama is a real OpenAI-protocol server (768-d vectors by text), and that server."""
    with running_fake_openai(dimension=NOMIC.dimension) as server:
        yield settings.model_copy(update={"ollama_base_url": server.url.removesuffix("/v1")}), server


def _inputs(server: FakeOpenAI) -> list[list[str]]:
    return [r.body["input"] for r in server.requests if r.path.endswith("/embeddings")]


@pytest.fixture
def model_calls(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text the real MiniLM was asked to embed."""
    provider = get_provider(MINILM, settings)
    calls: list[str] = []
    real = provider.embed

    def counting(texts, purpose="document"):
        calls.extend(texts)
        return real(texts, purpose)

    monkeypatch.setattr(provider, "embed", counting)
    return calls


@pytest.mark.model
def test_a_text_is_embedded_once_and_the_vectors_are_the_models(settings, model_calls):
    first = roles.embed_texts(MINILM, TEXTS, "document", settings)
    again = roles.embed_texts(MINILM, [TEXTS[1], "A new sentence.", TEXTS[0]], "document", settings)
    assert model_calls == [*TEXTS, "A new sentence."]
    np.testing.assert_array_equal(again[0], first[1])
    np.testing.assert_array_equal(again[2], first[0])
    direct = get_provider(MINILM, settings).embed(["A new sentence."], "document")
    np.testing.assert_allclose(again[1], direct[0], atol=1e-6)


@pytest.mark.model
def test_vectors_survive_a_restart_bit_for_bit(settings, model_calls):
    first = roles.embed_texts(MINILM, TEXTS, "document", settings)
    EMBEDDINGS.clear()
    close_disk_caches()  # a new process: nothing in memory, the file opened afresh
    fresh = EmbeddingCache()
    again = fresh.embed(MINILM, TEXTS, "document", settings)
    assert model_calls == TEXTS and (fresh.embedded, fresh.from_disk) == (0, 3)
    np.testing.assert_array_equal(again, first)


@pytest.mark.model
def test_another_process_reads_what_this_one_embedded_and_both_may_write_at_once(settings, model_calls, tmp_path):
    roles.embed_texts(MINILM, TEXTS, "document", settings)
    script = textwrap.dedent(
        """
        import json, sys
        from chunkbench.config import Settings
        from chunkbench.embedding.cache import EMBEDDINGS
        from chunkbench.embedding.registry import get_spec
        settings = Settings(_env_file=None, data_dir=sys.argv[1])
        texts = json.loads(sys.argv[2])
        EMBEDDINGS.embed(get_spec("all-MiniLM-L6-v2"), texts, "document", settings)
        print(json.dumps({"embedded": EMBEDDINGS.embedded, "from_disk": EMBEDDINGS.from_disk}))
        """
    )
    env = {**os.environ, "CHUNKBENCH_EMBEDDING_CACHE_MAX_MB": "64"}

    def start(texts: list[str]) -> subprocess.Popen[str]:
        arguments = [sys.executable, "-c", script, str(settings.data_dir), json.dumps(texts)]
        return subprocess.Popen(arguments, stdout=subprocess.PIPE, text=True, env=env)

    known = start(TEXTS)
    assert json.loads(known.communicate(timeout=300)[0]) == {"embedded": 0, "from_disk": 3}
    # Two processes embedding overlapping new texts at the same time: both finish, each text is stored once.
    batch_a = [f"Sentence {i} of the first writer." for i in range(40)] + ["Shared by both writers."]
    batch_b = [f"Sentence {i} of the second writer." for i in range(40)] + ["Shared by both writers."]
    writers = [start(batch_a), start(batch_b)]
    results = [json.loads(writer.communicate(timeout=300)[0]) for writer in writers]
    assert all(writer.returncode == 0 for writer in writers)
    assert sum(r["embedded"] + r["from_disk"] for r in results) == 82
    assert disk_cache(settings).stats()["entries"] == 3 + 40 + 40 + 1


def test_the_key_is_the_exact_input_the_model_reads_task_prefix_included(ollama):
    remote, server = ollama
    document = roles.embed_texts(NOMIC, ["alpha"], "document", remote)
    query = roles.embed_query(NOMIC, "alpha", remote)
    roles.embed_texts(NOMIC, ["alpha"], "document", remote)
    roles.embed_query(NOMIC, "alpha", remote)
    # Same text, two prefixes: two entries, two requests; the repeats reach no server.
    assert _inputs(server) == [["search_document: alpha"], ["search_query: alpha"]]
    assert not np.allclose(document[0], query)
    EMBEDDINGS.clear()
    stored = disk_cache(remote).get_many(
        [cache_key(NOMIC.id, "search_document: alpha"), cache_key(NOMIC.id, "search_query: alpha")], 768
    )
    assert len(stored) == 2


@pytest.mark.model
def test_the_file_stays_within_its_bound_dropping_the_least_recently_used(tmp_path, model_calls, settings):
    small = settings.model_copy(update={"embedding_cache_max_mb": 1})  # 1 MiB ≈ 640 MiniLM vectors
    old = [f"old sentence {i}" for i in range(300)]
    roles.embed_texts(MINILM, old, "document", small)
    disk = disk_cache(small)
    disk._db.execute("UPDATE embeddings SET used_at = used_at - 3600")  # written an hour ago
    kept = old[:5]
    disk.get_many([cache_key(MINILM.id, text) for text in kept], MINILM.dimension)  # used just now
    new = [f"new sentence {i}" for i in range(450)]
    roles.embed_texts(MINILM, new, "document", small)  # 750 vectors: past the bound
    stats = disk.stats()
    assert stats["bytes"] <= stats["max_bytes"] == 2**20
    survivors = disk.get_many([cache_key(MINILM.id, text) for text in old], MINILM.dimension)
    assert {cache_key(MINILM.id, text) for text in kept} <= set(survivors)
    assert len(survivors) < len(old)  # the least recently used went first…
    assert len(disk.get_many([cache_key(MINILM.id, text) for text in new], MINILM.dimension)) == len(new)  # …only


@pytest.mark.model
def test_clear_by_model_from_the_cli_and_the_api(settings, client, ollama, monkeypatch):
    roles.embed_texts(MINILM, TEXTS, "document", settings)
    roles.embed_texts(NOMIC, ["alpha"], "document", ollama[0])
    stats = client.get("/admin/embedding-cache").json()
    assert stats["entries"] == 4 and stats["models"] == {MINILM.id: 3, NOMIC.id: 1}
    cleared = client.delete("/admin/embedding-cache", params={"model_id": NOMIC.id})
    assert cleared.status_code == 200 and cleared.json()["removed"] == 1
    assert client.get("/admin/embedding-cache").json()["models"] == {MINILM.id: 3}

    monkeypatch.setenv("CHUNKBENCH_DATA_DIR", str(settings.data_dir))
    get_settings.cache_clear()
    try:
        runner = CliRunner()
        shown = runner.invoke(cli_app, ["cache", "stats", "--json"])
        assert shown.exit_code == 0, shown.stdout
        assert json.loads(shown.stdout)["entries"] == 3
        result = runner.invoke(cli_app, ["cache", "clear", "--yes", "--json"])
        assert result.exit_code == 0, result.stdout
        assert json.loads(result.stdout)["removed"] == 3
    finally:
        get_settings.cache_clear()
    assert client.get("/admin/embedding-cache").json()["entries"] == 0


@pytest.mark.model
def test_off_means_memory_only_and_an_unwritable_file_never_stops_embedding(settings, model_calls, tmp_path, caplog):
    off = settings.model_copy(update={"embedding_cache_enabled": False})
    roles.embed_texts(MINILM, TEXTS, "document", off)
    assert not off.embedding_cache_path.exists()
    # Another data directory, the same model (its weights folder, so the same counted provider).
    blocked = settings.model_copy(update={"data_dir": tmp_path / "blocked", "models_dir": settings.resolved_models_dir})
    (tmp_path / "blocked").mkdir()
    disk = disk_cache(blocked)
    disk._db.execute("PRAGMA query_only = ON")  # every write now fails, as on a read-only disk
    EMBEDDINGS.clear()
    vectors = roles.embed_texts(MINILM, ["Only this one is new."], "document", blocked)
    assert vectors.shape == (1, MINILM.dimension) and model_calls[-1] == "Only this one is new."
    assert "not written" in caplog.text


@pytest.mark.model
def test_reprocessing_embeds_only_new_chunk_texts(client, model_calls):
    document = client.post("/documents", files={"file": ("handbook.md", HANDBOOK.encode())}).json()
    process = {"strategies": ["fixed_size"], "params": {"fixed_size": {"chunk_size": 60, "chunk_overlap": 0}}}
    first = client.post(f"/documents/{document['document']['id']}/process", params={"wait": "true"}, json=process)
    assert first.status_code == 200, first.text
    embedded = len(model_calls)
    again = client.post(f"/documents/{document['document']['id']}/process", params={"wait": "true"}, json=process)
    assert again.status_code == 200 and len(model_calls) == embedded  # the same chunks: nothing new embedded
    process["params"]["fixed_size"]["chunk_size"] = 80
    client.post(f"/documents/{document['document']['id']}/process", params={"wait": "true"}, json=process)
    chunks = client.get(f"/admin/chunks/{document['document']['id']}", params={"strategy": "fixed_size"}).json()
    assert 0 < len(model_calls) - embedded <= len(chunks["chunks"])
