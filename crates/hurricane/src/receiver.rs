//! The receiving side: store each new block once, report gaps in NACKs (as soon as k new
//! blocks are missing; all open gaps again every two round trips and on FIN), and say
//! DONE when every block is in. While blocks come in, a NACK of no gaps at least every
//! `report_interval_ns`: the round trip it echoes, queueing included, is how a sender
//! learns that something on the way (the far host, the carrier) has fallen below the rate
//! before that queue overflows and loses whole runs of datagrams.

use crate::Transfer;
use crate::range_set::RangeSet;
use crate::wire::{self, Body, Datagram, MAX_NACK_RANGES, WireError};

/// Where blocks go (a file, memory).
pub trait BlockSink {
    fn write(&mut self, block: u64, payload: &[u8]);
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReceiverStats {
    pub blocks: u64,
    pub duplicates: u64,
    /// Not made with this transfer's key: forged or corrupted.
    pub forged: u64,
    /// Another transfer's, or not Hurricane's.
    pub stray: u64,
    /// Authentic but not sensible: a block out of range, a wrong length, a kind only
    /// the receiver sends.
    pub malformed: u64,
    pub nacks_sent: u64,
    /// NACKs of no gaps, sent only to echo the round trip (`report_interval_ns`).
    pub reports_sent: u64,
}

/// How often a receiver taking blocks reports when it has no gap to report: an eighth
/// of the round trip, between 5 and 20 ms. The sender's governor judges the queue a
/// round trip at a time from the least of these echoes, so it needs several a round
/// trip; at 20 ms they are 50 datagrams a second, against 800,000 of DATA at 9.6 Gb/s.
pub fn report_interval_ns(rtt_ns: u64) -> u64 {
    (rtt_ns / 8).clamp(5_000_000, 20_000_000)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pending {
    /// The gaps not reported yet.
    NewGaps,
    /// Every open gap from this block on (a NACK holds 64 ranges: more go in the next).
    AllGaps {
        from: u64,
    },
    /// No gap to report: the round trip's echo only.
    Report,
    Done,
}

pub struct Receiver {
    transfer: Transfer,
    /// k: new missing blocks that make a NACK.
    nack_group: u64,
    received: RangeSet,
    /// One past the highest block seen (or every block, after FIN).
    highest: u64,
    /// Blocks below `highest` missing and in no NACK yet: what a NACK of new gaps
    /// reports. Kept as gaps open, blocks arrive and NACKs go, so a NACK costs a lookup
    /// per range it carries however many blocks the transfer has lost.
    unreported: RangeSet,
    new_missing: u64,
    /// When the oldest gap not yet reported opened: fewer than k gaps are reported too,
    /// a quarter of a round trip later (the last losses of a transfer would otherwise
    /// wait for FIN).
    unreported_since_ns: Option<u64>,
    last_full_nack_ns: u64,
    pending: Option<Pending>,
    /// Datagrams sent so far: the next one's packet number.
    packets: u64,
    /// The highest packet number had from the sender (echoed in NACKs).
    echo: u64,
    /// When the last NACK of any kind went, and whether a block came in since.
    last_nack_ns: u64,
    data_since_nack: bool,
    pub stats: ReceiverStats,
}

impl Receiver {
    pub fn new(transfer: Transfer, nack_group: u32) -> Self {
        Self {
            transfer,
            nack_group: u64::from(nack_group.max(1)),
            received: RangeSet::new(),
            highest: 0,
            unreported: RangeSet::new(),
            new_missing: 0,
            unreported_since_ns: None,
            last_full_nack_ns: 0,
            pending: None,
            packets: 0,
            echo: 0,
            last_nack_ns: 0,
            data_since_nack: false,
            stats: ReceiverStats::default(),
        }
    }

    /// A transfer taken up again with `held` already stored (a durable map's).
    pub fn resume(transfer: Transfer, nack_group: u32, held: RangeSet) -> Self {
        let mut receiver = Self::new(transfer, nack_group);
        receiver.highest = held
            .gaps_below(u64::MAX)
            .next()
            .map_or(0, |first_gap| first_gap.start);
        receiver.received = held;
        receiver
    }

    /// Blocks found bad after they were stored (an integrity check failed): wanted again.
    pub fn forget(&mut self, blocks: std::ops::Range<u64>) {
        self.received.remove(blocks.clone());
        self.unreported
            .insert(blocks.start..blocks.end.min(self.highest));
        if self.pending == Some(Pending::Done) || self.pending.is_none() {
            self.pending = Some(Pending::AllGaps { from: 0 });
        }
    }

    pub fn is_complete(&self) -> bool {
        self.received.len() == self.transfer.total_blocks()
    }

    /// The blocks held so far (what a resumed transfer starts from).
    pub fn received(&self) -> &RangeSet {
        &self.received
    }

    pub fn handle_datagram(&mut self, now_ns: u64, bytes: &mut [u8], sink: &mut impl BlockSink) {
        if wire::peek_transfer_id(bytes).is_some_and(|id| id != self.transfer.id) {
            self.stats.stray += 1;
            return;
        }
        let datagram = match wire::decode(&self.transfer.key, bytes) {
            Ok(d) => d,
            Err(WireError::Mac) => {
                self.stats.forged += 1;
                return;
            }
            Err(WireError::Magic) => {
                self.stats.stray += 1;
                return;
            }
            Err(_) => {
                self.stats.malformed += 1;
                return;
            }
        };
        self.echo = self.echo.max(datagram.packet);
        match datagram.body {
            Body::Data { block, payload } => self.data(now_ns, block, payload, sink),
            Body::Fin { total_blocks } if total_blocks == self.transfer.total_blocks() => {
                self.open_gaps_below(total_blocks);
                self.highest = total_blocks;
                self.pending = Some(if self.is_complete() {
                    Pending::Done
                } else {
                    Pending::AllGaps { from: 0 }
                });
            }
            _ => self.stats.malformed += 1,
        }
    }

    fn data(&mut self, now_ns: u64, block: u64, payload: &[u8], sink: &mut impl BlockSink) {
        if block >= self.transfer.total_blocks() || payload.len() != self.transfer.block_len(block)
        {
            self.stats.malformed += 1;
            return;
        }
        if !self.received.insert(block..block + 1) {
            self.stats.duplicates += 1;
            return;
        }
        sink.write(block, payload);
        self.stats.blocks += 1;
        self.data_since_nack = true;
        if block >= self.highest {
            if block > self.highest {
                self.unreported_since_ns.get_or_insert(now_ns);
                self.open_gaps_below(block);
            }
            self.new_missing += block - self.highest;
            self.highest = block + 1;
        } else {
            // Only a block below `highest` can fill an unreported gap: the blocks in
            // order, nearly all of them, need no lookup.
            self.unreported.remove(block..block + 1);
        }
        if self.is_complete() {
            self.pending = Some(Pending::Done);
        } else if self.new_missing >= self.nack_group && self.pending.is_none() {
            self.pending = Some(Pending::NewGaps);
        }
    }

    /// What is missing from `highest` up to `end` is a gap not yet reported. A resumed
    /// transfer holds blocks above its first gap, so not all of it may be.
    fn open_gaps_below(&mut self, end: u64) {
        for gap in self.received.gaps_within(self.highest..end) {
            self.unreported.insert(gap);
        }
    }

    /// The next control datagram (NACK or DONE), appended to `out`; its length.
    pub fn poll_transmit(&mut self, now_ns: u64, out: &mut Vec<u8>) -> Option<usize> {
        let pending = self.pending.take()?;
        let start = out.len();
        let body = match pending {
            Pending::Done => Body::Done {
                total_blocks: self.transfer.total_blocks(),
            },
            Pending::Report => {
                self.stats.reports_sent += 1;
                self.nack_sent(now_ns);
                Body::Nack {
                    received_below: self.received_below(),
                    echo: self.echo,
                    missing: Vec::new(),
                }
            }
            Pending::NewGaps | Pending::AllGaps { .. } => {
                let (missing, more) = self.gaps_to_report(pending);
                if missing.is_empty() {
                    return None;
                }
                for range in &missing {
                    self.unreported.remove(range.clone());
                }
                self.new_missing = 0;
                self.unreported_since_ns = None;
                if let Pending::AllGaps { from: 0 } = pending {
                    self.last_full_nack_ns = now_ns;
                }
                // What did not fit goes in the next NACK, at once.
                self.pending = more.then(|| match pending {
                    Pending::AllGaps { .. } => Pending::AllGaps {
                        from: missing.last().map_or(0, |r| r.end),
                    },
                    _ => Pending::NewGaps,
                });
                self.stats.nacks_sent += 1;
                self.nack_sent(now_ns);
                Body::Nack {
                    received_below: self.received_below(),
                    echo: self.echo,
                    missing,
                }
            }
        };
        let datagram = Datagram {
            transfer_id: self.transfer.id,
            packet: self.packets,
            body,
        };
        wire::encode(&self.transfer.key, &datagram, out);
        self.packets += 1;
        Some(out.len() - start)
    }

    /// Any NACK echoes the round trip: the next report is due an interval after it.
    fn nack_sent(&mut self, now_ns: u64) {
        self.last_nack_ns = now_ns;
        self.data_since_nack = false;
    }

    /// When a NACK of no gaps is due: an interval after the last NACK, once a block
    /// came in since (a receiver hearing nothing has no round trip to echo).
    fn report_at_ns(&self) -> Option<u64> {
        (self.data_since_nack && !self.is_complete())
            .then(|| self.last_nack_ns + report_interval_ns(self.transfer.rtt_ns))
    }

    /// The ranges one NACK reports for `pending`, and whether more are left.
    fn gaps_to_report(&self, pending: Pending) -> (Vec<std::ops::Range<u64>>, bool) {
        let mut missing: Vec<_> = match pending {
            Pending::AllGaps { from } => self
                .received
                .gaps_within(from..self.highest)
                .take(MAX_NACK_RANGES + 1)
                .collect(),
            _ => self.unreported.iter().take(MAX_NACK_RANGES + 1).collect(),
        };
        let more = missing.len() > MAX_NACK_RANGES;
        missing.truncate(MAX_NACK_RANGES);
        (missing, more)
    }

    /// Every block below this has arrived.
    fn received_below(&self) -> u64 {
        self.received
            .gaps_below(u64::MAX)
            .next()
            .map_or(u64::MAX, |gap| gap.start)
    }

    /// Gaps left open two round trips after the last full NACK are reported again
    /// (a lost retransmission).
    pub fn handle_timeout(&mut self, now_ns: u64) {
        if self.pending.is_some() || self.is_complete() {
            return;
        }
        if self.received.gaps_below(self.highest).next().is_some() && now_ns >= self.repeat_at_ns()
        {
            self.pending = Some(Pending::AllGaps { from: 0 });
        } else if self.unreported_at_ns().is_some_and(|at| now_ns >= at) {
            self.pending = Some(Pending::NewGaps);
        } else if self.report_at_ns().is_some_and(|at| now_ns >= at) {
            self.pending = Some(Pending::Report);
        }
    }

    fn repeat_at_ns(&self) -> u64 {
        self.last_full_nack_ns + 2 * self.transfer.rtt_ns.max(1_000_000)
    }

    /// When gaps fewer than k are reported anyway.
    fn unreported_at_ns(&self) -> Option<u64> {
        let quarter_rtt_ns = (self.transfer.rtt_ns / 4).max(1_000_000);
        self.unreported_since_ns.map(|since| since + quarter_rtt_ns)
    }

    pub fn poll_timeout(&self) -> Option<u64> {
        if self.pending.is_some() {
            return Some(0);
        }
        if self.is_complete() {
            return None;
        }
        let open = self.received.gaps_below(self.highest).next().is_some();
        let repeat = open.then(|| self.repeat_at_ns());
        [repeat, self.unreported_at_ns(), self.report_at_ns()]
            .into_iter()
            .flatten()
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Key;

    struct Discard;

    impl BlockSink for Discard {
        fn write(&mut self, _block: u64, _payload: &[u8]) {}
    }

    fn transfer() -> Transfer {
        Transfer {
            id: 1,
            key: Key::new([1; 32], false),
            block_bytes: 4,
            total_bytes: 4 * 300,
            rate_ceiling_bps: 1_000_000_000,
            rtt_ns: 1_000_000,
        }
    }

    fn datagram(t: &Transfer, body: Body<'_>) -> Vec<u8> {
        let mut out = Vec::new();
        wire::encode(
            &t.key,
            &Datagram {
                transfer_id: t.id,
                packet: 0,
                body,
            },
            &mut out,
        );
        out
    }

    /// A 4-byte block, as its DATA datagram.
    fn deliver(receiver: &mut Receiver, t: &Transfer, block: u64) {
        let payload = [0u8; 4];
        let data = Body::Data {
            block,
            payload: &payload,
        };
        receiver.handle_datagram(0, &mut datagram(t, data), &mut Discard);
    }

    fn nacked(receiver: &mut Receiver, t: &Transfer) -> Vec<std::ops::Range<u64>> {
        let mut all = Vec::new();
        let mut out = Vec::new();
        while receiver.poll_transmit(0, &mut out).is_some() {
            let Body::Nack { missing, .. } = wire::decode(&t.key, &mut out).unwrap().body else {
                panic!("a NACK");
            };
            assert!(missing.len() <= MAX_NACK_RANGES);
            all.extend(missing);
            out.clear();
        }
        all
    }

    #[test]
    fn while_blocks_come_in_a_nack_of_no_gaps_echoes_the_round_trip_every_interval() {
        let t = Transfer {
            rtt_ns: 80_000_000,
            ..transfer()
        };
        let interval_ns = report_interval_ns(t.rtt_ns);
        assert_eq!(interval_ns, 10_000_000);
        let mut receiver = Receiver::new(t.clone(), 1);
        let mut reports = Vec::new();
        // A block a millisecond for 50 ms, in order: never a gap.
        for ms in 0..50 {
            let now_ns = ms * 1_000_000;
            let payload = [0u8; 4];
            let mut bytes = Vec::new();
            let data = Datagram {
                transfer_id: t.id,
                packet: ms,
                body: Body::Data {
                    block: ms,
                    payload: &payload,
                },
            };
            wire::encode(&t.key, &data, &mut bytes);
            receiver.handle_datagram(now_ns, &mut bytes, &mut Discard);
            receiver.handle_timeout(now_ns);
            let mut out = Vec::new();
            while receiver.poll_transmit(now_ns, &mut out).is_some() {
                let Body::Nack { missing, echo, .. } = wire::decode(&t.key, &mut out).unwrap().body
                else {
                    panic!("a NACK");
                };
                assert!(missing.is_empty());
                reports.push((now_ns / 1_000_000, echo));
                out.clear();
            }
        }
        assert_eq!(reports, vec![(10, 10), (20, 20), (30, 30), (40, 40)]);
        assert_eq!(receiver.poll_timeout(), Some(50_000_000));
        assert_eq!(
            (receiver.stats.reports_sent, receiver.stats.nacks_sent),
            (4, 0)
        );
        // The blocks since 40 ms get their report; after it, no block came in: nothing
        // to echo, nothing sent.
        receiver.handle_timeout(50_000_000);
        let mut out = Vec::new();
        assert!(receiver.poll_transmit(50_000_000, &mut out).is_some());
        out.clear();
        receiver.handle_timeout(100_000_000);
        assert_eq!(receiver.poll_transmit(100_000_000, &mut out), None);
        assert_eq!(receiver.poll_timeout(), None);
    }

    #[test]
    fn every_gap_is_reported_after_fin_however_many() {
        let t = transfer();
        let mut receiver = Receiver::new(t.clone(), 1_000);
        for block in (0..300).step_by(2) {
            deliver(&mut receiver, &t, block);
        }
        assert_eq!(nacked(&mut receiver, &t), vec![]); // k = 1,000 not reached
        receiver.handle_datagram(
            0,
            &mut datagram(&t, Body::Fin { total_blocks: 300 }),
            &mut Discard,
        );
        let missing = nacked(&mut receiver, &t);
        let expected: Vec<_> = (1..300).step_by(2).map(|b| b..b + 1).collect();
        assert_eq!(missing, expected, "150 gaps in three NACKs");
        assert_eq!(receiver.stats.nacks_sent, 3);
    }

    #[test]
    fn k_new_missing_blocks_make_a_nack_of_the_new_gaps_only() {
        let t = transfer();
        let mut receiver = Receiver::new(t.clone(), 4);
        for block in [0, 2, 4] {
            deliver(&mut receiver, &t, block);
        }
        assert_eq!(nacked(&mut receiver, &t), vec![]); // two missing: fewer than k
        for block in [6, 8] {
            deliver(&mut receiver, &t, block);
        }
        assert_eq!(nacked(&mut receiver, &t), vec![1..2, 3..4, 5..6, 7..8]);
        for block in [10, 12, 14, 16] {
            deliver(&mut receiver, &t, block);
        }
        assert_eq!(
            nacked(&mut receiver, &t),
            vec![9..10, 11..12, 13..14, 15..16]
        );
    }

    #[test]
    fn a_gap_filled_before_its_nack_is_not_reported_and_a_forgotten_block_is_reported_anew() {
        let t = transfer();
        let mut receiver = Receiver::new(t.clone(), 3);
        for block in [0, 5] {
            deliver(&mut receiver, &t, block);
        }
        // Blocks 1-4 are missing; 2 comes in (reordered) before any NACK.
        deliver(&mut receiver, &t, 2);
        assert_eq!(nacked(&mut receiver, &t), vec![1..2, 3..5]);
        deliver(&mut receiver, &t, 9);
        assert_eq!(
            nacked(&mut receiver, &t),
            vec![6..9],
            "1, 3 and 4: reported before"
        );
        for block in [1, 3, 4, 6, 7, 8] {
            deliver(&mut receiver, &t, block);
        }
        // Blocks 2 and 3 failed their check after they were stored; 12 and above have
        // not come yet, so forgetting them reports nothing of them.
        receiver.forget(2..4);
        receiver.forget(12..20);
        assert_eq!(nacked(&mut receiver, &t), vec![2..4]);
        assert!(!receiver.received().contains(2));
    }

    #[test]
    fn a_resumed_receiver_reports_only_the_blocks_it_does_not_hold() {
        let t = transfer();
        let mut held = RangeSet::new();
        held.insert(0..10);
        held.insert(15..20);
        let mut receiver = Receiver::resume(t.clone(), 1, held);
        deliver(&mut receiver, &t, 25);
        assert_eq!(nacked(&mut receiver, &t), vec![10..15, 20..25]);
        receiver.handle_datagram(
            0,
            &mut datagram(&t, Body::Fin { total_blocks: 300 }),
            &mut Discard,
        );
        assert_eq!(nacked(&mut receiver, &t), vec![10..15, 20..25, 26..300]);
    }
}
