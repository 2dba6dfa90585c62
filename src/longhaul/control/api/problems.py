"""Errors as RFC 9457 problem details (application/problem+json), naming the field at fault."""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from longhaul.control.api.ratelimit import RateLimitedError
from longhaul.control.api.schemas import EarliestStartOut
from longhaul.control.errors import (
    ConflictError,
    ForbiddenError,
    NetworkError,
    NotFoundError,
    StaleVersionError,
    UnavailableError,
)
from longhaul.control.lifecycle import TransitionError
from longhaul.control.nsi.aggregator import PeerError
from longhaul.control.nsi.provider import VlanUnavailableError
from longhaul.control.policy import PolicyError
from longhaul.errors import InputError

log = logging.getLogger(__name__)

MEDIA_TYPE = "application/problem+json"


class UnauthorizedError(Exception):
    """No credentials, or ones that match no user."""


def problem(
    status: int,
    slug: str,
    title: str,
    detail: str,
    request: Request,
    headers: dict[str, str] | None = None,
    **extensions: Any,
) -> JSONResponse:
    body = {
        "type": f"tag:longhaul,2026:problem/{slug}",
        "title": title,
        "status": status,
        "detail": detail,
        "instance": request.url.path,
        **extensions,
    }
    return JSONResponse(body, status_code=status, media_type=MEDIA_TYPE, headers=headers)


def _field(loc: Sequence[Any]) -> str:
    """`("body", "src", "node")` → `src.node`; `("query", "start")` → `start`."""
    parts = [str(p) for p in loc if p not in ("body", "query", "path", "header", "cookie")]
    # pydantic names the branch of a union it tried (e.g. `datetime`); the field is before it.
    return ".".join(
        p
        for p in parts
        if not p.startswith(("function-", "literal[")) and p not in ("datetime", "str", "int")
    )


def install(app: FastAPI) -> None:
    """Register a handler for every error the API can meet."""

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = []
        for error in exc.errors():
            message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
            field = _field(error.get("loc", ())) or "body"
            if error.get("type") == "json_invalid":
                # pydantic puts the character offset where a field goes.
                found = (error.get("ctx") or {}).get("error", "")
                message = f"not valid JSON at character {field}" + (f": {found}" if found else "")
                field = "body"
            errors.append({"field": field, "message": message})
        detail = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
        return problem(422, "invalid-input", "Invalid input", detail, request, errors=errors)

    @app.exception_handler(InputError)
    async def input_error(request: Request, exc: InputError) -> JSONResponse:
        errors = [{"field": exc.field, "message": exc.reason}]
        return problem(422, "invalid-input", "Invalid input", str(exc), request, errors=errors)

    @app.exception_handler(UnauthorizedError)
    async def unauthorized(request: Request, exc: UnauthorizedError) -> JSONResponse:
        return problem(
            401,
            "unauthorized",
            "Not signed in",
            str(exc),
            request,
            headers={"WWW-Authenticate": 'Bearer realm="longhaul"'},
        )

    @app.exception_handler(ForbiddenError)
    async def forbidden(request: Request, exc: ForbiddenError) -> JSONResponse:
        return problem(403, "forbidden", "Not allowed", str(exc), request)

    @app.exception_handler(NotFoundError)
    async def not_found(request: Request, exc: NotFoundError) -> JSONResponse:
        return problem(404, "not-found", "Not found", str(exc), request)

    @app.exception_handler(RateLimitedError)
    async def rate_limited(request: Request, exc: RateLimitedError) -> JSONResponse:
        wait_s = max(1, math.ceil(exc.retry_after_s))
        return problem(
            429,
            "rate-limited",
            "Too many requests",
            str(exc),
            request,
            headers={"Retry-After": str(wait_s)},
        )

    @app.exception_handler(PolicyError)
    async def over_policy(request: Request, exc: PolicyError) -> JSONResponse:
        return problem(
            403,
            "policy",
            "Over your limits",
            str(exc),
            request,
            limit=exc.limit,
            allowed=exc.allowed,
            asked=exc.asked,
        )

    @app.exception_handler(StaleVersionError)
    async def stale(request: Request, exc: StaleVersionError) -> JSONResponse:
        if "if-match" in request.headers:
            return problem(412, "precondition-failed", "Precondition failed", str(exc), request)
        return problem(409, "conflict", "ConflictError", str(exc), request)

    @app.exception_handler(ConflictError)
    async def conflict(request: Request, exc: ConflictError) -> JSONResponse:
        return problem(409, "conflict", "ConflictError", str(exc), request)

    @app.exception_handler(PeerError)
    async def peer_refused(request: Request, exc: PeerError) -> JSONResponse:
        status = 409 if 400 <= exc.status < 500 else 502
        return problem(
            status, "peer-refused", "A domain refused", str(exc), request, network=exc.network
        )

    @app.exception_handler(VlanUnavailableError)
    async def vlan_unavailable(request: Request, exc: VlanUnavailableError) -> JSONResponse:
        return problem(
            409, "vlan-unavailable", "VLAN unavailable", str(exc), request, field=exc.field
        )

    @app.exception_handler(TransitionError)
    async def transition(request: Request, exc: TransitionError) -> JSONResponse:
        return problem(409, "conflict", "ConflictError", str(exc), request)

    @app.exception_handler(UnavailableError)
    async def unavailable(request: Request, exc: UnavailableError) -> JSONResponse:
        suggestions = {
            "earliest_start": None
            if exc.earliest is None
            else EarliestStartOut.of(exc.earliest).model_dump(mode="json"),
            "max_bandwidth_mbps": None if exc.widest is None else exc.widest.bandwidth_mbps,
        }
        return problem(
            409,
            "unavailable",
            "Bandwidth not available",
            str(exc),
            request,
            suggestions=suggestions,
        )

    @app.exception_handler(NetworkError)
    async def network(request: Request, exc: NetworkError) -> JSONResponse:
        return problem(502, "network", "The network refused", str(exc), request)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        slug = {404: "not-found", 405: "method-not-allowed"}.get(exc.status_code, "http")
        return problem(exc.status_code, slug, str(exc.detail), str(exc.detail), request)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return problem(
            500, "internal", "Internal error", "an unexpected error; see the server log", request
        )
