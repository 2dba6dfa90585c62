"""Users, their API tokens and their certificate subjects.

Every sign-in reads the database: a token revoked or rotated, a user removed, stops
working at the next request, in every server process (a per-process cache once let a
revoked token work for 30 s more). Each change is written to the audit log in the same
transaction.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from datetime import datetime

from cryptography import x509
from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session, make_transient_to_detached

from longhaul.control import audit_log
from longhaul.control.audit_log import CLI, Entry
from longhaul.control.db import User
from longhaul.control.subjects import canonical_subject
from longhaul.db import Database
from longhaul.db.prepared import Prepared, made
from longhaul.errors import InputError

_USERS = User.__table__
_BY_TOKEN = Prepared(
    select(_USERS).where(
        _USERS.c.token_hash == bindparam("token_hash"), _USERS.c.removed_at.is_(None)
    )
)

METRICS = "metrics"
"""The role of a token that may read `/metrics` and nothing else (for a Prometheus)."""


class Accounts:
    """The users of one database."""

    def __init__(self, db: Database, clock: Callable[[], datetime]) -> None:
        self.db = db
        self.clock = clock

    def add(
        self,
        name: str,
        admin: bool = False,
        cert_subject: str | None = None,
        actor: str = CLI,
        source: str = CLI,
        metrics: bool = False,
        cert_issuer: str | None = None,
    ) -> tuple[User, str]:
        """A new user and their API token, which is shown this once and stored hashed;
        `metrics` makes a token that reads /metrics only; `cert_issuer` binds the
        certificate subject to the CA that must have issued it."""
        if admin and metrics:
            raise InputError("role", "a user is an admin or a metrics reader, not both")
        if (
            not name
            or len(name) > 64
            or not name.replace("-", "").replace("_", "").replace(".", "").isalnum()
        ):
            raise InputError("name", f"{name!r}: use 1-64 letters, digits, '-', '_' or '.'")
        if cert_issuer is not None and cert_subject is None:
            raise InputError("cert_issuer", "an issuer binds a certificate subject: give both")
        cert_subject = _canonical_or_refused(cert_subject, "cert_subject")
        cert_issuer = _canonical_or_refused(cert_issuer, "cert_issuer")
        token = new_token()
        role = "admin" if admin else METRICS if metrics else "user"
        with self.db.write() as session:
            if session.scalar(select(User).where(User.name == name)) is not None:
                raise InputError("name", f"a user named {name!r} exists already")
            user = User(
                name=name,
                role=role,
                token_hash=hash_token(token),
                cert_subject=cert_subject,
                cert_issuer=cert_issuer,
                created_at=self.clock(),
            )
            session.add(user)
            detail = f"role {role}" + (f", certificate {cert_subject}" if cert_subject else "")
            detail += f", issued by {cert_issuer}" if cert_issuer else ""
            audit_log.record(
                session, self.clock(), Entry(actor, "user.add", name, source, detail=detail)
            )
        return user, token

    def by_token(self, token: str) -> User | None:
        """The user a token signs in, unless revoked, rotated away or removed.

        Read on the driver's cursor and made a detached `User`, as a session would leave
        it: every request signs in, and the ORM's query took 210 µs of a request's 1.6 ms,
        Core's 80, this 20 (timed alone over 5,000 sign-ins)."""
        row = _BY_TOKEN.first_on(self.db.engine, token_hash=hash_token(token))
        if row is None:
            return None
        user = made(User, row)
        make_transient_to_detached(user)
        return user

    def by_cert(
        self, subject: x509.Name | str, issuer: x509.Name | str | None = None
    ) -> User | None:
        """The user whose certificate subject is the same distinguished name, however its
        attributes are ordered, spaced or cased (see `subjects`), if the certificate's
        `issuer` is the one the user is bound to (when bound)."""
        try:
            canonical = canonical_subject(subject)
            issued_by = None if issuer is None else canonical_subject(issuer)
        except ValueError:
            return None
        with self.db.read() as session:
            user = session.scalar(
                select(User).where(User.cert_subject == canonical, User.removed_at.is_(None))
            )
        if user is not None and user.cert_issuer is not None and user.cert_issuer != issued_by:
            return None
        return user

    def all(self, removed: bool = False) -> list[User]:
        """Every user, by name; removed ones too with `removed`."""
        query = select(User).order_by(User.name)
        if not removed:
            query = query.where(User.removed_at.is_(None))
        with self.db.read() as session:
            return list(session.scalars(query))

    def rotate(self, name: str, actor: str = CLI, source: str = CLI) -> str:
        """A new token for the user; the old one stops working at once."""
        token = new_token()
        with self.db.write() as session:
            user = self._user(session, name)
            user.token_hash = hash_token(token)
            audit_log.record(session, self.clock(), Entry(actor, "token.rotate", name, source))
        return token

    def revoke(
        self, name: str, certificate: bool = False, actor: str = CLI, source: str = CLI
    ) -> None:
        """The user's token stops working at once (no new one is made: `rotate` makes
        one); with `certificate`, their certificate subject signs them in no more."""
        with self.db.write() as session:
            user = self._user(session, name)
            user.token_hash = _unusable_hash()
            action = "token.revoke"
            if certificate:
                user.cert_subject = user.cert_issuer = None
                action = "token+certificate.revoke"
            audit_log.record(session, self.clock(), Entry(actor, action, name, source))

    def remove(self, name: str, actor: str = CLI, source: str = CLI) -> None:
        """The user signs in no more, by token or certificate; their reservations stay
        theirs (and run to their end: cancel them first to free the bandwidth)."""
        with self.db.write() as session:
            user = self._user(session, name)
            user.removed_at = self.clock()
            user.token_hash = _unusable_hash()
            user.cert_subject = user.cert_issuer = None
            audit_log.record(session, self.clock(), Entry(actor, "user.remove", name, source))

    def _user(self, session: Session, name: str) -> User:
        user = session.scalar(select(User).where(User.name == name, User.removed_at.is_(None)))
        if user is None:
            raise InputError("name", f"no user named {name!r} (`longhaul user list` shows them)")
        return user


def new_token() -> str:
    return "lh_" + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    # Tokens are 256 random bits, so a fast hash cannot be brute-forced.
    return hashlib.sha256(token.encode()).hexdigest()


def _unusable_hash() -> str:
    """A stored hash no token has: 256 random bits where a SHA-256 would be (the column
    stays unique and filled)."""
    return "revoked-" + secrets.token_hex(28)


def _canonical_or_refused(name: str | None, field: str) -> str | None:
    if name is None:
        return None
    try:
        return canonical_subject(name)
    except ValueError as error:
        raise InputError(field, str(error)) from error
