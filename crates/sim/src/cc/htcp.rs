//! H-TCP (Leith & Shorten 2004) as Linux's `tcp_htcp.c` computes it, in its integer
//! arithmetic: the increase per RTT grows with the time Δ since the last congestion
//! event, alpha = 2 (1 - beta) f(Δ) with f(Δ) = 1 + 10 (Δ - `Δ_L`) + ((Δ - `Δ_L`) / 2)^2
//! beyond `Δ_L` = 1 s, times the RTT scaling 10·RTTmin; the decrease is adaptive,
//! beta = `RTTmin` / `RTTmax` clamped to [0.5, 0.8] (0.5 at the first loss, and when
//! `RTTmin` <= 10 ms), and 0.5 with the adaptive mode off for the next loss when the
//! throughput reached between two losses moved by more than a fifth (the bandwidth switch,
//! `use_bandwidth_switch` = 1 in both kernels: `measure_achieved_throughput`,
//! `htcp_beta_update`). Not modelled: undo.
//!
//! Linux 6.x learns `RTTmin` and `RTTmax` from each raw sample (`htcp_pkts_acked`);
//! 2.6.18 from the smoothed RTT (`measure_rtt` reads `tp->srtt`), and `RTTmax` only once
//! a loss has set ssthresh and more than three `RTTmin` have passed since the last
//! congestion event (`htcp_ccount(ca) > 3`).
//!
//! The kernel's integers matter on long paths, so they are kept: f is a whole number of
//! jiffies' worth (HZ = 1000, as the distributions' 2.6.18 kernels ran), the RTT scaling
//! is `f · 8 / floor(8 HZ / (10 RTTmin))` with the divisor clamped to [4, 80] and the
//! result at least 1, and beta is in 128ths. So in the first second after a loss a
//! 163 ms path grows by 2 (1 - beta) segments per RTT where the real-valued formula
//! gives 1.63 (1 - beta), a 128 ms path by 1, and a 26.8 ms path by 2 (1 - beta) instead
//! of 0.27 (1 - beta): scaling never brings the factor below 1.

use super::{CongestionControl, Kernel, NS_PER_S, RttSample, Window};

pub const DELTA_L_S: f64 = 1.0;
/// Jiffies per second of the modelled kernels.
pub const HZ: u64 = 1000;
/// beta's bounds in 128ths, as `tcp_htcp.c` has them (0.5 and 0.797).
pub const BETA_MIN_128: u64 = 64;
pub const BETA_MAX_128: u64 = 102;
pub const BETA_MIN: f64 = BETA_MIN_128 as f64 / 128.0;
pub const BETA_MAX: f64 = BETA_MAX_128 as f64 / 128.0;
const MAX_RTT_STEP_NS: u64 = 20_000_000;
const RTT_SCALING_MIN_RTT_NS: u64 = 10_000_000;

pub struct Htcp {
    w: Window,
    /// In 128ths.
    beta_128: u64,
    modeswitch: bool,
    last_cong_ns: u64,
    min_rtt_ns: u64,
    max_rtt_ns: u64,
    kernel: Kernel,
    throughput: AchievedThroughput,
}

/// `measure_achieved_throughput`'s state: segments acked since `since_ns`, and the
/// smoothed (`Bi`) and greatest (`maxB`) throughput in segments per second since the last
/// loss, with the greatest of the loss before (`old_maxB`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct AchievedThroughput {
    last_ack: u64,
    segments: u64,
    since_ns: u64,
    smoothed: u64,
    max: u64,
    old_max: u64,
}

fn jiffies(ns: u64) -> u64 {
    ns * HZ / 1_000_000_000
}

/// f(Δ), the unscaled increase factor, in whole numbers as the kernel has it.
pub fn delta_factor(delta_s: f64) -> f64 {
    let diff = jiffies((delta_s.max(0.0) * NS_PER_S) as u64);
    if diff <= HZ {
        return 1.0;
    }
    let d = diff - HZ;
    (1 + (10 * d + (d / 2) * (d / 2) / HZ) / HZ) as f64
}

