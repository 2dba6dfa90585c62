"""NSI SOAP requests as a requester writes them, for the binding's tests."""

from __future__ import annotations

import uuid

from longhaul.control.nsi.provider import default_network
from longhaul.control.nsi.soap import HEADERS, P2P, SOAP_ENV, TYPES
from longhaul.topology import usn

NETWORK = default_network(usn())
REQUESTER = "urn:ogf:network:example.org:2026:nsa:requester"
PROVIDER = "urn:ogf:network:longhaul.local:2026:nsa"


def envelope(body: str, reply_to: str | None = None) -> bytes:
    """A SOAP 1.1 envelope with an nsiHeader around `body` (XML text)."""
    cid = f"urn:uuid:{uuid.uuid4()}"
    reply = f"<replyTo>{reply_to}</replyTo>" if reply_to else ""
    return (
        f'<soapenv:Envelope xmlns:soapenv="{SOAP_ENV}" xmlns:header="{HEADERS}" '
        f'xmlns:nsi="{TYPES}" xmlns:p2p="{P2P}"><soapenv:Header><header:nsiHeader>'
        "<protocolVersion>application/vnd.ogf.nsi.cs.v2.provider+soap</protocolVersion>"
        f"<correlationId>{cid}</correlationId><requesterNSA>{REQUESTER}</requesterNSA>"
        f"<providerNSA>{PROVIDER}</providerNSA>{reply}</header:nsiHeader></soapenv:Header>"
        f"<soapenv:Body>{body}</soapenv:Body></soapenv:Envelope>"
    ).encode()
