//! The TCP sender: bulk data, cumulative ACKs plus SACK, loss recovery in the manner of
//! RFC 6675 with Linux's FACK loss marking (on by default in 2.6.18), RTO per RFC 6298.
//!
//! Bookkeeping is by byte ranges, never per segment. The scoreboard holds `SACKed` ranges
//! above `snd_una`. A hole is taken as lost once the highest `SACKed` byte is
//! `DUPTHRESH` segments above it (FACK); `high_rxt` is the retransmission pointer: holes
//! below it have been retransmitted once. So
//!
//! pipe = (`snd_nxt` - `snd_una`) - `SACKed` - (lost holes not yet retransmitted),
//!
//! and the last term is `(lost_boundary - high_rxt)` minus the `SACKed` bytes between them,
//! which `sacked_below_rxt` (`SACKed` bytes in `[snd_una, high_rxt)`) and a short walk
//! down from the top give in logarithmic time, less the retransmissions found lost again.
//! A retransmission is lost again once a segment sent after it has been delivered (RACK,
//! RFC 8985, with no reordering window: paths here keep order), new data or a later
//! retransmission alike: it is sent once more within the same recovery, and no RTO is
//! needed even when the receiver's window allows no new data.
//!
//! In fast recovery the window comes down gradually. On Linux 6.x by proportional rate
//! reduction (RFC 6937, `tcp_cwnd_reduction` since 3.2): while more than ssthresh is in
//! flight the sender sends ssthresh / `prior_cwnd` of what is delivered, below it slow
//! start back up to ssthresh (the slow-start reduction bound), and the window is
//! ssthresh when recovery ends. On Linux 2.6.18 and 2.6.23 by rate-halving
//! (`tcp_cwnd_down`, called on every ACK in recovery): one segment off the window per two
//! ACKs down to the controller's floor, the window never above what is in flight plus
//! one, and at the end at most ssthresh (`tcp_complete_cwr`).
//!
//! A sender on ns-3.37's stack (`Kernel::Ns3`, to check the engine against ns-3 with
//! the same rules) differs where `TcpSocketBase` does: no RACK, so a lost retransmission
//! waits for the timeout; RTT samples only from data never retransmitted and sent since
//! the last timeout (`EstimateRtt` reads `m_history`, which a timeout empties); leaving a
//! timeout's recovery credits only the segments past its recovery point; its timer rule
//! is in [`RttEstimator`].

use std::collections::VecDeque;

use crate::cc::{CongestionControl, Kernel, RttSample};
use crate::packet::{Kind, Packet};
use crate::tcp::TCP_IP_HEADER_BYTES;
use crate::tcp::ranges::RangeSet;
use crate::tcp::rtt::RttEstimator;
use crate::transport::{FlowReport, Transport};

/// Segments `SACKed` above a hole before it is taken as lost.
pub const DUPTHRESH: u64 = 3;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SenderConfig {
    pub mss_bytes: u32,
    /// Link-layer bytes added to each packet (Ethernet framing).
    pub frame_overhead_bytes: u32,
    pub min_rto_ns: u64,
    /// The send buffer: unacknowledged bytes never exceed it.
    pub snd_buf_bytes: u64,
    /// Bytes to send; `None` for an unending bulk transfer.
    pub transfer_bytes: Option<u64>,
    /// Whose timer and loss-state rules the sender follows (the congestion control is
    /// chosen apart, with the same stack).
    pub kernel: Kernel,
    /// When the connection opens (its SYN leaves).
    pub start_ns: u64,
    /// How long the handshake takes before data may leave; zero for a connection that
    /// is open when it starts (as iperf3 times Linux flows). The SYN / SYN-ACK exchange
    /// gives the first RTT sample, as ns-3's `ProcessSynSent` takes it.
    pub handshake_ns: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Open,
    /// Fast recovery until `snd_una` reaches `point`.
    Recovery {
        point: u64,
    },
    /// After a timeout, until `snd_una` reaches `point`: everything unSACKed below it is lost.
    Loss {
        point: u64,
    },
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SenderStats {
    /// Payload bytes put on the wire, retransmissions included.
    pub bytes_sent: u64,
    pub segments_sent: u64,
    pub retransmits: u64,
    /// Retransmissions found lost again before the RTO (Linux's `TCPLostRetransmit`).
    pub lost_retransmits: u64,
    pub fast_recoveries: u64,
    pub timeouts: u64,
}

/// A segment as RACK orders them: by the time it left, then by its end (segments that
/// leave in the same nanosecond leave in sequence order).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
struct SentAt {
    ns: u64,
    end: u64,
}

/// Proportional rate reduction's state through one fast recovery (RFC 6937 section 3),
/// in bytes. Linux uses the window before the reduction as `RecoverFS` (`prior_cwnd`);
/// ns-3.37 the data outstanding as recovery begins (`TcpPrrRecovery::EnterRecovery` is
/// given `UnAckDataCount`, `SACKed` data included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Prr {
    recover_fs: u64,
    ssthresh: u64,
    /// Bytes delivered to the receiver since recovery began (`prr_delivered`).
    delivered: u64,
    /// Bytes sent since recovery began (`prr_out`).
    out: u64,
    /// The window PRR allows until the next ACK: pipe plus `sndcnt`.
    cwnd: u64,
}

