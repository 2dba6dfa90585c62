//! ns-3's `TcpScalable` (tcp-scalable.cc): `NewReno`'s slow start; in avoidance one
//! segment per min(cwnd, `AIFactor` = 50) acked segments, where Linux 5.7+ counts 100
//! (`TCP_SCALABLE_AI_CNT`) and Linux 2.6.18 counted 50 ACKs (a = 0.01 per segment behind
//! delayed ACKs against ns-3's 0.02); on a loss ssthresh = (1 - `MDFactor` = 0.125) of the
//! segments in flight.

use super::{
    AckedSegments, cwnd_segments, newreno_slow_start_then, reduce_to_bytes, set_cwnd_segments,
};
use crate::cc::{CongestionControl, Window};

/// `TcpScalable`'s `AIFactor` attribute default.
pub const AI_FACTOR: u64 = 50;
/// `TcpScalable`'s `MDFactor` attribute default.
pub const MD_FACTOR: f64 = 0.125;

pub struct Scalable {
    w: Window,
    acked: AckedSegments,
    ack_cnt: u64,
}

impl Scalable {
    pub fn new(w: Window) -> Self {
        Self {
            w,
            acked: AckedSegments::default(),
            ack_cnt: 0,
        }
    }

    /// `TcpScalable::CongestionAvoidance`.
    fn avoid(&mut self, segments_acked: u64) {
        let old = cwnd_segments(&self.w);
        let mut seg = old;
        let w = seg.clamp(1, AI_FACTOR);
        if self.ack_cnt >= w {
            self.ack_cnt = 0;
            seg += 1;
        }
        self.ack_cnt += segments_acked;
        if self.ack_cnt >= w {
            seg += self.ack_cnt / w;
            self.ack_cnt = 0;
        }
        if seg != old {
            set_cwnd_segments(&mut self.w, seg);
        }
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
    fn grows_only_when_cwnd_limited(&self) -> bool {
        false
    }
    fn on_ack(&mut self, acked_bytes: u64, _rtt_ns: Option<u64>, _now_ns: u64) {
        let segments = self.acked.take(acked_bytes, self.w.mss_bytes);
        if let Some(left) = newreno_slow_start_then(&mut self.w, segments) {
            self.avoid(left);
        }
    }
    fn on_congestion_event(&mut self, _now_ns: u64, in_flight_bytes: u64) {
        let mss = u64::from(self.w.mss_bytes);
        let in_flight = (in_flight_bytes / mss) as f64;
        let ssthresh = (in_flight * (1.0 - MD_FACTOR)).max(2.0) as u64;
        reduce_to_bytes(&mut self.w, ssthresh * mss);
    }
}
