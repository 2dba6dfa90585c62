//! CUBIC as Linux 2.6.18 (CUBIC 2.0) and 2.6.23 (CUBIC 2.1) ran it, from their
//! `net/ipv4/tcp_cubic.c`, in the kernels' integer arithmetic. Both differ from RFC 9438
//! and from [`super::Cubic`] (Linux 6.x):
//! - beta = 819/1024 (0.8), not 0.7; fast convergence to (1 + beta) / 2 of the old maximum;
//! - the cubic curve in 2^-10 s and whole segments with constants precomputed for a 100 ms
//!   RTT (`cubictcp_register`): K = cbrt(2^40 / 410 * (Wmax - cwnd)) and
//!   delta = 32 * |t - K|^3 >> 40, so the curve starts at Wmax - 0.078 (Wmax - cwnd) and is
//!   far flatter than C = 0.4;
//! - the increase is held to `max_increment` (16) segments per 100 ms of `delay_min`
//!   (`min_cnt`); 2.6.23 keeps `delay_min` in eighths of a jiffy, so its cap is eight
//!   times looser, and applies it only past K;
//! - a TCP-friendly estimate that grows one segment per 2.875 cwnd ACKs
//!   (`beta_scale` = 23 eighths);
//! - `cnt` = 50 until the first loss; counts divided by the measured ACK ratio
//!   (`delayed_ack`, packets per ACK in sixteenths);
//! - 2.6.18 starts with ssthresh 100 segments (`initial_ssthresh`, see `Kernel`);
//!   no `HyStart` (2.6.29).
//!
//! The cube root is the exact integer one (2.6.18 iterates Newton to within one unit,
//! 2.6.23 uses a table and one Newton step: both within a unit of 2^-10 s).

use super::{CongestionControl, RttSample, Window};

/// Jiffies per second of the modelled kernels.
const HZ: u64 = 1000;
pub(super) const BICTCP_HZ: u32 = 10;
const BETA_SCALE: u64 = 1024;
const BETA: u64 = 819;
const BIC_SCALE: u64 = 41;
const MAX_INCREMENT: u64 = 16;
const ACK_RATIO_SHIFT: u32 = 4;
/// `cube_rtt_scale` = (`bic_scale` << 3) / 10.
const CUBE_RTT_SCALE: u64 = (BIC_SCALE << 3) / 10;
/// `cube_factor` = 2^(10 + 3 `BICTCP_HZ`) / (`bic_scale` * 10).
pub(super) const CUBE_FACTOR: u64 = (1u64 << (10 + 3 * BICTCP_HZ)) / (BIC_SCALE * 10);
/// `beta_scale` = 8 (1024 + beta) / 3 / (1024 - beta).
const BETA_SCALE_EIGHTHS: u64 = 8 * (BETA_SCALE + BETA) / 3 / (BETA_SCALE - BETA);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CubicVersion {
    /// Linux 2.6.18.
    V2_0,
    /// Linux 2.6.23.
    V2_1,
}

fn jiffies(ns: u64) -> u64 {
    ns / (1_000_000_000 / HZ)
}

/// Where an epoch's curve starts (`bictcp_update`, every version): its origin (segments)
/// and K (2^-10 s), the time to climb back to the last maximum from `cwnd` below it.
pub(super) fn origin_and_k(last_max_cwnd: u64, cwnd: u64) -> (u64, u64) {
    if last_max_cwnd <= cwnd {
        (cwnd, 0)
    } else {
        (
            last_max_cwnd,
            cube_root(CUBE_FACTOR * (last_max_cwnd - cwnd)),
        )
    }
}

/// `bictcp_update`'s TCP-friendly region (every version): `ack_cnt` acknowledged
/// segments grow the estimated Reno window `tcp_cwnd` by one per `cwnd * beta_scale / 8`,
/// and while that estimate is ahead, `cnt` is lowered to catch up with it. Returns the
/// new `cnt`; `beta_scale_eighths` is the version's `beta_scale` (its Reno slope for the
/// version's beta), in eighths.
pub(super) fn friendly_cnt(
    cwnd: u64,
    beta_scale_eighths: u64,
    cnt: u64,
    ack_cnt: &mut u64,
    tcp_cwnd: &mut u64,
) -> u64 {
    let per_segment = (cwnd * beta_scale_eighths) >> 3;
    while per_segment > 0 && *ack_cnt > per_segment {
        *ack_cnt -= per_segment;
        *tcp_cwnd += 1;
    }
    if *tcp_cwnd > cwnd {
        cnt.min(cwnd / (*tcp_cwnd - cwnd))
    } else {
        cnt
    }
}

