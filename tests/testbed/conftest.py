"""The testbed fixtures (see support.py)."""

from .support import testbed, testbed_env  # noqa: F401
