//! BIC (Xu, Harfoush, Rhee 2004) as Linux's `tcp_bic.c` does it: below the last maximum,
//! a binary search towards it (increments of (Wmax - cwnd)/B, at most `MAX_INCREMENT`
//! per RTT, at least `1/SMOOTH_PART`-ish near it); above it, slow max probing, then
//! linear. Loss: cwnd *= beta (819/1024) above `LOW_WINDOW`, with fast convergence.

use super::{CongestionControl, Window};

pub const BETA: f64 = 819.0 / 1024.0;
pub const MAX_INCREMENT: f64 = 16.0;
pub const LOW_WINDOW: f64 = 14.0;
/// The binary search divides the distance to Wmax by B.
pub const B: f64 = 4.0;
pub const SMOOTH_PART: f64 = 20.0;

pub struct Bic {
    w: Window,
    last_max_cwnd: f64,
}

impl Bic {
    pub fn new(w: Window) -> Self {
        Self {
            w,
            last_max_cwnd: 0.0,
        }
    }

    pub fn last_max_cwnd(&self) -> f64 {
        self.last_max_cwnd
    }

    /// Segments to ack for one more segment of window (Linux's `ca->cnt`), from the
    /// integer window as Linux sees it.
    pub fn acks_per_increment(&self) -> f64 {
        let cwnd = self.w.cwnd.floor();
        let max = self.last_max_cwnd;
        let mut cnt = if cwnd <= LOW_WINDOW {
            cwnd
        } else if cwnd < max {
            let dist = ((max - cwnd) / B).floor();
            if dist > MAX_INCREMENT {
                (cwnd / MAX_INCREMENT).floor() // linear increase
            } else if dist <= 1.0 {
                (cwnd * SMOOTH_PART / B).floor() // near Wmax: creep
            } else {
                (cwnd / dist).floor() // binary search
            }
        } else if cwnd < max + B {
            (cwnd * SMOOTH_PART / B).floor() // just above Wmax: probe slowly
        } else if cwnd < max + MAX_INCREMENT * (B - 1.0) {
            (cwnd * (B - 1.0) / (cwnd - max)).floor()
        } else {
            (cwnd / MAX_INCREMENT).floor()
        };
        // Before any loss, at least 5% per RTT.
        if max == 0.0 && cnt > 20.0 {
            cnt = 20.0;
        }
        cnt.max(1.0)
    }
}

impl CongestionControl for Bic {
    fn name(&self) -> &'static str {
        "bic"
    }
    fn window(&self) -> &Window {
        &self.w
    }
    fn window_mut(&mut self) -> &mut Window {
        &mut self.w
    }
    fn on_ack(&mut self, acked_bytes: u64, _rtt_ns: Option<u64>, _now_ns: u64) {
        let ca = self.w.slow_start(self.w.segments(acked_bytes));
        if ca > 0.0 {
            self.w.cwnd += ca / self.acks_per_increment();
        }
    }
    fn on_congestion_event(&mut self, _now_ns: u64, _in_flight_bytes: u64) {
        let cwnd = self.w.cwnd.floor();
        // Fast convergence: a flow that lost below its last maximum yields some of it.
        self.last_max_cwnd = if cwnd < self.last_max_cwnd {
            cwnd * (1.0 + BETA) / 2.0
        } else {
            cwnd
        };
        let factor = if cwnd <= LOW_WINDOW { 0.5 } else { BETA };
        self.w.reduce_to(factor);
    }
    fn on_rto(&mut self, now_ns: u64, reduce: bool, in_flight_bytes: u64) {
        if reduce {
            self.on_congestion_event(now_ns, in_flight_bytes);
        }
        // Linux resets BIC's state on entering Loss (`bictcp_state`).
        self.last_max_cwnd = 0.0;
        self.w.cwnd = 1.0;
    }
}

#[cfg(test)]
// The values compared are exact (powers of two, table constants).
#[allow(clippy::float_cmp)]
mod tests {
    use super::*;

    fn bic(cwnd: f64, max: f64) -> Bic {
        let mut b = Bic::new(Window::new(1000, cwnd, Some(1.0)));
        b.last_max_cwnd = max;
        b
    }

    #[test]
    fn increments_follow_the_binary_search() {
        // Far below Wmax: capped at MAX_INCREMENT per RTT.
        assert_eq!(bic(1000.0, 2000.0).acks_per_increment(), 62.0);
        // dist = (1000-800)/4 = 50 > 16: linear, cwnd/16.
        assert_eq!(bic(800.0, 1000.0).acks_per_increment(), 50.0);
        // dist = (1000-960)/4 = 10: cwnd/dist, +10 per RTT.
        assert_eq!(bic(960.0, 1000.0).acks_per_increment(), 96.0);
        // At Wmax: smooth, cwnd*20/4.
        assert_eq!(bic(999.0, 1000.0).acks_per_increment(), 4995.0);
        // Above: max probing, 3 RTTs to +... then linear.
        assert_eq!(bic(1010.0, 1000.0).acks_per_increment(), 303.0);
        assert_eq!(bic(1100.0, 1000.0).acks_per_increment(), 68.0);
    }

    #[test]
    fn loss_cuts_by_beta_and_remembers_wmax() {
        let mut b = bic(1000.0, 0.0);
        b.on_congestion_event(0, 0);
        assert_eq!(b.last_max_cwnd(), 1000.0);
        assert!((b.window().cwnd - 1000.0 * 819.0 / 1024.0).abs() < 1e-9);
        // Lost again below Wmax: fast convergence.
        let before = b.window().cwnd.floor();
        b.on_congestion_event(0, 0);
        assert!((b.last_max_cwnd() - before * (1.0 + BETA) / 2.0).abs() < 1e-9);
    }
}
