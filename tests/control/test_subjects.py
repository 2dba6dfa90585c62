"""Certificate subjects compare as distinguished names, whatever their order or spelling."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import NameOID
from hypothesis import given
from hypothesis import strategies as st

from longhaul.control.subjects import canonical_subject

CAROL = "CN=carol,O=ornl"


def _openssl_subject(folder: Path, subj: str) -> x509.Name:
    """The subject of a certificate `openssl req -subj` makes, as the server reads it."""
    key, cert = folder / "k.pem", folder / "c.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", subj],
        check=True, capture_output=True,
    )  # fmt: skip
    return x509.load_pem_x509_certificate(cert.read_bytes()).subject


@pytest.mark.parametrize("subj", ["/CN=carol/O=ORNL", "/O=ORNL/CN=carol", "/O=ORNL/CN=Carol"])
def test_openssl_certificates_match_the_documented_spelling_in_either_order(tmp_path, subj):
    subject = _openssl_subject(tmp_path, subj)
    assert canonical_subject(subject) == canonical_subject("CN=carol,O=ORNL") == CAROL


def test_cryptography_certificates_match_in_either_order():
    cn, o = (x509.NameAttribute(NameOID.COMMON_NAME, "carol"),
             x509.NameAttribute(NameOID.ORGANIZATION_NAME, "ORNL"))  # fmt: skip
    assert canonical_subject(x509.Name([cn, o])) == canonical_subject(x509.Name([o, cn])) == CAROL
    assert x509.Name([cn, o]).rfc4514_string() == "O=ORNL,CN=carol"  # the string that failed


@pytest.mark.parametrize(
    "written",
    [
        "CN=carol,O=ORNL",
        "O=ORNL,CN=carol",
        "cn=carol, o=ORNL",
        "CN = carol , O = ORNL",
        "subject=CN = carol, O = ORNL",  # openssl x509 -subject prints this
        "/CN=carol/O=ORNL",  # openssl req -subj takes this
        "commonName=carol;organizationName=ORNL",
        "2.5.4.3=carol,OID.2.5.4.10=ORNL",
        'CN="carol",O=ORNL',
        "CN=\\63arol,O=ORNL",
        "CN=carol+O=ORNL",
    ],
)
def test_every_usual_spelling_is_one_name(written):
    assert canonical_subject(written) == CAROL


def test_different_names_stay_different():
    assert canonical_subject("CN=carol,O=ORNL") != canonical_subject("CN=carol,O=ORNL,OU=CSM")
    assert canonical_subject("CN=carol,O=ORNL") != canonical_subject("CN=mallory,O=ORNL")
    # An escaped comma is part of the value, not a separator.
    assert canonical_subject("CN=smith\\, carol,O=ORNL") == "CN=smith\\, carol,O=ornl"
    assert canonical_subject("CN=smith\\, carol,O=ORNL") != canonical_subject("CN=smith,CN=carol")


@pytest.mark.parametrize(
    ("written", "says"),
    [
        ("carol", "not TYPE=VALUE"),
        ("", "empty subject"),
        ("XYZ=carol", "unknown attribute type 'XYZ'"),
        ('CN="carol', "inside a quote"),
        ("CN=\\ff\\fe", "not UTF-8"),
    ],
)
def test_what_is_not_a_name_says_why(written, says):
    with pytest.raises(ValueError, match=says):
        canonical_subject(written)


_VALUE = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=20)


@given(cn=_VALUE, o=_VALUE)
def test_the_canonical_form_reads_back_as_itself(cn, o):
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, o)])  # fmt: skip
    canonical = canonical_subject(name)
    assert canonical_subject(canonical) == canonical
    assert canonical_subject(name.rfc4514_string()) == canonical
