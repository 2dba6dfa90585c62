//! CUBIC (RFC 9438): after a loss the window follows W(t) = C (t - K)^3 + Wmax with
//! K = cbrt(Wmax (1 - beta) / C), C = 0.4, beta = 0.7, t from the start of the epoch;
//! the target is W(t + RTT) with RTT the least seen (Linux's `delay_min`, which
//! `bictcp_update` adds to t), at most 1.5 cwnd. Reno-friendly region: never below the
//! window an AIMD flow with alpha = 3 (1 - beta) / (1 + beta) would have (Linux's
//! `tcp_friendliness`). Fast convergence on. No `HyStart` (Linux added it in 2.6.29,
//! after the USN experiments).

use super::{CongestionControl, NS_PER_S, RttSample, Window};

pub const C: f64 = 0.4;
pub const BETA: f64 = 0.7;

pub struct Cubic {
    w: Window,
    w_max: f64,
    k_s: f64,
    origin: f64,
    epoch_start_ns: Option<u64>,
    /// The Reno-friendly estimate.
    w_est: f64,
    min_rtt_ns: u64,
}

impl Cubic {
    pub fn new(w: Window) -> Self {
        Self {
            w,
            w_max: 0.0,
            k_s: 0.0,
            origin: 0.0,
            epoch_start_ns: None,
            w_est: 0.0,
            min_rtt_ns: 0,
        }
    }

    pub fn w_max(&self) -> f64 {
        self.w_max
    }

    pub fn k_s(&self) -> f64 {
        self.k_s
    }

    /// W(t) of the current epoch, `t_s` seconds after its start.
    pub fn w_cubic(&self, t_s: f64) -> f64 {
        C * (t_s - self.k_s).powi(3) + self.origin
    }

    fn start_epoch(&mut self, now_ns: u64) {
        self.epoch_start_ns = Some(now_ns);
        if self.w.cwnd < self.w_max {
            self.k_s = ((self.w_max - self.w.cwnd) / C).cbrt();
            self.origin = self.w_max;
        } else {
            self.k_s = 0.0;
            self.origin = self.w.cwnd;
        }
        self.w_est = self.w.cwnd;
    }

    fn avoid_congestion(&mut self, acked: f64, now_ns: u64) {
        if self.epoch_start_ns.is_none() {
            self.start_epoch(now_ns);
        }
        let epoch_ns = self.epoch_start_ns.unwrap_or(now_ns);
        let t_s = (now_ns - epoch_ns + self.min_rtt_ns) as f64 / NS_PER_S;
        let cwnd = self.w.cwnd;
        let target = self.w_cubic(t_s).clamp(cwnd, 1.5 * cwnd);
        self.w.cwnd += (target - cwnd) / cwnd * acked;
        let alpha = 3.0 * (1.0 - BETA) / (1.0 + BETA);
        self.w_est += alpha * acked / cwnd;
        if self.w_cubic(t_s) < self.w_est {
            self.w.cwnd = self.w.cwnd.max(self.w_est);
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
    fn on_rtt(&mut self, sample: &RttSample) {
        // bictcp_acked: delay_min learns from every sample, in any state.
        if self.min_rtt_ns == 0 || sample.rtt_ns < self.min_rtt_ns {
            self.min_rtt_ns = sample.rtt_ns;
        }
    }
    fn on_ack(&mut self, acked_bytes: u64, _rtt_ns: Option<u64>, now_ns: u64) {
        let ca = self.w.slow_start(self.w.segments(acked_bytes));
        if ca > 0.0 {
            self.avoid_congestion(ca, now_ns);
        }
    }
    fn on_congestion_event(&mut self, _now_ns: u64, _in_flight_bytes: u64) {
        let cwnd = self.w.cwnd;
        self.w_max = if cwnd < self.w_max {
            cwnd * (1.0 + BETA) / 2.0
        } else {
            cwnd
        };
        self.epoch_start_ns = None;
        self.w.reduce_to(BETA);
    }
    fn on_rto(&mut self, now_ns: u64, reduce: bool, in_flight_bytes: u64) {
        if reduce {
            self.on_congestion_event(now_ns, in_flight_bytes);
        }
        // Linux resets CUBIC's state on entering Loss (`bictcp_state`).
        self.w_max = 0.0;
        self.epoch_start_ns = None;
        self.w.cwnd = 1.0;
    }
}
