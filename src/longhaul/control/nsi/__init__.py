"""The NSI Connection Service v2 (OGF GFD.212) on longhaul's reservations.

A longhaul server is one NSI network (a domain): its boundary ports are Service
Termination Points (`stp`), a connection is a name for one reservation (`provider`),
and the three NSI state machines are read off that reservation (`states`).
"""