impl Prr {
    /// An ACK delivered `delivered` more bytes with `pipe` in flight: the new window.
    /// Below ssthresh the slow-start reduction bound allows one segment more than was
    /// delivered when `bound_bonus` (Linux 6.x: when `snd_una` advanced and nothing was
    /// newly marked lost; ns-3: when the ACK covered retransmitted data,
    /// `m_isRetransDataAcked`).
    fn on_ack(&mut self, delivered: u64, pipe: u64, mss: u64, bound_bonus: bool) {
        self.delivered += delivered;
        let sndcnt = if pipe > self.ssthresh {
            // Proportional: ceil(delivered * ssthresh / RecoverFS) - out.
            let due = (u128::from(self.delivered) * u128::from(self.ssthresh))
                .div_ceil(u128::from(self.recover_fs.max(1))) as u64;
            due.saturating_sub(self.out)
        } else {
            // Slow-start reduction bound: at most what was delivered plus one segment.
            let bonus = if bound_bonus { mss } else { 0 };
            let limit = (self.delivered.saturating_sub(self.out)).max(delivered) + bonus;
            (self.ssthresh - pipe).min(limit)
        };
        // tcp_cwnd_reduction: the first ACK of a recovery may always send one segment.
        let sndcnt = if self.out == 0 {
            sndcnt.max(mss)
        } else {
            sndcnt
        };
        self.cwnd = pipe + sndcnt;
    }
}

/// Rate-halving's state through one fast recovery (2.6.18 `tcp_cwnd_down`), in segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RateHalving {
    cwnd: u64,
    /// `snd_cwnd_cnt`: the parity of the ACKs since the last decrement.
    count: u64,
    floor: u64,
}

impl RateHalving {
    fn on_ack(&mut self, pipe_segments: u64) {
        let decrement = self.count + 1;
        self.count = decrement & 1;
        if decrement >> 1 > 0 && self.cwnd > self.floor {
            self.cwnd -= decrement >> 1;
        }
        self.cwnd = self.cwnd.min(pipe_segments + 1);
    }
}

/// How the window comes down through a fast recovery, by kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reduction {
    Proportional(Prr),
    RateHalving(RateHalving),
}

/// A retransmitted segment that may still be in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Retransmission {
    start: u64,
    sent: SentAt,
}

pub struct TcpSender {
    flow: u32,
    config: SenderConfig,
    cc: Box<dyn CongestionControl>,
    state: State,
    snd_una: u64,
    snd_nxt: u64,
    /// The right edge the receiver has offered (never moves left).
    peer_right_edge: u64,
    scoreboard: RangeSet,
    high_rxt: u64,
    sacked_below_rxt: u64,
    /// Retransmissions not yet known delivered or lost, in the order they were sent.
    retransmissions: VecDeque<Retransmission>,
    /// The last-sent segment known delivered (RACK's `rack.mstamp` and `rack.end_seq`).
    latest_delivered: SentAt,
    /// Retransmitted bytes taken as lost again and not yet sent again: below `high_rxt`,
    /// never `SACKed`.
    lost_retransmits: RangeSet,
    dupacks: u32,
    /// Set through a fast recovery: the window comes from it, not from the controller.
    reduction: Option<Reduction>,
    /// Fast retransmit sends one segment whatever the window says.
    force_one: bool,
    rtt: RttEstimator,
    backoff: u32,
    rto_deadline_ns: Option<u64>,
    /// Set while the connection is being set up: no data before it.
    connecting_until_ns: Option<u64>,
    last_timeout_ns: Option<u64>,
    /// The controller's `grows_only_when_cwnd_limited`, asked once.
    grows_only_when_cwnd_limited: bool,
    /// The peer's last timestamp, echoed in data (the receiver's RTT estimate).
    ts_recent_ns: u64,
    stats: SenderStats,
}

impl TcpSender {
    pub fn new(flow: u32, config: SenderConfig, cc: Box<dyn CongestionControl>) -> Self {
        let grows_only_when_cwnd_limited = cc.grows_only_when_cwnd_limited();
        Self {
            flow,
            config,
            cc,
            state: State::Open,
            snd_una: 0,
            snd_nxt: 0,
            // Until the first ACK, the initial window is what a SYN-ACK would allow.
            peer_right_edge: 64 * 1024,
            scoreboard: RangeSet::new(),
            high_rxt: 0,
            sacked_below_rxt: 0,
            retransmissions: VecDeque::new(),
            latest_delivered: SentAt::default(),
            lost_retransmits: RangeSet::new(),
            dupacks: 0,
            reduction: None,
            force_one: false,
            rtt: RttEstimator::new(config.min_rto_ns, config.kernel),
            connecting_until_ns: (config.start_ns + config.handshake_ns > 0)
                .then_some(config.start_ns + config.handshake_ns),
            last_timeout_ns: None,
            grows_only_when_cwnd_limited,
            backoff: 0,
            rto_deadline_ns: None,
            ts_recent_ns: 0,
            stats: SenderStats::default(),
        }
    }

    pub fn cc(&self) -> &dyn CongestionControl {
        self.cc.as_ref()
    }

    pub fn state(&self) -> State {
        self.state
    }

