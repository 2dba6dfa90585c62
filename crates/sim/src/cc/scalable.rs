//! Scalable TCP (Kelly 2003) as Linux's `tcp_scalable.c`: in congestion avoidance one
//! segment more per min(cwnd, `AI_CNT`) segments acked, cwnd *= (1 - b) on loss. Above
//! `AI_CNT` segments that is Kelly's a = 0.01 per acked segment; below it the window grows
//! as Reno's (one segment per RTT), which keeps small windows fair to Reno.
//!
//! `AI_CNT` = 100 and b = 1/8 (`TCP_SCALABLE_AI_CNT`, `TCP_SCALABLE_MD_SCALE` = 3) as in
//! Linux 6.x, which counts acked segments. Linux 2.6.18 had `AI_CNT` = 50 counted per ACK,
//! the same 0.01 per segment behind delayed ACKs (two segments per ACK).

use super::{CongestionControl, Window};

pub const SCALABLE_AI_CNT: f64 = 100.0;
pub const SCALABLE_A: f64 = 1.0 / SCALABLE_AI_CNT;
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
        // tcp_scalable_cong_avoid: tcp_cong_avoid_ai(tp, min(cwnd, TCP_SCALABLE_AI_CNT), acked)
        self.w.cwnd += ca / self.w.cwnd.floor().clamp(1.0, SCALABLE_AI_CNT);
    }
    fn on_congestion_event(&mut self, _now_ns: u64, _in_flight_bytes: u64) {
        self.w.reduce_to(1.0 - SCALABLE_B);
    }
}
