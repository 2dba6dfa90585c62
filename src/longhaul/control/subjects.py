"""Certificate subjects compared as distinguished names, not as strings.

A subject reaches longhaul written by a person (`longhaul user add carol --cert-subject
'CN=carol,O=ORNL'`) and from a certificate, whose RDN sequence is in whatever order its
maker chose: `openssl req -subj /CN=carol/O=ORNL` puts CN first, so RFC 4514's
last-RDN-first string of it reads `O=ORNL,CN=carol`. Both become one canonical form:
each attribute's type by its OID (short names in any case, `emailAddress` and friends
included), its value with insignificant spaces removed and case folded (RFC 4518 §2.6 and
the caseIgnoreMatch rule of RFC 4517 §4.2.11, which the usual naming attributes use), and
the attributes sorted, so neither their order, the spacing around `=` and `,` nor the
case of a type or value decides a match.

Accepted spellings: RFC 4514 (`CN=carol,O=ORNL`, with `\\,`-style and `\\2C`-style escapes
and `+` for multi-valued RDNs), OpenSSL's `-subj` form (`/CN=carol/O=ORNL`) and its
printed one-line form (`subject=CN = carol, O = ORNL`).
"""

from __future__ import annotations

import re

from cryptography import x509
from cryptography.x509.oid import NameOID, ObjectIdentifier

_TYPES: dict[str, ObjectIdentifier] = {
    "CN": NameOID.COMMON_NAME,
    "C": NameOID.COUNTRY_NAME,
    "L": NameOID.LOCALITY_NAME,
    "ST": NameOID.STATE_OR_PROVINCE_NAME,
    "O": NameOID.ORGANIZATION_NAME,
    "OU": NameOID.ORGANIZATIONAL_UNIT_NAME,
    "STREET": NameOID.STREET_ADDRESS,
    "DC": NameOID.DOMAIN_COMPONENT,
    "UID": NameOID.USER_ID,
    "EMAILADDRESS": NameOID.EMAIL_ADDRESS,
    "SN": NameOID.SURNAME,
    "GN": NameOID.GIVEN_NAME,
    "SERIALNUMBER": NameOID.SERIAL_NUMBER,
    "TITLE": NameOID.TITLE,
    "POSTALCODE": NameOID.POSTAL_CODE,
    "INITIALS": NameOID.INITIALS,
    "PSEUDONYM": NameOID.PSEUDONYM,
    "GENERATIONQUALIFIER": NameOID.GENERATION_QUALIFIER,
    "DNQUALIFIER": NameOID.DN_QUALIFIER,
}
"""Attribute type names (upper case) and their OIDs; the first name of an OID is the one
a canonical subject shows."""
_ALIASES = {
    "E": "EMAILADDRESS",
    "EMAIL": "EMAILADDRESS",
    "S": "ST",
    "COMMONNAME": "CN",
    "COUNTRYNAME": "C",
    "LOCALITYNAME": "L",
    "STATEORPROVINCENAME": "ST",
    "ORGANIZATIONNAME": "O",
    "ORGANIZATIONALUNITNAME": "OU",
    "SURNAME": "SN",
    "GIVENNAME": "GN",
    "USERID": "UID",
    "DOMAINCOMPONENT": "DC",
}
_NAMES = {oid: name for name, oid in reversed(list(_TYPES.items()))}
_SHOWN = {"EMAILADDRESS": "emailAddress", "SERIALNUMBER": "serialNumber"}
_OID = re.compile(r"^(?:OID\.)?([0-2](?:\.\d+)+)$", re.IGNORECASE)


def canonical_subject(subject: x509.Name | str) -> str:
    """The subject's canonical form, e.g. `CN=carol,O=ornl` for both `CN=carol, O=ORNL`
    and a certificate made with `-subj /O=ORNL/CN=Carol`. Raises ValueError, saying what
    is wrong, for a string that is not a distinguished name."""
    pairs = _attributes(subject) if isinstance(subject, str) else _certificate_attributes(subject)
    if not pairs:
        raise ValueError("an empty subject; write it as CN=NAME,O=ORGANIZATION")
    shown = sorted((_type_name(oid), _fold(value)) for oid, value in pairs)
    return ",".join(f"{name}={_escape(value)}" for name, value in shown)


