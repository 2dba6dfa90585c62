//! The TCP receiver: cumulative ACKs with SACK blocks, delayed ACKs (every second
//! full segment or a timer; immediately when out of order or filling a hole), and the
//! receive window: fixed, or grown by Linux's dynamic right-sizing (`tcp_rcv_space_adjust`:
//! on 2.6 twice what the application read in the last RTT, on 6.x about six times while
//! that doubles per RTT, up to the ceiling). The
//! application reads at once (memory to memory, as iperf), so only out-of-order data
//! occupies the buffer. The right edge of the window never moves left (RFC 7323).
//!
//! On Linux the advertised window also opens segment by segment: `rcv_ssthresh` starts at
//! the SYN's window and grows by two segments per arriving segment up to the window above
//! (`tcp_grow_window`), and every segment that grows it is acknowledged at once
//! (`icsk_ack.quick |= 1`, quick-ACK mode). So while the window opens, in slow start,
//! a Linux receiver ACKs more than every second segment, which on 2.6 kernels (one
//! segment of slow start per ACK) speeds slow start.

use crate::cc::Kernel;
use crate::packet::{Kind, MAX_SACK_BLOCKS, Packet, Range};
use crate::tcp::ranges::RangeSet;
use crate::tcp::{SACK_BLOCK_BYTES, SACK_OPTION_BASE_BYTES, TCP_IP_HEADER_BYTES};
use crate::transport::{FlowReport, Transport};

