"""What the validation's parts share."""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[str, int, int], None]
"""Called as work ends: what, how many done, of how many."""
