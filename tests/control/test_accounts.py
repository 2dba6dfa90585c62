"""Users, tokens and certificate subjects: changes take effect at the next request and
land in the audit log with who, what and where."""

import pytest

from longhaul.control import audit_log
from longhaul.control.accounts import hash_token
from longhaul.errors import InputError


def test_a_rotated_token_stops_working_at_once_and_the_new_one_works(service, alice):
    new = service.accounts.rotate("alice", actor="alice", source="198.18.0.7")
    assert service.accounts.by_token(alice.token) is None
    assert service.accounts.by_token(new).name == "alice"
    newest = audit_log.events(service.db, limit=1)[0]
    assert (newest.actor, newest.action, newest.target, newest.source, newest.outcome) == (
        "alice", "token.rotate", "alice", "198.18.0.7", "ok")  # fmt: skip


def test_a_revoked_token_signs_in_no_one(service, alice):
    service.accounts.revoke("alice")
    assert service.accounts.by_token(alice.token) is None
    assert [u.name for u in service.accounts.all()] == ["alice"]  # still a user


def test_revoking_the_certificate_mapping_too(service):
    service.accounts.add("carol", cert_subject="CN=carol,O=ORNL")
    assert service.accounts.by_cert("O=ORNL,CN=carol").name == "carol"
    service.accounts.revoke("carol", certificate=True)
    assert service.accounts.by_cert("O=ORNL,CN=carol") is None


def test_a_certificate_bound_to_its_issuer_signs_in_only_from_that_ca(service):
    service.accounts.add("carol", cert_subject="CN=carol,O=ORNL",
                         cert_issuer="CN=ORNL CA,O=ORNL")  # fmt: skip
    # The issuer is compared as the subject is: order, spacing and case do not matter.
    assert service.accounts.by_cert("CN=carol,O=ORNL", "o=ORNL, cn=ORNL CA").name == "carol"
    assert service.accounts.by_cert("CN=carol,O=ORNL", "CN=Other CA,O=Elsewhere") is None
    assert service.accounts.by_cert("CN=carol,O=ORNL") is None  # issuer unknown
    [added] = [e for e in audit_log.events(service.db) if e.action == "user.add"]
    assert added.detail.endswith("issued by CN=ornl ca,O=ornl")  # canonical, as stored
    # Unbound subjects sign in from any CA the server trusts, as before.
    service.accounts.add("dave", cert_subject="CN=dave,O=ORNL")
    assert service.accounts.by_cert("CN=dave,O=ORNL", "CN=Other CA").name == "dave"


def test_an_issuer_needs_a_subject_and_must_be_a_name(service):
    with pytest.raises(InputError, match="give both"):
        service.accounts.add("erin", cert_issuer="CN=ORNL CA")
    with pytest.raises(InputError, match="cert_issuer"):
        service.accounts.add("erin", cert_subject="CN=erin", cert_issuer="not a name")


def test_a_removed_user_signs_in_no_more_but_keeps_their_name(service, alice):
    service.accounts.add("carol", cert_subject="CN=carol,O=ORNL")
    service.accounts.remove("alice")
    service.accounts.remove("carol")
    assert service.accounts.by_token(alice.token) is None
    assert service.accounts.by_cert("CN=carol,O=ORNL") is None
    assert service.accounts.all() == []
    assert [u.name for u in service.accounts.all(removed=True)] == ["alice", "carol"]
    actions = [e.action for e in audit_log.events(service.db)]
    assert actions == ["user.remove", "user.remove", "user.add", "user.add"]


def test_a_revoked_token_hash_is_no_hash_of_a_token(service, alice):
    service.accounts.revoke("alice")
    stored = service.accounts.all()[0].token_hash
    assert stored.startswith("revoked-") and len(stored) == 64
    assert stored != hash_token(alice.token)


def test_unknown_users_are_named(service):
    for change in (service.accounts.rotate, service.accounts.revoke, service.accounts.remove):
        with pytest.raises(InputError, match="no user named 'nobody'"):
            change("nobody")
