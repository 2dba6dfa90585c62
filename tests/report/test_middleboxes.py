"""The middleboxes report, drawn from what `longhaul bench middleboxes --json` printed
(recorded on a 2-core VM: the accelerator on both loops, 1-20 streams, four payloads, 3
repetitions; the encryptor on the local and 1,400-mile loops)."""

from __future__ import annotations

import json
from pathlib import Path

from longhaul.report.middleboxes import write_middleboxes_report

RECORDED = Path(__file__).parent / "fixtures" / "bench_middleboxes.json"


def test_the_report_puts_every_hdf_cell_beside_usn(tmp_path: Path) -> None:
    report = json.loads(RECORDED.read_text())
    page = write_middleboxes_report(report, tmp_path).read_text()
    assert (tmp_path / "accelerator-1400.png").is_file()
    assert (tmp_path / "accelerator-2800.svg").is_file()
    # One stream over 1,400 miles without the accelerator: 19.4 measured, 18.9 published.
    assert (
        "<td>1,400</td><td>1</td><td>none</td><td>19.4 (19.4-19.4)</td><td>18.9</td><td>1.03</td>"
        in page
    )
    # 24 HDF cells (2 loops x 3 stream counts x 4 feature sets), then 6 rows of the other
    # payloads (2 loops x 3 kinds), one stream each, and the encryptor's 4 rows at 1,400.
    assert page.count("<tr><td>1,400</td><td>") + page.count("<tr><td>2,800</td><td>") == 24 + 6 + 4
    assert page.count("<td>random</td>") == 2 and page.count("<td>duplicated</td>") == 2


def test_the_report_puts_the_encryptor_beside_the_plain_circuit_and_usn(tmp_path: Path) -> None:
    report = json.loads(RECORDED.read_text())
    page = write_middleboxes_report(report, tmp_path).read_text()
    assert (tmp_path / "encryptor.png").is_file()
    # Aligned over 1,400 miles: 9.10 Gb/s encrypted, 9.15 plain, USN's 8 beside.
    assert ("<td>1,400</td><td>8,950</td><td>fragment</td><td></td><td>9.10 (9.04-9.11)</td>"
            "<td>9.15</td><td>0.995</td><td>8</td>") in page  # fmt: skip
    assert "<td>1,400</td><td>9,000</td><td>drop</td><td></td><td>0.00 (0.00-0.00)</td>" in page
    assert "<td>9/9</td>" in page  # every tampered frame refused


def test_a_report_without_the_encryptor_has_no_encryptor_section(tmp_path: Path) -> None:
    report = json.loads(RECORDED.read_text())
    report["encryptor"] = []
    page = write_middleboxes_report(report, tmp_path).read_text()
    assert 'id="encryptor"' not in page and not (tmp_path / "encryptor.png").exists()


def test_a_report_of_one_loop_and_no_other_payloads_is_drawn_too(tmp_path: Path) -> None:
    report = json.loads(RECORDED.read_text())
    report["accelerator"] = [c for c in report["accelerator"]
                             if c["miles"] == 2800 and c["data"] == "hdf"]  # fmt: skip
    page = write_middleboxes_report(report, tmp_path).read_text()
    assert not (tmp_path / "accelerator-1400.png").exists()
    assert "<td>2,800</td><td>20</td><td>tfo</td>" in page


def test_the_bench_writes_the_report_from_a_recorded_run(tmp_path: Path) -> None:
    import os  # noqa: PLC0415
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    done = subprocess.run([sys.executable, "-m", "longhaul", "bench", "middleboxes",
                           "--from-json", str(RECORDED), "--report", str(tmp_path)],
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "COLUMNS": "160"})  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "index.html").is_file() and "Report:" in done.stderr
    assert "19.4 (19.4-19.4)" in done.stdout  # the table, printed too
