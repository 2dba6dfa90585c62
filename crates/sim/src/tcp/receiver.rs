//! The TCP receiver: cumulative ACKs with SACK blocks, delayed ACKs (every second
//! full segment or a timer; immediately when out of order or filling a hole), and the
//! receive window: fixed, or grown by Linux's dynamic right-sizing (`tcp_rcv_space_adjust`:
//! about twice what the application read in the last RTT, up to the ceiling). The
//! application reads at once (memory to memory, as iperf), so only out-of-order data
//! occupies the buffer. The right edge of the window never moves left (RFC 7323).

use crate::packet::{Kind, MAX_SACK_BLOCKS, Packet, Range};
use crate::tcp::ranges::RangeSet;
use crate::tcp::{SACK_BLOCK_BYTES, SACK_OPTION_BASE_BYTES, TCP_IP_HEADER_BYTES};
use crate::transport::{FlowReport, Transport};

/// Linux 2.6.18's `tcp_adv_win_scale` = 2: a quarter of the buffer is overhead.
pub const WINDOW_FRACTION_OF_BUFFER: f64 = 0.75;
/// The window auto-tuning starts from (`tcp_rmem`[1] = 87380 bytes, three quarters).
pub const INITIAL_AUTO_WINDOW_BYTES: u64 = 65_535;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReceiverConfig {
    pub mss_bytes: u32,
    pub frame_overhead_bytes: u32,
    pub delayed_ack: bool,
    pub delayed_ack_timeout_ns: u64,
    pub auto_tuning: bool,
    /// The receive buffer (its ceiling when auto-tuning).
    pub rcv_buf_bytes: u64,
    /// In-order segments acknowledged at once when the connection starts, whatever the
    /// delayed-ACK rule: ns-3 answers the first data segment so (`ProcessSynRcvd` sets
    /// `m_delAckCount` to its maximum, "to speed up the connection"). Linux's quick-ACK
    /// mode (`tcp_incr_quickack`) is not modelled: 0 there.
    pub quick_acks: u32,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReceiverStats {
    pub segments: u64,
    pub duplicate_segments: u64,
    pub acks: u64,
    pub max_window_bytes: u64,
}

pub struct TcpReceiver {
    flow: u32,
    config: ReceiverConfig,
    rcv_nxt: u64,
    ooo: RangeSet,
    /// SACK blocks of the last ACK, most recent first (RFC 2018's order).
    recent: [Range; MAX_SACK_BLOCKS],
    recent_count: usize,
    unacked_segments: u32,
    quick_acks_left: u32,
    delack_deadline_ns: Option<u64>,
    ts_recent_ns: u64,
    /// `TSval` and end of the last segment that arrived: the ACK names it (RACK).
    last_arrival: (u64, u64),
    right_edge: u64,
    window_bytes: u64,
    ceiling_bytes: u64,
    /// Dynamic right-sizing: the start of the current measurement and its RTT estimate.
    space_start_ns: u64,
    space_start_seq: u64,
    rtt_est_ns: Option<u64>,
    stats: ReceiverStats,
    /// The acknowledgement owed, for [`Transport::poll_transmit`].
    owed_ack: Option<Packet>,
}

impl TcpReceiver {
    pub fn new(flow: u32, config: ReceiverConfig) -> Self {
        let ceiling_bytes = (config.rcv_buf_bytes as f64 * WINDOW_FRACTION_OF_BUFFER) as u64;
        let window_bytes = if config.auto_tuning {
            INITIAL_AUTO_WINDOW_BYTES.min(ceiling_bytes)
        } else {
            ceiling_bytes
        };
        Self {
            flow,
            config,
            rcv_nxt: 0,
            ooo: RangeSet::new(),
            recent: [Range::default(); MAX_SACK_BLOCKS],
            recent_count: 0,
            unacked_segments: 0,
            quick_acks_left: config.quick_acks,
            delack_deadline_ns: None,
            owed_ack: None,
            ts_recent_ns: 0,
            last_arrival: (0, 0),
            right_edge: window_bytes,
            window_bytes,
            ceiling_bytes,
            space_start_ns: 0,
            space_start_seq: 0,
            rtt_est_ns: None,
            stats: ReceiverStats {
                max_window_bytes: window_bytes,
                ..ReceiverStats::default()
            },
        }
    }

    /// In-order bytes delivered to the application.
    pub fn bytes_received(&self) -> u64 {
        self.rcv_nxt
    }

    pub fn stats(&self) -> ReceiverStats {
        self.stats
    }

    pub fn window_bytes(&self) -> u64 {
        self.window_bytes
    }

    pub fn poll_timeout(&self) -> Option<u64> {
        self.delack_deadline_ns
    }

    /// Dynamic right-sizing, once per receiver-side RTT.
    fn tune_window(&mut self, now_ns: u64, ts_echo_ns: u64) {
        if ts_echo_ns > 0 && now_ns > ts_echo_ns {
            let sample = now_ns - ts_echo_ns;
            self.rtt_est_ns = Some(match self.rtt_est_ns {
                Some(est) if sample >= est => (7 * est + sample) / 8,
                _ => sample,
            });
        }
        let Some(rtt) = self.rtt_est_ns else { return };
        if now_ns < self.space_start_ns + rtt {
            return;
        }
        let copied = self.rcv_nxt - self.space_start_seq;
        self.window_bytes = self.window_bytes.max((2 * copied).min(self.ceiling_bytes));
        self.stats.max_window_bytes = self.stats.max_window_bytes.max(self.window_bytes);
        self.space_start_ns = now_ns;
        self.space_start_seq = self.rcv_nxt;
    }

    /// Put the range holding `seq` first among the SACK blocks, keeping the others that
    /// still describe out-of-order data.
    fn note_block(&mut self, seq: u64) {
        let Some(newest) = self.ooo.containing(seq) else {
            return;
        };
        let mut blocks = [Range::default(); MAX_SACK_BLOCKS];
        blocks[0] = newest;
        let mut n = 1;
        for old in &self.recent[..self.recent_count] {
            if n == MAX_SACK_BLOCKS {
                break;
            }
            if let Some(r) = self.ooo.containing(old.start)
                && r != newest
            {
                blocks[n] = r;
                n += 1;
            }
        }
        self.recent = blocks;
        self.recent_count = n;
    }

    fn ack(&mut self, now_ns: u64) -> Packet {
        let free = self.window_bytes.saturating_sub(self.ooo.total_bytes());
        self.right_edge = self.right_edge.max(self.rcv_nxt + free);
        // Blocks at or below rcv_nxt are stale.
        let mut sack = [Range::default(); MAX_SACK_BLOCKS];
        let mut n = 0;
        for r in &self.recent[..self.recent_count] {
            if r.start > self.rcv_nxt {
                sack[n] = *r;
                n += 1;
            }
        }
        let sack_bytes = if n > 0 {
            SACK_OPTION_BASE_BYTES + SACK_BLOCK_BYTES * n as u32
        } else {
            0
        };
        let wire = TCP_IP_HEADER_BYTES + self.config.frame_overhead_bytes + sack_bytes;
        let mut pkt = Packet::new(Kind::Ack, self.flow, wire);
        pkt.ack = self.rcv_nxt;
        pkt.wnd_bytes = self.right_edge - self.rcv_nxt;
        pkt.ts_ns = now_ns;
        pkt.ts_echo_ns = self.ts_recent_ns;
        (pkt.delivered_ts_ns, pkt.delivered_end) = self.last_arrival;
        pkt.sack = sack;
        pkt.sack_count = n as u8;
        self.unacked_segments = 0;
        self.delack_deadline_ns = None;
        self.stats.acks += 1;
        pkt
    }

    /// A segment arrives; returns the ACK to send now, if any.
    pub fn on_data(&mut self, now_ns: u64, pkt: &Packet) -> Option<Packet> {
        self.stats.segments += 1;
        let (seq, end) = (pkt.seq, pkt.seq + u64::from(pkt.len));
        self.last_arrival = (pkt.ts_ns, end);
        if end <= self.rcv_nxt {
            // A spurious retransmission: tell the sender at once.
            self.stats.duplicate_segments += 1;
            return Some(self.ack(now_ns));
        }
        if seq > self.rcv_nxt {
            self.ooo.insert(seq, end, 0);
            self.note_block(seq);
            return Some(self.ack(now_ns));
        }
        // In order (possibly overlapping what we have).
        if self.unacked_segments == 0 {
            self.ts_recent_ns = pkt.ts_ns;
        }
        self.rcv_nxt = end;
        let filled_hole = !self.ooo.is_empty();
        if let Some(first) = self.ooo.first()
            && first.start <= self.rcv_nxt
        {
            self.rcv_nxt = self.rcv_nxt.max(first.end);
        }
        self.ooo.remove_below(self.rcv_nxt);
        self.tune_window(now_ns, pkt.ts_echo_ns);
        self.unacked_segments += 1;
        let quick = self.quick_acks_left > 0;
        self.quick_acks_left = self.quick_acks_left.saturating_sub(1);
        if filled_hole || quick || !self.config.delayed_ack || self.unacked_segments >= 2 {
            return Some(self.ack(now_ns));
        }
        if self.delack_deadline_ns.is_none() {
            self.delack_deadline_ns = Some(now_ns + self.config.delayed_ack_timeout_ns);
        }
        None
    }

    /// The delayed-ACK timer may be due.
    pub fn on_timeout(&mut self, now_ns: u64) -> Option<Packet> {
        match self.delack_deadline_ns {
            Some(deadline) if now_ns >= deadline && self.unacked_segments > 0 => {
                Some(self.ack(now_ns))
            }
            _ => None,
        }
    }
}

impl Transport for TcpReceiver {
    fn handle_packet(&mut self, now_ns: u64, pkt: &Packet) {
        if pkt.kind == Kind::Data
            && let Some(ack) = self.on_data(now_ns, pkt)
        {
            self.owed_ack = Some(ack);
        }
    }
    fn poll_transmit(&mut self, _now_ns: u64) -> Option<Packet> {
        self.owed_ack.take()
    }
    fn poll_timeout(&self) -> Option<u64> {
        TcpReceiver::poll_timeout(self)
    }
    fn handle_timeout(&mut self, now_ns: u64) {
        if let Some(ack) = self.on_timeout(now_ns) {
            self.owed_ack = Some(ack);
        }
    }
    fn held_by_interface(&self) -> bool {
        false
    }
    fn report(&self) -> FlowReport {
        FlowReport {
            received_bytes: self.rcv_nxt,
            max_rcv_window_bytes: self.stats.max_window_bytes,
            ..FlowReport::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn receiver(delayed_ack: bool) -> TcpReceiver {
        receiver_with(delayed_ack, 0)
    }

    fn receiver_with(delayed_ack: bool, quick_acks: u32) -> TcpReceiver {
        TcpReceiver::new(
            0,
            ReceiverConfig {
                mss_bytes: 1000,
                frame_overhead_bytes: 0,
                delayed_ack,
                delayed_ack_timeout_ns: 40_000_000,
                auto_tuning: false,
                rcv_buf_bytes: 1 << 20,
                quick_acks,
            },
        )
    }

    #[test]
    fn a_quick_ack_answers_the_first_segment_and_pairs_follow_after_it() {
        let mut r = receiver_with(true, 1);
        let acks: Vec<bool> = (0..5)
            .map(|k| r.on_data(k, &seg(k * 1000)).is_some())
            .collect();
        // As ns-3 after ProcessSynRcvd: segment 1 alone, then (2, 3), (4, 5).
        assert_eq!(acks, [true, false, true, false, true]);
    }

    fn seg(seq: u64) -> Packet {
        let mut p = Packet::new(Kind::Data, 0, 1052);
        p.seq = seq;
        p.len = 1000;
        p
    }

    #[test]
    fn acks_every_second_segment_or_on_the_timer() {
        let mut r = receiver(true);
        assert!(r.on_data(0, &seg(0)).is_none());
        assert_eq!(r.poll_timeout(), Some(40_000_000));
        assert_eq!(r.on_data(1, &seg(1000)).unwrap().ack, 2000);
        assert!(r.on_data(2, &seg(2000)).is_none());
        assert!(r.on_timeout(1_000).is_none());
        assert_eq!(r.on_timeout(40_000_002).unwrap().ack, 3000);
    }

    #[test]
    fn out_of_order_is_sacked_at_once_and_the_fill_acks_all() {
        let mut r = receiver(true);
        let a = r.on_data(0, &seg(1000)).unwrap();
        assert_eq!(
            (a.ack, a.sack_blocks()),
            (
                0,
                &[Range {
                    start: 1000,
                    end: 2000
                }][..]
            )
        );
        let a = r.on_data(0, &seg(3000)).unwrap();
        assert_eq!(
            a.sack_blocks(),
            &[
                Range {
                    start: 3000,
                    end: 4000
                },
                Range {
                    start: 1000,
                    end: 2000
                }
            ][..]
        );
        let a = r.on_data(0, &seg(0)).unwrap();
        assert_eq!(
            (a.ack, a.sack_blocks()),
            (
                2000,
                &[Range {
                    start: 3000,
                    end: 4000
                }][..]
            )
        );
        assert_eq!(r.bytes_received(), 2000);
    }

    #[test]
    fn the_window_is_three_quarters_of_a_fixed_buffer() {
        let mut r = receiver(false);
        let a = r.on_data(0, &seg(0)).unwrap();
        assert_eq!(a.wnd_bytes, (1 << 20) * 3 / 4);
    }

    #[test]
    fn through_the_transport_trait_the_ack_is_owed_until_polled() {
        let mut r = receiver(true);
        let t: &mut dyn Transport = &mut r;
        t.handle_packet(1, &seg(0));
        assert_eq!(t.poll_transmit(1), None, "one segment: the ACK is delayed");
        assert_eq!(t.poll_timeout(), Some(1 + 40_000_000));
        t.handle_packet(2, &seg(1000));
        let ack = t
            .poll_transmit(2)
            .expect("every second segment is acknowledged");
        assert_eq!((ack.kind, ack.ack), (Kind::Ack, 2000));
        assert_eq!(t.poll_transmit(2), None);
        assert!(!t.held_by_interface());
        assert_eq!(t.report().received_bytes, 2000);
    }
}