    pub fn stats(&self) -> SenderStats {
        self.stats
    }

    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }

    pub fn snd_nxt(&self) -> u64 {
        self.snd_nxt
    }

    pub fn srtt_ns(&self) -> Option<u64> {
        self.rtt.srtt_ns()
    }

    pub fn poll_timeout(&self) -> Option<u64> {
        self.connecting_until_ns.or(self.rto_deadline_ns)
    }

    fn mss(&self) -> u64 {
        u64::from(self.config.mss_bytes)
    }

    /// Below this, unSACKed bytes are taken as lost.
    pub fn lost_boundary(&self) -> u64 {
        let fack = self
            .scoreboard
            .highest_end()
            .map_or(0, |h| h.saturating_sub(DUPTHRESH * self.mss()));
        let boundary = match self.state {
            State::Loss { point } => fack.max(point),
            _ => fack,
        };
        boundary.max(self.snd_una)
    }

    /// Whether unSACKed bytes above `before` (an earlier `lost_boundary`) are now taken as
    /// lost: the ACK marked new losses (Linux's `newly_lost`).
    fn marked_lost_since(&self, before: u64) -> bool {
        let (from, to) = (before.max(self.snd_una), self.lost_boundary());
        to > from && self.scoreboard.covered_in(from, to) < to - from
    }

    /// Bytes taken to be in the network (RFC 6675's pipe).
    pub fn pipe(&self) -> u64 {
        let outstanding = self.snd_nxt - self.snd_una;
        let sacked = self.scoreboard.total_bytes();
        let lost = self.lost_boundary();
        let unretransmitted_lost = if lost > self.high_rxt {
            let sacked_above_lost = self.scoreboard.covered_in(lost, u64::MAX);
            let sacked_between = sacked - self.sacked_below_rxt - sacked_above_lost;
            (lost - self.high_rxt) - sacked_between
        } else {
            0
        };
        outstanding - sacked - unretransmitted_lost - self.lost_retransmits.total_bytes()
    }

    /// Move the retransmission pointer up to `to`, counting the `SACKed` bytes it passes.
    fn advance_high_rxt(&mut self, to: u64) {
        if to > self.high_rxt {
            self.sacked_below_rxt += self.scoreboard.covered_in(self.high_rxt, to);
            self.high_rxt = to;
        }
    }

    /// The next lost segment to retransmit, if any: `(seq, len)`.
    fn next_retransmit(&self) -> Option<(u64, u64)> {
        if self.state == State::Open {
            return None;
        }
        // Retransmissions lost again lie below `high_rxt`, so they are the lowest holes.
        if let Some(r) = self.lost_retransmits.first() {
            return Some((r.start, (r.end - r.start).min(self.mss())));
        }
        let at = self
            .scoreboard
            .skip_covered(self.high_rxt.max(self.snd_una));
        if at >= self.lost_boundary() || at >= self.snd_nxt {
            return None;
        }
        let hole_end = self
            .scoreboard
            .next_start_after(at)
            .unwrap_or(self.snd_nxt)
            .min(self.snd_nxt);
        Some((at, (hole_end - at).min(self.mss())))
    }

    /// Room for new data under the receiver's window, the send buffer and the transfer size.
    fn new_data_allowed(&self) -> Option<u64> {
        let right = self
            .peer_right_edge
            .min(self.snd_una + self.config.snd_buf_bytes);
        let end = self.config.transfer_bytes.unwrap_or(u64::MAX);
        let len = self.mss().min(end.saturating_sub(self.snd_nxt));
        (len > 0 && self.snd_nxt + len <= right).then_some(len)
    }

    fn segment(&self, seq: u64, len: u64, now_ns: u64) -> Packet {
        let len = len as u32;
        let wire = len + TCP_IP_HEADER_BYTES + self.config.frame_overhead_bytes;
        let mut pkt = Packet::new(Kind::Data, self.flow, wire);
        pkt.seq = seq;
        pkt.len = len;
        pkt.ts_ns = now_ns;
        pkt.ts_echo_ns = self.ts_recent_ns;
        pkt
    }

    /// The handshake is over: data may leave, and its round trip is the first RTT sample.
    fn open_connection(&mut self) {
        self.connecting_until_ns = None;
        let (syn_ns, handshake_ns) = (self.config.start_ns, self.config.handshake_ns);
        if handshake_ns > 0 {
            let sample = RttSample::at(handshake_ns, syn_ns + handshake_ns);
            self.rtt.sample(syn_ns + handshake_ns, handshake_ns);
            self.cc.on_handshake_rtt(&sample);
        }
    }

    /// The next segment the windows allow now, if any.
    pub fn poll_transmit(&mut self, now_ns: u64) -> Option<Packet> {
        if let Some(at) = self.connecting_until_ns {
            if now_ns < at {
                return None;
            }
            self.open_connection();
        }
        let cwnd = match self.reduction {
            None => self.cc.cwnd_bytes(),
            Some(Reduction::Proportional(prr)) => prr.cwnd,
            Some(Reduction::RateHalving(rh)) => rh.cwnd * self.mss(),
        };
        if !self.force_one && self.pipe() >= cwnd {
            return None;
        }
        let pkt = if let Some((seq, len)) = self.next_retransmit() {
            self.note_retransmit(seq, seq + len, now_ns);
            let mut pkt = self.segment(seq, len, now_ns);
            pkt.retransmit = true;
            pkt
        } else {
            let len = self.new_data_allowed()?;
            let pkt = self.segment(self.snd_nxt, len, now_ns);
            self.snd_nxt += len;
            pkt
        };
        self.force_one = false;
        if let Some(Reduction::Proportional(prr)) = &mut self.reduction {
            prr.out += u64::from(pkt.len);
        }
        self.stats.bytes_sent += u64::from(pkt.len);
        self.stats.segments_sent += 1;
        if self.rto_deadline_ns.is_none() {
            self.rto_deadline_ns = Some(now_ns + self.rtt.rto_ns(self.backoff));
        }
        Some(pkt)
    }

    /// Book a retransmission of `[start, end)` about to leave.
    fn note_retransmit(&mut self, start: u64, end: u64, now_ns: u64) {
        self.lost_retransmits.remove(start, end);
        self.advance_high_rxt(end);
        self.retransmissions.push_back(Retransmission {
            start,
            sent: SentAt { ns: now_ns, end },
        });
        self.stats.retransmits += 1;
    }

    /// Lost retransmissions, found as RACK (RFC 8985) finds them: a segment sent after a
    /// retransmission has been delivered and the retransmission has not, so on a path
    /// that keeps order it is lost. Its unSACKed bytes leave the pipe and may be sent again
    /// at once, within the same recovery and with no further reduction. Each
    /// retransmission is looked at once: amortized constant time per ACK.
    fn detect_lost_retransmits(&mut self) {
        while let Some(&r) = self.retransmissions.front()
            && r.sent < self.latest_delivered
        {
            self.retransmissions.pop_front();
            if self.mark_unsacked_lost(r.start.max(self.snd_una), r.sent.end) {
                self.stats.lost_retransmits += 1;
            }
        }
    }

    /// Take the unSACKed bytes of `[start, end)` (a segment, so few holes) as lost again;
    /// returns whether there were any.
    fn mark_unsacked_lost(&mut self, start: u64, end: u64) -> bool {
        let mut any = false;
        let mut at = self.scoreboard.skip_covered(start);
        while at < end {
            let hole_end = self
                .scoreboard
                .next_start_after(at)
                .map_or(end, |s| s.min(end));
            self.lost_retransmits.insert(at, hole_end, 0);
            any = true;
            at = self.scoreboard.skip_covered(hole_end);
        }
        any
    }

    /// Forget every retransmission: the retransmission pointer restarts at `snd_una`.
    fn reset_retransmissions(&mut self) {
        self.high_rxt = self.snd_una;
        self.sacked_below_rxt = 0;
        self.retransmissions.clear();
        self.lost_retransmits = RangeSet::new();
    }

    /// Whether the window, not the application or the receiver, held the sender back
    /// (Linux's `tcp_is_cwnd_limited` with TSO: less than a third of cwnd unused).
    fn cwnd_limited(pipe_bytes: u64, cwnd_bytes: u64) -> bool {
        cwnd_bytes.saturating_sub(pipe_bytes) * 3 < cwnd_bytes
    }

    /// Take the ACK's SACK blocks; returns the bytes newly `SACKed`.
    fn take_sack(&mut self, pkt: &Packet) -> u64 {
        let mut newly = 0;
        for block in pkt.sack_blocks() {
            let start = block.start.max(pkt.ack).max(self.snd_una);
            let end = block.end.min(self.snd_nxt);
            if start < end {
                let inserted = self.scoreboard.insert(start, end, self.high_rxt);
                newly += inserted.new_bytes;
                self.sacked_below_rxt += inserted.new_below_pivot;
                // A retransmission taken as lost that arrives after all was only late.
                if !self.lost_retransmits.is_empty() {
                    self.lost_retransmits.remove(start, end);
                }
            }
        }
        newly
    }

    /// Move `snd_una` up to `ack`; returns the `SACKed` bytes it passed.
    fn advance_una(&mut self, ack: u64) -> u64 {
        let removed = self.scoreboard.remove_below(ack);
        self.lost_retransmits.remove_below(ack);
        // Usually the oldest retransmission is the lowest: drop those acknowledged.
        while self
            .retransmissions
            .front()
            .is_some_and(|r| r.sent.end <= ack)
        {
            self.retransmissions.pop_front();
        }
        self.snd_una = ack;
        if ack <= self.high_rxt {
            self.sacked_below_rxt -= removed;
        } else {
            self.high_rxt = ack;
            self.sacked_below_rxt = 0;
        }
        removed
    }

    fn enter_recovery(&mut self, now_ns: u64) {
        let prior_cwnd = self.cc.cwnd_bytes();
        self.cc.on_congestion_event(now_ns, self.pipe());
        self.reduction = Some(if self.config.kernel.is_linux_2_6() {
            Reduction::RateHalving(RateHalving {
                cwnd: prior_cwnd / self.mss(),
                count: 0,
                floor: self.cc.rate_halving_floor() as u64,
            })
        } else {
            Reduction::Proportional(Prr {
                recover_fs: if self.config.kernel == Kernel::Ns3 {
                    self.snd_nxt - self.snd_una
                } else {
                    prior_cwnd
                },
                ssthresh: self.cc.ssthresh_bytes(),
                delivered: 0,
                out: 0,
                cwnd: self.pipe(),
            })
        });
        self.state = State::Recovery {
            point: self.snd_nxt,
        };
        self.reset_retransmissions();
        self.force_one = true;
        self.stats.fast_recoveries += 1;
    }

    /// Whether this advancing ACK gives an RTT sample. With timestamps Linux takes one
    /// from every advancing ACK, retransmissions too. ns-3 samples only the oldest
    /// segment it sent and never retransmitted, from a history it empties on a timeout
    /// (`TcpSocketBase::EstimateRtt`, `m_history`): none in recovery, none from what was
    /// sent before the last timeout.
    fn takes_rtt_sample(&self, pkt: &Packet) -> bool {
        self.config.kernel.is_linux()
            || (self.state == State::Open
                && self.last_timeout_ns.is_none_or(|at| pkt.ts_echo_ns > at))
    }

    /// An acknowledgement arrives.
    pub fn on_ack(&mut self, now_ns: u64, pkt: &Packet) {
        let pipe_before = self.pipe();
        let cwnd_before = self.cc.cwnd_bytes();
        let lost_before = self.lost_boundary();
        self.peer_right_edge = self.peer_right_edge.max(pkt.ack + pkt.wnd_bytes);
        self.ts_recent_ns = pkt.ts_ns;
        if pkt.ack > self.snd_nxt {
            return; // acknowledges what was never sent: ignore
        }
        let newly_sacked = self.take_sack(pkt);
        self.latest_delivered = self.latest_delivered.max(SentAt {
            ns: pkt.delivered_ts_ns,
            end: pkt.delivered_end,
        });
        let acked = pkt.ack.saturating_sub(self.snd_una);
        // ns-3 grants the reduction bound's extra segment only to an ACK of retransmitted
        // data (below `high_rxt` every unSACKed byte was retransmitted).
        let retransmitted_acked = acked > 0 && self.snd_una < self.high_rxt;
        let mut rtt_ns = None;
        let mut sacked_passed = 0;
        if acked > 0 {
            sacked_passed = self.advance_una(pkt.ack);
            if self.takes_rtt_sample(pkt) {
                let sample = now_ns.saturating_sub(pkt.ts_echo_ns).max(1);
                self.rtt.sample(now_ns, sample);
                self.cc.on_rtt(&RttSample {
                    rtt_ns: sample,
                    srtt_ns: self.rtt.srtt_ns().unwrap_or(sample),
                    now_ns,
                    open: self.state == State::Open,
                    ack: pkt.ack,
                    snd_nxt: self.snd_nxt,
                });
                rtt_ns = Some(sample);
            }
            self.backoff = 0;
            self.dupacks = 0;
        } else if pkt.ack == self.snd_una && self.snd_una < self.snd_nxt {
            self.dupacks += 1;
        }
        if self.config.kernel.is_linux() {
            // ns-3.37 has no RACK: a lost retransmission waits for the timeout. 2.6.18
            // finds a retransmission lost when a segment sent after it is SACKed
            // (`tcp_sacktag_write_queue`, `lost_retrans`), as RACK does here.
            self.detect_lost_retransmits();
        }
        let mut credited = acked;
        if let State::Recovery { point } | State::Loss { point } = self.state
            && self.snd_una >= point
        {
            if self.config.kernel == Kernel::Ns3 && matches!(self.state, State::Loss { .. }) {
                // ns-3's ProcessAck leaving CA_LOSS passes only the segments past the
                // recovery point to IncreaseWindow: none when the timeout left one segment
                // in flight, so cwnd stays at one.
                credited = self.snd_una - point;
            }
            if let Some(Reduction::RateHalving(rh)) = self.reduction {
                // tcp_complete_cwr: the window rate-halving left, at most ssthresh.
                let w = self.cc.window_mut();
                w.cwnd = (rh.cwnd as f64).min(w.ssthresh);
            }
            self.state = State::Open;
            self.reduction = None;
            self.cc.on_recovered(now_ns);
        }
        let loss_seen = self.lost_boundary() > self.snd_una || self.dupacks >= DUPTHRESH as u32;
        if self.state == State::Open && loss_seen {
            self.enter_recovery(now_ns);
        } else if acked > 0
            && !matches!(self.state, State::Recovery { .. })
            && (!self.grows_only_when_cwnd_limited || Self::cwnd_limited(pipe_before, cwnd_before))
        {
            self.cc.on_ack(credited, rtt_ns, now_ns);
        }
        // Including the ACK that began the recovery, as tcp_cwnd_reduction and
        // tcp_cwnd_down are.
        if self.reduction.is_some() {
            // Linux 6.x's tcp_cwnd_reduction grants the extra segment when snd_una advanced
            // and the ACK marked nothing newly lost.
            let bound_bonus = if self.config.kernel == Kernel::Ns3 {
                retransmitted_acked
            } else {
                acked > 0 && !self.marked_lost_since(lost_before)
            };
            // RFC 6937's DeliveredData: the cumulative advance plus the change in SACKed.
            let delivered = (acked + newly_sacked).saturating_sub(sacked_passed);
            let (pipe, mss) = (self.pipe(), self.mss());
            match &mut self.reduction {
                Some(Reduction::Proportional(prr)) => {
                    prr.on_ack(delivered, pipe, mss, bound_bonus);
                }
                Some(Reduction::RateHalving(rh)) => rh.on_ack(pipe.div_ceil(mss)),
                None => {}
            }
        }
        if self.snd_una == self.snd_nxt {
            self.rto_deadline_ns = None;
        } else if acked > 0 {
            self.rto_deadline_ns = Some(now_ns + self.rtt.rto_ns(self.backoff));
        }
    }

    /// The retransmission timer may be due.
    pub fn on_timeout(&mut self, now_ns: u64) {
        if let Some(at) = self.connecting_until_ns {
            if now_ns >= at {
                self.open_connection();
            }
            return;
        }
        let Some(deadline) = self.rto_deadline_ns else {
            return;
        };
        if now_ns < deadline {
            return;
        }
        // One reduction per loss event: a timeout in recovery has already been counted.
        let reduce = self.state == State::Open;
        self.cc.on_rto(now_ns, reduce, self.pipe());
        self.reduction = None;
        self.state = State::Loss {
            point: self.snd_nxt,
        };
        self.reset_retransmissions();
        self.dupacks = 0;
        self.backoff += 1;
        self.stats.timeouts += 1;
        self.last_timeout_ns = Some(now_ns);
        self.rto_deadline_ns = Some(now_ns + self.rtt.rto_ns(self.backoff));
    }
}

