"""The results store on SQLite and PostgreSQL: runs kept by key, read back as rows and a
DataFrame, exported to CSV and Parquet."""

from datetime import UTC, datetime

import pandas as pd
import pytest
from sqlalchemy.exc import IntegrityError

from longhaul.db import Database, migrate
from longhaul.errors import InputError
from longhaul.measure.rows import COLUMNS, Row, Source
from longhaul.measure.store import ResultsStore


@pytest.fixture
def store(db_url):
    db = Database(db_url)
    migrate(db.engine)
    yield ResultsStore(db)
    db.dispose()


def row(n, streams=1, gbps=1.0):
    return Row(
        campaign="c",
        test="tcp_throughput",
        tool="iperf3",
        source=Source.EMULATED,
        connection="loop 1,400 mi",
        length_miles=1400.2,
        repetition=n,
        started_at=datetime(2030, 1, 7, 9, n, tzinfo=UTC),
        cc="cubic",
        streams=streams,
        throughput_gbps=gbps,
        extra={"rtt_samples_ms": [26.8, 26.9]},
    )


def test_runs_are_kept_by_key_and_read_back(store):
    cid = store.open_campaign("c", "a test", "name = 'c'")
    assert store.open_campaign("c") == cid
    store.add(cid, "k1", row(1))
    store.add(cid, "k2", row(2, streams=4, gbps=2.0))
    store.add(cid, "k2", row(2, streams=4, gbps=2.5))  # the same run again replaces it
    assert store.done(cid) == {"k1", "k2"}
    rows = store.rows("c")
    assert [r.throughput_gbps for r in rows] == [1.0, 2.5]
    assert rows[0].extra == {"rtt_samples_ms": [26.8, 26.9]}
    assert rows[0].started_at == datetime(2030, 1, 7, 9, 1, tzinfo=UTC)
    assert store.spec("c") == "name = 'c'"
    [listed] = store.campaigns()
    assert (listed["name"], listed["rows"]) == ("c", 2)
    frame = store.frame("c")
    assert list(frame.columns) == list(COLUMNS) and len(frame) == 2
    assert store.forget("c") == 2 and store.campaigns() == []


def test_export_to_csv_and_parquet(store, tmp_path):
    cid = store.open_campaign("c")
    store.add(cid, "k1", row(1))
    assert store.export(tmp_path / "r.csv", "c") == 1
    assert pd.read_csv(tmp_path / "r.csv")["throughput_gbps"].tolist() == [1.0]
    assert store.export(tmp_path / "r.parquet", "c") == 1
    assert pd.read_parquet(tmp_path / "r.parquet")["source"].tolist() == ["emulated"]
    with pytest.raises(InputError, match=r"\.csv or a \.parquet"):
        store.export(tmp_path / "r.xlsx", "c")
    with pytest.raises(InputError, match="no campaign named 'd'"):
        store.rows("d")


def test_parquet_export_works_when_no_row_has_extra_and_keeps_types(store, tmp_path):
    # pyarrow cannot write a struct column with no fields: the export crashed here and
    # left a 0-byte file.
    cid = store.open_campaign("c")
    plain = row(1)
    plain.extra = {}
    failed = row(2)
    failed.throughput_gbps, failed.extra, failed.error = None, {}, "iperf3: the server is busy"
    store.add(cid, "k1", plain)
    store.add(cid, "k2", failed)
    assert store.export(tmp_path / "r.parquet", "c") == 2
    back = pd.read_parquet(tmp_path / "r.parquet")
    assert str(back["streams"].dtype) == "Int64" and str(back["started_at"].dtype).endswith("UTC]")
    assert back["error"].tolist()[1] == "iperf3: the server is busy"
    assert back["extra"].isna().all()


def test_export_into_a_missing_folder_is_one_clear_error_and_leaves_nothing(store, tmp_path):
    cid = store.open_campaign("c")
    store.add(cid, "k1", row(1))
    with pytest.raises(InputError, match=r"folder .* does not exist"):
        store.export(tmp_path / "missing" / "r.parquet", "c")
    assert not (tmp_path / "missing").exists()


def test_failed_runs_are_not_done_so_resume_runs_them_again(store):
    cid = store.open_campaign("c")
    failed = row(1)
    failed.error = "ping: no reply"
    store.add(cid, "k1", failed)
    store.add(cid, "k2", row(2))
    assert store.done(cid) == {"k2"}
    assert store.rows("c")[0].failed


def test_an_import_is_all_or_nothing_and_never_mixes_into_a_campaign(store):
    store.import_rows("imp", "imported", "from 2 files", [("a", row(1)), ("b", row(2))])
    assert [c["rows"] for c in store.campaigns()] == [2]
    with pytest.raises(InputError, match="holds results already"):
        store.import_rows("imp", "imported", "again", [("c", row(3))])
    with pytest.raises(IntegrityError):  # the key repeats: the database refuses
        store.import_rows("other", "imported", "", [("a", row(1)), ("a", row(2))])
    assert [c["name"] for c in store.campaigns()] == ["imp"]
