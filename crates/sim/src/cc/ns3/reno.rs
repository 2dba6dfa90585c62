//! ns-3's `TcpLinuxReno` (tcp-linux-reno.cc), which follows Linux's Reno: slow start
//! counts acked segments up to ssthresh (no per-ACK limit; the rest of that ACK is not
//! carried into avoidance), avoidance one segment per cwnd segments acked, ssthresh half
//! of cwnd.

use super::{AckedSegments, cwnd_bytes, cwnd_segments, reduce_to_bytes, set_cwnd_bytes};
use crate::cc::{CongestionControl, Window};

pub struct Reno {
    w: Window,
    acked: AckedSegments,
    /// `m_cWndCnt`: segments acked towards the next increment.
    cwnd_cnt: u64,
}

impl Reno {
    pub fn new(w: Window) -> Self {
        Self {
            w,
            acked: AckedSegments::default(),
            cwnd_cnt: 0,
        }
    }

    /// `TcpLinuxReno::CongestionAvoidance`.
    fn avoid(&mut self, segments_acked: u64) {
        let mss = u64::from(self.w.mss_bytes);
        let w = cwnd_segments(&self.w).max(1);
        let mut cwnd = cwnd_bytes(&self.w);
        if self.cwnd_cnt >= w {
            self.cwnd_cnt = 0;
            cwnd += mss;
        }
        self.cwnd_cnt += segments_acked;
        if self.cwnd_cnt >= w {
            let delta = self.cwnd_cnt / w;
            self.cwnd_cnt -= delta * w;
            cwnd += delta * mss;
        }
        set_cwnd_bytes(&mut self.w, cwnd);
    }
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
    fn grows_only_when_cwnd_limited(&self) -> bool {
        false
    }
    fn on_ack(&mut self, acked_bytes: u64, _rtt_ns: Option<u64>, _now_ns: u64) {
        let segments = self.acked.take(acked_bytes, self.w.mss_bytes);
        if self.w.in_slow_start() {
            // TcpLinuxReno::SlowStart: min(cwnd + acked, ssthresh).
            self.w.cwnd = (self.w.cwnd + segments as f64).min(self.w.ssthresh);
        } else {
            self.avoid(segments);
        }
    }
    fn on_congestion_event(&mut self, _now_ns: u64, _in_flight_bytes: u64) {
        // TcpLinuxReno::GetSsThresh: max(2 MSS, cwnd / 2).
        let mss = u64::from(self.w.mss_bytes);
        let ssthresh = (2 * mss).max(cwnd_bytes(&self.w) / 2);
        reduce_to_bytes(&mut self.w, ssthresh);
    }
}
