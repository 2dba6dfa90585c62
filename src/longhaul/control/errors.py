"""What the reservation service refuses with, and the API turns into responses."""

from __future__ import annotations

from longhaul.schedule import EarliestStart, WidestPath


class NotFoundError(LookupError):
    """No such reservation, or not one the user may see."""


class ForbiddenError(PermissionError):
    """The user may see it but not do this (admin only)."""


class ConflictError(RuntimeError):
    """The request is well formed but clashes with the reservation's state or version."""


class StaleVersionError(ConflictError):
    """The reservation is no longer at the version the request was made against: 409 for
    a `version` in the body, 412 for an `If-Match` header."""

    def __init__(self, reservation_id: int, current: int, asked: int) -> None:
        super().__init__(
            f"reservation {reservation_id} is at version {current}, not {asked}; "
            "read it again and retry"
        )
        self.current = current


class UnavailableError(RuntimeError):
    """The bandwidth is not free; `earliest` and `widest` say what would be."""

    def __init__(
        self, message: str, earliest: EarliestStart | None, widest: WidestPath | None
    ) -> None:
        super().__init__(message)
        self.earliest = earliest
        self.widest = widest


class NetworkError(RuntimeError):
    """A driver failed; nothing was changed."""