/// Linux 2.6.18's `tcp_adv_win_scale` = 2: a quarter of the buffer is overhead.
pub const WINDOW_FRACTION_OF_BUFFER: f64 = 0.75;
/// The window auto-tuning starts from (`tcp_rmem[1]` = 87380 bytes, three quarters).
pub const INITIAL_AUTO_WINDOW_BYTES: u64 = 65_535;
/// The SYN's window never exceeds 16 bits before scaling (`tcp_select_initial_window`,
/// `net/ipv4/tcp_output.c`, 2.6.18 and 6.x).
const SYN_WINDOW_MAX_BYTES: u64 = 65_535;
/// `TCP_MAX_QUICKACKS`, `include/net/tcp.h` (2.6.18 and 6.x).
const MAX_QUICK_ACKS: u32 = 16;
/// `TCP_INIT_CWND` (`include/net/tcp.h`, 6.x).
const INIT_CWND_SEGMENTS: u64 = 10;
/// `tcp_event_data_recv` grows the window only for segments of at least 128 bytes.
const GROW_MIN_SEGMENT_BYTES: u32 = 128;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReceiverConfig {
    pub mss_bytes: u32,
    pub frame_overhead_bytes: u32,
    pub delayed_ack: bool,
    pub delayed_ack_timeout_ns: u64,
    pub auto_tuning: bool,
    /// The receive buffer (its ceiling when auto-tuning).
    pub rcv_buf_bytes: u64,
    /// Whose ACK rules: Linux's quick-ACK mode and window growth, or ns-3's.
    pub kernel: Kernel,
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
    /// ACKs still to send at once, whatever the delayed-ACK rule (Linux's
    /// `icsk_ack.quick`; ns-3's first-segment rule).
    quick_acks: u32,
    /// Linux's `rcv_ssthresh`: the most the window may offer now (`u64::MAX` on ns-3).
    rcv_ssthresh: u64,
    delack_deadline_ns: Option<u64>,
    ts_recent_ns: u64,
    /// `TSval` and end of the last segment that arrived: the ACK names it (RACK).
    last_arrival: (u64, u64),
    right_edge: u64,
    window_bytes: u64,
    ceiling_bytes: u64,
    /// Dynamic right-sizing: the start of the current measurement and its RTT estimate,
    /// and the most copied in one measurement so far (`rcvq_space.space`).
    space_start_ns: u64,
    space_start_seq: u64,
    space_bytes: u64,
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
        let rcv_ssthresh = if config.kernel.is_linux() {
            syn_window_bytes(config.kernel, window_bytes, u64::from(config.mss_bytes))
        } else {
            u64::MAX
        };
        // ns-3's `ProcessSynRcvd` sets `m_delAckCount` to its maximum, "to speed up the
        // connection": the first data segment is answered alone.
        let quick_acks = u32::from(config.kernel == Kernel::Ns3);
        Self {
            flow,
            config,
            rcv_nxt: 0,
            ooo: RangeSet::new(),
            recent: [Range::default(); MAX_SACK_BLOCKS],
            recent_count: 0,
            unacked_segments: 0,
            quick_acks,
            rcv_ssthresh,
            delack_deadline_ns: None,
            owed_ack: None,
            ts_recent_ns: 0,
            last_arrival: (0, 0),
            right_edge: window_bytes.min(rcv_ssthresh),
            window_bytes,
            ceiling_bytes,
            space_start_ns: 0,
            space_start_seq: 0,
            // `tcp_init_buffer_space`: min(rcv_ssthresh, rcv_wnd, TCP_INIT_CWND * advmss).
            space_bytes: rcv_ssthresh
                .min(window_bytes)
                .min(INIT_CWND_SEGMENTS * u64::from(config.mss_bytes)),
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
        let window = if self.config.kernel == Kernel::Linux6 {
            self.window_for_6_x(copied)
        } else {
            // 2.6.18 and 2.6.23 (`space = 2 * copied`); ns-3's hosts, when given
            // auto-tuning, keep the same rule.
            2 * copied
        };
        self.window_bytes = self.window_bytes.max(window.min(self.ceiling_bytes));
        self.stats.max_window_bytes = self.stats.max_window_bytes.max(self.window_bytes);
        self.space_start_ns = now_ns;
        self.space_start_seq = self.rcv_nxt;
    }

    /// Linux 6.x's `tcp_rcv_space_adjust` (`net/ipv4/tcp_input.c`): only when more was
    /// copied than in any RTT before, twice that plus 16 segments, and, for a sender whose
    /// rate grows, twice as much again per doubling: "to cope with slow start [...] we
    /// need a 4x factor, because the ACK we are sending now is for the next RTT". In slow
    /// start that is about six times what arrived in the last RTT; 2.6's is two.
    fn window_for_6_x(&mut self, copied: u64) -> u64 {
        if copied <= self.space_bytes {
            return 0;
        }
        let advmss = u64::from(self.config.mss_bytes);
        let mut rcvwin = 2 * copied + 16 * advmss;
        let grow = rcvwin.saturating_mul(copied - self.space_bytes) / self.space_bytes.max(1);
        rcvwin = rcvwin.saturating_add(grow.saturating_mul(2));
        self.space_bytes = copied;
        rcvwin
    }

    /// Linux's `tcp_incr_quickack`: ACK the next segments at once, as many as half the
    /// last advertised window holds (2 if none), at most `TCP_MAX_QUICKACKS`.
    fn incr_quick_acks(&mut self) {
        let advertised = self.right_edge - self.rcv_nxt;
        let quick = match advertised / (2 * u64::from(self.config.mss_bytes)) {
            0 => 2,
            n => n.min(u64::from(MAX_QUICK_ACKS)) as u32,
        };
        self.quick_acks = self.quick_acks.max(quick);
    }

    /// Linux's `tcp_grow_window`: a segment opens `rcv_ssthresh` by two segments (6.x: by
    /// at least twice its length) towards the window the buffer allows, and is then
    /// acknowledged at once. The model takes the branch where the segment's memory
    /// (`truesize`) is within 4/3 of its length, as for myri10ge, which corrects
    /// `truesize` for its padding (`drivers/net/myri10ge/myri10ge.c`, 2.6.18).
    /// ns-3's `rcv_ssthresh` is unbounded, so it never grows.
    fn grow_window(&mut self, len: u32) {
        let free = self.window_bytes.saturating_sub(self.ooo.total_bytes());
        if len < GROW_MIN_SEGMENT_BYTES || self.rcv_ssthresh >= free {
            return;
        }
        let two_segments = 2 * u64::from(self.config.mss_bytes);
        let incr = if self.config.kernel == Kernel::Linux6 {
            // 6.x: `incr = max_t(int, incr, 2 * skb->len)`; room is min(clamp, space).
            two_segments
                .max(2 * u64::from(len))
                .min(free - self.rcv_ssthresh)
        } else {
            // 2.6: `min(rcv_ssthresh + incr, window_clamp)`.
            two_segments.min(self.window_bytes - self.rcv_ssthresh)
        };
        self.rcv_ssthresh += incr;
        self.quick_acks |= 1;
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
        // `__tcp_select_window`: never more than `rcv_ssthresh`.
        self.right_edge = self
            .right_edge
            .max(self.rcv_nxt + free.min(self.rcv_ssthresh));
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
        pkt.set_sack_blocks(&sack[..n]);
        self.unacked_segments = 0;
        self.delack_deadline_ns = None;
        // `tcp_dec_quickack_mode`: a pure ACK counts one.
        self.quick_acks = self.quick_acks.saturating_sub(1);
        self.stats.acks += 1;
        pkt
    }

    /// A segment arrives; returns the ACK to send now, if any.
    pub fn on_data(&mut self, now_ns: u64, pkt: &Packet) -> Option<Packet> {
        self.stats.segments += 1;
        let (seq, end) = (pkt.seq, pkt.seq + u64::from(pkt.len));
        self.last_arrival = (pkt.ts_ns, end);
        if end <= self.rcv_nxt {
            // A spurious retransmission: tell the sender at once (Linux also enters
            // quick-ACK mode: `tcp_data_queue`, "Force an immediate ack").
            self.stats.duplicate_segments += 1;
            if self.config.kernel.is_linux() {
                self.incr_quick_acks();
            }
            return Some(self.ack(now_ns));
        }
        if seq > self.rcv_nxt {
            self.ooo.insert(seq, end, 0);
            self.note_block(seq);
            if self.config.kernel.is_linux_2_6() {
                // 2.6 `tcp_data_queue` enters quick-ACK mode for out-of-order data;
                // 4.18 stopped that ("tcp: do not force quickack when receiving
                // out-of-order packets") and grows the window instead (`tcp_data_queue_ofo`).
                self.incr_quick_acks();
            } else {
                self.grow_window(pkt.len);
            }
            return Some(self.ack(now_ns));
        }
        // In order (possibly overlapping what we have). Nothing in order before: the
        // first data segment (Linux's `icsk_ack.ato` still unset).
        let first_data = self.rcv_nxt == 0;
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
        // `tcp_event_data_recv`: the first data segment starts the delayed-ACK engine in
        // quick-ACK mode; each segment may open the window.
        if self.config.kernel.is_linux() && first_data {
            self.incr_quick_acks();
        }
        self.grow_window(pkt.len);
        let quick = self.quick_acks > 0;
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

/// The window a Linux receiver's SYN-ACK offers, its first `rcv_ssthresh`
/// (`tcp_select_initial_window`, `net/ipv4/tcp_output.c`): the buffer's window in whole
/// segments, at most 16 bits; 2.6 kernels then cap it at an RFC 2414 initial window of
/// 4, 3 or 2 segments by segment size; since 4.19 ("tcp: up initial rmem to 128KB and SYN
/// rwin to around 64KB") 6.x keeps about 64 KB.
fn syn_window_bytes(kernel: Kernel, window_bytes: u64, mss_bytes: u64) -> u64 {
    let window = window_bytes.min(SYN_WINDOW_MAX_BYTES) / mss_bytes * mss_bytes;
    if !kernel.is_linux_2_6() {
        return window;
    }
    let initial_segments = match mss_bytes {
        m if m > 1460 * 3 => 2,
        m if m > 1460 => 3,
        _ => 4,
    };
    window.min(initial_segments * mss_bytes)
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
        receiver_with(delayed_ack, Kernel::Ns3)
    }

    fn receiver_with(delayed_ack: bool, kernel: Kernel) -> TcpReceiver {
        TcpReceiver::new(
            0,
            ReceiverConfig {
                mss_bytes: 1000,
                frame_overhead_bytes: 0,
                delayed_ack,
                delayed_ack_timeout_ns: 40_000_000,
                auto_tuning: false,
                rcv_buf_bytes: 1 << 20,
                kernel,
            },
        )
    }

    #[test]
    fn a_quick_ack_answers_the_first_segment_and_pairs_follow_after_it() {
        let mut r = receiver_with(true, Kernel::Ns3);
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
        assert!(r.on_data(0, &seg(0)).is_some(), "ns-3's first segment");
        assert!(r.on_data(0, &seg(1000)).is_none());
        assert_eq!(r.poll_timeout(), Some(40_000_000));
        assert_eq!(r.on_data(1, &seg(2000)).unwrap().ack, 3000);
        assert!(r.on_data(2, &seg(3000)).is_none());
        assert!(r.on_timeout(1_000).is_none());
        assert_eq!(r.on_timeout(40_000_002).unwrap().ack, 4000);
    }

    #[test]
    fn out_of_order_is_sacked_at_once_and_the_fill_acks_all() {
        let mut r = receiver(true);
        let a = r.on_data(0, &seg(1000)).unwrap();
        assert_eq!(
            (a.ack, a.sack_blocks().collect::<Vec<_>>()),
            (
                0,
                vec![Range {
                    start: 1000,
                    end: 2000
                }]
            )
        );
        let a = r.on_data(0, &seg(3000)).unwrap();
        assert_eq!(
            a.sack_blocks().collect::<Vec<_>>(),
            vec![
                Range {
                    start: 3000,
                    end: 4000
                },
                Range {
                    start: 1000,
                    end: 2000
                }
            ]
        );
        let a = r.on_data(0, &seg(0)).unwrap();
        assert_eq!(
            (a.ack, a.sack_blocks().collect::<Vec<_>>()),
            (
                2000,
                vec![Range {
                    start: 3000,
                    end: 4000
                }]
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
        t.handle_packet(0, &seg(0));
        assert!(t.poll_transmit(0).is_some(), "ns-3's first segment");
        t.handle_packet(1, &seg(1000));
        assert_eq!(t.poll_transmit(1), None, "one segment: the ACK is delayed");
        assert_eq!(t.poll_timeout(), Some(1 + 40_000_000));
        t.handle_packet(2, &seg(2000));
        let ack = t
            .poll_transmit(2)
            .expect("every second segment is acknowledged");
        assert_eq!((ack.kind, ack.ack), (Kind::Ack, 3000));
        assert_eq!(t.poll_transmit(2), None);
        assert!(!t.held_by_interface());
        assert_eq!(t.report().received_bytes, 3000);
    }

    fn linux_receiver(kernel: Kernel, mss_bytes: u32, auto_tuning: bool) -> TcpReceiver {
        TcpReceiver::new(
            0,
            ReceiverConfig {
                mss_bytes,
                frame_overhead_bytes: 0,
                delayed_ack: true,
                delayed_ack_timeout_ns: 40_000_000,
                auto_tuning,
                rcv_buf_bytes: 4 << 20,
                kernel,
            },
        )
    }

    fn segment(seq: u64, len: u32) -> Packet {
        let mut p = Packet::new(Kind::Data, 0, len + 52);
        p.seq = seq;
        p.len = len;
        p
    }

    /// Slow start seen by the receiver: rounds of 20, 40, 80 and 160 segments, one per
    /// 100 ms RTT (each segment echoes a timestamp 100 ms old); the window after them.
    fn window_after_slow_start(kernel: Kernel) -> (u64, u64) {
        let mut r = linux_receiver(kernel, 1448, true);
        let rtt_ns = 100_000_000;
        let (mut seq, mut last_round) = (0, 0);
        for (round, segments) in [20u64, 40, 80, 160].into_iter().enumerate() {
            let start_ns = rtt_ns * (round as u64 + 1);
            for k in 0..segments {
                let now_ns = start_ns + k * rtt_ns / segments;
                let mut p = segment(seq, 1448);
                p.ts_echo_ns = now_ns - rtt_ns;
                r.on_data(now_ns, &p);
                seq += 1448;
            }
            last_round = segments * 1448;
        }
        // A segment just past the last measurement's RTT closes it.
        let mut p = segment(seq, 1448);
        p.ts_echo_ns = 4 * rtt_ns + 10_000_000;
        r.on_data(5 * rtt_ns + 10_000_000, &p);
        (r.window_bytes, last_round)
    }

    #[test]
    fn linux_6_right_sizing_offers_about_six_times_a_doubling_rtt_and_2_6_twice() {
        let (window, copied) = window_after_slow_start(Kernel::Linux6);
        assert!(
            window >= 5 * copied && window <= 7 * copied,
            "{window} for {copied}"
        );
        let (window, copied) = window_after_slow_start(Kernel::Linux2_6_18);
        // Twice what its last measurement counted (the round less the segments that
        // arrived after the measurement's RTT had run).
        assert!(
            5 * window >= 9 * copied && window < 3 * copied,
            "{window} for {copied}"
        );
    }

    /// Segments in order from `from`; which of them were acknowledged at once.
    fn acked_at_once(r: &mut TcpReceiver, from: u64, n: u64, len: u32) -> Vec<bool> {
        (0..n)
            .map(|k| {
                let seq = from + k * u64::from(len);
                r.on_data(k, &segment(seq, len)).is_some()
            })
            .collect()
    }

    #[test]
    fn a_2_6_18_syn_offers_four_segments_of_1448_or_two_of_8948() {
        let a = linux_receiver(Kernel::Linux2_6_18, 1448, true);
        assert_eq!(a.right_edge, 4 * 1448);
        let b = linux_receiver(Kernel::Linux2_6_18, 8948, true);
        assert_eq!(b.right_edge, 2 * 8948);
        let c = linux_receiver(Kernel::Linux6, 1448, true);
        assert_eq!(c.right_edge, 65_535 / 1448 * 1448);
    }

    #[test]
    fn linux_acks_every_segment_while_the_window_opens_then_every_second() {
        let mut r = linux_receiver(Kernel::Linux2_6_18, 1448, true);
        // rcv_ssthresh climbs from 4 to 45 segments (65,535 bytes) two per segment:
        // 21 segments each answered at once.
        let opening = acked_at_once(&mut r, 0, 21, 1448);
        assert!(opening.iter().all(|&a| a), "{opening:?}");
        assert_eq!(r.rcv_ssthresh, INITIAL_AUTO_WINDOW_BYTES);
        let open = acked_at_once(&mut r, 21 * 1448, 6, 1448);
        assert_eq!(open, [false, true, false, true, false, true]);
    }

    #[test]
    fn the_advertised_window_is_held_to_rcv_ssthresh() {
        let mut r = linux_receiver(Kernel::Linux2_6_18, 8948, false);
        let ack = r.on_data(0, &segment(0, 8948)).unwrap();
        // 2 segments offered in the SYN, 2 more for this one, from the new rcv_nxt.
        assert_eq!(ack.wnd_bytes, 4 * 8948);
    }

    #[test]
    fn linux_6_opens_by_twice_a_long_segment() {
        let mut r = linux_receiver(Kernel::Linux6, 1448, false);
        let start = r.rcv_ssthresh;
        r.on_data(0, &segment(0, 4000));
        assert_eq!(r.rcv_ssthresh, start + 8000);
    }

    #[test]
    fn a_retransmission_puts_linux_in_quick_ack_mode_for_up_to_16_acks() {
        let mut r = linux_receiver(Kernel::Linux2_6_18, 1448, true);
        let _ = acked_at_once(&mut r, 0, 400, 1448); // window fully open
        let steady = acked_at_once(&mut r, 400 * 1448, 6, 1448);
        assert_eq!(steady.iter().filter(|&&a| a).count(), 3, "{steady:?}");
        assert!(r.on_data(0, &segment(0, 1448)).is_some(), "a duplicate");
        // Its ACK used one of the 16; then 15 at once and pairs again.
        let after = acked_at_once(&mut r, 406 * 1448, 17, 1448);
        assert!(after[..15].iter().all(|&a| a), "{after:?}");
        assert_eq!(after[15..], [false, true]);
    }

    #[test]
    fn out_of_order_data_puts_2_6_in_quick_ack_mode_and_not_6_x() {
        for (kernel, quick) in [(Kernel::Linux2_6_18, true), (Kernel::Linux6, false)] {
            let mut r = linux_receiver(kernel, 1448, true);
            let _ = acked_at_once(&mut r, 0, 400, 1448);
            let _ = acked_at_once(&mut r, 400 * 1448, 2, 1448);
            let gap = 403 * 1448;
            assert!(r.on_data(0, &segment(gap, 1448)).is_some());
            assert!(
                r.on_data(0, &segment(402 * 1448, 1448)).is_some(),
                "the fill"
            );
            let next = acked_at_once(&mut r, 404 * 1448, 1, 1448);
            assert_eq!(next, [quick], "{kernel:?}");
        }
    }
}
