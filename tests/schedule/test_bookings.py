"""Bookings files."""

import pytest

from longhaul.errors import InputError
from longhaul.schedule.bookings import loads_bookings

ENTRY = """
[[bookings]]
links = ["a", "b"]
bandwidth_mbps = 100
start = 2030-01-07T08:00:00Z
end = 2030-01-07T09:00:00Z
"""


def test_one_entry_books_each_of_its_links():
    (entry,) = loads_bookings(ENTRY)
    assert [b.link_id for b in entry] == ["a", "b"]
    assert entry[0].start.tzinfo is not None


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (('links = ["a", "b"]', "links = []"), "f: bookings[0].links"),
        (('links = ["a", "b"]', 'links = "a"'), "f: bookings[0].links"),
        (("start = 2030-01-07T08:00:00Z", 'start = "soon"'), "f: bookings[0].start"),
        (("bandwidth_mbps = 100", "bandwidth_mbps = 100\ncolour = 1"), "f: bookings[0].colour"),
    ],
)
def test_bad_entries_name_the_field(edit, field):
    with pytest.raises(InputError) as caught:
        loads_bookings(ENTRY.replace(*edit), source="f")
    assert caught.value.field == field


def test_not_toml():
    with pytest.raises(InputError, match="not valid TOML"):
        loads_bookings("[[bookings]", source="f")
