"""Who is asking: a bearer token, the web page's cookie, or an X.509 client certificate."""

from __future__ import annotations

from typing import Annotated

from cryptography import x509
from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from longhaul.control.accounts import METRICS
from longhaul.control.api.auditing import ACTOR
from longhaul.control.api.problems import UnauthorizedError
from longhaul.control.api.ratelimit import TokenBuckets
from longhaul.control.db import User
from longhaul.control.errors import ForbiddenError
from longhaul.control.service import Service

COOKIE = "longhaul_token"


def service_of(request: Request) -> Service:
    service: Service = request.app.state.service
    return service


def client_certificate(request: Request) -> x509.Certificate | None:
    """The verified client certificate, if the client sent one.

    Read from the ASGI TLS extension (`client_cert_chain`, PEM, leaf first), which
    longhaul's server fills in (see server.py).
    """
    tls = request.scope.get("extensions", {}).get("tls") or {}
    chain = tls.get("client_cert_chain") or []
    if not chain:
        return None
    return x509.load_pem_x509_certificate(chain[0].encode())


BEARER = HTTPBearer(
    auto_error=False,
    description="An API token: `longhaul user add NAME` makes one and shows it once.",
)
"""Declares the token in the OpenAPI document (so the API page can send one); reading it
stays in `current_user`, which also takes the page's cookie or a client certificate."""


async def current_user(
    request: Request, bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER)]
) -> User:
    # On the event loop, not in a worker thread as FastAPI runs a plain function: the
    # lookup is one indexed read that never waits for a writer (WAL), and each hand-off
    # to a thread and back costs more than it (and another turn at the interpreter lock).
    return authenticate(request, bearer.credentials if bearer is not None else None)


def authenticate(request: Request, token: str | None) -> User:
    """The user a bearer token, else the page's cookie, else a client certificate signs
    in; their name is left for the audit log."""
    user = _signed_in(request, token)
    request.scope[ACTOR] = user.name
    if user.role == METRICS and request.url.path != "/metrics":
        raise ForbiddenError("this token may read /metrics only (its user's role is metrics)")
    limits: TokenBuckets | None = getattr(request.app.state, "rate_limit", None)
    if limits is not None:
        limits.take(user.id)
    return user


def _signed_in(request: Request, token: str | None) -> User:
    service = service_of(request)
    if token is not None and token.strip():
        user = service.accounts.by_token(token.strip())
        if user is None:
            raise UnauthorizedError(
                "that token matches no user; make one with `longhaul user add NAME`"
            )
        return user
    if cookie := request.cookies.get(COOKIE):
        user = service.accounts.by_token(cookie)
        if user is not None:
            return user
    if certificate := client_certificate(request):
        user = service.accounts.by_cert(certificate.subject, certificate.issuer)
        if user is None:
            raise UnauthorizedError(
                f"no user has the certificate subject {certificate.subject.rfc4514_string()!r}"
                f" issued by {certificate.issuer.rfc4514_string()!r}"
            )
        return user
    raise UnauthorizedError(
        "send 'Authorization: Bearer TOKEN' (make one with `longhaul user add NAME`)"
    )


async def _service(request: Request) -> Service:
    return service_of(request)  # a plain function would be run in a worker thread


CurrentUser = Annotated[User, Depends(current_user)]
ServiceDep = Annotated[Service, Depends(_service)]
