//! Bad scenarios are rejected with the field named, by the library and by the CLI (one
//! line on stderr, exit code 2).

use std::io::Write;
use std::process::{Command, Stdio};

use longhaul_sim::scenario::load;

fn error_of(json: &str) -> String {
    load(json, None)
        .expect_err("should be rejected")
        .to_string()
}

#[test]
fn parse_errors_name_the_field() {
    let e = error_of(r#"{"duration_s": 1, "hosts": {"sender": {"mss": 1448}}}"#);
    assert!(
        e.starts_with("hosts.sender.mss: unknown field `mss`"),
        "{e}"
    );
    let e = error_of(r#"{"duration_s": 1, "path": {"rate_bps": "fast", "rtt_ms": 1}}"#);
    assert!(e.starts_with("path.rate_bps: invalid type"), "{e}");
    let e = error_of(r#"{"duration_s": 1, "cc": "westwood"}"#);
    assert!(e.starts_with("cc: unknown variant `westwood`"), "{e}");
    let e = error_of(
        r#"{"duration_s": 1, "path": {"rate_bps": 1e9, "rtt_ms": 1, "loss": {"random": 0, "burst": {"p_good_to_bad": 0.1}}}}"#,
    );
    assert!(
        e.starts_with("path.loss.burst: missing field `p_bad_to_good`"),
        "{e}"
    );
    let e = error_of(r#"{"duration_s": 1, "hosts": {"sender": {"kernel": "linux-2.4"}}}"#);
    assert!(
        e.starts_with("hosts.sender.kernel: unknown variant `linux-2.4`, expected one of `linux-2.6.18`, `linux-2.6.23`, `linux-6.x`, `ns-3.37`"),
        "{e}"
    );
    let e = error_of(r#"{"interval_s": 1}"#);
    assert!(e.contains("missing field `duration_s`"), "{e}");
}

#[test]
fn semantic_errors_name_the_field() {
    let path = r#""path": {"rate_bps": 1e9, "rtt_ms": 10}"#;
    for (json, field) in [
        (format!(r#"{{"duration_s": 0, {path}}}"#), "duration_s:"),
        (format!(r#"{{"duration_s": 1, "streams": 0, {path}}}"#), "streams:"),
        (format!(r#"{{"duration_s": 1, "streams": 129, {path}}}"#), "streams:"),
        (format!(r#"{{"duration_s": 1, "interval_s": -1, {path}}}"#), "interval_s:"),
        (r#"{"duration_s": 1, "path": {"rate_bps": 0, "rtt_ms": 10}}"#.to_string(), "path.rate_bps:"),
        (r#"{"duration_s": 1, "path": {"rtt_ms": 10}}"#.to_string(), "path.rate_bps:"),
        (r#"{"duration_s": 1, "path": {"rate_bps": 1e9}}"#.to_string(), "path.rtt_ms:"),
        (
            r#"{"duration_s": 1, "path": {"rate_bps": 1e9, "rtt_ms": 1, "one_way_delay_ms": 1}}"#.to_string(),
            "path.one_way_delay_ms:",
        ),
        (
            r#"{"duration_s": 1, "path": {"rate_bps": 1e9, "rtt_ms": 1, "loss": {"random": 1.5}}}"#.to_string(),
            "path.loss.random:",
        ),
        (
            r#"{"duration_s": 1, "path": {"rate_bps": 1e9, "rtt_ms": 1, "cross_traffic_bps": 2e9}}"#.to_string(),
            "path.cross_traffic_bps:",
        ),
        (format!(r#"{{"duration_s": 1, {path}, "hosts": {{"receiver": {{"mtu_bytes": 100}}}}}}"#), "hosts.receiver.mtu_bytes:"),
        (format!(r#"{{"duration_s": 1, {path}, "hosts": {{"sender": {{"nic_rate_bps": -1}}}}}}"#), "hosts.sender.nic_rate_bps:"),
        (r#"{"duration_s": 1, "path_preset": "usn-1-oc3"}"#.to_string(), "path_preset:"),
        (format!(r#"{{"duration_s": 1, {path}, "host_preset": "cray"}}"#), "host_preset:"),
    ] {
        let e = error_of(&json);
        assert!(e.starts_with(field), "{json}\n -> {e}");
    }
}

#[test]
fn presets_resolve_and_fields_override_them() {
    let r = load(
        r#"{"duration_s": 1, "path_preset": "usn-8600-wanphy", "path": {"loss": {"random": 1e-6}},
            "host_preset": "usn-type-3", "hosts": {"receiver": {"delayed_ack": false}}}"#,
        Some(9),
    )
    .unwrap();
    assert_eq!(
        (r.path.rate_bps, r.path.rtt_ms, r.path.loss.random),
        (9.29e9, 163.0, 1e-6)
    );
    assert_eq!(
        r.sender.bus_rate_bps,
        Some(longhaul_sim::presets::PCI_X_133_BPS)
    );
    assert_eq!(r.sender.kernel, longhaul_sim::cc::Kernel::Linux2_6_18);
    assert!(r.sender.delayed_ack && !r.receiver.delayed_ack);
    assert_eq!(r.seed, 9);
}

#[test]
fn the_cli_prints_one_line_and_exits_2() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_longhaul-sim"))
        .args(["run", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"duration_s": 1, "hosts": {"sender": {"mss": 1}}}"#)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("hosts.sender.mss: unknown field `mss`"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn the_shipped_example_scenarios_are_valid() {
    for json in [
        include_str!("../scenarios/usn-8600-htcp.json"),
        include_str!("../scenarios/explicit.json"),
    ] {
        load(json, None).unwrap();
    }
}