def _certificate_attributes(name: x509.Name) -> list[tuple[ObjectIdentifier, str]]:
    return [
        (attribute.oid, attribute.value if isinstance(attribute.value, str) else "")
        for attribute in name
    ]


def _attributes(text: str) -> list[tuple[ObjectIdentifier, str]]:
    text = _strip_unescaped(re.sub(r"^\s*subject\s*=\s*", "", text, flags=re.IGNORECASE))
    if not text:
        return []
    if text.startswith("/"):
        parts = [part for part in _split(text[1:], "/") if part.strip()]
    else:
        parts = [part for rdn in _split(text, ",;") for part in _split(rdn, "+")]
    return [_attribute(part) for part in parts]


def _attribute(text: str) -> tuple[ObjectIdentifier, str]:
    kind, equals, value = text.partition("=")
    kind = kind.strip()
    if not equals or not kind:
        raise ValueError(f"{text.strip()!r} is not TYPE=VALUE (as in CN=carol)")
    return _oid(kind), _unescape(_strip_unescaped(value))


def _oid(kind: str) -> ObjectIdentifier:
    if dotted := _OID.match(kind):
        return ObjectIdentifier(dotted.group(1))
    key = kind.upper()
    key = _ALIASES.get(key, key)
    if key not in _TYPES:
        known = ", ".join(sorted(set(_NAMES.values())))
        raise ValueError(f"unknown attribute type {kind!r}: use {known} or a dotted OID")
    return _TYPES[key]


def _type_name(oid: ObjectIdentifier) -> str:
    name = _NAMES.get(oid)
    return _SHOWN.get(name, name) if name else oid.dotted_string


def _split(text: str, separators: str) -> list[str]:
    """`text` split at the unescaped, unquoted separators."""
    parts, current, quoted, escaped = [], [], False, False
    for char in text:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            current.append(char)
            escaped = True
        elif char == '"':
            current.append(char)
            quoted = not quoted
        elif char in separators and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if quoted or escaped:
        raise ValueError(f"{text!r} ends inside a quote or an escape")
    parts.append("".join(current))
    return parts


def _strip_unescaped(value: str) -> str:
    """`value` without its surrounding spaces, keeping an escaped one (`\\ `)."""
    stripped = value.strip()
    trailing = len(stripped) - len(stripped.rstrip("\\"))
    if trailing % 2 and len(stripped) < len(value.lstrip()):
        stripped += " "
    return stripped


def _unescape(value: str) -> str:
    """A value without its quotes and escapes: `\\,` is a comma, `\\2C` one too (hex
    pairs are UTF-8 bytes, RFC 4514 §3)."""
    if len(value) >= 2 and value[0] == value[-1] == '"':
        value = value[1:-1]
    out, index = bytearray(), 0
    while index < len(value):
        char = value[index]
        pair = value[index + 1 : index + 3]
        if char == "\\" and re.fullmatch(r"[0-9A-Fa-f]{2}", pair):
            out.append(int(pair, 16))
            index += 3
        elif char == "\\" and index + 1 < len(value):
            out.extend(value[index + 1].encode())
            index += 2
        else:
            out.extend(char.encode())
            index += 1
    try:
        return out.decode()
    except UnicodeDecodeError as error:
        raise ValueError(f"{value!r}: its escaped bytes are not UTF-8") from error


def _fold(value: str) -> str:
    """Insignificant spaces gone, runs of spaces one, case folded (RFC 4518 §2.6)."""
    return " ".join(value.split()).casefold()


def _escape(value: str) -> str:
    """RFC 4514 §2.4's escapes, so the canonical form reads back as the same name."""
    escaped = re.sub(r'([\\,+"<>;=])', r"\\\1", value)
    if escaped.startswith(("#", " ")):
        escaped = "\\" + escaped
    return escaped
