"""Where an NSI requester may have confirmations sent (`serve --nsi-reply-to`).

A SOAP request's `replyTo` makes the provider POST its confirmation to that URL, so any
signed-in user could otherwise make the server send requests into networks only it
reaches (server-side request forgery: a service on its loopback, a cloud metadata
address). So the provider sends only to addresses its operator listed: a listed URL
allows itself and every path below it on the same scheme, host and port; a listed port
`*` allows every port of that host. Hosts are compared as written, case aside (no name
is resolved: `localhost` does not allow `127.0.0.1`). With nothing listed, every
`replyTo` is refused and requesters poll with `querySummarySync`.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

from longhaul.errors import InputError

_DEFAULT_PORTS = {"http": 80, "https": 443}
ANY_PORT = -1


@dataclass(frozen=True)
class _Target:
    scheme: str
    host: str
    port: int
    """`ANY_PORT` for `host:*`."""
    path: str
    """Ends with `/`, so that `/reply` does not allow `/reply-else`."""


@dataclass(frozen=True)
class ReplyTargets:
    targets: tuple[_Target, ...] = ()

    @classmethod
    def of(cls, allowed: tuple[str, ...] | list[str]) -> ReplyTargets:
        """The targets the operator listed; `InputError` naming one that is not an
        http(s) URL with a host."""
        return cls(tuple(_target(entry) for entry in allowed))

    def permits(self, url: str) -> bool:
        try:
            asked = _parsed(url)
            port = _port(asked)
        except ValueError:
            return False
        if asked.username or asked.password or not asked.hostname:
            return False
        path = _directory(asked.path)
        return any(
            t.scheme == asked.scheme
            and t.host == asked.hostname
            and t.port in (ANY_PORT, port)
            and path.startswith(t.path)
            for t in self.targets
        )


NOWHERE = ReplyTargets()


def _target(entry: str) -> _Target:
    try:
        parsed = _parsed(entry)
        any_port = parsed.netloc.endswith(":*")
        if any_port:
            parsed = parsed._replace(netloc=parsed.netloc.removesuffix(":*"))
        port = ANY_PORT if any_port else _port(parsed)
    except ValueError as exc:
        raise InputError("nsi-reply-to", f"{entry!r}: {exc}") from None
    if not parsed.hostname or parsed.username or parsed.password or parsed.query:
        raise InputError(
            "nsi-reply-to", f"{entry!r}: give scheme://host[:port|:*][/path], nothing more"
        )
    return _Target(parsed.scheme, parsed.hostname, port, _directory(parsed.path))


def _parsed(url: str) -> SplitResult:
    parsed = urlsplit(url.strip())
    if parsed.scheme not in _DEFAULT_PORTS:
        raise ValueError("only http and https URLs")
    return parsed


def _directory(path: str) -> str:
    """`path` ending with one `/`, so that a prefix of it is a whole segment."""
    return path.rstrip("/") + "/"


def _port(parsed: SplitResult) -> int:
    return parsed.port or _DEFAULT_PORTS[parsed.scheme]  # .port raises ValueError if bad
