//! ns-3.37's TCP congestion controls, from `src/internet/model/tcp-*.cc` at tag ns-3.37,
//! so that the simulator can be checked against ns-3 with the same algorithms on both
//! sides: where the two then disagree, the engine (link, queue, loss, SACK recovery,
//! delayed ACKs, timers) does. ns-3 models several variants unlike Linux (each module
//! says how); the simulator's hosts run Linux's ([`super`]) unless a scenario asks for
//! `"stack": "ns-3.37"`.
//!
//! ns-3 keeps windows in bytes as `uint32_t` and its counters as integers; the arithmetic
//! here keeps their truncations. Three things every variant shares:
//! - `IncreaseWindow` runs on every ACK in the open state, whether or not the window
//!   limits the sender (`TcpSocketBase::ProcessAck`);
//! - most ssthresh rules start from `BytesInFlight()`, the RFC 6675 pipe, not cwnd
//!   (`TcpSocketBase::EnterRecovery`, `OnRetransmitTimeout`);
//! - an RTT reaches a controller as `m_lastRtt`, the smoothed estimate (RFC 6298, gains
//!   1/8 in integer nanoseconds, `RttMeanDeviation::IntegerUpdate`) of samples that
//!   millisecond TCP timestamps quantize (`TcpSocketBase::EstimateRtt`,
//!   `TcpOptionTS::NowToTsValue`): on a 26.8 ms path it reads 26 or 27 ms, never between.

pub mod bic;
pub mod cubic;
pub mod highspeed;
pub mod htcp;
pub mod reno;
pub mod scalable;
pub mod vegas;

use super::{RttSample, Window};

const NS_PER_MS: u64 = 1_000_000;

/// cwnd in bytes, as ns-3's `m_cWnd` holds it.
pub fn cwnd_bytes(w: &Window) -> u64 {
    (w.cwnd * f64::from(w.mss_bytes)).round() as u64
}

pub fn set_cwnd_bytes(w: &mut Window, bytes: u64) {
    w.cwnd = bytes as f64 / f64::from(w.mss_bytes);
}

/// `TcpSocketState::GetCwndInSegments`: whole segments.
pub fn cwnd_segments(w: &Window) -> u64 {
    cwnd_bytes(w) / u64::from(w.mss_bytes)
}

pub fn set_cwnd_segments(w: &mut Window, segments: u64) {
    w.cwnd = segments as f64;
}

/// `u64::MAX` keeps ssthresh at its initial "infinite" value.
pub fn set_ssthresh_bytes(w: &mut Window, bytes: u64) {
    w.ssthresh = if bytes == u64::MAX {
        f64::INFINITY
    } else {
        bytes as f64 / f64::from(w.mss_bytes)
    };
}

/// ssthresh in bytes; `u64::MAX` while it is still ns-3's initial "infinite" value.
pub fn ssthresh_bytes(w: &Window) -> u64 {
    if w.ssthresh.is_finite() {
        (w.ssthresh * f64::from(w.mss_bytes)).round() as u64
    } else {
        u64::MAX
    }
}

/// ssthresh set from a loss, cwnd with it (ns-3's recovery then sets cwnd = ssthresh on
/// leaving recovery; the sender's PRR governs the window until then).
pub fn reduce_to_bytes(w: &mut Window, ssthresh_bytes: u64) {
    set_ssthresh_bytes(w, ssthresh_bytes);
    w.cwnd = w.ssthresh;
}

/// `TcpSocketBase::ProcessAck`'s segsAcked: whole segments, the bytes of a partial one
/// carried to the next ACK (`m_bytesAckedNotProcessed`).
#[derive(Debug, Clone, Copy, Default)]
pub struct AckedSegments {
    carried_bytes: u64,
}

impl AckedSegments {
    pub fn take(&mut self, acked_bytes: u64, mss_bytes: u32) -> u64 {
        let mss = u64::from(mss_bytes);
        let mut segments = acked_bytes / mss;
        self.carried_bytes += acked_bytes % mss;
        if self.carried_bytes >= mss {
            segments += 1;
            self.carried_bytes -= mss;
        }
        segments
    }
}

/// `TcpNewReno::SlowStart`: one segment per ACK however many it acknowledges (no byte
/// counting); returns the acked segments left.
pub fn newreno_slow_start(w: &mut Window, segments_acked: u64) -> u64 {
    if segments_acked >= 1 {
        w.cwnd += 1.0;
        segments_acked - 1
    } else {
        0
    }
}

