from datetime import UTC, datetime, timedelta

import pytest

from longhaul.errors import InputError
from longhaul.parsing import format_duration, parse_duration, parse_instant


@pytest.mark.parametrize(
    ("text", "expected"),
    [("2h", timedelta(hours=2)), ("90m", timedelta(minutes=90)), ("1h30m", timedelta(minutes=90)),
     ("1.5h", timedelta(minutes=90)), ("45s", timedelta(seconds=45)), ("3d", timedelta(days=3)),
     (" 1H 30M ", timedelta(minutes=90)), ("1800", timedelta(minutes=30)), ("2", timedelta(seconds=2)),
     ("PT2H", timedelta(hours=2)), ("P1DT12H", timedelta(hours=36)), ("pt90m", timedelta(minutes=90))],
)  # fmt: skip
def test_durations(text, expected):
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    "text", ["", "h", "2 hours", "-1h", "0m", "1h-30m", "-5", "P", "1e400", "99999999999d"]
)
def test_bad_durations_name_the_field(text):
    with pytest.raises(InputError) as caught:
        parse_duration(text, "--duration")
    assert caught.value.field == "--duration"


def test_format_duration_round_trips():
    for text in ("2h", "1h30m", "45s", "3d", "1d2h3m4s"):
        assert format_duration(parse_duration(text)) == text


def test_instants_need_a_zone():
    assert parse_instant("2030-01-07T09:00Z", "t") == datetime(2030, 1, 7, 9, tzinfo=UTC)
    assert parse_instant("2030-01-07T10:00+01:00", "t") == datetime(2030, 1, 7, 9, tzinfo=UTC)
    with pytest.raises(InputError, match="has no time zone"):
        parse_instant("2030-01-07T09:00", "t")
    with pytest.raises(InputError, match="cannot read 'tomorrow'"):
        parse_instant("tomorrow", "t")
