//! ns-3's `TcpHighSpeed` (tcp-highspeed.cc): `NewReno`'s slow start; in avoidance a(w) per
//! acked *segment* (`m_ackCnt += segmentsAcked * a(w)`, one segment more per cwnd of it),
//! where Linux's `hstcp_cong_avoid` adds a(w) per ACK; on a loss ssthresh = (1 - b(w)) of
//! the segments in flight. a and b from RFC 3649's Appendix B table as ns-3's
//! `TableLookupA` / `TableLookupB` hold it.

use super::{
    AckedSegments, cwnd_segments, newreno_slow_start_then, reduce_to_bytes, set_cwnd_segments,
};
use crate::cc::{CongestionControl, Window};

/// Upper window (segments) of each row; past the last, the last row's values hold.
const ROW_MAX_WINDOW: [u64; 73] = [
    38, 118, 221, 347, 495, 663, 851, 1058, 1284, 1529, 1793, 2076, 2378, 2699, 3039, 3399, 3778,
    4177, 4596, 5036, 5497, 5979, 6483, 7009, 7558, 8130, 8726, 9346, 9991, 10661, 11358, 12082,
    12834, 13614, 14424, 15265, 16137, 17042, 17981, 18955, 19965, 21013, 22101, 23230, 24402,
    25618, 26881, 28193, 29557, 30975, 32450, 33986, 35586, 37253, 38992, 40808, 42707, 44694,
    46776, 48961, 51258, 53667, 56230, 58932, 61799, 64851, 68113, 71617, 75401, 79517, 84035,
    89053, 94717,
];
/// b(w) of each row, and of windows past the table (the last).
const DECREASE: [f64; 74] = [
    0.50, 0.44, 0.41, 0.38, 0.37, 0.35, 0.34, 0.33, 0.32, 0.31, 0.30, 0.29, 0.28, 0.28, 0.27, 0.27,
    0.26, 0.26, 0.25, 0.25, 0.24, 0.24, 0.23, 0.23, 0.22, 0.22, 0.22, 0.21, 0.21, 0.21, 0.20, 0.20,
    0.20, 0.19, 0.19, 0.19, 0.19, 0.18, 0.18, 0.18, 0.17, 0.17, 0.17, 0.17, 0.16, 0.16, 0.16, 0.16,
    0.15, 0.15, 0.15, 0.15, 0.14, 0.14, 0.14, 0.14, 0.13, 0.13, 0.13, 0.13, 0.13, 0.12, 0.12, 0.12,
    0.12, 0.11, 0.11, 0.11, 0.10, 0.10, 0.10, 0.10, 0.09, 0.09,
];

fn row(w: u64) -> usize {
    ROW_MAX_WINDOW.partition_point(|&max| max < w)
}

/// `TableLookupA`: 1 up to 38 segments, then the row's number, 73 past the table.
pub fn increase(w: u64) -> u64 {
    (row(w) as u64 + 1).min(73)
}

/// `TableLookupB`.
pub fn decrease(w: u64) -> f64 {
    DECREASE[row(w)]
}

pub struct HighSpeed {
    w: Window,
    acked: AckedSegments,
    ack_cnt: u64,
}

impl HighSpeed {
    pub fn new(w: Window) -> Self {
        Self {
            w,
            acked: AckedSegments::default(),
            ack_cnt: 0,
        }
    }

    /// `TcpHighSpeed::CongestionAvoidance`.
    fn avoid(&mut self, segments_acked: u64) {
        let old = cwnd_segments(&self.w);
        let mut seg = old.max(1);
        if segments_acked > 0 {
            self.ack_cnt += segments_acked * increase(seg);
        }
        while self.ack_cnt >= seg {
            self.ack_cnt -= seg;
            seg += 1;
        }
        if seg != old {
            set_cwnd_segments(&mut self.w, seg);
        }
    }
}

impl CongestionControl for HighSpeed {
    fn name(&self) -> &'static str {
        "highspeed"
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
        let in_flight = in_flight_bytes / mss;
        let ssthresh = (in_flight as f64 * (1.0 - decrease(in_flight))).max(2.0) as u64;
        reduce_to_bytes(&mut self.w, ssthresh * mss);
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp)]
mod tests {
    use super::*;

    #[test]
    fn the_table_rows_as_ns3_looks_them_up() {
        assert_eq!((increase(1), decrease(1)), (1, 0.50));
        assert_eq!((increase(38), decrease(38)), (1, 0.50));
        assert_eq!((increase(39), decrease(39)), (2, 0.44));
        assert_eq!((increase(94_717), decrease(94_717)), (73, 0.09));
        assert_eq!((increase(200_000), decrease(200_000)), (73, 0.09));
    }
}
