"""A SONET core switch that speaks TL1 (Telcordia GR-831; the command set of a
CoreDirector-class switch for STS-3c cross-connects): `ENT-`, `ED-`, `DLT-` and
`RTRV-CRS-STS3C`. Pure: `execute(command)` returns the response message.

A response is `TID DATE TIME`, then `M CTAG COMPLD` or `M CTAG DENY` with an error code
(GR-833): IITA a target that is not this switch, ICNV a command it does not know, IIAC
an access identifier (port) it does not have, IDNV a value out of range (more STS-3c
than an OC-192 line holds), SAAS a cross-connect that already exists, SROF one that
does not."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

LINE_STS3C = 64
"""An OC-192 port holds 64 STS-3c (192 STS-1 / 3)."""
_COMMAND = re.compile(r"^(?P<verb>[A-Z0-9-]+):(?P<tid>[^:]*):(?P<aid>[^:]*):(?P<ctag>[^:;]*)"
                      r"(?::[^:;]*:(?P<params>[^;]*))?;$")  # fmt: skip


@dataclass
class CrossConnect:
    circuit: str
    sts3c: int


@dataclass
class CoreSwitch:
    name: str
    ports: frozenset[str]
    crossconnects: dict[tuple[str, str], CrossConnect] = field(default_factory=dict)

    def execute(self, command: str) -> str:
        found = _COMMAND.match(command.strip())
        if not found:
            return self._answer("0", "ICNV", "command not valid")
        verb, tid, aid, ctag = found["verb"], found["tid"], found["aid"], found["ctag"] or "0"
        if tid != self.name:
            return self._answer(ctag, "IITA", f"target {tid!r} is not {self.name}")
        params = dict(p.split("=", 1) for p in (found["params"] or "").split(",") if "=" in p)
        if verb == "RTRV-CRS-STS3C":
            return self._answer(ctag, None, body=self._listing())
        if verb not in ("ENT-CRS-STS3C", "ED-CRS-STS3C", "DLT-CRS-STS3C"):
            return self._answer(ctag, "ICNV", f"{verb} is not a command of this switch")
        ends = tuple(a.replace("-", "/") for a in aid.split(","))
        if len(ends) != 2 or not all(e in self.ports for e in ends):
            return self._answer(ctag, "IIAC", f"no such ports {aid}")
        key = (ends[0], ends[1])
        if verb == "DLT-CRS-STS3C":
            if self.crossconnects.pop(key, None) is None:
                return self._answer(ctag, "SROF", f"no cross-connect {aid}")
            return self._answer(ctag, None)
        sts3c = params.get("NUMSTS", "")
        if not sts3c.isdigit() or not 0 < int(sts3c) <= self._room(key):
            return self._answer(ctag, "IDNV", f"NUMSTS={sts3c} does not fit the ports")
        if verb == "ENT-CRS-STS3C":
            if key in self.crossconnects:
                return self._answer(ctag, "SAAS", f"cross-connect {aid} exists")
            self.crossconnects[key] = CrossConnect(params.get("CKTID", ""), int(sts3c))
            return self._answer(ctag, None)
        if key not in self.crossconnects:
            return self._answer(ctag, "SROF", f"no cross-connect {aid}")
        self.crossconnects[key].sts3c = int(sts3c)
        return self._answer(ctag, None)

    def _room(self, key: tuple[str, str]) -> int:
        """STS-3c free on the busier of the two ports, the cross-connect's own counted free."""
        used = {port: 0 for port in key}
        for ends, crossconnect in self.crossconnects.items():
            if ends == key:
                continue
            for port in ends:
                if port in used:
                    used[port] += crossconnect.sts3c
        return LINE_STS3C - max(used.values())

    def _listing(self) -> list[str]:
        return [f'   "{_aid(a)},{_aid(b)}:CKTID={x.circuit},NUMSTS={x.sts3c}"'
                for (a, b), x in sorted(self.crossconnects.items())]  # fmt: skip

    def _answer(self, ctag: str, error: str | None, why: str = "",
                body: list[str] | None = None) -> str:  # fmt: skip
        stamp = datetime.now(UTC).strftime("%y-%m-%d %H:%M:%S")
        lines = [f"   {self.name} {stamp}"]
        if error is None:
            lines += [f"M  {ctag} COMPLD", *(body or [])]
        else:
            lines += [f"M  {ctag} DENY", f"   {error}", f"   /* {why} */"]
        return "\n".join([*lines, ";"])


def _aid(port: str) -> str:
    """A port as a TL1 access identifier (`1/2` is `1-2`)."""
    return port.replace("/", "-")


def denial(response: str) -> str | None:
    """The error code of a DENY response (None if it completed)."""
    lines = response.splitlines()
    for index, line in enumerate(lines):
        if line.rstrip().endswith("DENY"):
            return lines[index + 1].strip() if index + 1 < len(lines) else "DENY"
    return None
