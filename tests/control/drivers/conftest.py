"""The testbed fixtures, for the emulated driver (see tests/testbed/support.py)."""

from ...testbed.support import testbed, testbed_env  # noqa: F401