/// `bictcp_update`'s `cnt` from the curve (every version): acknowledgements per segment
/// of growth toward its value at `t` (2^-10 s into the epoch), or 100 cwnd at or above
/// it; `cube_rtt_scale` is the version's C for a 100 ms RTT, in 2^-10.
pub(super) fn cnt_toward_curve(origin: u64, k: u64, t: u64, cube_rtt_scale: u64, cwnd: u64) -> u64 {
    let offs = t.abs_diff(k);
    let delta =
        ((u128::from(cube_rtt_scale) * u128::from(offs).pow(3)) >> (10 + 3 * BICTCP_HZ)) as u64;
    let target = if t < k {
        origin.saturating_sub(delta)
    } else {
        origin + delta
    };
    if target > cwnd {
        cwnd / (target - cwnd)
    } else {
        100 * cwnd
    }
}

/// The greatest x with x^3 <= a.
pub(super) fn cube_root(a: u64) -> u64 {
    let mut x = (a as f64).cbrt() as u64;
    while x * x * x > a {
        x -= 1;
    }
    while (x + 1) * (x + 1) * (x + 1) <= a {
        x += 1;
    }
    x
}

pub struct Cubic26 {
    w: Window,
    version: CubicVersion,
    /// ACKs per segment of growth.
    cnt: u64,
    last_max_cwnd: u64,
    loss_cwnd: u64,
    last_cwnd: u64,
    last_time: u64,
    origin: u64,
    /// In 2^-10 s.
    k: u64,
    /// Jiffies (2.6.18) or eighths of a jiffy (2.6.23); 0 until measured.
    delay_min: u64,
    epoch_start: Option<u64>,
    ack_cnt: u64,
    tcp_cwnd: u64,
    /// Packets per ACK, in sixteenths.
    delayed_ack: u64,
    /// `snd_cwnd_cnt`.
    cwnd_cnt: u64,
    last_ack: u64,
}

impl Cubic26 {
    pub fn new(w: Window, version: CubicVersion) -> Self {
        Self {
            w,
            version,
            cnt: 0,
            last_max_cwnd: 0,
            loss_cwnd: 0,
            last_cwnd: 0,
            last_time: 0,
            origin: 0,
            k: 0,
            delay_min: 0,
            epoch_start: None,
            ack_cnt: 0,
            tcp_cwnd: 0,
            delayed_ack: 2 << ACK_RATIO_SHIFT,
            cwnd_cnt: 0,
            last_ack: 0,
        }
    }

    /// `bictcp_reset`, on a timeout (`bictcp_state` entering `TCP_CA_Loss`).
    fn reset(&mut self) {
        *self = Self {
            last_ack: self.last_ack,
            ..Self::new(self.w, self.version)
        };
    }

    /// The delay term in jiffies, whatever the version keeps.
    fn delay_min_jiffies(&self) -> u64 {
        match self.version {
            CubicVersion::V2_0 => self.delay_min,
            CubicVersion::V2_1 => self.delay_min >> 3,
        }
    }

    /// `bictcp_update`: ACKs per segment of growth at window `cwnd`, time `now` (jiffies).
    fn update(&mut self, cwnd: u64, now: u64) {
        self.ack_cnt += 1;
        if self.last_cwnd == cwnd && now.saturating_sub(self.last_time) <= HZ / 32 {
            return;
        }
        self.last_cwnd = cwnd;
        self.last_time = now;
        let epoch_start = *self.epoch_start.get_or_insert_with(|| {
            self.ack_cnt = 1;
            self.tcp_cwnd = cwnd;
            (self.origin, self.k) = origin_and_k(self.last_max_cwnd, cwnd);
            now
        });
        let t = ((now + self.delay_min_jiffies() - epoch_start) << BICTCP_HZ) / HZ;
        self.cnt = cnt_toward_curve(self.origin, self.k, t, CUBE_RTT_SCALE, cwnd);
        if self.delay_min > 0 {
            // "max increment = Smax * rtt / 0.1"
            let min_cnt = (cwnd * HZ * 8) / (10 * MAX_INCREMENT * self.delay_min);
            let past_k = self.version == CubicVersion::V2_0 || t >= self.k;
            if self.cnt < min_cnt && past_k {
                self.cnt = min_cnt;
            }
        }
        if self.loss_cwnd == 0 {
            self.cnt = 50; // slow start and low utilization
        }
        // TCP friendliness
        self.cnt = friendly_cnt(
            cwnd,
            BETA_SCALE_EIGHTHS,
            self.cnt,
            &mut self.ack_cnt,
            &mut self.tcp_cwnd,
        );
        self.cnt = ((self.cnt << ACK_RATIO_SHIFT) / self.delayed_ack).max(1);
    }
}

