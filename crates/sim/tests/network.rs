//! Networks of hosts, switches and links: flows on routes of their own, sharing links,
//! crossing a switch twice on a loop.

use longhaul_sim::network::{NetworkReport, load, run};

/// Hosts h1..h4, switches A and B: h1, h2 on A; h3, h4 on B; two parallel A-B links.
fn network(flows: &str, host: &str) -> String {
    format!(
        r#"{{"duration_s": 6, "omit_s": 4, "interval_s": 1,
             "hosts": [{{"id": "h1", "host": {host}}}, {{"id": "h2", "host": {host}}},
                       {{"id": "h3", "host": {host}}}, {{"id": "h4", "host": {host}}}],
             "switches": ["A", "B"],
             "links": [
               {{"id": "h1-A", "a": "h1", "b": "A", "rate_bps": 1e10, "delay_ms": 0.01}},
               {{"id": "h2-A", "a": "h2", "b": "A", "rate_bps": 1e10, "delay_ms": 0.01}},
               {{"id": "h3-B", "a": "h3", "b": "B", "rate_bps": 1e10, "delay_ms": 0.01}},
               {{"id": "h4-B", "a": "h4", "b": "B", "rate_bps": 1e10, "delay_ms": 0.01}},
               {{"id": "AB-1", "a": "A", "b": "B", "rate_bps": 1e9, "delay_ms": 5}},
               {{"id": "AB-2", "a": "B", "b": "A", "rate_bps": 1e9, "delay_ms": 7}}],
             "flows": {flows}}}"#
    )
}

fn simulate(json: &str) -> NetworkReport {
    run(&load(json, None).expect("valid network"))
}

const BIG: &str = r#"{"snd_buf_max_bytes": 67108864, "rcv_buf_max_bytes": 67108864}"#;
/// 1 Gb/s of frames carries this much TCP payload (1448 of every 1538 bytes).
const LINE_GOODPUT_BPS: f64 = 1e9 * 1448.0 / 1538.0;

#[test]
fn a_flow_takes_the_least_delay_and_fills_its_bottleneck() {
    let r = simulate(&network(r#"[{"from": "h1", "to": "h3"}]"#, BIG));
    let g = &r.groups[0];
    assert_eq!(g.route, ["h1-A", "AB-1", "h3-B"]);
    assert!((g.rtt_ms - 10.04).abs() < 1e-9, "{}", g.rtt_ms);
    assert!(r.counters.conserved, "{:?}", r.counters);
    let bps = g.sum_received.bits_per_second;
    assert!(
        bps > 0.9 * LINE_GOODPUT_BPS && bps <= LINE_GOODPUT_BPS * 1.001,
        "{bps}"
    );
}

#[test]
fn flows_from_two_hosts_share_the_link_between_the_switches() {
    let r = simulate(&network(
        r#"[{"from": "h1", "to": "h3"}, {"from": "h2", "to": "h4", "cc": "reno"}]"#,
        BIG,
    ));
    assert!(r.counters.conserved, "{:?}", r.counters);
    let (a, b) = (
        r.groups[0].sum_received.bits_per_second,
        r.groups[1].sum_received.bits_per_second,
    );
    assert!(
        a + b > 0.9 * LINE_GOODPUT_BPS && a + b <= LINE_GOODPUT_BPS * 1.001,
        "{a} + {b}"
    );
    assert!(
        a > 0.1 * LINE_GOODPUT_BPS && b > 0.1 * LINE_GOODPUT_BPS,
        "{a}, {b}"
    );
    assert!(
        r.counters.packets_dropped_queue > 0,
        "they found the queue's end"
    );
}

#[test]
fn a_loop_crosses_its_switches_twice_and_its_window_lasts_the_whole_loop() {
    // h1 -> A -> B on one circuit, back to A on the other, -> h2: 2 x (5 + 7 + 0.02) ms.
    // A fixed 1 MiB receive buffer offers 768 KiB: that much per round trip.
    let fixed =
        r#"{"auto_tuning": false, "snd_buf_max_bytes": 67108864, "rcv_buf_max_bytes": 1048576}"#;
    let r = simulate(&network(
        r#"[{"from": "h1", "to": "h2", "route": ["h1-A", "AB-1", "AB-2", "h2-A"]}]"#,
        fixed,
    ));
    let g = &r.groups[0];
    assert!((g.rtt_ms - 24.04).abs() < 1e-9, "{}", g.rtt_ms);
    assert!(r.counters.conserved);
    let window_bytes = 786_432.0;
    let expected = window_bytes * 8.0 / (g.rtt_ms / 1e3);
    let bps = g.sum_received.bits_per_second;
    assert!((bps / expected - 1.0).abs() < 0.05, "{bps} vs {expected}");
}

#[test]
fn routes_and_hosts_are_checked() {
    let e = load(
        &network(
            r#"[{"from": "h1", "to": "h3", "route": ["h1-A", "h3-B"]}]"#,
            BIG,
        ),
        None,
    )
    .unwrap_err();
    assert_eq!(e.field, "flows[0].route[1]");
    let e = load(&network(r#"[{"from": "h1", "to": "A"}]"#, BIG), None).unwrap_err();
    assert_eq!(e.field, "flows[0].to");
    let two_links = network(r#"[{"from": "h1", "to": "h3"}]"#, BIG)
        .replace(r#"{"id": "h2-A", "a": "h2""#, r#"{"id": "h2-A", "a": "h1""#);
    let e = load(&two_links, None).unwrap_err();
    assert!(e.field.starts_with("hosts."), "{e}");
}
