"""`/api/v1/users` and `/api/v1/audit`: tokens rotated and revoked, users removed, and the
audit log read. A user may rotate or revoke their own token; the rest is for admins."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request, Response
from pydantic import AwareDatetime

from longhaul.control import audit_log
from longhaul.control.api.auditing import AUDITED
from longhaul.control.api.auth import CurrentUser, ServiceDep
from longhaul.control.api.schemas import AuditEventOut, TokenOut
from longhaul.control.db import User
from longhaul.control.errors import ForbiddenError

router = APIRouter(prefix="/api/v1", tags=["users"])

UserName = Annotated[str, Path(min_length=1, max_length=64, description="The user's name.")]


@router.post("/users/{name}/token")
def rotate_token(
    name: UserName, user: CurrentUser, service: ServiceDep, request: Request
) -> TokenOut:
    """A new token for `name` (yourself, or anyone for an admin); the old one stops
    working at once, in every server process."""
    _self_or_admin(user, name)
    token = service.accounts.rotate(name, actor=user.name, source=_source(request))
    request.scope[AUDITED] = True
    return TokenOut(user=name, token=token)


@router.delete("/users/{name}/token", status_code=204)
def revoke_token(
    name: UserName,
    user: CurrentUser,
    service: ServiceDep,
    request: Request,
    certificate: Annotated[
        bool, Query(description="Also stop the user's certificate subject signing them in.")
    ] = False,
) -> Response:
    """Stop `name`'s token working, at once; rotating gives a new one."""
    _self_or_admin(user, name)
    service.accounts.revoke(name, certificate=certificate, actor=user.name, source=_source(request))
    request.scope[AUDITED] = True
    return Response(status_code=204)


@router.delete("/users/{name}", status_code=204)
def remove_user(
    name: UserName, user: CurrentUser, service: ServiceDep, request: Request
) -> Response:
    """Admins: `name` signs in no more; their reservations keep them as owner."""
    _admin(user, "remove a user")
    service.accounts.remove(name, actor=user.name, source=_source(request))
    request.scope[AUDITED] = True
    return Response(status_code=204)


@router.get("/audit")
def audit(
    user: CurrentUser,
    service: ServiceDep,
    request: Request,
    since: Annotated[AwareDatetime | None, Query(description="Only events at or after.")] = None,
    actor: Annotated[str | None, Query(max_length=64, description="Only this actor's.")] = None,
    action: Annotated[
        str | None, Query(max_length=64, description="Only actions starting so (user., POST).")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> list[AuditEventOut]:
    """Admins: the audit log, newest first (this process's queued events written first)."""
    _admin(user, "read the audit log")
    request.app.state.audit_writer.flush()
    found = audit_log.events(service.db, since=since, actor=actor, action=action, limit=limit)
    return [AuditEventOut.model_validate(event, from_attributes=True) for event in found]


def _admin(user: User, what: str) -> None:
    if user.role != "admin":
        raise ForbiddenError(f"only an admin can {what}")


def _self_or_admin(user: User, name: str) -> None:
    if user.name != name:
        _admin(user, "change another user's token")


def _source(request: Request) -> str:
    return request.client.host if request.client else audit_log.NOBODY
