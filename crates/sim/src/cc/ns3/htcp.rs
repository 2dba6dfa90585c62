//! ns-3's `TcpHtcp` (tcp-htcp.cc): `NewReno`'s slow start; in avoidance
//! max(1, (MSS^2 + cwnd alpha) / cwnd) *bytes* per ACK (alpha adds bytes, not segments),
//! alpha = 2 (1 - beta) f(Δ), f(Δ) = 1 + 10 (Δ - 1 s) + (Δ - 1 s)^2 / 4 past 1 s, no RTT
//! scaling, Δ from the start of the last recovery; beta = `minRTT` / `maxRTT` of the
//! smoothed RTTs seen since it, unclamped, or 0.5 where throughput fell or doubled (ns-3
//! compares the change in integers, so any rise short of doubling counts as steady);
//! ssthresh = beta times the bytes in flight.

use super::{
    AckedSegments, Ns3Rtt, cwnd_bytes, newreno_slow_start_then, reduce_to_bytes, set_cwnd_bytes,
};
use crate::cc::{CongestionControl, NS_PER_S, RttSample, Window};

/// `TcpHtcp`'s attribute defaults.
pub const DEFAULT_BACKOFF: f64 = 0.5;
pub const DELTA_L_S: f64 = 1.0;

pub struct Htcp {
    w: Window,
    acked: AckedSegments,
    rtt: Ns3Rtt,
    alpha: f64,
    beta: f64,
    last_con_ns: u64,
    min_rtt_ns: u64,
    max_rtt_ns: u64,
    /// Bytes per second, `uint32_t` in ns-3.
    throughput: u64,
    last_throughput: u64,
    data_sent_bytes: u64,
    last_ack: u64,
}

impl Htcp {
    pub fn new(w: Window) -> Self {
        Self {
            w,
            acked: AckedSegments::default(),
            rtt: Ns3Rtt::default(),
            alpha: 0.0,
            beta: 0.0,
            last_con_ns: 0,
            min_rtt_ns: u64::MAX,
            max_rtt_ns: 0,
            throughput: 0,
            last_throughput: 0,
            data_sent_bytes: 0,
            last_ack: 0,
        }
    }

    /// `TcpHtcp::UpdateAlpha`.
    fn update_alpha(&mut self, now_ns: u64) {
        let delta_s = now_ns.saturating_sub(self.last_con_ns) as f64 / NS_PER_S;
        let f = if delta_s <= DELTA_L_S {
            1.0
        } else {
            let d = delta_s - DELTA_L_S;
            1.0 + 10.0 * d + 0.25 * d * d
        };
        self.alpha = (2.0 * (1.0 - self.beta) * f).max(1.0);
    }

    /// `TcpHtcp::UpdateBeta`.
    fn update_beta(&mut self) {
        self.beta = DEFAULT_BACKOFF;
        if self.throughput > self.last_throughput && self.last_throughput > 0 {
            let diff = self.throughput - self.last_throughput;
            // `diff / m_lastThroughput <= m_throughputRatio` in integers: any rise short
            // of doubling.
            if diff / self.last_throughput == 0 && self.max_rtt_ns > 0 {
                self.beta = self.min_rtt_ns as f64 / self.max_rtt_ns as f64;
            }
        }
    }

    /// `TcpHtcp::CongestionAvoidance`.
    fn avoid(&mut self, segments_acked: u64) {
        if segments_acked > 0 {
            let cwnd = cwnd_bytes(&self.w) as f64;
            let mss = f64::from(self.w.mss_bytes);
            let adder = ((mss * mss + cwnd * self.alpha) / cwnd).max(1.0);
            set_cwnd_bytes(&mut self.w, cwnd as u64 + adder as u64);
        }
    }
}

impl CongestionControl for Htcp {
    fn name(&self) -> &'static str {
        "htcp"
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
    fn on_handshake_rtt(&mut self, sample: &RttSample) {
        self.rtt.sample(sample);
    }
    /// `TcpHtcp::PktsAcked`.
    fn on_rtt(&mut self, sample: &RttSample) {
        let rtt_ns = self.rtt.sample(sample);
        let acked = sample.ack.saturating_sub(self.last_ack);
        self.last_ack = sample.ack;
        if sample.open {
            let mss = u64::from(self.w.mss_bytes);
            self.data_sent_bytes += acked / mss * mss;
        }
        let since_s = sample.now_ns.saturating_sub(self.last_con_ns) as f64 / NS_PER_S;
        if since_s > 0.0 {
            self.throughput = (self.data_sent_bytes as f64 / since_s) as u64 & 0xffff_ffff;
        }
        self.update_alpha(sample.now_ns);
        self.min_rtt_ns = self.min_rtt_ns.min(rtt_ns);
        self.max_rtt_ns = self.max_rtt_ns.max(rtt_ns);
    }
    fn on_ack(&mut self, acked_bytes: u64, _rtt_ns: Option<u64>, _now_ns: u64) {
        let segments = self.acked.take(acked_bytes, self.w.mss_bytes);
        if let Some(left) = newreno_slow_start_then(&mut self.w, segments) {
            self.avoid(left);
        }
    }
    /// `TcpHtcp::GetSsThresh`.
    fn on_congestion_event(&mut self, now_ns: u64, in_flight_bytes: u64) {
        self.last_con_ns = now_ns;
        self.update_beta();
        self.update_alpha(now_ns);
        let mss = u64::from(self.w.mss_bytes);
        let ssthresh = (2 * mss).max((in_flight_bytes as f64 * self.beta) as u64);
        self.min_rtt_ns = u64::MAX;
        self.max_rtt_ns = 0;
        self.last_throughput = self.throughput;
        self.throughput = 0;
        self.data_sent_bytes = 0;
        reduce_to_bytes(&mut self.w, ssthresh);
    }
}
