//! TCP congestion controllers behind one trait.
//!
//! Windows are kept in segments as `f64` (Linux keeps integer packets plus a fractional
//! counter; the sender uses `floor(cwnd)` segments, as Linux does). Growth counts acked
//! bytes (RFC 3465 byte counting, slow start capped at 2 segments per ACK), so delayed
//! ACKs do not halve it. Linux 2.6.18 counted ACKs for Reno (`tcp_abc` off), so its Reno
//! grew half as fast behind delayed ACKs; BIC and CUBIC corrected for the ACK ratio and
//! behave as here.

pub mod bic;
pub mod cubic;
pub mod highspeed;
pub mod htcp;
pub mod ns3;
pub mod reno;
pub mod scalable;
pub mod vegas;

use serde::{Deserialize, Serialize};

pub use bic::Bic;
pub use cubic::Cubic;
pub use highspeed::HighSpeed;
pub use htcp::Htcp;
pub use reno::Reno;
pub use scalable::Scalable;
pub use vegas::Vegas;

pub const NS_PER_S: f64 = 1e9;

/// The window state every controller shares.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    /// Congestion window, segments.
    pub cwnd: f64,
    /// Slow-start threshold, segments (infinite until the first loss).
    pub ssthresh: f64,
    pub mss_bytes: u32,
}

/// RFC 3465's L: slow start grows by at most this many segments per ACK.
const ABC_LIMIT_SEGMENTS: f64 = 2.0;

impl Window {
    pub fn new(mss_bytes: u32, initial_cwnd: f64, initial_ssthresh: Option<f64>) -> Self {
        Self {
            cwnd: initial_cwnd,
            ssthresh: initial_ssthresh.unwrap_or(f64::INFINITY),
            mss_bytes,
        }
    }

    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    pub fn segments(&self, bytes: u64) -> f64 {
        bytes as f64 / f64::from(self.mss_bytes)
    }

    /// Slow start for `acked` segments if below ssthresh. Returns the acked segments
    /// left for congestion avoidance: all of them above ssthresh, those past it when
    /// slow start ends on this ACK, none while it goes on.
    pub fn slow_start(&mut self, acked: f64) -> f64 {
        if !self.in_slow_start() {
            return acked;
        }
        let grow = acked
            .min(ABC_LIMIT_SEGMENTS)
            .min(self.ssthresh - self.cwnd)
            .max(0.0);
        self.cwnd += grow;
        if self.in_slow_start() {
            0.0
        } else {
            (acked - grow).max(0.0)
        }
    }

    /// Multiplicative decrease to `factor * cwnd`, never below 2 segments; cwnd follows.
    pub fn reduce_to(&mut self, factor: f64) {
        self.ssthresh = (self.cwnd * factor).max(2.0);
        self.cwnd = self.ssthresh;
    }
}

/// What the sender knows as an ACK gives it an RTT sample: the sample, the smoothed RTT
/// after it, whether the connection is in the open state (no recovery), and the sequence
/// numbers that delay-based controllers count their rounds by (Linux's `ack` and
/// `snd_nxt`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RttSample {
    pub rtt_ns: u64,
    pub srtt_ns: u64,
    pub now_ns: u64,
    pub open: bool,
    pub ack: u64,
    pub snd_nxt: u64,
}

impl RttSample {
    /// A sample `rtt_ns` at `now_ns` in the open state, the smoothed RTT equal to it and
    /// no sequence numbers: for driving a controller directly.
    pub fn at(rtt_ns: u64, now_ns: u64) -> Self {
        Self {
            rtt_ns,
            srtt_ns: rtt_ns,
            now_ns,
            open: true,
            ack: 0,
            snd_nxt: 0,
        }
    }
}

pub trait CongestionControl {
    fn name(&self) -> &'static str;
    fn window(&self) -> &Window;
    fn window_mut(&mut self) -> &mut Window;

    /// `acked_bytes` newly acknowledged while the sender was window-limited and not
    /// recovering a loss: grow the window. `rtt_ns` is this ACK's sample, if any.
    fn on_ack(&mut self, acked_bytes: u64, rtt_ns: Option<u64>, now_ns: u64);

    /// A loss detected by duplicate ACKs or SACK: once per loss event (per window).
    /// Sets ssthresh and cwnd. `in_flight_bytes` is the sender's pipe (RFC 6675) as the
    /// loss is detected: Linux's controllers reduce from cwnd, most of ns-3's from this.
    fn on_congestion_event(&mut self, now_ns: u64, in_flight_bytes: u64);

    /// A retransmission timeout: reduce (unless this loss event already did), then
    /// restart from one segment. `in_flight_bytes` is the pipe before the timeout.
    fn on_rto(&mut self, now_ns: u64, reduce: bool, in_flight_bytes: u64) {
        if reduce {
            self.on_congestion_event(now_ns, in_flight_bytes);
        }
        self.window_mut().cwnd = 1.0;
    }

