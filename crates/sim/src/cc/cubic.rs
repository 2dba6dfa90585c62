//! CUBIC as Linux 6.x runs it (`net/ipv4/tcp_cubic.c`, unchanged in substance from 5.8
//! to 6.18), in the kernel's integer arithmetic, with its hybrid slow start (`HyStart`).
//! Where it differs from RFC 9438 and from the 2.6 kernels' CUBIC ([`super::Cubic26`]):
//! - beta = 717/1024; fast convergence to (1 + beta) / 2 of the old maximum;
//! - the curve in 2^-10 s and whole segments, K = cbrt(2^40 / 410 * (Wmax - cwnd)),
//!   delta = 410 * |t - K|^3 >> 40 (C = 410 / 1024 = 0.4), t from the epoch's start plus
//!   `delay_min`, turned into `cnt`, acknowledged segments per segment of growth, at least 2
//!   (at most 1.5 times per RTT); recomputed at most once per jiffy, and only every
//!   `HZ / 32` while cwnd stands still;
//! - until the first loss (`last_max_cwnd` 0) `cnt` is at most 20: 5 % growth per RTT
//!   after slow start ends without a loss;
//! - a TCP-friendly estimate that grows one segment per 15/8 cwnd acknowledged segments
//!   (`beta_scale`), counted in segments (`tcp_cong_avoid_ai`);
//! - `HyStart` ends slow start (ssthresh = cwnd) once, before any loss, when the ACKs of
//!   one round arrive as a train (each within `hystart_ack_delta_us`, 2 ms, of the last)
//!   longer than half of `delay_min` plus the TSO/GRO allowance (`hystart_ack_delay`), or
//!   when the least RTT of a round's samples (after eight) exceeds `delay_min` by an
//!   eighth of it, clamped to 4-16 ms; a timeout resets it (`cubictcp_state`).
//!
//! Not modelled: `cubictcp_cwnd_event` shifting the epoch after an idle period (the
//! simulated flows never idle).

use super::cubic_2_6::{BICTCP_HZ, cnt_toward_curve, friendly_cnt, origin_and_k};
use super::{CongestionControl, RttSample, Window};

/// Jiffies per second: Debian's kernels are built with `CONFIG_HZ_250`.
const HZ: u64 = 250;
const BETA_SCALE: u64 = 1024;
/// `beta`.
const BETA: u64 = 717;
/// `cube_rtt_scale` = `bic_scale` (41) * 10.
const CUBE_RTT_SCALE: u64 = 41 * 10;
/// `beta_scale` = 8 (1024 + beta) / 3 / (1024 - beta), in eighths.
const BETA_SCALE_EIGHTHS: u64 = 8 * (BETA_SCALE + BETA) / 3 / (BETA_SCALE - BETA);
/// `hystart_low_window`, segments.
const HYSTART_LOW_WINDOW: f64 = 16.0;
/// `hystart_ack_delta_us`.
const HYSTART_ACK_DELTA_US: u64 = 2_000;
const HYSTART_MIN_SAMPLES: u32 = 8;
const HYSTART_DELAY_MIN_US: u64 = 4_000;
const HYSTART_DELAY_MAX_US: u64 = 16_000;
/// `sk_gso_max_size` of the hosts' devices: `GSO_LEGACY_MAX_SIZE`
/// (`include/linux/netdevice.h`), what veth, TUN and most NICs keep.
const GSO_MAX_SIZE_BYTES: u64 = 65_536;

fn jiffies(ns: u64) -> u64 {
    ns / (1_000_000_000 / HZ)
}

/// `usecs_to_jiffies`: rounded up.
fn usecs_to_jiffies(us: u64) -> u64 {
    (us * HZ).div_ceil(1_000_000)
}

/// `HyStart`'s state: whether the exit was found, and the current round.
#[derive(Debug, Clone, Copy, Default)]
struct HyStart {
    found: bool,
    round_start_us: u64,
    last_ack_us: u64,
    /// `snd_nxt` when the round began: the round ends once it is acknowledged.
    end_seq: u64,
    /// The least RTT of the round's samples.
    curr_rtt_us: u64,
    sample_cnt: u32,
}

pub struct Cubic {
    w: Window,
    /// acknowledged segments per segment of growth.
    cnt: u64,
    last_max_cwnd: u64,
    last_cwnd: u64,
    /// Jiffies.
    last_time: u64,
    origin: u64,
    /// In 2^-10 s.
    k: u64,
    /// Microseconds; 0 until measured.
    delay_min_us: u64,
    /// Jiffies.
    epoch_start: Option<u64>,
    ack_cnt: u64,
    tcp_cwnd: u64,
    /// `snd_cwnd_cnt`.
    cwnd_cnt: u64,
    hystart: HyStart,
}

impl Cubic {
    pub fn new(w: Window) -> Self {
        Self {
            w,
            cnt: 0,
            last_max_cwnd: 0,
            last_cwnd: 0,
            last_time: 0,
            origin: 0,
            k: 0,
            delay_min_us: 0,
            epoch_start: None,
            ack_cnt: 0,
            tcp_cwnd: 0,
            cwnd_cnt: 0,
            hystart: HyStart::default(),
        }
    }

