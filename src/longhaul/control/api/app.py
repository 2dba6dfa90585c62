"""The web application: the API, health and metrics, and the web pages."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Response
from sqlalchemy import text

from longhaul import __version__
from longhaul.control.api import problems
from longhaul.control.api.metrics import CONTENT_TYPE, Metrics, MetricsMiddleware
from longhaul.control.api.routes import router
from longhaul.control.api.schemas import Health
from longhaul.control.jobs import JobRunner
from longhaul.control.service import Service
from longhaul.control.web.pages import router as pages
from longhaul.control.web.pages import static


def create_app(service: Service, runner: JobRunner | None = None) -> FastAPI:
    """The app for `service`; `runner`, if given, runs while the app does."""

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        if runner is not None:
            runner.start()
        try:
            yield
        finally:
            if runner is not None:
                runner.stop()

    app = FastAPI(
        title="longhaul",
        version=__version__,
        summary="Reserve dedicated wide-area bandwidth: the four USN path queries and a "
        "reservation lifecycle.",
        lifespan=lifespan,
        docs_url="/api/docs",
        redoc_url=None,
        openapi_url="/api/v1/openapi.json",
    )
    app.state.service = service
    metrics = Metrics(service)
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    problems.install(app)
    app.include_router(router)
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
    def prometheus() -> Response:
        """Prometheus text exposition."""
        return Response(metrics.render(), media_type=CONTENT_TYPE)

    return app
