//! Each congestion controller's window against its published formula, driven directly
//! through the trait with a scripted pattern of ACKs and losses.

// Some compared values are exact constants (beta_min, table end points).
#![allow(clippy::float_cmp)]

use longhaul_sim::cc::{
    CcKind, CongestionControl, Cubic, Htcp, Kernel, RttSample, Vegas, Window, bic, highspeed, htcp,
};

const MSS: u32 = 1000;
const MS: u64 = 1_000_000;

/// A controller in congestion avoidance at `cwnd` segments.
fn avoiding(kind: CcKind, cwnd: f64) -> Box<dyn CongestionControl> {
    kind.build(Window::new(MSS, cwnd, Some(cwnd)), Kernel::Linux6)
}

/// One RTT of ACKs: a window's worth of segments, two per ACK, all stamped `now_ns`.
fn one_rtt(cc: &mut dyn CongestionControl, rtt_ns: u64, now_ns: u64) {
    let acks = (cc.window().cwnd.floor() as u64).div_ceil(2);
    for _ in 0..acks {
        cc.on_rtt(&RttSample::at(rtt_ns, now_ns));
        cc.on_ack(2 * u64::from(MSS), Some(rtt_ns), now_ns);
    }
}

fn cwnd(cc: &dyn CongestionControl) -> f64 {
    cc.window().cwnd
}

#[test]
fn reno_adds_one_segment_per_rtt_and_halves() {
    let mut cc = avoiding(CcKind::Reno, 100.0);
    for k in 1..=10 {
        one_rtt(cc.as_mut(), 100 * MS, k * 100 * MS);
    }
    assert!(
        (cwnd(cc.as_ref()) - 110.0).abs() < 0.5,
        "{}",
        cwnd(cc.as_ref())
    );
    let before = cwnd(cc.as_ref());
    cc.on_congestion_event(0, 0);
    assert!((cwnd(cc.as_ref()) - before / 2.0).abs() < 1e-9);
}

#[test]
fn scalable_grows_one_percent_per_rtt_and_keeps_seven_eighths() {
    let mut cc = avoiding(CcKind::Scalable, 1000.0);
    one_rtt(cc.as_mut(), 100 * MS, 0);
    assert!(
        (cwnd(cc.as_ref()) - 1010.0).abs() < 0.5,
        "{}",
        cwnd(cc.as_ref())
    );
    let before = cwnd(cc.as_ref());
    cc.on_congestion_event(0, 0);
    assert!((cwnd(cc.as_ref()) - before * 0.875).abs() < 1e-9);
}

#[test]
fn highspeed_matches_the_rfc_3649_table() {
    // (w, a(w), b(w)) rows of RFC 3649's Appendix B.
    for (w, a, b) in [
        (118.0, 2.0, 0.44),
        (347.0, 4.0, 0.38),
        (1058.0, 8.0, 0.33),
        (5036.0, 20.0, 0.25),
        (10661.0, 30.0, 0.21),
    ] {
        assert!(
            (highspeed::increase(w) - a).abs() < 0.7,
            "a({w}) = {}",
            highspeed::increase(w)
        );
        assert!(
            (highspeed::decrease(w) - b).abs() < 0.011,
            "b({w}) = {}",
            highspeed::decrease(w)
        );
    }
    // Linux adds a(w) / cwnd per ACK: one RTT of delayed ACKs (two segments each) grows
    // the window by a(w) / 2.
    let mut cc = avoiding(CcKind::Highspeed, 1058.0);
    one_rtt(cc.as_mut(), 100 * MS, 0);
    let grown = cwnd(cc.as_ref()) - 1058.0;
    assert!(
        (grown - highspeed::increase(1058.0) / 2.0).abs() < 0.2,
        "{grown}"
    );
    let w = cwnd(cc.as_ref());
    cc.on_congestion_event(0, 0);
    assert!((cwnd(cc.as_ref()) - w * (1.0 - highspeed::decrease(w))).abs() < 1e-9);
    // At and below Low_Window it is Reno.
    assert_eq!(highspeed::increase(38.0), 1.0);
    assert_eq!(highspeed::decrease(20.0), 0.5);
}

#[test]
fn scalable_grows_as_reno_below_ai_cnt_and_by_one_percent_per_segment_above() {
    use longhaul_sim::cc::scalable::SCALABLE_AI_CNT;
    let mut small = avoiding(CcKind::Scalable, 40.0);
    one_rtt(small.as_mut(), 100 * MS, 0);
    assert!(
        (cwnd(small.as_ref()) - 41.0).abs() < 0.05,
        "{}",
        cwnd(small.as_ref())
    );
    let mut large = avoiding(CcKind::Scalable, 1000.0);
    one_rtt(large.as_mut(), 100 * MS, 0);
    let grown = cwnd(large.as_ref()) - 1000.0;
    assert!((grown - 1000.0 / SCALABLE_AI_CNT).abs() < 0.01, "{grown}");
}

