"""The generated payloads: the same bytes for the same kind, size and seed, and each
kind with the compressibility USN reported for its files."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from longhaul.measure import payloads


def _ratio(data: bytes) -> float:
    return len(gzip.compress(data, 6)) / len(data)


@pytest.mark.parametrize("kind", payloads.KINDS)
def test_a_payload_is_its_size_and_the_same_every_time(kind: str, tmp_path: Path) -> None:
    one = payloads.write(kind, tmp_path / "one", 3_000_001).read_bytes()
    two = payloads.write(kind, tmp_path / "two", 3_000_001).read_bytes()
    other = payloads.write(kind, tmp_path / "other", 3_000_001, seed=2).read_bytes()
    assert len(one) == 3_000_001 and one == two and one != other


def test_each_kind_compresses_as_usns_files_did(tmp_path: Path) -> None:
    size = 8 << 20
    read = {k: payloads.write(k, tmp_path / k, size).read_bytes() for k in payloads.KINDS}
    assert _ratio(read["hdf"]) == pytest.approx(0.6831, abs=0.03)  # USN: 0.6831
    assert 1 / _ratio(read["duplicated"]) > 1000  # USN: 1,030 times
    assert _ratio(read["random"]) > 1.0  # USN: 0.01 % larger
    assert _ratio(read["gzip"]) > 0.99  # already compressed


def test_hdf_grids_differ_so_the_file_has_no_repeated_chunks(tmp_path: Path) -> None:
    data = payloads.write("hdf", tmp_path / "hdf", 4 * 4 * payloads.GRID**3).read_bytes()
    grids = [data[i : i + 4 * payloads.GRID**3] for i in range(0, len(data), 4 * payloads.GRID**3)]
    assert len(set(grids)) == 4


def test_an_unknown_kind_is_named() -> None:
    with pytest.raises(ValueError, match="unknown payload 'tar'"):
        payloads.write("tar", Path("/nonexistent"), 1)
