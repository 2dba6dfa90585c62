//! Reno / `NewReno` window rules (RFC 5681): +1 segment per window of data acked, halve on
//! loss (`tcp_reno_ssthresh`). Linux 2.6.18 counts ACKs, not segments
//! (`tcp_reno_cong_avoid` with `tcp_abc` = 0: `snd_cwnd_cnt++` per ACK): half a segment
//! per RTT behind delayed ACKs.

use super::{CongestionControl, Window};

pub struct Reno {
    w: Window,
}

impl Reno {
    pub fn new(w: Window) -> Self {
        Self { w }
    }
}

/// Congestion avoidance: +1 segment per cwnd segments (or ACKs, as the window counts) acked.
pub fn reno_increase(w: &mut Window, acked: f64) {
    w.cwnd += w.credit(acked) / w.cwnd;
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
    fn rate_halving_floor(&self) -> f64 {
        reno_min_cwnd(&self.w)
    }
}

/// `tcp_reno_min_cwnd` (2.6.18 `net/ipv4/tcp_cong.c`): how far rate-halving may take the
/// window below ssthresh, for Reno and the controllers that borrow it (`HighSpeed`,
/// Scalable, Vegas); the others stop at ssthresh (`tcp_cwnd_min`).
pub fn reno_min_cwnd(w: &Window) -> f64 {
    (w.ssthresh / 2.0).floor()
}