    /// Whether `HyStart` ended slow start.
    pub fn hystart_found(&self) -> bool {
        self.hystart.found
    }

    pub fn last_max_cwnd(&self) -> u64 {
        self.last_max_cwnd
    }

    /// K of the current epoch, seconds.
    pub fn k_s(&self) -> f64 {
        self.k as f64 / f64::from(1u32 << BICTCP_HZ)
    }

    /// `bictcp_hystart_reset`: a new round begins with this sample.
    fn hystart_reset(&mut self, sample: &RttSample) {
        let now_us = sample.now_ns / 1_000;
        self.hystart = HyStart {
            found: self.hystart.found,
            round_start_us: now_us,
            last_ack_us: now_us,
            end_seq: sample.snd_nxt,
            curr_rtt_us: u64::MAX,
            sample_cnt: 0,
        };
    }

    /// `hystart_ack_delay`: the pacing rate's allowance for TSO/GRO batching, at most 1 ms.
    /// Linux's pacing rate in slow start is twice cwnd per smoothed RTT
    /// (`tcp_update_pacing_rate`, `sysctl_tcp_pacing_ss_ratio` 200), 1.2 times after.
    fn hystart_ack_delay_us(&self, srtt_ns: u64) -> u64 {
        let ratio_percent = if self.w.cwnd < self.w.ssthresh / 2.0 {
            200
        } else {
            120
        };
        let cwnd_bytes = self.w.cwnd as u64 * u64::from(self.w.mss_bytes);
        let rate_bytes_per_s = u128::from(cwnd_bytes) * 1_000_000_000 * ratio_percent
            / 100
            / u128::from(srtt_ns.max(1));
        if rate_bytes_per_s == 0 {
            return 0;
        }
        let delay_us = u128::from(GSO_MAX_SIZE_BYTES) * 4 * 1_000_000 / rate_bytes_per_s;
        delay_us.min(1_000) as u64
    }

    /// `hystart_update`.
    fn hystart_update(&mut self, delay_us: u64, sample: &RttSample) {
        if sample.ack > self.hystart.end_seq {
            self.hystart_reset(sample);
        }
        let now_us = sample.now_ns / 1_000;
        let h = &mut self.hystart;
        if now_us.saturating_sub(h.last_ack_us) <= HYSTART_ACK_DELTA_US {
            h.last_ack_us = now_us;
            // Not paced (no fq, no BBR): the train must last half the least RTT.
            let threshold_us = (self.delay_min_us + self.hystart_ack_delay_us(sample.srtt_ns)) >> 1;
            let h = &mut self.hystart;
            if now_us - h.round_start_us > threshold_us {
                h.found = true;
            }
        }
        let h = &mut self.hystart;
        h.curr_rtt_us = h.curr_rtt_us.min(delay_us);
        if h.sample_cnt < HYSTART_MIN_SAMPLES {
            h.sample_cnt += 1;
        } else {
            let margin = (self.delay_min_us >> 3).clamp(HYSTART_DELAY_MIN_US, HYSTART_DELAY_MAX_US);
            if h.curr_rtt_us > self.delay_min_us + margin {
                h.found = true;
            }
        }
        if self.hystart.found {
            self.w.ssthresh = self.w.cwnd.floor();
        }
    }

    /// `bictcp_update`: acknowledged segments per segment of growth at window `cwnd`, `acked`
    /// segments just acknowledged, at `now` (jiffies).
    fn update(&mut self, cwnd: u64, acked: u64, now: u64) {
        self.ack_cnt += acked;
        if self.last_cwnd == cwnd && now.saturating_sub(self.last_time) <= HZ / 32 {
            return;
        }
        // The curve is evaluated at most once per jiffy; the friendly estimate always.
        if self.epoch_start.is_none() || now != self.last_time {
            self.last_cwnd = cwnd;
            self.last_time = now;
            self.follow_curve(cwnd, acked, now);
        }
        self.cnt = friendly_cnt(
            cwnd,
            BETA_SCALE_EIGHTHS,
            self.cnt,
            &mut self.ack_cnt,
            &mut self.tcp_cwnd,
        )
        .max(2);
    }

    /// The cubic part of `bictcp_update`.
    fn follow_curve(&mut self, cwnd: u64, acked: u64, now: u64) {
        let epoch_start = if let Some(start) = self.epoch_start {
            start
        } else {
            self.ack_cnt = acked;
            self.tcp_cwnd = cwnd;
            (self.origin, self.k) = origin_and_k(self.last_max_cwnd, cwnd);
            self.epoch_start = Some(now);
            now
        };
        let t = ((now - epoch_start + usecs_to_jiffies(self.delay_min_us)) << BICTCP_HZ) / HZ;
        self.cnt = cnt_toward_curve(self.origin, self.k, t, CUBE_RTT_SCALE, cwnd);
        if self.last_max_cwnd == 0 && self.cnt > 20 {
            self.cnt = 20; // "increase cwnd 5% per RTT"
        }
    }