impl CongestionControl for Cubic26 {
    fn name(&self) -> &'static str {
        "cubic"
    }
    fn window(&self) -> &Window {
        &self.w
    }
    fn window_mut(&mut self) -> &mut Window {
        &mut self.w
    }
    fn on_rtt(&mut self, sample: &RttSample) {
        let mss = u64::from(self.w.mss_bytes);
        let acked = sample.ack.saturating_sub(self.last_ack) / mss;
        self.last_ack = self.last_ack.max(sample.ack);
        // bictcp_acked: the ACK ratio, a 1/16 moving average, in the open state.
        if acked > 0 && sample.open {
            self.delayed_ack =
                (self.delayed_ack + acked).saturating_sub(self.delayed_ack >> ACK_RATIO_SHIFT);
        }
        // measure_delay (2.6.18) / bictcp_acked (2.6.23): no samples within a second of
        // the epoch's start (just after a recovery).
        let now = jiffies(sample.now_ns);
        if self
            .epoch_start
            .is_some_and(|start| now.saturating_sub(start) < HZ)
        {
            return;
        }
        let delay = match self.version {
            CubicVersion::V2_0 => jiffies(sample.rtt_ns).max(1),
            CubicVersion::V2_1 => (jiffies(sample.rtt_ns) << 3).max(1),
        };
        if self.delay_min == 0 || self.delay_min > delay {
            self.delay_min = delay;
        }
    }
    fn on_ack(&mut self, acked_bytes: u64, _rtt_ns: Option<u64>, now_ns: u64) {
        let ca = self.w.slow_start(self.w.segments(acked_bytes));
        if ca <= 0.0 {
            return;
        }
        let cwnd = self.w.cwnd as u64;
        self.update(cwnd, jiffies(now_ns));
        // bictcp_cong_avoid: one segment once cnt ACKs are counted.
        if self.cwnd_cnt >= self.cnt {
            self.w.cwnd = (cwnd + 1) as f64;
            self.cwnd_cnt = 0;
        } else {
            self.cwnd_cnt += 1;
        }
    }
    fn on_congestion_event(&mut self, _now_ns: u64, _in_flight_bytes: u64) {
        // bictcp_recalc_ssthresh
        let cwnd = self.w.cwnd as u64;
        self.epoch_start = None;
        self.last_max_cwnd = if cwnd < self.last_max_cwnd {
            (cwnd * (BETA_SCALE + BETA)) / (2 * BETA_SCALE)
        } else {
            cwnd
        };
        self.loss_cwnd = cwnd;
        self.w.ssthresh = ((cwnd * BETA) / BETA_SCALE).max(2) as f64;
        self.w.cwnd = self.w.ssthresh;
    }
    fn on_rto(&mut self, now_ns: u64, reduce: bool, in_flight_bytes: u64) {
        if reduce {
            self.on_congestion_event(now_ns, in_flight_bytes);
        }
        self.reset();
        self.w.cwnd = 1.0;
    }
}

#[cfg(test)]
// The windows compared are whole segments.
#[allow(clippy::float_cmp)]
mod tests {
    use super::*;

    fn at(cwnd: f64, version: CubicVersion) -> Cubic26 {
        Cubic26::new(Window::new(1000, cwnd, Some(1.0)), version)
    }

    #[test]
    fn the_precomputed_constants_are_the_kernels() {
        assert_eq!(CUBE_RTT_SCALE, 32);
        assert_eq!(CUBE_FACTOR, 2_681_735_677);
        assert_eq!(BETA_SCALE_EIGHTHS, 23);
        assert_eq!(cube_root(27), 3);
        assert_eq!(cube_root(26), 2);
    }

    #[test]
    fn a_loss_keeps_eight_tenths_and_the_curve_starts_near_the_old_maximum() {
        let mut c = at(1000.0, CubicVersion::V2_0);
        c.on_congestion_event(0, 0);
        assert_eq!(c.window().cwnd, 799.0);
        assert_eq!(c.last_max_cwnd, 1000);
        // K^3 = 2^40 / 410 * 201 in 2^-30 s^3: K = 7.95 s; the curve starts 0.078 of the
        // way down, so the first target is about 985 segments.
        c.update(799, 10_000);
        assert_eq!(c.k, cube_root(CUBE_FACTOR * 201));
        assert!(c.cnt >= 2 && c.cnt <= 3, "cnt {}", c.cnt);
    }

    #[test]
    fn the_2_6_18_increase_cap_is_eight_times_tighter_than_2_6_23s() {
        let (mut old, mut new) = (at(800.0, CubicVersion::V2_0), at(800.0, CubicVersion::V2_1));
        for c in [&mut old, &mut new] {
            c.on_rtt(&RttSample::at(163_000_000, 5_000_000_000));
            c.loss_cwnd = 1000;
            c.last_max_cwnd = 2000;
            c.update(800, 6_000);
        }
        assert_eq!(old.delay_min, 163);
        assert_eq!(new.delay_min, 163 << 3);
        // min_cnt = 800 * 8000 / (160 * 163) = 245 ACKs, halved for delayed ACKs.
        assert_eq!(old.cnt, 245 * 16 / 32);
        assert!(new.cnt < old.cnt);
    }
}
