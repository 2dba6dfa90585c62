"""`longhaul sim run`: one scenario from a file, on one thread or two, with the same
results either way, and a thread count it cannot use refused."""

import json


def scenario_file(tmp_path):
    path = tmp_path / "scenario.json"
    path.write_text(
        json.dumps(
            {
                "duration_s": 1,
                "cc": "cubic",
                "seed": 2,
                "path": {
                    "rate_bps": 1e9,
                    "rtt_ms": 20,
                    "queue_bytes": 1_000_000,
                    "loss": {"random": 1e-4},
                },
            }
        )
    )
    return path


def test_one_thread_and_two_give_the_same_run(cli, tmp_path):
    path = scenario_file(tmp_path)
    reports = []
    for threads in ("1", "2"):
        result = cli("sim", "run", str(path), "--json", "--threads", threads)
        assert result.returncode == 0, result.stderr
        reports.append(json.loads(result.stdout))
    one, two = reports
    assert one["counters"]["packets_dropped_line"] > 0
    # Not the event count: a link's trains can be shorter on two threads.
    for report in reports:
        report["counters"].pop("events_processed")
    assert one["end"] == two["end"] and one["counters"] == two["counters"]


def test_three_threads_are_refused(cli, tmp_path):
    result = cli("sim", "run", str(scenario_file(tmp_path)), "--threads", "3")
    assert result.returncode == 2
    assert "--threads" in result.stderr


def test_a_hurricane_transfer_is_simulated_to_its_last_byte(cli):
    result = cli("sim", "hurricane", "--rate-gbps", "1", "--rtt-ms", "26.8", "--loss", "1e-3",
                 "--bytes", "20000000", "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["finished"] and report["corrupted_bytes"] == 0
    assert report["bytes_received"] == 20_000_000
    assert report["blocks_resent"] >= report["lost_forward"] - 2 > 0


def test_a_simulated_hurricane_transfer_takes_the_paths_mtu_and_k(cli):
    def transfer(*options: str) -> dict:
        result = cli("sim", "hurricane", "--rate-gbps", "1", "--rtt-ms", "26.8", "--loss", "1e-3",
                     "--bytes", "20000000", "--json", *options)  # fmt: skip
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    jumbo = transfer("--mtu", "9000")
    assert jumbo["bytes_received"] == 20_000_000 and jumbo["corrupted_bytes"] == 0
    assert 20_000_000 / 8927 <= jumbo["datagrams_sent"] < 20_000_000 / 1427
    each_gap, rarely = transfer("--nack-group", "1"), transfer("--nack-group", "1024")
    assert each_gap["nacks_sent"] > rarely["nacks_sent"] > 0
