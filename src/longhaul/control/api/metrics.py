"""Prometheus metrics: HTTP requests by route and status, their latency, reservations by state."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest, multiprocess
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import func, select
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from longhaul.control.db import Reservation
from longhaul.control.lifecycle import State
from longhaul.control.service import Service

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Metrics:
    """One registry per app, so that several apps (tests) never share counters.

    With several server processes ($PROMETHEUS_MULTIPROC_DIR set), each records its
    counts in files there and a scrape adds up all of them, whichever process answers.
    """

    def __init__(self, service: Service) -> None:
        self.registry = CollectorRegistry()
        self._states = _ReservationStates(service)
        self.requests = Counter(
            "longhaul_http_requests", "HTTP requests answered", ["method", "route", "status"],
            registry=self.registry,
        )  # fmt: skip
        self.latency = Histogram(
            "longhaul_http_request_duration_seconds", "Time to answer an HTTP request", ["route"],
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
            registry=self.registry,
        )  # fmt: skip

    def render(self) -> bytes:
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]  # (untyped upstream)
        else:
            registry = self.registry
        registry.register(self._states)
        try:
            return generate_latest(registry)
        finally:
            registry.unregister(self._states)


class _ReservationStates(Collector):
    """Counted when scraped, from the database: the truth, however many servers there are."""

    def __init__(self, service: Service) -> None:
        self.service = service

    def collect(self) -> Iterator[Metric]:
        gauge = GaugeMetricFamily(
            "longhaul_reservations", "Reservations by state", labels=["state"]
        )
        counts = dict.fromkeys((s.value for s in State), 0)
        with self.service.db.read() as session:
            query = select(Reservation.state, func.count()).group_by(Reservation.state)
            for state, count in session.execute(query):
                counts[state] = count
        for state, count in counts.items():
            gauge.add_metric([state], count)
        yield gauge


async def answer_then(
    app: ASGIApp, scope: Scope, receive: Receive, send: Send, then: Callable[[int], None]
) -> None:
    """Let `app` answer, then call `then` with the status it answered (500 if it raised
    before answering), raised or not."""
    status = 500

    async def send_and_note(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        await send(message)

    try:
        await app(scope, receive, send_and_note)
    finally:
        then(status)


class MetricsMiddleware:
    """Counts and times every request, labelled by its route template (not its URL)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()

        def count(status: int) -> None:
            route = getattr(scope.get("route"), "path", "unmatched")
            self.metrics.requests.labels(scope["method"], route, str(status)).inc()
            self.metrics.latency.labels(route).observe(time.perf_counter() - started)

        await answer_then(self.app, scope, receive, send, count)
