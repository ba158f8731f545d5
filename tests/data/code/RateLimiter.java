package com.example.gateway;

import java.time.Clock;
import java.util.HashMap;
import java.util.Map;

/**
 * A token-bucket rate limiter: each client gets a bucket of tokens that refills at a fixed rate.
 */
public class RateLimiter {
    private static final int DEFAULT_CAPACITY = 60;
    private final Map<String, Bucket> buckets = new HashMap<>();
    private final Clock clock;
    private final double refillPerSecond;

    public RateLimiter(Clock clock, double refillPerSecond) {
        this.clock = clock;
        this.refillPerSecond = refillPerSecond;
    }

    /** Whether the client may make one more request now; takes a token when it may. */
    public synchronized boolean tryAcquire(String clientId) {
        Bucket bucket = buckets.computeIfAbsent(clientId, id -> new Bucket(DEFAULT_CAPACITY, now()));
        bucket.refill(now(), refillPerSecond);
        if (bucket.tokens < 1.0) {
            return false;
        }
        bucket.tokens -= 1.0;
        return true;
    }

    private double now() {
        return clock.millis() / 1000.0;
    }

    static final class Bucket {
        final int capacity;
        double tokens;
        double updatedAt;

        Bucket(int capacity, double updatedAt) {
            this.capacity = capacity;
            this.tokens = capacity;
            this.updatedAt = updatedAt;
        }

        void refill(double at, double perSecond) {
            tokens = Math.min(capacity, tokens + (at - updatedAt) * perSecond);
            updatedAt = at;
        }
    }
}
