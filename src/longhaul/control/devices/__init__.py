"""Simulated network devices that speak what USN's did, for the `cli` driver to talk to:
Force10 E300-style Ethernet edge switches (an FTOS-like CLI) and CoreDirector-class SONET
switches (TL1), each holding its own configuration and refusing bad commands, served over
SSH by `longhaul devices serve`."""
