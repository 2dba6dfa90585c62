"""What each user may book: limits per role, overridden per user, checked at admission.

`longhaul serve --policy FILE` reads them from TOML; without a file the defaults below
hold (a user books at most a year at a time, at most two years ahead; admins without
limit). Durations are written as the CLI reads them (`7d`, `12h`, `PT2H`):

    [roles.user]
    max_mbps = 10000       # one reservation's bandwidth
    max_duration = "7d"    # one reservation's length
    max_ahead = "90d"      # how far after now it may end
    max_active = 20        # reservations holding bandwidth at once

    [users.alice]          # alice's own, over her role's
    max_mbps = 40000
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, fields, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from longhaul.errors import InputError
from longhaul.parsing import format_duration, parse_duration


@dataclass(frozen=True)
class Limits:
    """None is no limit."""

    max_mbps: int | None = None
    max_duration: timedelta | None = None
    max_ahead: timedelta | None = None
    max_active: int | None = None

    def over(self, base: Limits) -> Limits:
        """These limits where set, `base`'s elsewhere."""
        return replace(base, **{f.name: v for f in fields(self) if (v := getattr(self, f.name))})


DEFAULT_ROLES = {
    "user": Limits(max_duration=timedelta(days=366), max_ahead=timedelta(days=731)),
    "admin": Limits(),
}


@dataclass(frozen=True)
class Policy:
    roles: dict[str, Limits] = field(default_factory=lambda: dict(DEFAULT_ROLES))
    users: dict[str, Limits] = field(default_factory=dict)

    def limits(self, name: str, role: str) -> Limits:
        """The limits of user `name` in `role`."""
        of_role = self.roles.get(role, Limits())
        own = self.users.get(name)
        return of_role if own is None else own.over(of_role)

    @classmethod
    def load(cls, path: Path) -> Policy:
        """A policy file; what it does not name keeps the defaults. Raises InputError,
        naming the key, for what it cannot read."""
        try:
            data = tomllib.loads(path.read_text())
        except (OSError, tomllib.TOMLDecodeError) as error:
            raise InputError("policy", f"{path}: {error}") from error
        unknown = set(data) - {"roles", "users"}
        if unknown:
            raise InputError("policy", f"{path}: unknown table {sorted(unknown)[0]!r}")
        roles = dict(DEFAULT_ROLES)
        for role, table in data.get("roles", {}).items():
            roles[role] = _limits(table, f"roles.{role}")
        users = {
            name: _limits(table, f"users.{name}") for name, table in data.get("users", {}).items()
        }
        return cls(roles, users)


class PolicyError(PermissionError):
    """A request over the user's limits: which limit, what it allows, what was asked."""

    def __init__(self, limit: str, allowed: str, asked: str) -> None:
        super().__init__(f"{limit} is {allowed} for you; this asks for {asked}")
        self.limit = limit
        self.allowed = allowed
        self.asked = asked


def check(limits: Limits, mbps: int, duration: timedelta, ahead: timedelta, active: int) -> None:
    """Raise PolicyError for the first limit a reservation of `mbps` for `duration`,
    ending `ahead` after now, with `active` others holding bandwidth, would pass."""
    if limits.max_mbps is not None and mbps > limits.max_mbps:
        raise PolicyError("max_mbps", f"{limits.max_mbps:,} Mb/s", f"{mbps:,} Mb/s")
    if limits.max_duration is not None and duration > limits.max_duration:
        raise PolicyError(
            "max_duration", format_duration(limits.max_duration), format_duration(duration)
        )
    if limits.max_ahead is not None and ahead > limits.max_ahead:
        raise PolicyError(
            "max_ahead",
            f"ending within {format_duration(limits.max_ahead)}",
            f"ending in {format_duration(ahead)}",
        )
    if limits.max_active is not None and active >= limits.max_active:
        raise PolicyError(
            "max_active", f"{limits.max_active} reservations at once", f"one more than {active}"
        )


def _limits(table: Any, where: str) -> Limits:
    if not isinstance(table, dict):
        raise InputError("policy", f"{where} must be a table")
    known = {f.name for f in fields(Limits)}
    if unknown := set(table) - known:
        raise InputError("policy", f"{where}: unknown limit {sorted(unknown)[0]!r}")
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key in ("max_duration", "max_ahead"):
            values[key] = parse_duration(str(value), f"{where}.{key}")
        elif isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise InputError("policy", f"{where}.{key} must be a positive whole number")
        else:
            values[key] = value
    return Limits(**values)
