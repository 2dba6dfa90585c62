//! Scalable TCP (Kelly 2003) as Linux's `tcp_scalable.c`: in congestion avoidance one
//! segment more per min(cwnd, `AI_CNT`) segments acked, cwnd *= (1 - b) on loss. Above
//! `AI_CNT` segments that is Kelly's a = 0.01 per acked segment; below it the window grows
//! as Reno's (one segment per RTT), which keeps small windows fair to Reno.
//!
//! `AI_CNT` = 100 and b = 1/8 (`TCP_SCALABLE_AI_CNT`, `TCP_SCALABLE_MD_SCALE` = 3) as in
//! Linux 6.x, which counts acked segments (`tcp_cong_avoid_ai`). Linux 2.6.18 and 2.6.23
//! have `AI_CNT` = 50 counted per ACK, one segment once the count exceeds min(cwnd, 50)
//! (`tcp_scalable_cong_avoid`): about 0.01 per segment behind delayed ACKs.

use super::reno::reno_min_cwnd;
use super::{CongestionControl, Kernel, Window};

pub const SCALABLE_AI_CNT: f64 = 100.0;
pub const SCALABLE_A: f64 = 1.0 / SCALABLE_AI_CNT;
pub const SCALABLE_B: f64 = 0.125;
/// 2.6.18 `net/ipv4/tcp_scalable.c`.
pub const SCALABLE_AI_CNT_2_6_18: f64 = 50.0;

pub struct Scalable {
    w: Window,
    /// ACKs (2.6.18) or segments (6.x) per segment of growth, at most.
    ai_cnt: f64,
    /// 2.6.18 grows once the count *exceeds* min(cwnd, `AI_CNT`): one more ACK per step.
    extra: f64,
}

impl Scalable {
    pub fn new(w: Window, kernel: Kernel) -> Self {
        let (ai_cnt, extra) = if kernel.is_linux_2_6() {
            (SCALABLE_AI_CNT_2_6_18, 1.0)
        } else {
            (SCALABLE_AI_CNT, 0.0)
        };
        Self { w, ai_cnt, extra }
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
        if ca > 0.0 {
            // tcp_scalable_cong_avoid: tcp_cong_avoid_ai(tp, min(cwnd, AI_CNT), acked)
            let per_step = self.w.cwnd.floor().clamp(1.0, self.ai_cnt) + self.extra;
            self.w.cwnd += self.w.credit(ca) / per_step;
        }
    }
    fn on_congestion_event(&mut self, _now_ns: u64, _in_flight_bytes: u64) {
        self.w.reduce_to(1.0 - SCALABLE_B);
    }
    fn rate_halving_floor(&self) -> f64 {
        reno_min_cwnd(&self.w)
    }
}
