//! TCP congestion controllers behind one trait.
//!
//! Windows are kept in segments as `f64` (Linux keeps integer packets plus a fractional
//! counter; the sender uses `floor(cwnd)` segments, as Linux does). How an ACK is counted
//! depends on the host's [`Kernel`] ([`AckCounting`]): Linux 6.x counts the segments an ACK
//! covers (`tcp_slow_start(tp, acked)`, `tcp_cong_avoid_ai`), Linux 2.6.18 counts ACKs
//! (`sysctl_tcp_abc` = 0: `tcp_slow_start` adds one segment per ACK and
//! `tcp_reno_cong_avoid` one per cwnd ACKs), so behind delayed ACKs its slow start grows
//! 1.5 times per RTT and its Reno half a segment per RTT. BIC, CUBIC and H-TCP count
//! segments in both (BIC and CUBIC divide `cnt` by the measured ACK ratio, H-TCP adds
//! `pkts_acked`).

pub mod bic;
pub mod cubic;
pub mod cubic_2_6;
pub mod highspeed;
pub mod htcp;
pub mod ns3;
pub mod reno;
pub mod scalable;
pub mod vegas;

use serde::{Deserialize, Serialize};

pub use bic::Bic;
pub use cubic::Cubic;
pub use cubic_2_6::{Cubic26, CubicVersion};
pub use highspeed::HighSpeed;
pub use htcp::Htcp;
pub use reno::Reno;
pub use scalable::Scalable;
pub use vegas::Vegas;

pub const NS_PER_S: f64 = 1e9;

/// What one ACK is worth to a window that grows by counting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AckCounting {
    /// The segments it covers (Linux 6.x).
    #[default]
    Segments,
    /// One, however many segments it covers (Linux 2.6.18 and 2.6.23: `tcp_abc` = 0).
    PerAck,
}

/// The window state every controller shares.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    /// Congestion window, segments.
    pub cwnd: f64,
    /// Slow-start threshold, segments (infinite until the first loss).
    pub ssthresh: f64,
    pub mss_bytes: u32,
    pub counting: AckCounting,
}

impl Window {
    pub fn new(mss_bytes: u32, initial_cwnd: f64, initial_ssthresh: Option<f64>) -> Self {
        Self {
            cwnd: initial_cwnd,
            ssthresh: initial_ssthresh.unwrap_or(f64::INFINITY),
            mss_bytes,
            counting: AckCounting::Segments,
        }
    }

    /// What an ACK of `acked` segments counts for in a per-ACK counter
    /// (`snd_cwnd_cnt`): the segments, or one on a kernel that counts ACKs.
    pub fn credit(&self, acked: f64) -> f64 {
        match self.counting {
            AckCounting::Segments => acked,
            AckCounting::PerAck => acked.min(1.0),
        }
    }

    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    pub fn segments(&self, bytes: u64) -> f64 {
        bytes as f64 / f64::from(self.mss_bytes)
    }