#[test]
fn bic_searches_binarily_towards_the_last_maximum() {
    let mut cc = avoiding(CcKind::Bic, 1000.0);
    cc.on_congestion_event(0, 0);
    let start = cwnd(cc.as_ref());
    assert!((start - 1000.0 * bic::BETA).abs() < 1e-9);
    let mut w = vec![start];
    for k in 1..=80 {
        one_rtt(cc.as_mut(), 100 * MS, k * 100 * MS);
        w.push(cwnd(cc.as_ref()));
    }
    // Far from Wmax: additive, at most MAX_INCREMENT per RTT.
    let step = w[1] - w[0];
    assert!((step - bic::MAX_INCREMENT).abs() < 1.0, "{step}");
    // Then steps shrink as the distance halves: never more than (Wmax - cwnd) / B + 1.
    for pair in w.windows(2) {
        let dist = 1000.0 - pair[0];
        if dist > 0.0 && dist / bic::B < bic::MAX_INCREMENT {
            assert!(pair[1] - pair[0] <= dist / bic::B + 1.0, "{pair:?}");
        }
    }
    // Within B segments of Wmax it creeps (1/SMOOTH_PART * B per RTT), lingering there,
    // then probes above it.
    let near = w.iter().filter(|&&x| (x - 1000.0).abs() < bic::B).count();
    assert!(near >= 10, "{w:?}");
    assert!(*w.last().unwrap() > 1000.0, "{w:?}");
}

#[test]
fn cubic_follows_its_cubic_from_the_last_maximum() {
    let mut cc = Cubic::new(Window::new(MSS, 1000.0, Some(1000.0)));
    cc.on_congestion_event(0, 0);
    assert!((cc.window().cwnd - 700.0).abs() < 1e-9);
    let rtt_ns = 100 * MS;
    // The epoch starts at the first ACK after the loss.
    one_rtt(&mut cc, rtt_ns, 0);
    let k_s: f64 = (1000.0_f64 * (1.0 - 0.7) / 0.4).cbrt();
    assert!((cc.k_s() - k_s).abs() < 0.01, "K = {}", cc.k_s());
    let w = |t: f64| 0.4 * (t - k_s).powi(3) + 1000.0;
    for k in 1..=150u64 {
        let now = k * rtt_ns;
        one_rtt(&mut cc, rtt_ns, now);
        let t = now as f64 / 1e9;
        if k % 10 == 0 {
            // cwnd tracks W(t + RTT) to within one RTT's growth.
            let expected = w(t + 0.1);
            let lag = (w(t + 0.2) - w(t)).abs() + 2.0;
            assert!(
                (cc.window().cwnd - expected).abs() <= lag,
                "t = {t}: cwnd {} vs W {expected}",
                cc.window().cwnd
            );
        }
    }
    assert!(cc.window().cwnd > 1000.0, "past K it probes beyond Wmax");
}

#[test]
fn cubic_is_reno_friendly_at_small_windows_and_short_rtts() {
    // At 10 segments and 1 ms the cubic curve is nearly flat; the AIMD estimate leads.
    let mut cc = Cubic::new(Window::new(MSS, 10.0, Some(10.0)));
    cc.on_congestion_event(0, 0);
    for k in 1..=100u64 {
        one_rtt(&mut cc, MS, k * MS);
    }
    // alpha = 3 (1 - 0.7) / 1.7 = 0.53 segments per RTT at most: the kernel looks at the
    // estimate only when cwnd changed or HZ / 32 passed, so a little less.
    let most = 7.0 + 100.0 * 3.0 * 0.3 / 1.7;
    let cwnd = cc.window().cwnd;
    assert!(cwnd <= most + 1.0 && cwnd >= most * 0.85, "{cwnd}");
}

#[test]
fn htcp_alpha_grows_with_time_since_congestion() {
    assert_eq!(htcp::delta_factor(0.5), 1.0);
    assert!((htcp::delta_factor(3.0) - (1.0 + 20.0 + 1.0)).abs() < 1e-12);
    // At RTTmin 100 ms the RTT scaling is 1.
    assert!((htcp::rtt_scale(100 * MS) - 1.0).abs() < 1e-12);
    assert!((htcp::alpha(3.0, 100 * MS, 0.5) - 22.0).abs() < 1e-12);

    let mut cc = Htcp::new(Window::new(MSS, 1000.0, Some(1000.0)), Kernel::Linux6);
    cc.on_rtt(&RttSample::at(100 * MS, 0));
    cc.on_congestion_event(0, 0);
    assert_eq!(cc.beta(), 0.5, "the first loss uses beta_min");
    let w0 = cc.window().cwnd;
    one_rtt(&mut cc, 100 * MS, 500 * MS);
    assert!(
        (cc.window().cwnd - w0 - 1.0).abs() < 0.1,
        "low-speed mode: Reno"
    );
    let w1 = cc.window().cwnd;
    one_rtt(&mut cc, 100 * MS, 3_000 * MS);
    assert!(
        (cc.window().cwnd - w1 - 22.0).abs() < 1.0,
        "{}",
        cc.window().cwnd - w1
    );
}

