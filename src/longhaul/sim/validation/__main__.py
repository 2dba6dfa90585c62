"""`make ns3-answers`: after `longhaul sim validate --parts ns3 --rerun-ns3`, record
ns-3's cached answers in the package data, where every checkout finds them."""

import sys
from pathlib import Path

from longhaul.sim import ns3
from longhaul.sim.validation.against_ns3 import ns3_cases

target = Path(ns3.__file__).parents[1] / "data" / "ns3" / "answers.json"
target.parent.mkdir(parents=True, exist_ok=True)
left = ns3.record(ns3_cases(), target)
print(f"wrote {target}" + (f"; {left} cases have no answer yet" if left else ""))
sys.exit(1 if left else 0)