/// The RTT scaling's divisor, in eighths: `floor(8 HZ / (10 RTTmin))` within [4, 80];
/// `None` before any RTT is known (no scaling).
fn rtt_scale_eighths(min_rtt_ns: u64) -> Option<u64> {
    let min_rtt = jiffies(min_rtt_ns);
    (min_rtt > 0).then(|| ((HZ << 3) / (10 * min_rtt)).clamp(4, 80))
}

/// The RTT scaling of the increase, about 10 `RTTmin` (in seconds) within [0.1, 2].
pub fn rtt_scale(min_rtt_ns: u64) -> f64 {
    rtt_scale_eighths(min_rtt_ns).map_or(1.0, |scale| 8.0 / scale as f64)
}

/// alpha(Δ): segments added per RTT, from the integer factor as the kernel rounds it.
pub fn alpha(delta_s: f64, min_rtt_ns: u64, beta: f64) -> f64 {
    let factor = delta_factor(delta_s) as u64;
    let scaled =
        rtt_scale_eighths(min_rtt_ns).map_or(factor, |scale| ((factor << 3) / scale).max(1));
    2.0 * scaled as f64 * (1.0 - beta)
}

impl Htcp {
    pub fn new(w: Window, kernel: Kernel) -> Self {
        Self {
            w,
            beta_128: BETA_MIN_128,
            modeswitch: false,
            last_cong_ns: 0,
            min_rtt_ns: 0,
            max_rtt_ns: 0,
            kernel,
            throughput: AchievedThroughput::default(),
        }
    }

    /// RTTs since the last congestion event (`htcp_ccount`).
    fn rtts_since_congestion(&self, now_ns: u64) -> u64 {
        now_ns.saturating_sub(self.last_cong_ns) / self.min_rtt_ns.max(1)
    }

    /// `measure_achieved_throughput`, for an ACK that acknowledged new data: once a
    /// window's worth (less alpha) has been acked and an `RTTmin` has passed, the rate
    /// over that stretch joins `Bi` (restarting it within three RTTs of a loss).
    fn measure_throughput(&mut self, sample: &RttSample) {
        let mss = u64::from(self.w.mss_bytes);
        let window = self.w.cwnd.floor() as u64;
        let alpha = (self.alpha_at(sample.now_ns).floor() as u64).max(1);
        let min_rtt_j = jiffies(self.min_rtt_ns);
        let just_after_loss = self.rtts_since_congestion(sample.now_ns) <= 3;
        let t = &mut self.throughput;
        let acked = sample.ack.saturating_sub(t.last_ack) / mss;
        t.last_ack = t.last_ack.max(sample.ack);
        if !sample.open {
            t.segments = 0;
            t.since_ns = sample.now_ns;
            return;
        }
        t.segments += acked;
        let elapsed_j = jiffies(sample.now_ns.saturating_sub(t.since_ns));
        if t.segments >= window.saturating_sub(alpha) && min_rtt_j > 0 && elapsed_j >= min_rtt_j {
            let current = t.segments * HZ / elapsed_j;
            if just_after_loss {
                (t.smoothed, t.max) = (current, current);
            } else {
                t.smoothed = (3 * t.smoothed + current) / 4;
                t.max = t.max.max(t.smoothed);
            }
            t.segments = 0;
            t.since_ns = sample.now_ns;
        }
    }

    /// The bandwidth switch of `htcp_beta_update`: whether the greatest throughput of the
    /// last stretch between losses is within a fifth of the one before.
    fn throughput_steady(&mut self) -> bool {
        let t = &mut self.throughput;
        let (max, old) = (t.max, t.old_max);
        t.old_max = max;
        (4 * old..=6 * old).contains(&(5 * max))
    }

