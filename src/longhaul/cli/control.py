"""`longhaul serve` and `longhaul user`: running the reservation service.

The database and server modules are imported inside the commands that use them: they
take most of a second to load, which every other command would otherwise pay.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from longhaul.cli.common import console, fail, note
from longhaul.control import drivers
from longhaul.control.nsi.reply_to import ReplyTargets
from longhaul.control.nsi.stp import URN_PREFIX
from longhaul.control.settings import DEFAULT_HOST, DEFAULT_PORT, Settings
from longhaul.db.location import data_dir, database_url
from longhaul.errors import InputError
from longhaul.topology import usn

if TYPE_CHECKING:
    from longhaul.control.service import Service

DbOption = Annotated[
    str | None,
    typer.Option("--db", help="SQLite file or postgresql+psycopg:// URL. Default: $LONGHAUL_DB, "
                 "else longhaul.db in the data directory.", show_default=False),
]  # fmt: skip
HomeOption = Annotated[
    Path | None,
    typer.Option("--home", help="Data directory (database, TLS files, driver log). Default: "
                 "$LONGHAUL_HOME, else the user's data directory.", show_default=False),
]  # fmt: skip


def serve(
    db: DbOption = None,
    home: HomeOption = None,
    topology: Annotated[
        Path | None,
        typer.Option(
            help="Topology TOML file. Default: the USN topology.", exists=True, dir_okay=False
        ),
    ] = None,
    driver: Annotated[
        str, typer.Option(help=f"How to reach the network: {', '.join(drivers.names())}.")
    ] = "log",
    host: Annotated[str, typer.Option(help="Address to listen on.")] = DEFAULT_HOST,
    port: Annotated[int, typer.Option(help="Port to listen on.", min=1, max=65535)] = DEFAULT_PORT,
    tls: Annotated[
        bool, typer.Option(help="Serve HTTPS, with a certificate made on first use.")
    ] = False,
    workers: Annotated[
        int, typer.Option(help="Server processes: more use more cores (one runs the jobs).", min=1)
    ] = 1,
    threads: Annotated[int, typer.Option(help="Threads per process that run requests.", min=1)] = 4,
    client_ca: Annotated[
        Path | None,
        typer.Option(
            help="With --tls: ask for client certificates signed by this CA and sign in "
            "the user whose cert_subject matches.",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    open_metrics: Annotated[
        bool,
        typer.Option(
            help="Serve /metrics without a token (a Prometheus on this host). Default: it "
            "needs an admin's token or a metrics reader's (`user add NAME --metrics`)."
        ),
    ] = False,
    rate_limit: Annotated[
        float | None,
        typer.Option(
            help="Requests per second per user and process, bursts of twice it (429 past "
            "it). Default: unlimited.",
            min=0.1,
        ),
    ] = None,
    policy: Annotated[
        Path | None,
        typer.Option(
            help="TOML of each role's and user's limits (max_mbps, max_duration, max_ahead, "
            "max_active). Default: users book at most 366 days, ending within 731 days.",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    devices: Annotated[
        Path | None,
        typer.Option(
            help="With --driver cli (or cli+emulated): the switches' addresses and sign-in "
            "(TOML; `longhaul devices serve --inventory FILE` writes one).",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    nsi_network: Annotated[
        str | None,
        typer.Option(
            help="This domain's NSI network identifier, urn:ogf:network:DOMAIN:YEAR:NAME; "
            "its STPs are this and a node, site or node:port. Default: "
            "urn:ogf:network:longhaul.local:2026:TOPOLOGY-NAME.",
        ),
    ] = None,
    nsi_nsa_id: Annotated[
        str | None,
        typer.Option(
            help="This provider's NSA identifier, urn:ogf:network:..., as its SOAP Faults "
            "and notifications name it (requesters know it by this). Default: the NSI "
            "network identifier and :nsa.",
        ),
    ] = None,
    nsi_peers: Annotated[
        Path | None,
        typer.Option(
            help='TOML naming the peering domains (domains = "usn-peers", the shipped '
            "demo, or a file) and, per other domain, [[peers]] network, url and token: "
            "then a reserve between STPs of two domains is split across them.",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    nsi_hold: Annotated[
        float,
        typer.Option(
            help="Seconds an NSI reserve holds its bandwidth before a reserve-commit "
            "(then it times out and gives it back).",
            min=1,
        ),
    ] = 120.0,
    nsi_reply_to: Annotated[
        list[str] | None,
        typer.Option(
            help="A URL to which NSI SOAP requesters may have confirmations sent (their "
            "replyTo); it allows the paths below it; host:* allows any port. Repeat for "
            "more. Default: none, every replyTo is refused (requesters poll instead).",
        ),
    ] = None,
    access_log: Annotated[
        bool,
        typer.Option(
            help="Log every request on standard output (uvicorn's access log). Default: "
            "off; the audit log (`longhaul audit`) keeps every change and refused sign-in.",
        ),
    ] = False,
) -> None:
    """Run the reservation service: the API, the web page and the job runner."""
    folder = home or data_dir()
    url = database_url(db or (str(folder / "longhaul.db") if home else None))
    settings = Settings(
        db_url=url,
        topology_file=topology,
        driver=driver,
        home=folder,
        host=host,
        port=port,
        tls=tls,
        client_ca=client_ca,
        workers=workers,
        threads=threads,
        policy_file=policy,
        devices_file=devices,
        open_metrics=open_metrics,
        rate_limit_per_s=rate_limit,
        nsi_network=nsi_network,
        nsi_nsa_id=nsi_nsa_id,
        nsi_hold_s=nsi_hold,
        nsi_peers_file=nsi_peers,
        access_log=access_log,
        nsi_reply_to=tuple(nsi_reply_to or ()),
    )
    if nsi_peers is not None:
        from longhaul.control.nsi.aggregator import load_peering  # noqa: PLC0415

        load_peering(nsi_peers)  # fail now, naming what is wrong
    try:
        ReplyTargets.of(settings.nsi_reply_to)
    except InputError as exc:
        fail(f"--nsi-reply-to {exc.reason}")
    if nsi_network is not None and not nsi_network.startswith(URN_PREFIX):
        fail(f"--nsi-network must start {URN_PREFIX!r}, e.g. {URN_PREFIX}ornl.gov:2026:usn")
    if nsi_nsa_id is not None and not nsi_nsa_id.startswith(URN_PREFIX):
        fail(f"--nsi-nsa-id must start {URN_PREFIX!r}, e.g. {URN_PREFIX}ornl.gov:2026:nsa")
    if client_ca is not None and not tls:
        fail("--client-ca needs --tls")
    drivers.create(driver, usn(), settings)  # fail now, not at the first reservation
    if policy is not None:
        from longhaul.control.policy import Policy  # noqa: PLC0415

        Policy.load(policy)  # fail now, naming the key
    from longhaul.control.server import serve as run  # noqa: PLC0415 (see the docstring)

    scheme = "https" if tls else "http"
    console.print(f"longhaul serving on {scheme}://{host}:{port} — database {url}, driver {driver}")
    run(settings)


user_app = typer.Typer(help="Users and their API tokens.", no_args_is_help=True)


@user_app.command("add")
def user_add(
    name: Annotated[str, typer.Argument(help="The user's name (letters, digits, - _ .).")],
    admin: Annotated[
        bool, typer.Option("--admin", help="May see and change every reservation.")
    ] = False,
    cert_subject: Annotated[
        str | None,
        typer.Option(
            help="X.509 subject (RFC 4514, e.g. 'CN=alice,O=ORNL') that signs this user in."
        ),
    ] = None,
    cert_issuer: Annotated[
        str | None,
        typer.Option(
            help="With --cert-subject: the CA's subject that must have issued the certificate "
            "(with several CAs trusted). Default: any CA the server trusts."
        ),
    ] = None,
    metrics: Annotated[
        bool, typer.Option("--metrics", help="A token that reads /metrics only (Prometheus).")
    ] = False,
    db: DbOption = None,
) -> None:
    """Add a user and print their API token (shown this once; only its hash is kept)."""
    service = _offline_service(db)
    user, token = service.accounts.add(
        name, admin=admin, cert_subject=cert_subject, metrics=metrics, cert_issuer=cert_issuer
    )
    note(f"Added {user.role} {user.name}. Their token (shown once, keep it safe):")
    print(token)
    note(f"Sign in with:  longhaul login --token {token}")


@user_app.command("list")
def user_list(
    removed: Annotated[bool, typer.Option("--removed", help="Removed users too.")] = False,
    db: DbOption = None,
) -> None:
    """List users and their roles."""
    for user in _offline_service(db).accounts.all(removed=removed):
        subject = f"  cert: {user.cert_subject}" if user.cert_subject else ""
        subject += f" from {user.cert_issuer}" if user.cert_issuer else ""
        gone = f"  removed {user.removed_at:%Y-%m-%d %H:%M}" if user.removed_at else ""
        console.print(f"{user.name:20s} {user.role:6s}{subject}{gone}")


NameArgument = Annotated[str, typer.Argument(help="The user's name.")]


@user_app.command("rotate")
def user_rotate(name: NameArgument, db: DbOption = None) -> None:
    """Give the user a new API token; the old one stops working at once."""
    token = _offline_service(db).accounts.rotate(name)
    note(f"{name}'s new token (shown once; the old one no longer signs in):")
    print(token)


@user_app.command("revoke")
def user_revoke(
    name: NameArgument,
    certificate: Annotated[
        bool, typer.Option("--certificate", help="Their certificate subject too.")
    ] = False,
    db: DbOption = None,
) -> None:
    """Stop the user's token working, at once (`rotate` gives them a new one)."""
    _offline_service(db).accounts.revoke(name, certificate=certificate)
    what = "token and certificate subject" if certificate else "token"
    note(f"Revoked {name}'s {what}.")