impl Transport for TcpSender {
    fn handle_packet(&mut self, now_ns: u64, pkt: &Packet) {
        if pkt.kind == Kind::Ack {
            self.on_ack(now_ns, pkt);
        }
    }
    fn poll_transmit(&mut self, now_ns: u64) -> Option<Packet> {
        TcpSender::poll_transmit(self, now_ns)
    }
    fn poll_timeout(&self) -> Option<u64> {
        TcpSender::poll_timeout(self)
    }
    fn handle_timeout(&mut self, now_ns: u64) {
        self.on_timeout(now_ns);
    }
    fn held_by_interface(&self) -> bool {
        true
    }
    fn report(&self) -> FlowReport {
        FlowReport {
            sent_bytes: self.snd_nxt,
            retransmits: self.stats.retransmits,
            fast_recoveries: self.stats.fast_recoveries,
            timeouts: self.stats.timeouts,
            cwnd_bytes: self.cc.cwnd_bytes(),
            srtt_ns: self.rtt.srtt_ns().unwrap_or(0),
            ..FlowReport::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::{CcKind, Window};
    use crate::packet::Range;

    const MSS: u64 = 1000;

    fn sender(cwnd: f64) -> TcpSender {
        sender_on(Kernel::Linux6, cwnd, 0, 0)
    }

    fn sender_on(kernel: Kernel, cwnd: f64, start_ns: u64, handshake_ns: u64) -> TcpSender {
        let config = SenderConfig {
            mss_bytes: MSS as u32,
            frame_overhead_bytes: 0,
            min_rto_ns: 200_000_000,
            snd_buf_bytes: u64::MAX / 4,
            transfer_bytes: None,
            kernel,
            start_ns,
            handshake_ns,
        };
        let cc = CcKind::Reno.build(Window::new(MSS as u32, cwnd, None), kernel);
        TcpSender::new(0, config, cc)
    }

    /// One segment out at `sent_ns`, a timeout, its retransmission acknowledged (with
    /// the original's timestamp echoed, as a receiver that held it for a delayed ACK
    /// does): the ns-3 timeout livelock's one turn. Returns the sender after it.
    fn one_segment_timeout(kernel: Kernel) -> TcpSender {
        let mut s = sender_on(kernel, 1.0, 0, 0);
        s.peer_right_edge = u64::MAX / 2;
        assert_eq!(drain(&mut s, 0).len(), 1);
        let rto = s.poll_timeout().unwrap();
        s.on_timeout(rto);
        let out = drain(&mut s, rto);
        assert!(out[0].retransmit);
        let mut a = ack(MSS, &[]);
        a.ts_echo_ns = 0;
        s.on_ack(rto + 27_000_000, &a);
        s
    }

    #[test]
    fn ns3_leaves_a_timeout_crediting_nothing_and_takes_no_sample_from_before_it() {
        let ns3 = one_segment_timeout(Kernel::Ns3);
        assert_eq!(ns3.state(), State::Open);
        assert_eq!(
            ns3.cc().cwnd_bytes(),
            MSS,
            "no segment past the recovery point"
        );
        assert_eq!(ns3.srtt_ns(), None, "the retransmission's ACK is no sample");
        let linux = one_segment_timeout(Kernel::Linux6);
        assert_eq!(
            linux.cc().cwnd_bytes(),
            2 * MSS,
            "slow start counts the acked segment"
        );
        assert!(linux.srtt_ns().is_some(), "timestamps make it a sample");
    }

    #[test]
    fn no_data_leaves_before_the_handshake_ends_and_it_is_the_first_rtt_sample() {
        let mut s = sender_on(Kernel::Ns3, 10.0, 1_000, 26_800_000);
        s.peer_right_edge = u64::MAX / 2;
        assert!(drain(&mut s, 1_000).is_empty());
        assert_eq!(s.poll_timeout(), Some(26_801_000));
        s.on_timeout(26_801_000);
        // Timestamps 0 and 26 ms, as ns-3 reads the handshake's round trip.
        assert_eq!(s.srtt_ns(), Some(26_000_000));
        assert_eq!(drain(&mut s, 26_801_000).len(), 10);
    }

    fn ack(ack: u64, sack: &[(u64, u64)]) -> Packet {
        let mut p = Packet::new(Kind::Ack, 0, 64);
        p.ack = ack;
        p.wnd_bytes = 1 << 40;
        let blocks: Vec<Range> = sack
            .iter()
            .map(|&(start, end)| Range { start, end })
            .collect();
        p.set_sack_blocks(&blocks);
        p
    }

    fn drain(s: &mut TcpSender, now: u64) -> Vec<Packet> {
        std::iter::from_fn(|| s.poll_transmit(now)).collect()
    }

    #[test]
    fn sends_a_window_then_waits() {
        let mut s = sender(10.0);
        s.peer_right_edge = u64::MAX / 2;
        assert_eq!(drain(&mut s, 0).len(), 10);
        assert_eq!(s.pipe(), 10 * MSS);
        s.on_ack(1_000, &ack(2 * MSS, &[]));
        // Slow start: +2 segments, 2 acked: 4 more.
        assert_eq!(drain(&mut s, 1_000).len(), 4);
    }

    #[test]
    fn sack_recovery_retransmits_the_hole_once_and_reduces_once() {
        let mut s = sender(10.0);
        s.peer_right_edge = u64::MAX / 2;
        drain(&mut s, 0);
        // Segment 0 lost; 1..=3 SACKed.
        s.on_ack(10, &ack(0, &[(MSS, 2 * MSS)]));
        s.on_ack(11, &ack(0, &[(MSS, 3 * MSS)]));
        assert_eq!(s.state(), State::Open);
        s.on_ack(12, &ack(0, &[(MSS, 4 * MSS)]));
        assert!(matches!(s.state(), State::Recovery { point: 10_000 }));
        assert_eq!(s.cc().cwnd_bytes(), 5 * MSS);
        let out = drain(&mut s, 12);
        assert_eq!(out[0].seq, 0);
        assert!(out[0].retransmit);
        // pipe: 10 out - 3 SACKed - 0 lost unretransmitted = 7 >= cwnd 5 after the rxt.
        assert_eq!(out.len(), 1);
        // More SACKs shrink the pipe and release new data, not another retransmission.
        for k in 5..=9 {
            s.on_ack(13, &ack(0, &[(MSS, k * MSS)]));
        }
        let out = drain(&mut s, 13);
        assert_eq!(out.len(), 3, "pipe 2 segments, cwnd 5");
        assert!(
            out.iter().all(|p| !p.retransmit && p.seq >= 10 * MSS),
            "{out:?}"
        );
        s.on_ack(20, &ack(13 * MSS, &[]));
        assert_eq!(s.state(), State::Open);
        assert_eq!(s.stats().fast_recoveries, 1);
        assert_eq!(s.stats().retransmits, 1);
    }

    /// An ACK caused by the segment `[.., delivered_end)` sent at `delivered_ns`.
    fn ack_of(ack_seq: u64, sack: &[(u64, u64)], delivered_ns: u64, delivered_end: u64) -> Packet {
        let mut p = ack(ack_seq, sack);
        p.delivered_ts_ns = delivered_ns;
        p.delivered_end = delivered_end;
        p
    }

    #[test]
    fn a_retransmission_lost_again_is_sent_again_without_a_timeout() {
        let mut s = sender(10.0);
        s.peer_right_edge = u64::MAX / 2;
        drain(&mut s, 0);
        // Segment 0 lost; 1..=3 SACKed: recovery, segment 0 goes again at t = 10, and
        // PRR lets ceil(3 delivered * 5 ssthresh / 10 prior cwnd) = 2 segments go.
        s.on_ack(10, &ack_of(0, &[(MSS, 4 * MSS)], 0, 4 * MSS));
        let out = drain(&mut s, 10);
        assert_eq!((out[0].seq, out[0].retransmit, out.len()), (0, true, 2));
        for k in 5..=9 {
            s.on_ack(11, &ack_of(0, &[(MSS, k * MSS)], 0, k * MSS));
        }
        let new_data = drain(&mut s, 11);
        assert!(new_data.iter().all(|p| !p.retransmit && p.seq >= 10 * MSS));
        assert_eq!(s.stats().lost_retransmits, 0);
        // A segment sent after the retransmission arrives: the retransmission is lost,
        // leaves the pipe and goes again, within the same recovery, no further reduction.
        let cwnd = s.cc().cwnd_bytes();
        s.on_ack(21, &ack_of(0, &[(MSS, 11 * MSS)], 11, 11 * MSS));
        assert_eq!(s.stats().lost_retransmits, 1);
        let again = drain(&mut s, 21);
        assert!(
            again.first().is_some_and(|p| p.seq == 0 && p.retransmit),
            "{again:?}"
        );
        assert_eq!(s.stats().retransmits, 2);
        assert_eq!(s.stats().fast_recoveries, 1);
        assert_eq!(s.stats().timeouts, 0);
        assert!(s.cc().cwnd_bytes() >= cwnd);
        // A late copy of the first retransmission arrives: nothing is owed any more.
        s.on_ack(22, &ack_of(14 * MSS, &[], 10, MSS));
        assert_eq!(s.state(), State::Open);
        assert_eq!(drain(&mut s, 22).iter().filter(|p| p.retransmit).count(), 0);
    }

    #[test]
    fn a_later_retransmission_delivered_shows_an_earlier_one_lost_with_no_new_data() {
        // The receiver's window allows nothing beyond the ten segments in flight.
        let mut s = sender(10.0);
        s.peer_right_edge = 10 * MSS;
        drain(&mut s, 0);
        let window_limited = |mut p: Packet| {
            p.wnd_bytes = 10 * MSS;
            p
        };
        // Segments 0 and 1 lost, 2..=9 SACKed: both holes go again, 0 first.
        s.on_ack(
            10,
            &window_limited(ack_of(0, &[(2 * MSS, 10 * MSS)], 0, 10 * MSS)),
        );
        let out = drain(&mut s, 10);
        let resent: Vec<u64> = out.iter().map(|p| p.seq).collect();
        assert_eq!(resent, [0, MSS]);
        // The retransmission of 0 is lost; that of 1 arrives and is SACKed.
        s.on_ack(
            20,
            &window_limited(ack_of(0, &[(MSS, 10 * MSS)], 10, 2 * MSS)),
        );
        assert_eq!(s.stats().lost_retransmits, 1);
        let again = drain(&mut s, 20);
        assert_eq!(
            again.first().map(|p| (p.seq, p.retransmit)),
            Some((0, true))
        );
        assert_eq!(s.stats().timeouts, 0);
    }

    #[test]
    fn prr_sends_half_of_what_is_delivered_then_slow_starts_back_to_ssthresh() {
        // RFC 6937's example shape: cwnd 10 before the loss, ssthresh 5.
        let mut prr = Prr {
            recover_fs: 10 * MSS,
            ssthresh: 5 * MSS,
            delivered: 0,
            out: 0,
            cwnd: 0,
        };
        let mut sent = Vec::new();
        let mut pipe = 9 * MSS;
        for _ in 0..6 {
            prr.on_ack(MSS, pipe, MSS, true);
            // The sender sends whole segments while pipe < cwnd.
            let sndcnt = (prr.cwnd - pipe).div_ceil(MSS) * MSS;
            prr.out += sndcnt;
            sent.push(sndcnt / MSS);
            pipe = pipe - MSS + sndcnt;
        }
        // One segment per two delivered while pipe > ssthresh (the first always goes).
        assert_eq!(sent, [1, 0, 1, 0, 1, 0]);
        // Below ssthresh: back up to it, within what was delivered and not yet sent
        // (7 - 3 segments) plus one.
        pipe = 2 * MSS;
        prr.on_ack(MSS, pipe, MSS, true);
        assert_eq!(prr.cwnd, 5 * MSS);
        prr.out += 3 * MSS;
        // Then (8 delivered - 6 sent) + 1 segments may go, never past ssthresh.
        prr.on_ack(MSS, 3 * MSS, MSS, true);
        assert_eq!(prr.cwnd, 5 * MSS);
        prr.on_ack(MSS, MSS, MSS, true);
        assert_eq!(prr.cwnd, 5 * MSS);
        prr.on_ack(0, 5 * MSS, MSS, true);
        assert_eq!(prr.cwnd, 5 * MSS);
    }

    #[test]
    fn ns3s_reduction_bound_adds_a_segment_only_for_retransmitted_data() {
        let mut prr = Prr {
            recover_fs: 10 * MSS,
            ssthresh: 5 * MSS,
            delivered: 0,
            out: MSS,
            cwnd: 0,
        };
        // Below ssthresh, one segment delivered: Linux may send two, ns-3 one unless the
        // ACK covered a retransmission.
        prr.on_ack(MSS, 2 * MSS, MSS, false);
        assert_eq!(prr.cwnd, 3 * MSS);
        prr.on_ack(MSS, 2 * MSS, MSS, true);
        assert_eq!(prr.cwnd, 4 * MSS);
    }

    #[test]
    fn an_ack_whose_sack_passes_a_hole_by_three_segments_marks_it_newly_lost() {
        let mut s = sender(10.0);
        drain(&mut s, 0);
        let before = s.lost_boundary();
        s.on_ack(1, &ack(0, &[(MSS, 3 * MSS)]));
        assert!(
            !s.marked_lost_since(before),
            "two segments above the hole: not yet"
        );
        let before = s.lost_boundary();
        s.on_ack(2, &ack(0, &[(MSS, 4 * MSS)]));
        assert!(s.marked_lost_since(before));
    }

    #[test]
    fn rate_halving_takes_a_segment_off_per_two_acks_and_never_exceeds_pipe_plus_one() {
        let mut rh = RateHalving {
            cwnd: 100,
            count: 0,
            floor: 50,
        };
        // Every ACK in recovery, the one that began it first; pipe stays near the window.
        let cwnds: Vec<u64> = (0..6)
            .map(|_| {
                rh.on_ack(99);
                rh.cwnd
            })
            .collect();
        assert_eq!(cwnds, [100, 99, 99, 98, 98, 97]);
        rh.on_ack(40);
        assert_eq!(rh.cwnd, 41);
        // At the floor it stops, whatever the ACKs.
        let mut low = RateHalving {
            cwnd: 50,
            count: 1,
            floor: 50,
        };
        low.on_ack(1000);
        assert_eq!(low.cwnd, 50);
    }

    #[test]
    fn a_2_6_18_sender_leaves_recovery_at_most_at_ssthresh_by_rate_halving() {
        let mut s = sender_on(Kernel::Linux2_6_18, 20.0, 0, 0);
        let sent = drain(&mut s, 0);
        assert_eq!(sent.len(), 20);
        // The first segment is lost; the next 19 are SACKed one ACK each, and the sender
        // sends what each ACK allows.
        for k in 1..20 {
            s.on_ack(1, &ack(0, &[(MSS, (k + 1) * MSS)]));
            drain(&mut s, 1);
        }
        assert!(matches!(s.state(), State::Recovery { .. }));
        let Some(Reduction::RateHalving(rh)) = s.reduction else {
            panic!("2.6.18 recovers by rate-halving");
        };
        assert!(rh.cwnd < 20 && rh.cwnd >= 10, "{rh:?}");
        drain(&mut s, 2);
        let all = s.snd_nxt();
        s.on_ack(3, &ack(all, &[]));
        assert_eq!(s.state(), State::Open);
        // At most ssthresh, and the exit ACK's own growth (under one segment).
        let w = s.cc().window();
        assert!(w.cwnd < w.ssthresh + 1.0, "{w:?}");
    }

    #[test]
    fn timeout_restarts_from_one_segment_and_backs_off() {
        let mut s = sender(10.0);
        s.peer_right_edge = u64::MAX / 2;
        drain(&mut s, 0);
        let deadline = s.poll_timeout().unwrap();
        assert_eq!(deadline, 1_000_000_000);
        s.on_timeout(deadline);
        assert_eq!(s.cc().cwnd_bytes(), MSS);
        let out = drain(&mut s, deadline);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].seq, out[0].retransmit), (0, true));
        assert_eq!(s.poll_timeout(), Some(deadline + 2_000_000_000));
    }
}
