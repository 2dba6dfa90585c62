//! Reno / `NewReno` window rules (RFC 5681): +1 segment per window of data acked, halve on
//! loss.

use super::{CongestionControl, Window};

pub struct Reno {
    w: Window,
}

impl Reno {
    pub fn new(w: Window) -> Self {
        Self { w }
    }
}

/// Congestion avoidance: +1 segment per cwnd segments acked.
pub fn reno_increase(w: &mut Window, acked: f64) {
    w.cwnd += acked / w.cwnd;
}

impl CongestionControl for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }
    fn window(&self) -> &Window {
        &self.w
    }
    fn window_mut(&mut self) -> &mut Window {
        &mut self.w
    }
    fn on_ack(&mut self, acked_bytes: u64, _rtt_ns: Option<u64>, _now_ns: u64) {
        let acked = self.w.segments(acked_bytes);
        let ca = self.w.slow_start(acked);
        if ca > 0.0 {
            reno_increase(&mut self.w, ca);
        }
    }
    fn on_congestion_event(&mut self, _now_ns: u64, _in_flight_bytes: u64) {
        self.w.reduce_to(0.5);
    }
}
