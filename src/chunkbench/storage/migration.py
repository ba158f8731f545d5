"""Moving the old embedded store (qdrant-client's local mode, ``{data_dir}/qdrant``) into Qdrant Edge.

Detected at every open of the embedded store (the app's start, every CLI command, ``chunkbench collections
migrate`` with a progress bar): a ``meta.json`` in ``Settings.qdrant_legacy_path``. Each old collection is
read with qdrant-client's local mode and written into a new Edge shard, which becomes a collection only once
complete (its collection file names the old folder in ``migrated_from``). The old folder is never modified:
once every collection is across it is renamed to ``qdrant.local-mode-backup`` (kept for you to delete). A
crash mid-way therefore loses nothing: the next open removes the half-written shard and migrates what is left.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import qdrant_edge as qe
from qdrant_client import QdrantClient
from qdrant_client import models as qm

from chunkbench.config import Settings
from chunkbench.errors import VectorStoreError
from chunkbench.storage.edge import EdgeEngine
from chunkbench.storage.engine import Progress
from chunkbench.storage.points import DENSE_VECTOR, SPARSE_VECTOR

logger = logging.getLogger(__name__)

_PAGE = 256
BACKUP_SUFFIX = ".local-mode-backup"


@dataclass
class MigrationReport:
    """What a migration did: points per collection moved, collections an earlier (interrupted) run had moved."""

    source: str
    backup: str
    collections: dict[str, int] = field(default_factory=dict)
    already_done: list[str] = field(default_factory=list)


def legacy_pending(settings: Settings) -> bool:
    """Whether an old local-mode folder waits to be migrated."""
    return (settings.qdrant_legacy_path / "meta.json").is_file()


def _open_legacy(source: Path) -> QdrantClient:
    try:
        return QdrantClient(path=str(source))
    except RuntimeError as exc:
        if "already accessed" in str(exc):
            raise VectorStoreError(
                f"The old embedded Qdrant folder {source} is in use by another process (an older chunkbench?). "
                "Stop it, then start again: the folder is migrated to Qdrant Edge at the next start.",
                path=str(source),
            ) from exc
        raise VectorStoreError(f"Could not read the old embedded Qdrant folder {source}: {exc}") from exc


def _edge_config(engine: EdgeEngine, params: qm.CollectionParams) -> qe.EdgeConfig:
    """chunkbench's layout for chunkbench's collections; any other collection keeps its own vectors."""
    vectors = params.vectors if isinstance(params.vectors, dict) else {"": params.vectors}
    sparse = params.sparse_vectors or {}
    dense_params = vectors.get(DENSE_VECTOR)  # None only under "": an unnamed vector, never chunkbench's
    if dense_params is not None and SPARSE_VECTOR in sparse and sparse[SPARSE_VECTOR].modifier == qm.Modifier.IDF:
        return engine.edge_config(dense_params.size)
    dense = {
        key: qe.EdgeVectorParams(size=v.size, distance=getattr(qe.Distance, v.distance.value))
        for key, v in vectors.items()
        if v is not None
    }
    return qe.EdgeConfig(
        vectors=dense.get("", dense) if set(dense) == {""} else dense,
        sparse_vectors={
            key: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf if v.modifier == qm.Modifier.IDF else None)
            for key, v in sparse.items()
        },
    )


def _edge_vector(vector: Any) -> Any:
    if isinstance(vector, dict):
        return {key: _edge_vector(value) for key, value in vector.items()}
    if isinstance(vector, qm.SparseVector):
        return qe.SparseVector(list(vector.indices), list(vector.values))
    return vector if vector is not None else {}


def copy_points(client: QdrantClient, name: str, shard: qe.EdgeShard, advance: Callable[[int], None]) -> int:
    """Every point of old collection ``name`` (payload and vectors) into ``shard``; returns how many."""
    copied = 0
    offset: Any = None
    while True:
        page, offset = client.scroll(name, limit=_PAGE, offset=offset, with_payload=True, with_vectors=True)
        if page:
            points = [qe.Point(id=r.id, vector=_edge_vector(r.vector), payload=dict(r.payload or {})) for r in page]
            shard.update(qe.UpdateOperation.upsert_points(points))
            copied += len(points)
            advance(len(points))
        if offset is None:
            return copied


def _backup_path(source: Path) -> Path:
    candidate = source.with_name(source.name + BACKUP_SUFFIX)
    number = 2
    while candidate.exists():
        candidate = source.with_name(f"{source.name}{BACKUP_SUFFIX}-{number}")
        number += 1
    return candidate


def migrate_legacy(engine: EdgeEngine, settings: Settings, progress: Progress | None = None) -> MigrationReport | None:
    """Migrate the old local-mode folder into ``engine`` (which holds the Edge folder's lock); None if there is none.

    A collection of the same name that the Edge store has from elsewhere (not from migrating this folder) stops
    the migration with an error naming it, before anything is written.
    """
    if not legacy_pending(settings):
        return None
    source = settings.qdrant_legacy_path
    client = _open_legacy(source)
    report = MigrationReport(source=str(source), backup="")
    try:
        names = sorted(c.name for c in client.get_collections().collections)
        sizes = {name: client.count(name, exact=True).count for name in names}
        for name in names:
            if engine.exists(name) and engine.collection_info(name).get("migrated_from") != str(source):
                raise VectorStoreError(
                    f"Cannot migrate {source}: collection '{name}' exists in both it and the Qdrant Edge store at "
                    f"{engine.root}. Delete one of the two (chunkbench collections delete {name}, or move {source} "
                    "away), then start again.",
                    collection=name,
                )
        total, done = sum(sizes.values()), 0

        def advance(count: int, name: str = "") -> None:
            nonlocal done
            done += count
            if progress is not None:
                progress(done, total, name)

        for name in names:
            if engine.exists(name):
                report.already_done.append(name)
                advance(sizes[name], name)
                continue
            config = _edge_config(engine, client.get_collection(name).config.params)

            def fill(shard: qe.EdgeShard, name: str = name) -> int:
                return copy_points(client, name, shard, lambda n: advance(n, name))

            engine.create_shard(
                name,
                config,
                fill=fill,
                extra={"migrated_from": str(source)},
            )
            report.collections[name] = sizes[name]
            logger.info("migrated collection %s (%d points) from %s to Qdrant Edge", name, sizes[name], source)
    finally:
        client.close()
    backup = _backup_path(source)
    os.replace(source, backup)
    report.backup = str(backup)
    logger.warning(
        "Migrated the old embedded Qdrant folder %s to Qdrant Edge at %s (%d collections, %d points); the old "
        "folder is kept as %s: delete it once you are satisfied.",
        source, engine.root, len(names), total, backup,
    )  # fmt: skip
    return report