/// `TcpNewReno::IncreaseWindow`'s shape, which most variants keep: slow start while
/// below ssthresh, then the acked segments left for the variant's congestion avoidance
/// once cwnd has reached it (`None` while slow start goes on).
pub fn newreno_slow_start_then(w: &mut Window, segments_acked: u64) -> Option<u64> {
    let left = if w.in_slow_start() {
        newreno_slow_start(w, segments_acked)
    } else {
        segments_acked
    };
    (!w.in_slow_start()).then_some(left)
}

/// `TcpNewReno::CongestionAvoidance`: max(1, MSS^2 / cwnd) bytes per ACK, however many
/// segments it acknowledges: behind delayed ACKs half a segment per RTT.
pub fn newreno_avoid(w: &mut Window, segments_acked: u64) {
    if segments_acked > 0 {
        let cwnd = cwnd_bytes(w);
        let mss = f64::from(w.mss_bytes);
        let adder = (mss * mss / cwnd as f64).max(1.0);
        set_cwnd_bytes(w, cwnd + adder as u64);
    }
}

/// `TcpNewReno::GetSsThresh`: half the bytes in flight, at least two segments.
pub fn newreno_ssthresh_bytes(w: &Window, in_flight_bytes: u64) -> u64 {
    (2 * u64::from(w.mss_bytes)).max(in_flight_bytes / 2)
}

/// ns-3's `m_lastRtt`: the smoothed estimate of millisecond-quantized samples.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ns3Rtt {
    srtt_ns: Option<i64>,
}

/// The RTT ns-3 measures for a segment sent `rtt_ns` before `now_ns`: the difference of
/// two millisecond timestamps (`TcpOptionTS::NowToTsValue`, `ElapsedTimeFromTsValue`),
/// a zero difference taken as 1 us (`TcpSocketBase::EstimateRtt`). Both the controllers'
/// `m_lastRtt` and the retransmission timer's estimator are fed this.
pub fn timestamp_rtt_ns(now_ns: u64, rtt_ns: u64) -> u64 {
    let now_ms = now_ns / NS_PER_MS;
    let sent_ms = now_ns.saturating_sub(rtt_ns) / NS_PER_MS;
    if now_ms > sent_ms {
        (now_ms - sent_ms) * NS_PER_MS
    } else {
        1_000
    }
}

impl Ns3Rtt {
    /// Take this ACK's sample; returns the smoothed estimate after it.
    pub fn sample(&mut self, sample: &RttSample) -> u64 {
        let m = timestamp_rtt_ns(sample.now_ns, sample.rtt_ns) as i64;
        let srtt = match self.srtt_ns {
            None => m,
            // ((srtt << 3) + (m - srtt)) >> 3, an arithmetic shift as in IntegerUpdate.
            Some(e) => ((e << 3) + (m - e)) >> 3,
        };
        self.srtt_ns = Some(srtt);
        srtt.max(0) as u64
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp)]
mod tests {
    use super::*;

    #[test]
    fn millisecond_timestamps_quantize_the_samples_ns3_smooths() {
        let mut rtt = Ns3Rtt::default();
        // 26.8 ms sent at 0.5 ms: timestamps 0 and 27 ms.
        assert_eq!(
            rtt.sample(&RttSample::at(26_800_000, 27_300_000)),
            27_000_000
        );
        // Sent at 10.1 ms, back at 36.9 ms: 26 ms; srtt moves 1/8 of the way.
        assert_eq!(
            rtt.sample(&RttSample::at(26_800_000, 36_900_000)),
            27_000_000 - 125_000
        );
    }

    #[test]
    fn newreno_grows_one_segment_per_ack_in_slow_start_and_bytes_in_avoidance() {
        let mut w = Window::new(1000, 10.0, Some(11.0));
        assert_eq!(newreno_slow_start(&mut w, 2), 1);
        assert_eq!(w.cwnd, 11.0);
        newreno_avoid(&mut w, 2);
        // 1000^2 / 11000 = 90.9 bytes, truncated.
        assert_eq!(cwnd_bytes(&w), 11_090);
    }

    #[test]
    fn a_partial_segment_is_carried_to_the_next_ack() {
        let mut acked = AckedSegments::default();
        assert_eq!(acked.take(1500, 1000), 1);
        assert_eq!(acked.take(1500, 1000), 2);
    }
}
