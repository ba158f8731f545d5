"""Old embedded data (qdrant-client's local mode under ``{data_dir}/qdrant``) migrated to Qdrant Edge: every point,
payload and vector intact; an interrupted migration loses nothing and resumes; conflicts are refused; the CLI."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from qdrant_client import QdrantClient
from qdrant_client import models as qm
from typer.testing import CliRunner

from chunkbench.cli import app
from chunkbench.config import Settings, get_settings
from chunkbench.embedding.sparse import Bm25Encoder
from chunkbench.errors import VectorStoreError
from chunkbench.models import StrategyName
from chunkbench.storage import migration
from chunkbench.storage.edge import EdgeEngine
from chunkbench.storage.points import DENSE_VECTOR, SPARSE_VECTOR, QueryMode, chunk_payload, collection_name, point_id
from chunkbench.storage.vectors import VectorStore
from chunkgen import chunks_from_texts

DIM = 8
MODEL = "local:sentence-transformers/all-MiniLM-L6-v2"
FIXED = collection_name(StrategyName.FIXED_SIZE, MODEL)
PARENT_CHILD = collection_name(StrategyName.SEMANTIC_PARENT_CHILD, MODEL)
FOREIGN = "someone_elses"
ENCODER = Bm25Encoder()


def write_old_store(path: Path) -> None:
    """What the old chunkbench wrote: its collections as VectorStore created them in local mode, two tenants,
    parents without vectors, a stopword-only chunk without BM25 terms; and a foreign collection (unnamed vector)."""
    client = QdrantClient(path=str(path))
    rng = np.random.default_rng(3)
    for name, strategy, parents in (
        (FIXED, StrategyName.FIXED_SIZE, 0),
        (PARENT_CHILD, StrategyName.SEMANTIC_PARENT_CHILD, 2),
    ):
        client.create_collection(
            name,
            vectors_config={DENSE_VECTOR: qm.VectorParams(size=DIM, distance=qm.Distance.COSINE)},
            sparse_vectors_config={SPARSE_VECTOR: qm.SparseVectorParams(modifier=qm.Modifier.IDF)},
        )
        for tenant in ("t1", "t2"):
            for document in ("d1", "d2"):
                texts = [f"{tenant} {document} chunk {i} about qdrant" for i in range(6)] + ["the of and"]
                chunks = chunks_from_texts(
                    document, texts, strategy=strategy,
                    parents=[" ".join(texts[i::parents]) for i in range(parents)],
                )  # fmt: skip
                points = []
                for chunk in chunks:
                    chunk = chunk if tenant == "t1" else replace(chunk, chunk_id=f"t2/{chunk.chunk_id}")
                    vector: dict[str, Any] = {}
                    if not chunk.is_parent:
                        vector[DENSE_VECTOR] = rng.normal(size=DIM).tolist()
                        terms = ENCODER.encode_document(chunk.text)
                        if terms.indices:
                            vector[SPARSE_VECTOR] = qm.SparseVector(indices=terms.indices, values=terms.values)
                    payload = chunk_payload(chunk, tenant_id=tenant, model_id=MODEL)
                    points.append(qm.PointStruct(id=point_id(chunk.chunk_id), vector=vector, payload=payload))
                client.upsert(name, points=points)
    client.create_collection(FOREIGN, vectors_config=qm.VectorParams(size=4, distance=qm.Distance.DOT))
    client.upsert(
        FOREIGN, points=[qm.PointStruct(id=i, vector=[1.0, 2.0, 3.0, float(i)], payload={"n": i}) for i in range(3)]
    )
    client.close()


def old_points(path: Path) -> dict[str, dict[str, qm.Record]]:
    """Every point of the old folder (payload and vectors), read back through local mode."""
    client = QdrantClient(path=str(path))
    try:
        found = {}
        for collection in client.get_collections().collections:
            records, _ = client.scroll(collection.name, limit=10_000, with_payload=True, with_vectors=True)
            found[collection.name] = {str(r.id): r for r in records}
        return found
    finally:
        client.close()


def assert_migrated_intact(store: VectorStore, expected: dict[str, dict[str, qm.Record]]) -> None:
    assert store.engine.names() == sorted(expected)
    for name, records in expected.items():
        migrated = {p.id: p for p in store.engine.scroll(name, with_vectors=True)}
        layout = store.engine.layout(name)
        assert set(migrated) == set(records), name
        for pid, record in records.items():
            point = migrated[pid]
            assert point.payload == record.payload
            vectors = record.vector if isinstance(record.vector, dict) else {"": record.vector}
            dense = {k: v for k, v in vectors.items() if not isinstance(v, qm.SparseVector)}
            sparse = {k: v for k, v in vectors.items() if isinstance(v, qm.SparseVector)}
            assert set(point.dense) == set(dense) and set(point.sparse) == set(sparse)
            for key, vector in dense.items():
                expected = np.asarray(vector, dtype=np.float64)
                if layout.dense[key][1] == "cosine":
                    # Qdrant (Edge, like a server) stores a cosine vector normalised: the same direction.
                    expected = expected / np.linalg.norm(expected)
                np.testing.assert_allclose(point.dense[key], expected, rtol=0, atol=1e-6)
            for key, vector in sparse.items():
                assert point.sparse[key][0] == list(vector.indices)
                np.testing.assert_allclose(point.sparse[key][1], vector.values, rtol=0, atol=1e-6)


@pytest.fixture
def old_store(settings: Settings) -> dict[str, dict[str, qm.Record]]:
    write_old_store(settings.qdrant_legacy_path)
    return old_points(settings.qdrant_legacy_path)


def test_old_folder_is_migrated_with_every_point_payload_and_vector(
    settings: Settings, old_store: dict[str, dict[str, qm.Record]]
) -> None:
    seen: list[tuple[int, int, str]] = []
    store = VectorStore(settings, progress=lambda done, total, name: seen.append((done, total, name)))
    try:
        assert_migrated_intact(store, old_store)
        total = sum(len(records) for records in old_store.values())
        assert seen[-1][:2] == (total, total) and [done for done, *_ in seen] == sorted(done for done, *_ in seen)
        report = store.engine.migration
        assert report.collections == {name: len(records) for name, records in old_store.items()}
        # The old folder is kept, renamed; the store works as before on the migrated data.
        assert not settings.qdrant_legacy_path.exists()
        assert Path(report.backup) == settings.data_dir / "qdrant.local-mode-backup"
        assert (Path(report.backup) / "meta.json").is_file()
        d1 = store.scroll_document(StrategyName.FIXED_SIZE, MODEL, tenant_id="t1", document_id="d1")
        assert [p["chunk_index"] for p in d1] == list(range(7))
        target = old_store[FIXED][point_id(d1[3]["chunk_id"])].vector[DENSE_VECTOR]
        hits = store.search(
            StrategyName.FIXED_SIZE, MODEL, mode=QueryMode.DENSE, tenant_id="t1", document_id="d1", top_k=1,
            dense=np.array(target), sparse=None,
        )  # fmt: skip
        assert hits[0][0]["chunk_id"] == d1[3]["chunk_id"]
        assert store.count_document(StrategyName.SEMANTIC_PARENT_CHILD, MODEL, tenant_id="t2", document_id="d2") == 9
    finally:
        store.close()
    reopened = VectorStore(settings)  # nothing left to migrate
    try:
        assert reopened.engine.migration is None
        assert_migrated_intact(reopened, old_store)
    finally:
        reopened.close()


def test_a_crash_mid_migration_loses_nothing_and_the_next_start_completes(
    settings: Settings, old_store: dict[str, dict[str, qm.Record]], monkeypatch: pytest.MonkeyPatch
) -> None:
    real_copy = migration.copy_points
    copied: list[str] = []

    def crash_on_the_second(client: QdrantClient, name: str, shard: Any, advance: Any) -> int:
        if copied:
            real_copy(client, name, shard, lambda n: None)  # half the work is done when the process "dies"
            raise KeyboardInterrupt("killed mid-migration")
        copied.append(name)
        return real_copy(client, name, shard, advance)

    monkeypatch.setattr(migration, "copy_points", crash_on_the_second)
    with pytest.raises(KeyboardInterrupt):
        VectorStore(settings)
    # The old folder is untouched; one collection is across, the half-written one is not a collection.
    assert old_points(settings.qdrant_legacy_path).keys() == old_store.keys()
    assert all(
        {pid: r.payload for pid, r in old_points(settings.qdrant_legacy_path)[name].items()}
        == {pid: r.payload for pid, r in records.items()}
        for name, records in old_store.items()
    )
    collections = sorted(p.stem for p in (settings.qdrant_path / "collections").glob("*.json"))
    assert collections == copied
    # The half-written shard went as the error unwound (a killed process leaves it to the next open's clean-up,
    # tests/test_edge.py::test_what_a_crash_leaves_is_removed_at_the_next_open).
    assert len(list((settings.qdrant_path / "shards").iterdir())) == 1

    monkeypatch.setattr(migration, "copy_points", real_copy)
    store = VectorStore(settings)  # the lock was released by the failed open; the rerun resumes
    try:
        assert store.engine.migration.already_done == copied
        assert sorted(store.engine.migration.collections) == sorted(set(old_store) - set(copied))
        assert_migrated_intact(store, old_store)
        assert len(list((settings.qdrant_path / "shards").iterdir())) == len(old_store)
    finally:
        store.close()


def test_a_collection_in_both_stores_stops_the_migration_before_it_writes(
    settings: Settings, old_store: dict[str, dict[str, qm.Record]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(migration, "legacy_pending", lambda _settings: False)
    fresh = VectorStore(settings)  # an Edge store made without migrating (the old folder was elsewhere then)
    fresh.ensure_collection(StrategyName.FIXED_SIZE, MODEL, DIM)
    fresh.close()
    monkeypatch.undo()
    with pytest.raises(VectorStoreError, match=f"collection '{FIXED}' exists in both") as info:
        VectorStore(settings)
    assert str(settings.qdrant_legacy_path) in info.value.message
    assert (settings.qdrant_legacy_path / "meta.json").is_file()
    assert sorted(p.stem for p in (settings.qdrant_path / "collections").glob("*.json")) == [FIXED]


def test_second_process_on_the_old_folder_is_named(settings: Settings, old_store: dict[str, Any]) -> None:
    holder = QdrantClient(path=str(settings.qdrant_legacy_path))  # an old chunkbench still running
    try:
        with pytest.raises(VectorStoreError, match="in use by another process") as info:
            VectorStore(settings)
        assert str(settings.qdrant_legacy_path) in info.value.message
    finally:
        holder.close()
    store = VectorStore(settings)
    try:
        assert isinstance(store.engine, EdgeEngine) and store.engine.migration is not None
    finally:
        store.close()


def test_cli_migrate_reports_each_collection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHUNKBENCH_DATA_DIR", str(tmp_path / "data"))
    get_settings.cache_clear()
    try:
        write_old_store(get_settings().qdrant_legacy_path)
        runner = CliRunner()
        result = runner.invoke(app, ["collections", "migrate", "--json"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        report = json.loads(result.stdout)
        assert report["migrated"] is True
        assert report["collections"] == {FIXED: 28, PARENT_CHILD: 36, FOREIGN: 3}
        assert report["backup"].endswith("qdrant.local-mode-backup")
        again = runner.invoke(app, ["collections", "migrate"], catch_exceptions=False)
        assert "Nothing to migrate" in again.stdout
        listed = json.loads(runner.invoke(app, ["collections", "list", "--json"], catch_exceptions=False).stdout)
        assert {c["name"]: c["points"] for c in listed} == report["collections"]
    finally:
        get_settings.cache_clear()


def test_the_server_migrates_at_start(settings: Settings, old_store: dict[str, dict[str, qm.Record]]) -> None:
    from fastapi.testclient import TestClient

    from chunkbench.app import create_app

    with TestClient(create_app(settings)) as client:
        assert not settings.qdrant_legacy_path.exists()  # done before the first request
        listed = {c["name"]: c["points"] for c in client.get("/admin/qdrant/collections").json()}
    assert listed == {name: len(records) for name, records in old_store.items()}
