"""Per-tenant token buckets: hand-computed bucket arithmetic on an injected clock (no sleeps), and the 429 the
API answers with (``Retry-After``, typed body, the Prometheus counter)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from chunkbench.app import create_app
from chunkbench.errors import RateLimitedError
from chunkbench.metrics import RATE_LIMITED
from chunkbench.tenants import accounts
from chunkbench.tenants.auth import Authenticator
from chunkbench.tenants.ratelimit import RateLimiter


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _refused(limiter: RateLimiter, tenant: str, **limits) -> int:
    with pytest.raises(RateLimitedError) as refused:
        limiter.check(tenant, **limits)
    assert refused.value.status_code == 429
    return int(refused.value.headers["Retry-After"])


def test_a_bucket_spends_its_burst_then_refills_at_the_rate():
    clock = Clock()
    # 30 per minute = 0.5 token/s; burst 3.
    limiter = RateLimiter(30, 3, clock=clock)
    for _ in range(3):
        limiter.check("a")
    # Empty: one token is 1 / 0.5 = 2 s away.
    assert _refused(limiter, "a") == 2
    clock.now += 1.0  # 0.5 token: 1 s to go
    assert _refused(limiter, "a") == 1
    clock.now += 0.5  # 0.75 token: 0.5 s to go, rounded up to the 1 s minimum
    assert _refused(limiter, "a") == 1
    clock.now += 0.5  # 1.0 token: one request
    limiter.check("a")
    assert _refused(limiter, "a") == 2
    # A long pause refills to the burst, never beyond: 3 requests, then refused.
    clock.now += 3600
    for _ in range(3):
        limiter.check("a")
    assert _refused(limiter, "a") == 2


def test_each_tenant_has_its_own_bucket_and_override():
    clock = Clock()
    limiter = RateLimiter(60, 1, clock=clock)
    limiter.check("a")
    assert _refused(limiter, "a") == 1  # 1 token/s
    limiter.check("b")  # a's empty bucket is not b's
    # Tenant c's own limit: 6 per minute = 0.1 token/s, burst 2 → after 2 requests the next token is 10 s away.
    limiter.check("c", per_minute=6, burst=2)
    limiter.check("c", per_minute=6, burst=2)
    assert _refused(limiter, "c", per_minute=6, burst=2) == 10
    clock.now += 2.5  # 0.25 token: 7.5 s to go → 8
    assert _refused(limiter, "c", per_minute=6, burst=2) == 8
    # Lowering c's limit keeps what it saved: 0.25 + 0.5 s × 0.1/s = 0.3 token, 0.7 token at 1/60 per s = 42 s.
    clock.now += 0.5
    assert _refused(limiter, "c", per_minute=1, burst=2) == 42


def test_zero_per_minute_means_unlimited():
    limiter = RateLimiter(0, 1, clock=Clock())
    for _ in range(100):
        limiter.check("a")
    tenant_limiter = RateLimiter(60, 1, clock=Clock())
    for _ in range(100):
        tenant_limiter.check("vip", per_minute=0)


def _client_with_clock(settings, clock: Clock) -> TestClient:
    client = TestClient(create_app(settings))
    client.__enter__()
    client.app.state.authenticator = Authenticator(settings, clock=clock)
    return client


def test_the_api_answers_429_with_retry_after_per_tenant(settings):
    settings.auth = True
    settings.rate_limit_per_minute = 600
    settings.rate_limit_burst = 100
    clock = Clock()
    client = _client_with_clock(settings, clock)
    try:
        with client.app.state.database.session() as session:
            accounts.create_tenant(session, "Slow", rate_limit_per_minute=30, rate_limit_burst=2)
            accounts.create_tenant(session, "Fast")
            _row, slow = accounts.create_key(session, "slow")
            _row, fast = accounts.create_key(session, "fast")
        before = RATE_LIMITED._value.get()
        as_slow = {"Authorization": f"Bearer {slow}"}
        assert client.get("/documents", headers=as_slow).status_code == 200
        assert client.get("/jobs", headers=as_slow).status_code == 200
        refused = client.get("/documents", headers=as_slow)
        assert refused.status_code == 429
        assert refused.headers["Retry-After"] == "2"  # 0.5 token/s, bucket empty
        body = refused.json()
        assert body["error"] == "rate_limited"
        assert body["details"] == {"retry_after_s": 2, "limit_per_minute": 30, "burst": 2}
        assert RATE_LIMITED._value.get() == before + 1
        # The other tenant is not affected; public routes are never limited.
        for _ in range(5):
            assert client.get("/documents", headers={"Authorization": f"Bearer {fast}"}).status_code == 200
        assert client.get("/health").status_code == 200
        clock.now += 2
        assert client.get("/documents", headers=as_slow).status_code == 200
    finally:
        client.__exit__(None, None, None)


@pytest.mark.parametrize("limit_without_auth", [False, True])
@pytest.mark.slow
def test_with_auth_off_the_default_tenant_is_limited_only_when_asked(settings, limit_without_auth):
    settings.rate_limit_per_minute = 60
    settings.rate_limit_burst = 2
    settings.rate_limit_without_auth = limit_without_auth
    client = _client_with_clock(settings, Clock())
    try:
        statuses = [client.get("/documents").status_code for _ in range(3)]
    finally:
        client.__exit__(None, None, None)
    assert statuses == ([200, 200, 429] if limit_without_auth else [200, 200, 200])
