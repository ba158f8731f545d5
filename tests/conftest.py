"""Shared fixtures: isolated settings and data directories per test."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkbench.config import Settings


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Settings on a fresh data directory, ignoring any ``.env`` of the developer."""
    return Settings(_env_file=None, data_dir=tmp_path / "data")
