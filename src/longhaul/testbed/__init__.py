"""The emulated data plane: network namespaces joined by `longhaul-wan` circuits.

`plan` works out names, addresses, delays, rates and sysctls from the topology (pure);
`netns`, `emulator` and `state` are the shell; `Testbed` puts them together.
"""

from longhaul.testbed.netns import TestbedError, TestbedUnavailableError
from longhaul.testbed.state import CircuitRecord
from longhaul.testbed.testbed import CircuitStatus, Teardown, Testbed
from longhaul.topology.circuits import CircuitSpec, loop_spec, path_spec

__all__ = [
    "CircuitRecord",
    "CircuitSpec",
    "CircuitStatus",
    "Teardown",
    "Testbed",
    "TestbedError",
    "TestbedUnavailableError",
    "loop_spec",
    "path_spec",
]
