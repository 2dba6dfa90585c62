//! `HighSpeed` TCP (RFC 3649): above `LOW_WINDOW` segments the increase a(w) grows and the
//! decrease b(w) shrinks with the window, so that the response function is
//! w = 0.12 / p^0.835 between (`Low_Window`, `Low_P`) and (`High_Window`, `High_P`).
//! Computed from the RFC's formulas (Linux uses the RFC's Appendix B table of the same).
//!
//! Linux 2.6.18's `hstcp_cong_avoid` slow-starts by RFC 3742's limited slow start above
//! `max_ssthresh` = 100 segments: one segment per K ACKs, K = cwnd / 50. 2.6.23 dropped it
//! for the common `tcp_slow_start` (with `tcp_max_ssthresh` = 0: plain slow start).

use super::{CongestionControl, Kernel, Window};

/// 2.6.18 `tcp_highspeed.c`'s `max_ssthresh`, segments.
pub const MAX_SSTHRESH_2_6_18: f64 = 100.0;

pub const LOW_WINDOW: f64 = 38.0;
pub const HIGH_WINDOW: f64 = 83_000.0;
pub const HIGH_P: f64 = 1e-7;
/// The loss rate at which standard TCP's window is `Low_Window` (RFC 3649, section 5).
pub const LOW_P: f64 = 1e-3;
pub const HIGH_DECREASE: f64 = 0.1;

/// Where `w` sits between `Low_Window` and `High_Window` on a log scale (0..1, may exceed 1).
fn log_position(w: f64) -> f64 {
    (w.ln() - LOW_WINDOW.ln()) / (HIGH_WINDOW.ln() - LOW_WINDOW.ln())
}

/// b(w): the fraction the window loses on a loss.
pub fn decrease(w: f64) -> f64 {
    if w <= LOW_WINDOW {
        0.5
    } else {
        (HIGH_DECREASE - 0.5) * log_position(w) + 0.5
    }
}

/// p(w): the loss rate at which the response function gives window `w`.
pub fn loss_rate(w: f64) -> f64 {
    (log_position(w) * (HIGH_P.ln() - LOW_P.ln()) + LOW_P.ln()).exp()
}

/// a(w): segments added per window of acked data.
pub fn increase(w: f64) -> f64 {
    if w <= LOW_WINDOW {
        1.0
    } else {
        let b = decrease(w);
        w * w * loss_rate(w) * 2.0 * b / (2.0 - b)
    }
}

pub struct HighSpeed {
    w: Window,
    /// RFC 3742's `max_ssthresh`, if the kernel limits slow start.
    max_ssthresh: Option<f64>,
}

impl HighSpeed {
    pub fn new(w: Window, kernel: Kernel) -> Self {
        let max_ssthresh = (kernel == Kernel::Linux2_6_18).then_some(MAX_SSTHRESH_2_6_18);
        Self { w, max_ssthresh }
    }

    /// RFC 3742 above `max_ssthresh`: 1/K segment per ACK, K = floor(cwnd / (max / 2)).
    fn limited_slow_start(&mut self) -> bool {
        match self.max_ssthresh {
            Some(max) if self.w.in_slow_start() && self.w.cwnd > max => {
                let k = (self.w.cwnd / (max / 2.0)).floor().max(1.0);
                self.w.cwnd = (self.w.cwnd + 1.0 / k).min(self.w.ssthresh);
                true
            }
            _ => false,
        }
    }
}

impl CongestionControl for HighSpeed {
    fn name(&self) -> &'static str {
        "highspeed"
    }
    fn window(&self) -> &Window {
        &self.w
    }
    fn window_mut(&mut self) -> &mut Window {
        &mut self.w
    }
    fn on_ack(&mut self, acked_bytes: u64, _rtt_ns: Option<u64>, _now_ns: u64) {
        if self.limited_slow_start() {
            return;
        }
        let ca = self.w.slow_start(self.w.segments(acked_bytes));
        if ca > 0.0 {
            // tcp_highspeed.c, hstcp_cong_avoid: snd_cwnd_cnt += a(w) per ACK, however
            // many segments it acknowledges; behind delayed ACKs that is a(w) / 2 per RTT
            // per window, half of RFC 3649's per-segment a(w).
            self.w.cwnd += increase(self.w.cwnd) / self.w.cwnd;
        }
    }
    fn on_congestion_event(&mut self, _now_ns: u64, _in_flight_bytes: u64) {
        let b = decrease(self.w.cwnd);
        self.w.reduce_to(1.0 - b);
    }
    fn rate_halving_floor(&self) -> f64 {
        super::reno::reno_min_cwnd(&self.w)
    }
}

#[cfg(test)]
// The values compared are exact (powers of two, table constants).
#[allow(clippy::float_cmp)]
mod tests {
    use super::*;

    #[test]
    fn end_points_match_the_rfc() {
        assert_eq!(increase(38.0), 1.0);
        assert_eq!(decrease(38.0), 0.5);
        assert!((decrease(HIGH_WINDOW) - 0.1).abs() < 1e-12);
        // RFC 3649 Table: a(83000) = 72 (rounded).
        assert!(
            (increase(HIGH_WINDOW) - 72.0).abs() < 1.0,
            "{}",
            increase(HIGH_WINDOW)
        );
        // p(w) ~ 0.078 / w^1.2 in between.
        for w in [100.0, 1000.0, 10_000.0] {
            let approx = 0.078 / f64::powf(w, 1.2);
            assert!((loss_rate(w) / approx - 1.0).abs() < 0.1, "{w}");
        }
    }
}
