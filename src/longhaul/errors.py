"""The one error type for bad input, shared by every layer.

The CLI prints it as one line and exits 2; the HTTP API answers it as RFC 9457
problem+json naming `field`.
"""


class InputError(ValueError):
    """A value given by a user is wrong; `field` names it, the message says how to fix it."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.reason = message
        super().__init__(f"{field}: {message}")
