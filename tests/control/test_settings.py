"""What `serve` hands its worker processes comes back the same."""

from pathlib import Path

from longhaul.control.settings import Settings


def test_settings_survive_the_trip_to_a_worker():
    settings = Settings(
        db_url="sqlite:///x.db",
        home=Path("/tmp/h"),
        topology_file=Path("/tmp/t.toml"),
        workers=2,
        nsi_reply_to=("https://nsa.es.net/reply", "http://127.0.0.1:*"),
        access_log=True,
        nsi_nsa_id="urn:ogf:network:ornl.gov:2026:nsa",
    )
    assert Settings.from_json(settings.to_json()) == settings