    /// `tcp_cong_avoid_ai`: `acked` segments toward growth of one segment per `w`.
    fn grow(&mut self, w: u64, acked: u64) {
        if self.cwnd_cnt >= w {
            self.cwnd_cnt = 0;
            self.w.cwnd = self.w.cwnd.floor() + 1.0;
        }
        self.cwnd_cnt += acked;
        if self.cwnd_cnt >= w {
            let delta = self.cwnd_cnt / w;
            self.cwnd_cnt -= delta * w;
            self.w.cwnd = self.w.cwnd.floor() + delta as f64;
        }
    }
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }
    fn window(&self) -> &Window {
        &self.w
    }
    fn window_mut(&mut self) -> &mut Window {
        &mut self.w
    }
    /// `cubictcp_acked`.
    fn on_rtt(&mut self, sample: &RttSample) {
        // No samples within a second of the epoch's start (just after a recovery).
        let now = jiffies(sample.now_ns);
        if self
            .epoch_start
            .is_some_and(|start| now.saturating_sub(start) < HZ)
        {
            return;
        }
        let delay_us = (sample.rtt_ns / 1_000).max(1);
        if self.delay_min_us == 0 || self.delay_min_us > delay_us {
            self.delay_min_us = delay_us;
        }
        if !self.hystart.found && self.w.in_slow_start() && self.w.cwnd >= HYSTART_LOW_WINDOW {
            self.hystart_update(delay_us, sample);
        }
    }
    /// `cubictcp_cong_avoid` (the sender asks `tcp_is_cwnd_limited` first).
    fn on_ack(&mut self, acked_bytes: u64, _rtt_ns: Option<u64>, now_ns: u64) {
        let acked = self.w.slow_start(self.w.segments(acked_bytes));
        if acked <= 0.0 {
            return;
        }
        // Linux counts whole packets.
        let acked = acked.round().max(1.0) as u64;
        let cwnd = self.w.cwnd as u64;
        self.update(cwnd, acked, jiffies(now_ns));
        self.grow(self.cnt, acked);
    }
    /// `cubictcp_recalc_ssthresh`.
    fn on_congestion_event(&mut self, _now_ns: u64, _in_flight_bytes: u64) {
        let cwnd = self.w.cwnd as u64;
        self.epoch_start = None;
        self.last_max_cwnd = if cwnd < self.last_max_cwnd {
            (cwnd * (BETA_SCALE + BETA)) / (2 * BETA_SCALE)
        } else {
            cwnd
        };
        self.w.ssthresh = ((cwnd * BETA) / BETA_SCALE).max(2) as f64;
        self.w.cwnd = self.w.ssthresh;
    }
    /// A timeout: reduce if this loss event has not, then `cubictcp_state` entering
    /// `TCP_CA_Loss` resets everything, `HyStart` included.
    fn on_rto(&mut self, now_ns: u64, reduce: bool, in_flight_bytes: u64) {
        if reduce {
            self.on_congestion_event(now_ns, in_flight_bytes);
        }
        *self = Self::new(self.w);
        self.w.cwnd = 1.0;
    }
}

#[cfg(test)]
// Windows are whole segments.
#[allow(clippy::float_cmp)]
mod tests {
    use super::*;

    const MSS: u32 = 1448;

    #[test]
    fn the_precomputed_constants_are_the_kernels() {
        assert_eq!(BETA_SCALE_EIGHTHS, 15);
        assert_eq!(super::super::cubic_2_6::CUBE_FACTOR, 2_681_735_677);
        assert_eq!(usecs_to_jiffies(653_000), 164);
        assert_eq!(usecs_to_jiffies(1), 1);
    }

    #[test]
    fn a_loss_keeps_seven_tenths_and_fast_convergence_lowers_the_maximum() {
        let mut c = Cubic::new(Window::new(MSS, 1000.0, Some(1.0)));
        c.on_congestion_event(0, 0);
        assert_eq!(c.window().cwnd, 700.0);
        assert_eq!(c.last_max_cwnd, 1000);
        c.on_congestion_event(0, 0);
        assert_eq!(c.last_max_cwnd, 700 * 1741 / 2048);
    }

    #[test]
    fn after_a_lossless_slow_start_cwnd_grows_five_percent_per_rtt() {
        let mut c = Cubic::new(Window::new(MSS, 1000.0, Some(1000.0)));
        let rtt_ns = 100_000_000;
        for round in 0..10u64 {
            let now_ns = 2_000_000_000 + round * rtt_ns;
            let acks = c.window().cwnd as u64;
            for _ in 0..acks {
                c.on_rtt(&RttSample::at(rtt_ns, now_ns));
                c.on_ack(u64::from(MSS), Some(rtt_ns), now_ns);
            }
        }
        // 1.05^10 = 1.63; the curve alone would have added a few segments.
        let cwnd = c.window().cwnd;
        assert!((1550.0..=1650.0).contains(&cwnd), "{cwnd}");
    }
}
