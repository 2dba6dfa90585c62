//! The tcp-echo server and probe as the binary runs them, on loopback: both modes at 64 B
//! and 1 MiB, 20 samples each, against one server that then stops on SIGTERM; and the exit
//! codes of a probe that cannot run.

use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::process::{Child, ChildStderr, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_longhaul-wan");
const SAMPLES: usize = 20;
const WARMUP: u64 = 3;
const FIELDS: [&str; 11] = [
    "mode",
    "size_bytes",
    "count",
    "samples_ms",
    "mean_ms",
    "min_ms",
    "max_ms",
    "std_ms",
    "range_pct",
    "std_pct",
    "errors",
];

/// `child`'s exit status and stdout as JSON once it ends; killed (and the test failed) at
/// `deadline`.
fn report(mut child: Child, deadline: Instant, name: &str) -> (ExitStatus, Value) {
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{name} did not end in time");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let mut out = String::new();
    child
        .stdout
        .take()
        .expect("piped stdout")
        .read_to_string(&mut out)
        .expect("stdout");
    let json =
        serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{name} printed {out:?}: {e}"));
    (status, json)
}

/// The port a server started with `--listen 127.0.0.1:0` tells on stderr, and the rest of
/// its stderr (kept open: a server writing to a closed pipe would fail).
fn listening_port(server: &mut Child) -> (u16, BufReader<ChildStderr>) {
    let mut stderr = BufReader::new(server.stderr.take().expect("piped stderr"));
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            stderr.read_line(&mut line).expect("stderr") > 0,
            "the server ended before it listened"
        );
        if let Ok(told) = serde_json::from_str::<Value>(&line)
            && let Some(addr) = told["listening"].as_str()
        {
            return (addr.rsplit_once(':').unwrap().1.parse().unwrap(), stderr);
        }
    }
}

fn check_probe_report(got: &Value, mode: &str, size: u64) {
    let fields: Vec<&str> = got
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(fields.len(), FIELDS.len(), "{got}");
    for field in FIELDS {
        assert!(fields.contains(&field), "no {field}: {got}");
    }
    assert_eq!(got["mode"], mode);
    assert_eq!(got["size_bytes"], size);
    assert_eq!(got["count"], SAMPLES as u64, "{got}");
    assert_eq!(got["errors"], 0, "{got}");
    let samples: Vec<f64> = got["samples_ms"]
        .as_array()
        .expect("samples_ms")
        .iter()
        .map(|s| s.as_f64().expect("a number"))
        .collect();
    assert_eq!(samples.len(), SAMPLES);
    assert!(samples.iter().all(|&s| s > 0.0 && s < 1_000.0), "{got}");
    let stat = |name: &str| {
        got[name]
            .as_f64()
            .unwrap_or_else(|| panic!("{name}: {got}"))
    };
    let (mean, min, max) = (stat("mean_ms"), stat("min_ms"), stat("max_ms"));
    assert!(min > 0.0 && min <= mean && mean <= max, "{got}");
    assert!(stat("std_ms") >= 0.0 && stat("std_pct") >= 0.0, "{got}");
    let range_pct = (max - min) / mean * 100.0;
    // The times are printed to the nanosecond and the percentage to the thousandth; over
    // a mean of some microseconds that rounding alone moves the recomputed range by more
    // than 0.01 %, so allow what the rounding can account for.
    let half_ns_ms = 0.5e-6;
    let rounding_pct = 100.0 * (2.0 * half_ns_ms / mean + (max - min) * half_ns_ms / (mean * mean));
    assert!(
        (stat("range_pct") - range_pct).abs() <= rounding_pct + 0.0005 + 1e-9,
        "{got}"
    );
}

#[test]
fn the_probe_times_both_modes_at_64_bytes_and_1_mib() {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut server = Command::new(BIN)
        .args(["tcp-echo", "serve", "--listen", "127.0.0.1:0"])
        // Never outlives the test, should SIGTERM not come.
        .args(["--duration", "6s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the server");
    let (port, _stderr) = listening_port(&mut server);
    let to = format!("127.0.0.1:{port}");
    let runs = [
        ("echo", 64),
        ("echo", 1 << 20),
        ("size", 64),
        ("size", 1 << 20),
    ];
    for (mode, size) in runs {
        let probe = Command::new(BIN)
            .args(["tcp-echo", "probe", "--to", &to, "--mode", mode])
            .args(["--size", &size.to_string(), "--count", &SAMPLES.to_string()])
            .args(["--interval", "1ms", "--warmup", &WARMUP.to_string()])
            .args(["--timeout", "2s"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the probe");
        let (status, got) = report(probe, deadline, "tcp-echo probe");
        assert!(status.success(), "{mode} {size}: {status}");
        check_probe_report(&got, mode, size);
    }
    kill(Pid::from_raw(server.id() as i32), Signal::SIGTERM).expect("SIGTERM the server");
    let (status, served) = report(server, deadline, "tcp-echo serve");
    assert!(status.success(), "{status}");
    assert_eq!(served["connections"], runs.len() as u64, "{served}");
    let exchanges = runs.len() as u64 * (SAMPLES as u64 + WARMUP);
    assert_eq!(served["exchanges"], exchanges, "{served}");
    assert_eq!(served["errors"], 0, "{served}");
}

#[test]
fn a_probe_exits_1_when_unreachable_and_2_when_misused() {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
        listener.local_addr().unwrap().port()
    };
    let probe = |extra: &[&str]| {
        Command::new(BIN)
            .args(["tcp-echo", "probe", "--to", &format!("127.0.0.1:{port}")])
            .args(["--mode", "echo", "--timeout", "1s"])
            .args(extra)
            .output()
            .expect("run the probe")
    };
    let refused = probe(&["--size", "64", "--count", "3"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(refused.stdout.is_empty());
    let told = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(told.lines().count(), 1, "{told}");
    assert!(told.contains("connect 127.0.0.1:"), "{told}");
    for (size, count) in [("0", "3"), ("17mi", "3"), ("64", "0")] {
        let misused = probe(&["--size", size, "--count", count]);
        assert_eq!(
            misused.status.code(),
            Some(2),
            "--size {size} --count {count}"
        );
    }
}