    /// Every RTT sample, whether or not the window may grow (delay-based controllers).
    fn on_rtt(&mut self, _sample: &RttSample) {}

    /// The handshake's round trip, the connection's first RTT measurement: it reaches the
    /// estimate ns-3 hands its controllers, not the controllers themselves.
    fn on_handshake_rtt(&mut self, _sample: &RttSample) {}

    /// The sender left fast recovery or loss recovery (Linux's return to `TCP_CA_Open`).
    fn on_recovered(&mut self, _now_ns: u64) {}

    /// Whether the window grows only while the sender is limited by it, as Linux's
    /// `tcp_cong_avoid` asks `tcp_is_cwnd_limited`. ns-3's `TcpSocketBase` calls
    /// `IncreaseWindow` on every ACK in the open state.
    fn grows_only_when_cwnd_limited(&self) -> bool {
        true
    }

    fn cwnd_bytes(&self) -> u64 {
        let w = self.window();
        // `as` truncates, which is floor for a window (never negative), without the libm
        // call `floor` is on baseline x86-64; asked for on every packet sent.
        (w.cwnd as u64).max(1) * u64::from(w.mss_bytes)
    }

    fn ssthresh_bytes(&self) -> u64 {
        let w = self.window();
        if w.ssthresh.is_finite() {
            (w.ssthresh as u64) * u64::from(w.mss_bytes)
        } else {
            u64::MAX
        }
    }
}

/// The controllers by name, as scenarios spell them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CcKind {
    Reno,
    Bic,
    Cubic,
    Htcp,
    Highspeed,
    Scalable,
    Vegas,
}

impl CcKind {
    pub const ALL: [CcKind; 7] = [
        CcKind::Reno,
        CcKind::Bic,
        CcKind::Cubic,
        CcKind::Htcp,
        CcKind::Highspeed,
        CcKind::Scalable,
        CcKind::Vegas,
    ];

    pub fn build(self, window: Window, stack: TcpStack) -> Box<dyn CongestionControl> {
        match stack {
            TcpStack::Linux => match self {
                CcKind::Reno => Box::new(Reno::new(window)),
                CcKind::Bic => Box::new(Bic::new(window)),
                CcKind::Cubic => Box::new(Cubic::new(window)),
                CcKind::Htcp => Box::new(Htcp::new(window)),
                CcKind::Highspeed => Box::new(HighSpeed::new(window)),
                CcKind::Scalable => Box::new(Scalable::new(window)),
                CcKind::Vegas => Box::new(Vegas::new(window)),
            },
            TcpStack::Ns3 => match self {
                CcKind::Reno => Box::new(ns3::reno::Reno::new(window)),
                CcKind::Bic => Box::new(ns3::bic::Bic::new(window)),
                CcKind::Cubic => Box::new(ns3::cubic::Cubic::new(window)),
                CcKind::Htcp => Box::new(ns3::htcp::Htcp::new(window)),
                CcKind::Highspeed => Box::new(ns3::highspeed::HighSpeed::new(window)),
                CcKind::Scalable => Box::new(ns3::scalable::Scalable::new(window)),
                CcKind::Vegas => Box::new(ns3::vegas::Vegas::new(window)),
            },
        }
    }
}

/// Whose definitions of the congestion controls a host runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum TcpStack {
    /// Linux's `net/ipv4/tcp_*.c`, as the modules here document them: the model.
    #[default]
    #[serde(rename = "linux")]
    Linux,
    /// ns-3.37's `src/internet/model/tcp-*.cc` ([`ns3`]): to check the simulator's engine
    /// against ns-3 with the same algorithms on both sides.
    #[serde(rename = "ns-3.37")]
    Ns3,
}

#[cfg(test)]
// The values compared are exact (powers of two, table constants).
#[allow(clippy::float_cmp)]
mod tests {
    use super::*;

    #[test]
    fn slow_start_doubles_per_window_and_stops_at_ssthresh() {
        let mut w = Window::new(1000, 10.0, Some(15.0));
        // Ten segments acked two at a time: +2 each of 5 ACKs, capped at ssthresh.
        let mut left = 0.0;
        for _ in 0..5 {
            left += w.slow_start(2.0);
        }
        assert_eq!(w.cwnd, 15.0);
        assert_eq!(left, 5.0);
    }

    #[test]
    fn every_controller_reduces_on_loss_and_restarts_at_one_on_timeout() {
        for (kind, stack) in CcKind::ALL
            .into_iter()
            .flat_map(|kind| [(kind, TcpStack::Linux), (kind, TcpStack::Ns3)])
        {
            let mut cc = kind.build(Window::new(1000, 100.0, None), stack);
            cc.on_congestion_event(1, 100_000);
            let w = *cc.window();
            assert!(w.cwnd < 100.0 && w.cwnd >= 50.0, "{}: {w:?}", cc.name());
            assert_eq!(w.cwnd, w.ssthresh);
            cc.on_rto(2, false, 0);
            assert_eq!(cc.cwnd_bytes(), 1000);
        }
    }
}
