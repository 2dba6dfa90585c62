"""The emulated data plane: network namespaces joined by `longhaul-wan` circuits.

`plan` works out names, addresses and sysctls (pure; what a circuit imposes is
`longhaul.topology.circuits`); `netns`, `emulator` and `state` are the shell; `Testbed`
puts them together.
"""

from longhaul.testbed.netns import TestbedError, TestbedUnavailableError
from longhaul.testbed.state import CircuitRecord
from longhaul.testbed.testbed import CircuitStatus, Teardown, Testbed

__all__ = [
    "CircuitRecord",
    "CircuitStatus",
    "Teardown",
    "Testbed",
    "TestbedError",
    "TestbedUnavailableError",
]
