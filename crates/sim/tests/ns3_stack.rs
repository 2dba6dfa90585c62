//! The ns-3.37 stack's controllers and sender rules, each against the ns-3 function it
//! follows (`src/internet/model/tcp-*.cc`, tag ns-3.37).

#![allow(clippy::float_cmp)]

use longhaul_sim::cc::{CcKind, CongestionControl, Kernel, RttSample, Window};

const MSS: u32 = 1000;
const MS: u64 = 1_000_000;

fn ns3(kind: CcKind, cwnd: f64, ssthresh: f64) -> Box<dyn CongestionControl> {
    kind.build(Window::new(MSS, cwnd, Some(ssthresh)), Kernel::Ns3)
}

/// `acks` delayed ACKs of two segments each.
fn ack_pairs(cc: &mut dyn CongestionControl, acks: u32, now_ns: u64) {
    for _ in 0..acks {
        cc.on_ack(2 * u64::from(MSS), None, now_ns);
    }
}

#[test]
fn ns3_slow_start_adds_one_segment_per_ack_where_linux_counts_bytes() {
    let mut ns3_reno_derived = ns3(CcKind::Highspeed, 10.0, 1000.0);
    ack_pairs(ns3_reno_derived.as_mut(), 5, 0);
    assert_eq!(ns3_reno_derived.window().cwnd, 15.0);
    let mut linux = CcKind::Highspeed.build(Window::new(MSS, 10.0, Some(1000.0)), Kernel::Linux6);
    ack_pairs(linux.as_mut(), 5, 0);
    assert_eq!(linux.window().cwnd, 20.0);
}

#[test]
fn ns3_scalable_grows_one_segment_per_fifty_acked() {
    let mut cc = ns3(CcKind::Scalable, 200.0, 100.0);
    ack_pairs(cc.as_mut(), 25, 0);
    assert_eq!(cc.window().cwnd, 201.0);
}

#[test]
fn ns3_highspeed_adds_a_of_w_per_acked_segment() {
    // a(100) = 2: 200 segments acked add 400 / 100... one segment per 50 acked.
    let mut cc = ns3(CcKind::Highspeed, 100.0, 50.0);
    ack_pairs(cc.as_mut(), 25, 0);
    assert_eq!(cc.window().cwnd, 101.0);
}

#[test]
fn ns3_vegas_backs_off_one_segment_on_a_loss() {
    let mut cc = ns3(CcKind::Vegas, 100.0, 1000.0);
    cc.on_congestion_event(0, 100_000);
    assert_eq!(cc.window().ssthresh, 99.0);
}

#[test]
fn ns3_reductions_start_from_the_bytes_in_flight() {
    // HighSpeed and Scalable take ssthresh from the pipe, not from cwnd.
    let mut cc = ns3(CcKind::Scalable, 100.0, 50.0);
    cc.on_congestion_event(0, 40 * u64::from(MSS));
    assert_eq!(cc.window().ssthresh, 35.0);
    let mut cc = ns3(CcKind::Highspeed, 100.0, 50.0);
    cc.on_congestion_event(0, 200 * u64::from(MSS));
    // b(200) = 0.41: 200 * 0.59 = 118.
    assert_eq!(cc.window().ssthresh, 118.0);
}

#[test]
fn ns3_cubic_before_any_loss_grows_one_segment_per_cnt_clamp_acked() {
    // No loss yet: the target is the window itself, so cnt = 100 cwnd, clamped to
    // CntClamp = 20 (TcpCubic::Update).
    let mut cc = ns3(CcKind::Cubic, 100.0, 100.0);
    cc.on_rtt(&RttSample::at(27 * MS, 27 * MS));
    ack_pairs(cc.as_mut(), 50, 30 * MS);
    assert_eq!(cc.window().cwnd, 105.0);
}

#[test]
fn every_ns3_controller_grows_whether_or_not_the_window_limits_the_sender() {
    for kind in CcKind::ALL {
        assert!(!ns3(kind, 10.0, 5.0).grows_only_when_cwnd_limited());
        let linux = kind.build(Window::new(MSS, 10.0, None), Kernel::Linux6);
        assert!(linux.grows_only_when_cwnd_limited());
    }
}
