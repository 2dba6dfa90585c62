"""The testbed fixtures, for campaigns on the emulated testbed (see tests/testbed/support.py)."""

from ..testbed.support import testbed, testbed_env  # noqa: F401
