"""The web application: the API, health and metrics, and the web pages."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated

import anyio
from fastapi import Depends, FastAPI, Request, Response
from fastapi.security import HTTPAuthorizationCredentials
from fastapi_swagger import patch_fastapi
from sqlalchemy import text

from longhaul import __version__
from longhaul.control import audit_log
from longhaul.control.accounts import METRICS
from longhaul.control.api import problems
from longhaul.control.api.auditing import AuditMiddleware
from longhaul.control.api.auth import BEARER, authenticate
from longhaul.control.api.metrics import CONTENT_TYPE, Metrics, MetricsMiddleware
from longhaul.control.api.nsi import router as nsi_routes
from longhaul.control.api.nsi_soap import router as nsi_soap_routes
from longhaul.control.api.ratelimit import TokenBuckets
from longhaul.control.api.routes import router
from longhaul.control.api.schemas import Health
from longhaul.control.api.users import router as users
from longhaul.control.errors import ForbiddenError
from longhaul.control.jobs import JobRunner
from longhaul.control.nsi.aggregator import Aggregator, Peering
from longhaul.control.nsi.notifier import Notifier
from longhaul.control.nsi.provider import Provider, default_network
from longhaul.control.service import Service
from longhaul.control.web.pages import router as pages
from longhaul.control.web.pages import static

DEFAULT_THREADS = 4
"""Threads that run requests. Writers take turns anyway; with more threads, waiting ones
crowd the interpreter lock and the 99th percentile grows (on a 2-core machine at 200
requests/s: p99 30-54 ms with 4 threads, 46-227 ms with anyio's default 40)."""


def create_app(
    service: Service,
    runner: JobRunner | None = None,
    threads: int = DEFAULT_THREADS,
    open_metrics: bool = False,
    rate_limit_per_s: float | None = None,
    nsi: Provider | None = None,
    nsi_peering: Peering | None = None,
) -> FastAPI:
    """The app for `service`; `runner`, if given, runs while the app does. `/metrics`
    needs an admin's or a metrics reader's token unless `open_metrics`; with
    `rate_limit_per_s`, each user's requests are limited to that (bursts of twice it).
    `nsi` is the domain's NSI provider (by default one named after the topology);
    with `nsi_peering`, it also aggregates connections across the domains named there."""

    audit_writer = audit_log.Writer(service.db)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        anyio.to_thread.current_default_thread_limiter().total_tokens = threads
        # What start-up made lives as long as the process: left to the collector, each full
        # collection walks it again, stopping every request (60-90 ms here, each few seconds).
        gc.collect()
        gc.freeze()
        audit_writer.start()
        notifier.start()
        if runner is not None:
            runner.start()
        try:
            yield
        finally:
            if runner is not None:
                runner.stop()
            notifier.stop()
            if aggregator is not None:
                aggregator.close()
            audit_writer.stop()

    app = FastAPI(
        title="longhaul",
        version=__version__,
        summary="Reserve dedicated wide-area bandwidth: the four USN path queries and a "
        "reservation lifecycle.",
        lifespan=lifespan,
        docs_url=None,  # served below from a local copy: the pages work offline
        swagger_ui_oauth2_redirect_url=None,
        redoc_url=None,
        openapi_url="/api/v1/openapi.json",
    )
    app.state.service = service
    provider = Provider(service, default_network(service.topology)) if nsi is None else nsi
    aggregator = None if nsi_peering is None else Aggregator(provider, nsi_peering)
    notifier = Notifier(provider.notifications, service.clock)
    app.state.nsi = provider
    app.state.nsi_aggregator = aggregator
    app.state.audit_writer = audit_writer
    app.state.rate_limit = None if rate_limit_per_s is None else TokenBuckets(rate_limit_per_s)
    # Swagger UI from fastapi-swagger's copy, not FastAPI's default CDN.
    patch_fastapi(
        app,
        docs_url="/api/docs",
        redirect_from_root_to_docs=False,
        swagger_js_url="/api/docs/swagger-ui-bundle.js",
        swagger_css_url="/api/docs/swagger-ui.css",
        swagger_favicon_url="/api/docs/favicon.png",
    )
    metrics = Metrics(service)
    app.add_middleware(AuditMiddleware, service=service, writer=audit_writer)
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    problems.install(app)
    app.include_router(router)
    app.include_router(users)
    app.include_router(nsi_routes)
    app.include_router(nsi_soap_routes)
    app.include_router(pages)
    app.mount("/static", static, name="static")

    @app.get("/healthz", tags=["operations"])
    def healthz() -> Health:
        """Answers when the database does."""
        with service.db.read() as session:
            session.execute(text("SELECT 1"))
        return Health(
            status="ok",
            database=service.db.dialect,
            topology=service.topology.name,
            driver=service.driver.name,
        )

    @app.get("/metrics", tags=["operations"], response_class=Response)
    def prometheus(
        request: Request,
        bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER)],
    ) -> Response:
        """Prometheus text exposition: for an admin's token or a metrics reader's
        (`longhaul user add prometheus --metrics`), or anyone with `serve --open-metrics`."""
        if not open_metrics:
            user = authenticate(request, bearer.credentials if bearer is not None else None)
            if user.role not in ("admin", METRICS):
                raise ForbiddenError("/metrics is for admins and metrics readers")
        return Response(metrics.render(), media_type=CONTENT_TYPE)

    return app
