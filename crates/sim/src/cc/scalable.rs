//! Scalable TCP (Kelly 2003): cwnd += a per acked segment, cwnd *= (1 - b) on loss, with
//! a = 0.01 and b = 0.125. (Linux's `tcp_scalable` uses a = 1/min(cwnd, 50), i.e. 0.02.)

use super::{CongestionControl, Window};

pub const SCALABLE_A: f64 = 0.01;
pub const SCALABLE_B: f64 = 0.125;

pub struct Scalable {
    w: Window,
}

impl Scalable {
    pub fn new(w: Window) -> Self {
        Self { w }
    }
}

impl CongestionControl for Scalable {
    fn name(&self) -> &'static str {
        "scalable"
    }
    fn window(&self) -> &Window {
        &self.w
    }
    fn window_mut(&mut self) -> &mut Window {
        &mut self.w
    }
    fn on_ack(&mut self, acked_bytes: u64, _rtt_ns: Option<u64>, _now_ns: u64) {
        let ca = self.w.slow_start(self.w.segments(acked_bytes));
        self.w.cwnd += SCALABLE_A * ca;
    }
    fn on_congestion_event(&mut self, _now_ns: u64) {
        self.w.reduce_to(1.0 - SCALABLE_B);
    }
}
