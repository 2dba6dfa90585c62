//! A lossless, credit-based forward path (`path.credit_buffer_bytes`): nothing is
//! dropped, a full buffer holds data back in the sender, and a long line carries at
//! most its far buffer per round trip.

use longhaul_sim::run::{Report, run};
use longhaul_sim::scenario::load;

fn simulate(path: &str) -> Report {
    let json = format!(
        r#"{{"duration_s": 2, "omit_s": 1, "cc": "cubic",
             "path": {path},
             "hosts": {{"sender": {{"snd_buf_max_bytes": 67108864, "rcv_buf_max_bytes": 67108864}},
                        "receiver": {{"snd_buf_max_bytes": 67108864, "rcv_buf_max_bytes": 67108864}}}}}}"#
    );
    run(&load(&json, None).expect("valid scenario"))
}

fn goodput_bps(r: &Report) -> f64 {
    r.end.sum_received.bits_per_second
}

#[test]
fn a_credit_path_fills_its_line_and_drops_nothing() {
    let r = simulate(
        r#"{"rate_bps": 1e9, "rtt_ms": 2, "queue_bytes": 65536, "credit_buffer_bytes": 1048576}"#,
    );
    let c = &r.counters;
    assert!(c.conserved, "{c:?}");
    assert_eq!((c.packets_dropped_queue, c.packets_dropped_line), (0, 0));
    assert_eq!(c.retransmits, 0);
    // The near buffer never holds more than its credit, though cubic's window, never
    // cut by a loss, is far larger: the rest waits in the sender.
    assert!(c.max_queue_bytes <= 1 << 20, "{}", c.max_queue_bytes);
    // 1448 payload bytes of every 1538-byte frame on the line.
    let line_goodput = 1e9 * 1448.0 / 1538.0;
    let g = goodput_bps(&r);
    assert!(g > 0.97 * line_goodput && g <= line_goodput * 1.001, "{g}");
}

#[test]
fn a_long_line_carries_its_far_buffer_once_per_round_trip() {
    // 10 Gb/s, 20 ms: a 1 MiB far buffer (655 frames of 1538 bytes, 25 blocks of 64
    // bytes each: 1600) allows far less than the line.
    let rtt_s = 0.020;
    let expected = |buffer: f64| (buffer / 1600.0).floor() * 1448.0 * 8.0 / rtt_s;
    for mib in [1_u32, 2] {
        let buffer = f64::from(mib) * f64::from(1_u32 << 20);
        let r = simulate(&format!(
            r#"{{"rate_bps": 1e10, "rtt_ms": 20, "queue_bytes": 1048576, "credit_buffer_bytes": {buffer}}}"#
        ));
        let g = goodput_bps(&r);
        let want = expected(buffer);
        assert!(
            (g / want - 1.0).abs() < 0.02,
            "buffer {buffer}: {g} vs {want}"
        );
        assert!(r.counters.conserved);
    }
}

#[test]
fn a_credit_path_refuses_loss_and_buffers_smaller_than_a_frame() {
    let e = load(
        r#"{"duration_s": 1, "path": {"rate_bps": 1e9, "rtt_ms": 2, "credit_buffer_bytes": 1048576, "loss": {"random": 1e-4}}}"#,
        None,
    )
    .unwrap_err();
    assert_eq!(e.field, "path.loss");
    let e = load(
        r#"{"duration_s": 1, "path": {"rate_bps": 1e9, "rtt_ms": 2, "credit_buffer_bytes": 1000}}"#,
        None,
    )
    .unwrap_err();
    assert_eq!(e.field, "path.credit_buffer_bytes");
    assert!(e.message.contains("1600"), "{e}");
}
