//! ns-3's `TcpBic` (tcp-bic.cc): binary search towards the last maximum in whole
//! segments with ns-3's integer divisions (the distance to the maximum is
//! `(lastMax - cwnd) / 4` in integers), `SmoothPart` 5 (Linux's `smooth_part` 20), no
//! delayed-ACK correction of the count (Linux divides it by the ACK ratio), one segment
//! per `cnt` acked *segments*, beta 0.8 and fast convergence to 0.8 of the window. Slow
//! start adds one segment per ACK.

use super::{AckedSegments, cwnd_segments, newreno_ssthresh_bytes, reduce_to_bytes};
use crate::cc::{CongestionControl, Window};

/// `TcpBic`'s attribute defaults.
pub const BETA: f64 = 0.8;
pub const MAX_INCR: u64 = 16;
pub const LOW_WND: u64 = 14;
pub const SMOOTH_PART: u64 = 5;
pub const B: u64 = 4;

pub struct Bic {
    w: Window,
    acked: AckedSegments,
    cwnd_cnt: u64,
    last_max_cwnd: u64,
}

impl Bic {
    pub fn new(w: Window) -> Self {
        Self {
            w,
            acked: AckedSegments::default(),
            cwnd_cnt: 0,
            last_max_cwnd: 0,
        }
    }

    /// `TcpBic::Update`: acked segments per segment of growth.
    fn count(&self) -> u64 {
        let seg = cwnd_segments(&self.w);
        if seg < LOW_WND {
            return seg.max(1);
        }
        let last_max = self.last_max_cwnd;
        let mut cnt = if seg < last_max {
            let dist = (last_max - seg) / B;
            if dist > MAX_INCR {
                seg / MAX_INCR
            } else if dist <= 1 {
                seg * SMOOTH_PART / B
            } else {
                seg / dist
            }
        } else if seg < last_max + B {
            seg * SMOOTH_PART / B
        } else if seg < last_max + MAX_INCR * (B - 1) {
            seg * (B - 1) / (seg - last_max)
        } else {
            seg / MAX_INCR
        };
        if last_max == 0 && cnt > 20 {
            cnt = 20;
        }
        cnt.max(1)
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
    fn grows_only_when_cwnd_limited(&self) -> bool {
        false
    }
    /// `TcpBic::IncreaseWindow`.
    fn on_ack(&mut self, acked_bytes: u64, _rtt_ns: Option<u64>, _now_ns: u64) {
        let mut segments = self.acked.take(acked_bytes, self.w.mss_bytes);
        if self.w.in_slow_start() {
            self.w.cwnd += 1.0;
            segments = segments.saturating_sub(1);
        }
        if !self.w.in_slow_start() && segments > 0 {
            self.cwnd_cnt += segments;
            if self.cwnd_cnt > self.count() {
                self.w.cwnd += 1.0;
                self.cwnd_cnt = 0;
            }
        }
    }
    /// `TcpBic::GetSsThresh`.
    fn on_congestion_event(&mut self, _now_ns: u64, in_flight_bytes: u64) {
        let seg = cwnd_segments(&self.w);
        self.last_max_cwnd = if seg < self.last_max_cwnd {
            (BETA * seg as f64) as u64
        } else {
            seg
        };
        let ssthresh = if seg < LOW_WND {
            newreno_ssthresh_bytes(&self.w, in_flight_bytes)
        } else {
            ((seg as f64 * BETA).max(2.0) * f64::from(self.w.mss_bytes)) as u64
        };
        reduce_to_bytes(&mut self.w, ssthresh);
    }
}