#[test]
fn htcp_beta_adapts_to_the_rtt_ratio() {
    let mut cc = Htcp::new(Window::new(MSS, 1000.0, Some(1000.0)), Kernel::Linux6);
    cc.on_rtt(&RttSample::at(100 * MS, 0));
    cc.on_rtt(&RttSample::at(115 * MS, 0));
    cc.on_rtt(&RttSample::at(125 * MS, 0));
    cc.on_congestion_event(0, 0);
    assert_eq!(cc.beta(), 0.5);
    cc.on_congestion_event(MS, 0);
    // 100/125 = 0.8 in 128ths is 102.4: the kernel keeps 102.
    assert!(
        (cc.beta() - 102.0 / 128.0).abs() < 1e-9,
        "100/125: {}",
        cc.beta()
    );
}

#[test]
fn htcp_scales_alpha_with_the_kernels_integers() {
    // Within the first second f = 1; the scaling divisor is floor(8000 / (10 RTTmin ms)).
    // 163 ms: divisor 4, factor 8 / 4 = 2 (the real-valued 1.63 rounds up).
    assert_eq!(htcp::alpha(0.5, 163 * MS, 0.5), 2.0);
    // 128 ms: divisor 6, 8 / 6 = 1.
    assert_eq!(htcp::alpha(0.5, 128 * MS, 0.5), 1.0);
    // 26.8 ms: divisor 29, 8 / 29 = 0, which the kernel raises to 1.
    assert_eq!(htcp::alpha(0.5, 26_800_000, 0.5), 1.0);
    // 1.5 s after the loss f = 1 + (10 * 500 + 250 * 250 / 1000) / 1000 = 6;
    // at 163 ms 6 * 8 / 4 = 12, at 128 ms 48 / 6 = 8, at 26.8 ms 48 / 29 = 1.
    assert_eq!(htcp::delta_factor(1.5), 6.0);
    assert_eq!(htcp::alpha(1.5, 163 * MS, 0.5), 12.0);
    assert_eq!(htcp::alpha(1.5, 128 * MS, 0.5), 8.0);
    assert_eq!(htcp::alpha(1.5, 26_800_000, 0.5), 1.0);
    // The decrease keeps (1 - beta) in 128ths.
    assert!((htcp::alpha(1.5, 163 * MS, 102.0 / 128.0) - 12.0 * 2.0 * 26.0 / 128.0).abs() < 1e-12);
}

/// An RTT sample as the sender gives it: `ack` acknowledged, `snd_nxt` sent.
fn sample(rtt_ns: u64, ack: u64, snd_nxt: u64) -> RttSample {
    RttSample {
        ack,
        snd_nxt,
        ..RttSample::at(rtt_ns, 0)
    }
}

#[test]
fn htcp_counts_delta_from_the_end_of_recovery_and_learns_rttmax_only_when_open() {
    let mut cc = Htcp::new(Window::new(MSS, 1000.0, Some(1000.0)), Kernel::Linux6);
    cc.on_rtt(&RttSample::at(100 * MS, 0));
    cc.on_congestion_event(0, 0);
    // A recovery's RTTs (a queue draining) do not raise RTTmax.
    cc.on_rtt(&RttSample {
        open: false,
        ..RttSample::at(115 * MS, 0)
    });
    cc.on_recovered(2_000 * MS);
    // 2.5 s after the loss but 0.5 s after the recovery ended: still f = 1.
    assert_eq!(cc.alpha_at(2_500 * MS), 2.0 * (1.0 - cc.beta()));
    cc.on_congestion_event(3_000 * MS, 0);
    assert_eq!(
        cc.beta(),
        htcp::BETA_MAX,
        "the 115 ms came during recovery: RTTmax stayed at RTTmin, 100/100 clamps to beta_max"
    );
}