    /// 2.6.18's condition for learning `RTTmax`: a loss has happened and more than three
    /// `RTTmin` have passed since the last congestion event.
    fn learns_max_rtt_at(&self, now_ns: u64) -> bool {
        self.kernel != Kernel::Linux2_6_18
            || (self.w.ssthresh.is_finite()
                && self.min_rtt_ns > 0
                && self.rtts_since_congestion(now_ns) > 3)
    }

    pub fn beta(&self) -> f64 {
        self.beta_128 as f64 / 128.0
    }

    pub fn alpha_at(&self, now_ns: u64) -> f64 {
        let delta_s = now_ns.saturating_sub(self.last_cong_ns) as f64 / NS_PER_S;
        alpha(delta_s, self.min_rtt_ns, self.beta())
    }

    fn update_beta(&mut self) {
        if !self.throughput_steady() {
            self.beta_128 = BETA_MIN_128;
            self.modeswitch = false;
        } else if self.modeswitch && self.min_rtt_ns > RTT_SCALING_MIN_RTT_NS && self.max_rtt_ns > 0
        {
            self.beta_128 = ((jiffies(self.min_rtt_ns) << 7) / jiffies(self.max_rtt_ns).max(1))
                .clamp(BETA_MIN_128, BETA_MAX_128);
        } else {
            self.beta_128 = BETA_MIN_128;
            self.modeswitch = true;
        }
        // Slowly forget the maximum, for route changes (after the switch too:
        // htcp_param_update).
        if self.max_rtt_ns > self.min_rtt_ns && self.min_rtt_ns > 0 {
            self.max_rtt_ns = self.min_rtt_ns + (self.max_rtt_ns - self.min_rtt_ns) * 95 / 100;
        }
    }
}

impl CongestionControl for Htcp {
    fn name(&self) -> &'static str {
        "htcp"
    }
    fn window(&self) -> &Window {
        &self.w
    }
    fn window_mut(&mut self) -> &mut Window {
        &mut self.w
    }
    fn on_rtt(&mut self, sample: &RttSample) {
        self.measure_throughput(sample);
        let rtt_ns = if self.kernel == Kernel::Linux2_6_18 {
            sample.srtt_ns
        } else {
            sample.rtt_ns
        };
        if self.min_rtt_ns == 0 || rtt_ns < self.min_rtt_ns {
            self.min_rtt_ns = rtt_ns;
        }
        // tcp_htcp.c, measure_rtt: RTTmax only learns in the open state (the RTTs of a
        // recovery say nothing of the queue), and grows by at most 20 ms per sample, to
        // ignore outliers.
        if !sample.open || !self.learns_max_rtt_at(sample.now_ns) {
            return;
        }
        self.max_rtt_ns = self.max_rtt_ns.max(self.min_rtt_ns);
        if rtt_ns > self.max_rtt_ns && rtt_ns <= self.max_rtt_ns + MAX_RTT_STEP_NS {
            self.max_rtt_ns = rtt_ns;
        }
    }
    fn on_recovered(&mut self, now_ns: u64) {
        // tcp_htcp.c, htcp_state: back in TCP_CA_Open after a recovery, last_cong is set
        // to now again, so Δ counts from the end of the recovery, not its start.
        self.last_cong_ns = now_ns;
    }
    fn on_ack(&mut self, acked_bytes: u64, _rtt_ns: Option<u64>, now_ns: u64) {
        let ca = self.w.slow_start(self.w.segments(acked_bytes));
        if ca > 0.0 {
            self.w.cwnd += self.alpha_at(now_ns) * ca / self.w.cwnd;
        }
    }
    fn on_congestion_event(&mut self, now_ns: u64, _in_flight_bytes: u64) {
        self.update_beta();
        self.last_cong_ns = now_ns;
        self.w.reduce_to(self.beta());
    }
    fn on_rto(&mut self, now_ns: u64, reduce: bool, in_flight_bytes: u64) {
        if reduce {
            self.on_congestion_event(now_ns, in_flight_bytes);
        }
        self.last_cong_ns = now_ns;
        self.w.cwnd = 1.0;
    }
}