    /// Slow start for an ACK of `acked` segments if below ssthresh. Returns the acked
    /// segments left for congestion avoidance: all of them above ssthresh, none while
    /// slow start goes on, and on Linux 6.x those past ssthresh when it ends on this ACK
    /// (`tcp_slow_start`: cwnd = min(cwnd + acked, ssthresh), the rest to
    /// `tcp_cong_avoid_ai`). Linux 2.6.18 adds one segment per ACK and hands nothing on.
    pub fn slow_start(&mut self, acked: f64) -> f64 {
        if !self.in_slow_start() {
            return acked;
        }
        let grow = self.credit(acked).min(self.ssthresh - self.cwnd).max(0.0);
        self.cwnd += grow;
        match self.counting {
            AckCounting::Segments if !self.in_slow_start() => (acked - grow).max(0.0),
            _ => 0.0,
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

pub trait CongestionControl: Send {
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

    /// The lowest window rate-halving may bring the sender to in fast recovery, segments
    /// (2.6.18 `tcp_cwnd_min`: the controller's `min_cwnd`, else ssthresh).
    fn rate_halving_floor(&self) -> f64 {
        self.window().ssthresh
    }

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

    pub fn build(self, window: Window, kernel: Kernel) -> Box<dyn CongestionControl> {
        let ssthresh = match kernel.initial_ssthresh(self) {
            Some(initial) if window.ssthresh.is_infinite() => initial,
            _ => window.ssthresh,
        };
        let window = Window {
            counting: kernel.ack_counting(),
            ssthresh,
            ..window
        };
        match kernel {
            Kernel::Linux2_6_18 | Kernel::Linux2_6_23 | Kernel::Linux6 => match self {
                CcKind::Reno => Box::new(Reno::new(window)),
                CcKind::Bic => Box::new(Bic::new(window)),
                CcKind::Cubic => match kernel {
                    Kernel::Linux2_6_18 => Box::new(Cubic26::new(window, CubicVersion::V2_0)),
                    Kernel::Linux2_6_23 => Box::new(Cubic26::new(window, CubicVersion::V2_1)),
                    _ => Box::new(Cubic::new(window)),
                },
                CcKind::Htcp => Box::new(Htcp::new(window, kernel)),
                CcKind::Highspeed => Box::new(HighSpeed::new(window, kernel)),
                CcKind::Scalable => Box::new(Scalable::new(window, kernel)),
                CcKind::Vegas => Box::new(Vegas::new(window)),
            },
            Kernel::Ns3 => match self {
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

/// 2.6.18's `initial_ssthresh` of BIC and CUBIC, segments.
pub const INITIAL_SSTHRESH_2_6_18: f64 = 100.0;

/// Whose TCP a host runs: a Linux version (its `net/ipv4/tcp*.c`, as the modules here
/// cite them), or ns-3.37's model, to check the simulator's engine against ns-3 with the
/// same algorithms on both sides.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Kernel {
    /// Linux 2.6.18 (2006; a USN host kernel): ACK counting (`tcp_abc` = 0),
    /// rate-halving in fast recovery (`tcp_cwnd_down`), Scalable's `AI_CNT` 50 per ACK,
    /// H-TCP's RTT bounds from the smoothed RTT, BIC and CUBIC starting with ssthresh 100
    /// (`initial_ssthresh`), `HighSpeed`'s limited slow start above 100 (RFC 3742).
    #[serde(rename = "linux-2.6.18")]
    Linux2_6_18,
    /// Linux 2.6.23 (2007; the other USN host kernel): 2.6.18's counting, recovery and
    /// Scalable, with H-TCP learning from each RTT sample and no initial ssthresh.
    #[serde(rename = "linux-2.6.23")]
    Linux2_6_23,
    /// Linux 6.x: byte counting, proportional rate reduction (RFC 6937), RACK.
    #[default]
    #[serde(rename = "linux-6.x")]
    Linux6,
    /// ns-3.37's `src/internet/model/tcp-*.cc` ([`ns3`]).
    #[serde(rename = "ns-3.37")]
    Ns3,
}

impl Kernel {
    pub const ALL: [Kernel; 4] = [
        Kernel::Linux2_6_18,
        Kernel::Linux2_6_23,
        Kernel::Linux6,
        Kernel::Ns3,
    ];

    pub fn is_linux(self) -> bool {
        self != Kernel::Ns3
    }

    /// The 2.6 kernels: ACK counting and rate-halving.
    pub fn is_linux_2_6(self) -> bool {
        matches!(self, Kernel::Linux2_6_18 | Kernel::Linux2_6_23)
    }

    /// ns-3's helpers count segments (`TcpNewReno::SlowStart` adds one per acked segment).
    pub fn ack_counting(self) -> AckCounting {
        if self.is_linux_2_6() {
            AckCounting::PerAck
        } else {
            AckCounting::Segments
        }
    }

    /// The slow-start threshold a connection starts with when the host sets none:
    /// 2.6.18's BIC and CUBIC set 100 segments (`initial_ssthresh` in `tcp_bic.c` and
    /// `tcp_cubic.c`, applied by `bictcp_init`); 2.6.23 made it 0 (none).
    fn initial_ssthresh(self, kind: CcKind) -> Option<f64> {
        (self == Kernel::Linux2_6_18 && matches!(kind, CcKind::Bic | CcKind::Cubic))
            .then_some(INITIAL_SSTHRESH_2_6_18)
    }
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
    fn linux_6_slow_start_takes_a_stretch_ack_whole_and_2_6_18_one_segment_per_ack() {
        let mut w = Window::new(1000, 10.0, None);
        w.slow_start(8.0);
        assert_eq!(w.cwnd, 18.0);
        let mut old = Window {
            counting: Kernel::Linux2_6_18.ack_counting(),
            ..Window::new(1000, 10.0, Some(20.0))
        };
        for _ in 0..5 {
            assert_eq!(old.slow_start(2.0), 0.0);
        }
        assert_eq!(old.cwnd, 15.0);
        assert_eq!(old.credit(2.0), 1.0);
    }

    #[test]
    fn every_controller_reduces_on_loss_and_restarts_at_one_on_timeout() {
        for (kind, kernel) in CcKind::ALL
            .into_iter()
            .flat_map(|kind| Kernel::ALL.map(|k| (kind, k)))
        {
            let mut cc = kind.build(Window::new(1000, 100.0, None), kernel);
            cc.on_congestion_event(1, 100_000);
            let w = *cc.window();
            assert!(w.cwnd < 100.0 && w.cwnd >= 50.0, "{}: {w:?}", cc.name());
            assert_eq!(w.cwnd, w.ssthresh);
            cc.on_rto(2, false, 0);
            assert_eq!(cc.cwnd_bytes(), 1000);
        }
    }
}