#[test]
fn vegas_holds_between_alpha_and_beta() {
    let base = 100 * MS;
    // diff = floor(cwnd (rtt - base) / base); pick rtt for a target diff at 100 segments.
    let rtt_for = |diff: f64| (base as f64 * (100.0 + diff) / 100.0) as u64 + 1;
    for (diff, change) in [(1.0, 1.0), (3.0, 0.0), (6.0, -1.0)] {
        let mut cc = Vegas::new(Window::new(MSS, 100.0, Some(50.0)));
        // The first ACK passes beg_snd_nxt = 0 and opens a round that ends at 100 kB.
        cc.on_rtt(&sample(base, 1000, 100_000));
        cc.on_ack(u64::from(MSS), Some(base), 0);
        let before = cc.window().cwnd;
        let rtt = rtt_for(diff);
        for k in 2..=6 {
            // Inside the round: ACKs up to beg_snd_nxt change nothing in avoidance.
            cc.on_rtt(&sample(rtt, k * 1000, 100_000 + k * 1000));
            cc.on_ack(u64::from(MSS), Some(rtt), 0);
            assert_eq!(cc.window().cwnd, before);
        }
        cc.on_rtt(&sample(rtt, 100_001, 200_000));
        cc.on_ack(u64::from(MSS), Some(rtt), 0);
        assert!(
            (cc.window().cwnd - before - change).abs() < 1e-9,
            "diff {diff}: {} -> {}",
            before,
            cc.window().cwnd
        );
        assert_eq!(cc.base_rtt_ns(), base);
    }
}

/// ACKs every 10 ms from `from_ns` to `to_ns` at `segments_per_s`, RTTs alternating
/// 100 and 125 ms, the sender open; returns the last ACK's sequence number.
fn htcp_acks(cc: &mut Htcp, ack: u64, from_ns: u64, to_ns: u64, segments_per_s: u64) -> u64 {
    let mut ack = ack;
    for (k, now_ns) in (from_ns..to_ns).step_by(10 * MS as usize).enumerate() {
        ack += segments_per_s / 100 * u64::from(MSS);
        let rtt_ns = if k % 2 == 0 { 100 * MS } else { 125 * MS };
        cc.on_rtt(&RttSample {
            rtt_ns,
            srtt_ns: rtt_ns,
            now_ns,
            open: true,
            ack,
            snd_nxt: ack + 1000 * u64::from(MSS),
        });
    }
    ack
}

#[test]
fn htcp_bandwidth_switch_drops_to_beta_min_when_throughput_moves_by_a_fifth() {
    let mut cc = Htcp::new(Window::new(MSS, 1000.0, Some(1000.0)), Kernel::Linux6);
    let ack = htcp_acks(&mut cc, 0, 0, 2_000 * MS, 10_000);
    cc.on_congestion_event(2_000 * MS, 0);
    assert_eq!(cc.beta(), 0.5, "the first loss");
    // The same throughput again: the switch (which fired at the first loss, against no
    // earlier throughput) turns the adaptive mode back on, and the next loss uses it.
    let ack = htcp_acks(&mut cc, ack, 2_000 * MS, 4_000 * MS, 10_000);
    cc.on_congestion_event(4_000 * MS, 0);
    assert_eq!(cc.beta(), 0.5);
    let ack = htcp_acks(&mut cc, ack, 4_000 * MS, 6_000 * MS, 10_000);
    cc.on_congestion_event(6_000 * MS, 0);
    assert!((cc.beta() - 102.0 / 128.0).abs() < 1e-9, "{}", cc.beta());
    // Twice the throughput: the switch sets beta_min.
    htcp_acks(&mut cc, ack, 6_000 * MS, 8_000 * MS, 20_000);
    cc.on_congestion_event(8_000 * MS, 0);
    assert_eq!(cc.beta(), 0.5);
}

#[test]
fn the_2_6_18_bic_and_cubic_start_with_ssthresh_100_and_2_6_23_with_none() {
    for kind in [CcKind::Bic, CcKind::Cubic] {
        let old = kind.build(Window::new(MSS, 3.0, None), Kernel::Linux2_6_18);
        assert!((old.window().ssthresh - 100.0).abs() < 1e-12);
        let newer = kind.build(Window::new(MSS, 3.0, None), Kernel::Linux2_6_23);
        assert!(newer.window().ssthresh.is_infinite());
        // A host's own initial ssthresh wins.
        let set = kind.build(Window::new(MSS, 3.0, Some(40.0)), Kernel::Linux2_6_18);
        assert!((set.window().ssthresh - 40.0).abs() < 1e-12);
    }
}

#[test]
fn the_2_6_18_highspeed_slow_starts_by_rfc_3742_above_100_segments() {
    let mut old = CcKind::Highspeed.build(Window::new(MSS, 200.0, None), Kernel::Linux2_6_18);
    let mut new = CcKind::Highspeed.build(Window::new(MSS, 200.0, None), Kernel::Linux6);
    // 200 ACKs of two segments: K = 200 / 50 = 4 ACKs per segment at first.
    for k in 0..200 {
        old.on_ack(2 * u64::from(MSS), None, k);
        new.on_ack(2 * u64::from(MSS), None, k);
    }
    let grown = old.window().cwnd - 200.0;
    assert!((40.0..=50.0).contains(&grown), "{grown}");
    assert!((new.window().cwnd - 600.0).abs() < 1e-9);
}