@user_app.command("remove")
def user_remove(name: NameArgument, db: DbOption = None) -> None:
    """Remove a user: they sign in no more; their reservations keep them as owner."""
    _offline_service(db).accounts.remove(name)
    note(f"Removed {name}. Their reservations stay (an admin may cancel them).")


def audit(
    since: Annotated[
        str | None, typer.Option(help="Only events at or after this time (RFC 3339).")
    ] = None,
    actor: Annotated[str | None, typer.Option(help="Only this user's (or `cli`).")] = None,
    action: Annotated[
        str | None, typer.Option(help="Only actions starting so (user., token., sign-in, POST).")
    ] = None,
    limit: Annotated[int, typer.Option(help="At most this many, newest first.", min=1)] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="JSON lines.")] = False,
    db: DbOption = None,
) -> None:
    """What was done to users, tokens and reservations, and refused sign-ins: newest first."""
    from longhaul.control import audit_log  # noqa: PLC0415 (see the docstring)
    from longhaul.parsing import parse_instant  # noqa: PLC0415

    service = _offline_service(db)
    found = audit_log.events(
        service.db,
        since=None if since is None else parse_instant(since, "since"),
        actor=actor,
        action=action,
        limit=limit,
    )
    for event in found:
        if as_json:
            print(json.dumps({"at": event.at.isoformat(), "actor": event.actor,
                              "action": event.action, "target": event.target,
                              "source": event.source, "outcome": event.outcome,
                              "detail": event.detail}))  # fmt: skip
        else:
            print(
                f"{event.at:%Y-%m-%d %H:%M:%S}  {event.actor:12s} {event.action:28s} "
                f"{event.target:16s} {event.source:15s} {event.outcome:4s} {event.detail}".rstrip()
            )


def _offline_service(db: str | None) -> Service:
    """The service over the database alone, for administration without a server."""
    from longhaul.control.service import Service  # noqa: PLC0415
    from longhaul.db import Database, migrate  # noqa: PLC0415 (see the docstring)

    database = Database(database_url(db))
    migrate(database.engine)
    settings = Settings(db_url=database.url)
    return Service(database, usn(), drivers.create("log", usn(), settings))
