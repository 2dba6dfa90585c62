"""Confirmations go only where the operator allows: a listed URL and the paths below it,
on its scheme, host and port (`*`: any port); nothing listed, nowhere."""

import pytest

from longhaul.control.nsi.reply_to import NOWHERE, ReplyTargets
from longhaul.errors import InputError

ALLOWED = ReplyTargets.of(
    ["https://nsa.es.net/requester/reply", "http://127.0.0.1:*", "http://[::1]:9000/"]
)


@pytest.mark.parametrize(
    "url",
    [
        "https://nsa.es.net/requester/reply",
        "https://nsa.es.net/requester/reply/",
        "https://nsa.es.net:443/requester/reply/deeper",
        "https://NSA.ES.NET/requester/reply",
        "http://127.0.0.1:8801/nsi/requester",
        "http://127.0.0.1/",
        "http://[::1]:9000/any/path",
    ],
)
def test_listed_places_are_allowed(url):
    assert ALLOWED.permits(url)


@pytest.mark.parametrize(
    "url",
    [
        "https://nsa.es.net/requester/reply-else",  # a sibling, not below it
        "https://nsa.es.net/requester",  # above it
        "http://nsa.es.net/requester/reply",  # another scheme
        "https://nsa.es.net:8443/requester/reply",  # another port
        "https://nsa.es.net.evil.example/requester/reply",  # a host that only starts alike
        "https://nsa.es.net@evil.example/requester/reply",  # user info naming the host
        "https://evil.example/https://nsa.es.net/requester/reply",
        "http://localhost:8801/",  # names are not resolved
        "http://[::1]:9001/",
        "http://169.254.169.254/latest/meta-data/",
        "file:///etc/passwd",
        "http://127.0.0.1:99999/",  # not a port
        "",
    ],
)
def test_everything_else_is_refused(url):
    assert not ALLOWED.permits(url)


def test_nothing_listed_allows_nothing():
    assert not NOWHERE.permits("http://127.0.0.1:8801/")
    assert ReplyTargets.of([]) == NOWHERE


@pytest.mark.parametrize(
    "entry",
    [
        "ftp://nsa.es.net/",
        "nsa.es.net",
        "https:///path",
        "https://u:p@nsa.es.net/",
        "https://nsa.es.net/?a=1",
    ],
)
def test_a_bad_entry_is_named(entry):
    with pytest.raises(InputError, match="nsi-reply-to"):
        ReplyTargets.of([entry])
