"""An Ethernet edge switch with an FTOS-like command line (the Force10 E300's): modes
`exec` (`NAME#`), `configure` (`NAME(conf)#`) and a VLAN interface
(`NAME(conf-if-vl-N)#`); VLANs with a description, tagged 10GigE ports, a rate policer
and a shutdown state. Pure: `execute(line)` returns the output and the next prompt.

What it refuses, as FTOS does (Force10 FTOS Command Line Reference, E-Series): a
command it does not know (`% Error: Invalid input at "^" marker.`), a VLAN id outside
1-4094, a port the switch does not have, a rate above the port's 10,000 Mb/s, removing a
VLAN that is not there (`% Error: No such interface Vlan N.`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

PORT_MBPS = 10_000
"""The E300's line cards for USN: 10GigE ports (TenGigabitEthernet slot/port)."""
INVALID = '% Error: Invalid input at "^" marker.'


@dataclass
class Vlan:
    description: str = ""
    tagged: set[str] = field(default_factory=set)
    police_mbps: int | None = None
    shutdown: bool = True


@dataclass
class EdgeSwitch:
    name: str
    ports: frozenset[str]
    vlans: dict[int, Vlan] = field(default_factory=dict)
    _mode: str = "exec"
    _vlan: int | None = None

    @property
    def prompt(self) -> str:
        if self._mode == "exec":
            return f"{self.name}#"
        if self._mode == "conf":
            return f"{self.name}(conf)#"
        return f"{self.name}(conf-if-vl-{self._vlan})#"

    def execute(self, line: str) -> str:
        """The switch's answer to one line (empty when it has nothing to say)."""
        words = line.split()
        if not words:
            return ""
        if words[0] in ("end",):
            self._mode, self._vlan = "exec", None
            return ""
        if words[0] == "exit":
            self._mode = {"vlan": "conf", "conf": "exec"}.get(self._mode, "exec")
            return ""
        if words[:2] == ["show", "running-config"]:
            return self.running_config()
        handler = {"exec": self._exec, "conf": self._conf, "vlan": self._in_vlan}[self._mode]
        return handler(words)

    def _exec(self, words: list[str]) -> str:
        if words == ["configure"]:
            self._mode = "conf"
            return ""
        return INVALID

    def _conf(self, words: list[str]) -> str:
        negated = words[0] == "no"
        rest = words[1:] if negated else words
        if len(rest) != 3 or rest[:2] != ["interface", "vlan"]:
            return INVALID
        vlan = _vlan_id(rest[2])
        if vlan is None:
            return f"% Error: Vlan id {rest[2]} is out of range (1-4094)."
        if negated:
            if self.vlans.pop(vlan, None) is None:
                return f"% Error: No such interface Vlan {vlan}."
            return ""
        self.vlans.setdefault(vlan, Vlan())
        self._mode, self._vlan = "vlan", vlan
        return ""

    def _in_vlan(self, words: list[str]) -> str:
        assert self._vlan is not None
        vlan = self.vlans[self._vlan]
        if words[0] == "description":
            vlan.description = " ".join(words[1:])
            return ""
        if words[0] == "tagged" and len(words) == 3 and words[1] == "TenGigabitEthernet":
            if words[2] not in self.ports:
                return f"% Error: No such interface TenGigabitEthernet {words[2]}."
            vlan.tagged.add(words[2])
            return ""
        police = re.fullmatch(r"rate police (\d+) peak (\d+)", " ".join(words))
        if police:
            committed, peak = int(police[1]), int(police[2])
            if not 0 < committed <= peak <= PORT_MBPS:
                return f"% Error: Rate {committed} peak {peak} is out of range (1-{PORT_MBPS})."
            vlan.police_mbps = committed
            return ""
        if words in (["no", "shutdown"], ["shutdown"]):
            vlan.shutdown = words[0] == "shutdown"
            return ""
        return INVALID

    def running_config(self) -> str:
        lines = ["!"]
        for number, vlan in sorted(self.vlans.items()):
            lines.append(f"interface Vlan {number}")
            if vlan.description:
                lines.append(f" description {vlan.description}")
            lines += [f" tagged TenGigabitEthernet {p}" for p in sorted(vlan.tagged)]
            if vlan.police_mbps is not None:
                lines.append(f" rate police {vlan.police_mbps} peak {vlan.police_mbps}")
            lines.append(" shutdown" if vlan.shutdown else " no shutdown")
            lines.append("!")
        return "\n".join(lines)


def _vlan_id(text: str) -> int | None:
    return int(text) if text.isdigit() and 1 <= int(text) <= 4094 else None
