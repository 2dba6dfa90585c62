"""Every request that changes something, and every refused sign-in, into the audit log."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from longhaul.control.api.metrics import answer_then
from longhaul.control.audit_log import NOBODY, Entry, Writer
from longhaul.control.service import Service

CHANGING = frozenset({"POST", "PATCH", "PUT", "DELETE"})
ACTOR = "longhaul.actor"
"""Where authentication leaves the signed-in user's name in the request's scope."""
AUDITED = "longhaul.audited"
"""Set in the scope by a handler that wrote its own, more telling, event."""


class AuditMiddleware:
    """Queues one audit event after each request that asks for a change, through the API
    or the web page's forms (whatever its outcome), and after each 401 or 403: who (the
    signed-in user, or `-`), what (method and route template), the path, the client's
    address and the status."""

    def __init__(self, app: ASGIApp, service: Service, writer: Writer) -> None:
        self.app = app
        self.service = service
        self.writer = writer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        def audit(status: int) -> None:
            changing = scope["method"] in CHANGING  # the API's and the web page's forms
            written = scope.get(AUDITED, False) and status < 400
            if (changing or status in (401, 403)) and not written:
                self._write(scope, status)

        await answer_then(self.app, scope, receive, send, audit)

    def _write(self, scope: Scope, status: int) -> None:
        route = getattr(scope.get("route"), "path", scope["path"])
        client = scope.get("client")
        entry = Entry(
            actor=scope.get(ACTOR, NOBODY),
            action=f"{scope['method']} {route}",
            target=scope["path"],
            source=client[0] if client else NOBODY,
            outcome="ok" if status < 400 else str(status),
        )
        self.writer.put(self.service.clock(), entry)
