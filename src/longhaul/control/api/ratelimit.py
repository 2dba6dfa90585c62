"""Requests per second per user: a token bucket each, in this process."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class RateLimitedError(Exception):
    """Too many requests from one user; `retry_after_s` says when one more fits."""

    def __init__(self, retry_after_s: float) -> None:
        super().__init__(f"too many requests; retry in {retry_after_s:.2f} s")
        self.retry_after_s = retry_after_s


class TokenBuckets:
    """`rate_per_s` requests a second per user, bursts of up to `burst` at once.

    Kept per server process: with `--workers N` a user may make N times the rate.
    """

    def __init__(
        self,
        rate_per_s: float,
        burst: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rate_per_s = rate_per_s
        self.burst = 2 * rate_per_s if burst is None else burst
        self.clock = clock
        self._buckets: dict[int, tuple[float, float]] = {}
        """user id -> (tokens, when last filled)."""
        self._lock = threading.Lock()

    def take(self, user_id: int) -> None:
        """One request's token from the user's bucket, or RateLimitedError."""
        now = self.clock()
        with self._lock:
            tokens, then = self._buckets.get(user_id, (self.burst, now))
            tokens = min(self.burst, tokens + (now - then) * self.rate_per_s)
            if tokens < 1:
                self._buckets[user_id] = (tokens, now)
                raise RateLimitedError((1 - tokens) / self.rate_per_s)
            self._buckets[user_id] = (tokens - 1, now)
