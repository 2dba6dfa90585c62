"""Limits per role and per user: refused with the limit, what it allows and what was asked."""

from datetime import timedelta

import pytest

from longhaul.control.policy import DEFAULT_ROLES, Limits, Policy, PolicyError
from longhaul.control.requests import ReservationChange, ReservationRequest
from longhaul.errors import InputError

from .conftest import T0

HOUR = timedelta(hours=1)
POLICY = """
[roles.user]
max_mbps = 5000
max_duration = "1d"
max_ahead = "30d"
max_active = 2

[users.alice]
max_mbps = 8000
"""


def ask(mbps=1000, start=T0 + HOUR, hours=2):
    return ReservationRequest(
        src="ORNL", dst="SUNNYVALE", bandwidth_mbps=mbps, start=start, duration=hours * HOUR
    )


@pytest.fixture
def limited(service, tmp_path):
    (tmp_path / "policy.toml").write_text(POLICY)
    service.policy = Policy.load(tmp_path / "policy.toml")
    return service


def test_a_user_file_overrides_the_role_where_it_says(limited):
    assert limited.policy.limits("alice", "user") == Limits(8000, timedelta(days=1),
                                                            timedelta(days=30), 2)  # fmt: skip
    assert limited.policy.limits("bob", "user").max_mbps == 5000
    assert limited.policy.limits("root", "admin") == DEFAULT_ROLES["admin"] == Limits()


@pytest.mark.parametrize(
    ("who", "request_", "limit"),
    [
        ("bob", ask(mbps=6000), "max_mbps"),
        ("bob", ask(hours=25), "max_duration"),
        ("bob", ask(start=T0 + timedelta(days=31)), "max_ahead"),
        ("alice", ask(mbps=9000), "max_mbps"),
    ],
)
def test_a_request_over_a_limit_is_refused_naming_it(limited, alice, bob, who, request_, limit):
    account = {"alice": alice, "bob": bob}[who]
    with pytest.raises(PolicyError) as refused:
        limited.create(account.user, request_)
    assert refused.value.limit == limit
    assert limited.reservations(account.user) == []


def test_active_reservations_are_counted_and_admins_are_not_limited(limited, bob, admin):
    for hour in (1, 4):
        limited.create(bob.user, ask(start=T0 + hour * HOUR))
    with pytest.raises(PolicyError, match="max_active is 2 reservations at once"):
        limited.create(bob.user, ask(start=T0 + 8 * HOUR))
    first = limited.reservations(bob.user)[0]
    limited.cancel(bob.user, first.id)
    limited.create(bob.user, ask(start=T0 + 8 * HOUR))  # a cancelled one frees its place
    limited.create(admin.user, ask(mbps=9000, hours=100))


def test_a_modify_past_a_limit_is_refused_too(limited, bob):
    made = limited.create(bob.user, ask())
    with pytest.raises(PolicyError, match="max_duration"):
        limited.modify(bob.user, made.id, ReservationChange(end=made.start + 30 * HOUR))
    with pytest.raises(PolicyError, match="max_mbps"):
        limited.modify(bob.user, made.id, ReservationChange(bandwidth_mbps=6000))


def test_the_defaults_stop_a_user_booking_decades(service, alice):
    with pytest.raises(PolicyError, match="max_duration"):
        service.create(alice.user, ask(hours=24 * 400))
    with pytest.raises(PolicyError, match="max_ahead"):
        service.create(alice.user, ask(start=T0 + timedelta(days=800)))


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[roles.user]\nmax_mbps = -1\n", "roles.user.max_mbps must be a positive whole number"),
        ("[roles.user]\nmax_mbps = true\n", "must be a positive whole number"),
        ("[roles.user]\nmax_speed = 1\n", "unknown limit 'max_speed'"),
        ('[roles.user]\nmax_duration = "soon"\n', "roles.user.max_duration"),
        ("[groups.x]\n", "unknown table 'groups'"),
        ("[roles\n", "policy.toml"),
    ],
)
def test_a_bad_policy_file_says_what_is_wrong(tmp_path, text, says):
    (tmp_path / "policy.toml").write_text(text)
    with pytest.raises(InputError, match=says):
        Policy.load(tmp_path / "policy.toml")
