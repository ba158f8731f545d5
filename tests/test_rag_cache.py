"""The semantic cache on real MiniLM query vectors: exact and paraphrase hits, the 0.98 line, TTL, LRU, scopes,
corpus generations and the lazy vector."""

from __future__ import annotations

import numpy as np
import pytest

from chunkbench.config import Settings
from chunkbench.embedding.registry import get_spec
from chunkbench.embedding.roles import embed_query
from chunkbench.rag.semantic_cache import CacheScope, SemanticCache, normalise

QUESTION = "How many days of paid annual leave do employees get?"
# Cosines of these to QUESTION under MiniLM (measured, see the asserts): 0.994 and 0.977.
PARAPHRASE = "How many days of paid annual leave do employees receive?"
NEAR = "How many paid annual leave days do employees get?"
SCOPE = CacheScope("acme", "s1", 5, "cfg")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def vectors() -> dict[str, np.ndarray]:
    spec, settings = get_spec("all-MiniLM-L6-v2"), Settings(_env_file=None)
    texts = [QUESTION, PARAPHRASE, NEAR, "What is the hotel limit per night?", "When are laptops replaced?"]
    return {text: embed_query(spec, text, settings) for text in texts}


class Embedder:
    """Hands out the real vector of one text and counts how often the cache asked for it."""

    def __init__(self, vectors: dict[str, np.ndarray], text: str) -> None:
        self.vector, self.calls = vectors[text], 0

    def __call__(self) -> np.ndarray:
        self.calls += 1
        return self.vector


def _get(cache: SemanticCache, vectors, text: str, scope: CacheScope = SCOPE, generation: str = "g1"):
    return cache.get(scope, text, generation=generation, vector=Embedder(vectors, text))


@pytest.mark.model
def test_exact_hit_is_normalised_and_needs_no_embedding(vectors):
    cache = SemanticCache()
    cache.set(SCOPE, QUESTION, vectors[QUESTION], "25 days", generation="g1")
    embedder = Embedder(vectors, QUESTION)
    hit = cache.get(SCOPE, "  how many DAYS of paid annual leave   do employees get?", generation="g1", vector=embedder)
    assert (hit.value, hit.kind, hit.similarity) == ("25 days", "exact", 1.0)
    assert embedder.calls == 0
    assert normalise(" A\tB  c ") == "a b c"


@pytest.mark.model
def test_paraphrase_at_or_above_the_threshold_hits_and_a_near_question_below_it_misses(vectors):
    assert float(vectors[QUESTION] @ vectors[PARAPHRASE]) >= 0.98 > float(vectors[QUESTION] @ vectors[NEAR])
    cache = SemanticCache(similarity=0.98)
    cache.set(SCOPE, QUESTION, vectors[QUESTION], "25 days", generation="g1")
    hit = _get(cache, vectors, PARAPHRASE)
    assert hit.kind == "semantic" and hit.value == "25 days"
    assert hit.similarity == pytest.approx(float(vectors[QUESTION] @ vectors[PARAPHRASE]), abs=1e-4)
    assert _get(cache, vectors, NEAR) is None
    stats = cache.stats("acme")
    assert (stats.entries, stats.hits_exact, stats.hits_semantic, stats.misses) == (1, 0, 1, 1)
    assert stats.hit_rate == 0.5


@pytest.mark.model
def test_an_empty_scope_misses_without_embedding(vectors):
    cache = SemanticCache()
    embedder = Embedder(vectors, QUESTION)
    assert cache.get(SCOPE, QUESTION, generation="g1", vector=embedder) is None
    assert embedder.calls == 0


@pytest.mark.model
def test_entries_expire_after_the_ttl(vectors):
    clock = Clock()
    cache = SemanticCache(ttl_s=60, clock=clock)
    cache.set(SCOPE, QUESTION, vectors[QUESTION], "25 days", generation="g1")
    clock.now += 59.9
    assert _get(cache, vectors, QUESTION).kind == "exact"  # a hit does not extend the life of an entry
    clock.now += 0.1
    assert _get(cache, vectors, QUESTION) is None
    assert cache.stats("acme").evictions == {"lru": 0, "expired": 1, "invalidated": 0}
    assert len(cache) == 0


@pytest.mark.model
def test_lru_eviction_spares_the_recently_hit_entry(vectors):
    cache = SemanticCache(max_entries=2)
    hotel, laptops = "What is the hotel limit per night?", "When are laptops replaced?"
    cache.set(SCOPE, QUESTION, vectors[QUESTION], "a", generation="g1")
    cache.set(SCOPE, hotel, vectors[hotel], "b", generation="g1")
    assert _get(cache, vectors, QUESTION).value == "a"  # QUESTION is now the most recently used
    cache.set(SCOPE, laptops, vectors[laptops], "c", generation="g1")  # evicts the hotel entry
    assert _get(cache, vectors, hotel) is None
    assert _get(cache, vectors, QUESTION).value == "a"
    assert _get(cache, vectors, laptops).value == "c"
    assert cache.stats("acme").evictions["lru"] == 1 and len(cache) == 2


@pytest.mark.parametrize(
    "other",
    [
        CacheScope("globex", "s1", 5, "cfg"),
        CacheScope("acme", "s2", 5, "cfg"),
        CacheScope("acme", None, 5, "cfg"),
        CacheScope("acme", "s1", 3, "cfg"),
        CacheScope("acme", "s1", 5, "another-serving-config"),
    ],
)
@pytest.mark.model
def test_another_tenant_session_top_k_or_configuration_misses(vectors, other):
    cache = SemanticCache()
    cache.set(SCOPE, QUESTION, vectors[QUESTION], "25 days", generation="g1")
    assert _get(cache, vectors, QUESTION, scope=other) is None
    assert _get(cache, vectors, PARAPHRASE, scope=other) is None
    assert _get(cache, vectors, QUESTION).value == "25 days"


@pytest.mark.model
def test_a_new_corpus_generation_drops_the_tenants_entries_only(vectors):
    cache = SemanticCache()
    other_tenant = CacheScope("globex", "s1", 5, "cfg")
    cache.set(SCOPE, QUESTION, vectors[QUESTION], "old", generation="g1")
    cache.set(CacheScope("acme", None, 5, "cfg"), QUESTION, vectors[QUESTION], "old", generation="g1")
    cache.set(other_tenant, QUESTION, vectors[QUESTION], "theirs", generation="x1")
    assert _get(cache, vectors, QUESTION, generation="g2") is None
    assert cache.stats("acme").evictions["invalidated"] == 2 and cache.stats("acme").entries == 0
    assert _get(cache, vectors, QUESTION, scope=other_tenant, generation="x1").value == "theirs"
    # An answer computed from g1 but stored after g2 was seen is not kept.
    cache.set(SCOPE, QUESTION, vectors[QUESTION], "late", generation="g1")
    assert cache.stats("acme").entries == 0
    cache.set(SCOPE, QUESTION, vectors[QUESTION], "new", generation="g2")
    assert _get(cache, vectors, QUESTION, generation="g2").value == "new"


@pytest.mark.model
def test_clear_forgets_one_tenant(vectors):
    cache = SemanticCache()
    cache.set(SCOPE, QUESTION, vectors[QUESTION], "a", generation="g1")
    cache.set(CacheScope("globex", None, 5, "cfg"), QUESTION, vectors[QUESTION], "b", generation="x")
    assert cache.clear("acme") == 1
    assert cache.stats("acme").entries == 0 and cache.stats("globex").entries == 1
