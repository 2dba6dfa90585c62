//! The sending side: new blocks in order, NACKed ones first, W_c datagrams at a time then
//! T_s idle, never faster than the rate ceiling; FIN when every block went once, again
//! each two round trips until the receiver says DONE.

use std::collections::VecDeque;
use std::ops::Range;

use crate::governor::Governor;
use crate::range_set::RangeSet;
use crate::tuner::Tuner;
use crate::wire::{self, Body, Datagram, PartsTagger};
use crate::{IP_UDP_BYTES, Transfer};

/// Where the payload of a block comes from (a file, memory).
pub trait BlockSource {
    /// Fill `buf` (exactly the block's length) with `block`'s bytes; `buf` is the
    /// payload of the datagram being made.
    fn read(&mut self, block: u64, buf: &mut [u8]);

    /// `block`'s bytes where they lie, if the source holds them in memory (a mapped
    /// file): `Sender::poll_transmit_in_place` leaves them there, and a driver asks
    /// again when it sends them, so a source that answers once answers the same after.
    fn in_place(&self, block: u64) -> Option<&[u8]> {
        let _ = block;
        None
    }
}

/// A datagram `Sender::poll_transmit_in_place` made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outgoing {
    /// Its length on the wire (payload included, wherever it lies).
    pub len: usize,
    /// The DATA datagram of this block whose payload stayed in its source: the bytes
    /// appended hold its header then its tag, and the payload goes between them.
    pub in_place: Option<u64>,
}

/// Flow control as USN's Hurricane had it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pacing {
    /// W_c: datagrams sent back to back.
    pub burst_datagrams: u32,
    /// T_s: idle after each burst.
    pub idle_ns: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SenderStats {
    pub datagrams_sent: u64,
    pub blocks_resent: u64,
    pub nacks_received: u64,
    pub fins_sent: u64,
    /// Datagrams refused: bad MAC, another transfer, malformed.
    pub refused: u64,
    /// Time the schedule lost while new blocks were left: a datagram that left more
    /// than the catch-up allowance behind its slot (a late wake-up, a busy core) moves
    /// the schedule on, and the ceiling cannot make that time up.
    pub late_ns: u64,
    /// Blocks of the last half round trip sent again unasked, newest first, while the
    /// sender waited for the NACKs of its first pass (`Sender::start_tail`).
    pub tail_resent: u64,
}

/// How far ahead of its schedule a sender may run, and how much it may catch up after a
/// late wake-up: a quarter of the round trip, at least 1 ms and three send batches, at
/// most 10 ms. Running ahead keeps that much standing in the channel's queue, so the line
/// stays busy while the sender is kept off its CPU: on a line paced at exactly its rate,
/// time it idles is never made up. A sender 1 ms ahead lost 31-237 ms of a 6.4 s transfer
/// at 9.6 Gb/s x 163 ms in three runs (`late_ms`, on two cores beside the emulator:
/// wake-ups 2-4 ms late behind the receiver and the kernel's packet work), 10 ms ahead
/// lost none in six. A quarter of the round trip keeps the lead well inside a queue of one
/// bandwidth-delay product (the default of reserved circuits and of the emulator); 10 ms
/// bounds the burst a reservation's policer sees (12 MB at 9.6 Gb/s). Over any span the
/// sender sends at most the ceiling's bytes for that span plus this lead.
pub fn lead_ns(rtt_ns: u64, batch_ns: u64) -> u64 {
    (rtt_ns / 4).clamp(1_000_000, LEAD_MAX_NS).max(3 * batch_ns)
}

/// The longest lead (`lead_ns`) but for three send batches that take longer.
pub const LEAD_MAX_NS: u64 = 10_000_000;

pub struct Sender {
    transfer: Transfer,
    pacing: Pacing,
    next_new: u64,
    resend: RangeSet,
    received_below: u64,
    burst_sent: u32,
    /// When the next datagram is due on the schedule the ceiling and T_s make.
    next_at_ns: u64,
    /// How far ahead of the schedule a datagram may leave (a driver that sends in
    /// batches).
    early_ns: u64,
    /// How far behind the schedule the sender may fall and still catch up (a late
    /// wake-up, a busy core); beyond it, time lost is lost.
    catch_up_ns: u64,
    fin_at_ns: Option<u64>,
    /// After the first FIN: the block below which to look for the next one to send again
    /// unasked, and the lowest block to go down to (None: not started, or over).
    tail: Option<(u64, u64)>,
    done: bool,
    /// Datagrams sent so far: the next one's packet number.
    packets: u64,
    /// Blocks the receiver already holds (a resumed transfer): never sent.
    held: RangeSet,
    /// Blocks sent again less than a round trip ago: a NACK naming them was written
    /// before they could arrive (a queue in the path stretches the round trip), so it
    /// does not send them once more.
    guarded: RangeSet,
    /// (when, blocks) of those resends, oldest first, to let them go.
    guard_log: VecDeque<(u64, Range<u64>)>,
    /// (packet number, when sent) of every 16th datagram: the round trip, from the
    /// packet number a NACK echoes.
    sent_log: VecDeque<(u64, u64)>,
    /// The round trip as the NACKs show it now (queueing included).
    rtt_now_ns: u64,
    /// When set, it chooses T_s (the pacing's idle time is its start).
    pub tuner: Option<Tuner>,
    /// When set, it lowers the rate under heavy loss and gives it back after.
    pub governor: Option<Governor>,
    /// Tags datagrams whose payload stays in its source (made on first use).
    tagger: Option<PartsTagger>,
    pub stats: SenderStats,
}

impl Sender {
    pub fn new(transfer: Transfer, pacing: Pacing) -> Self {
        assert!(
            pacing.burst_datagrams > 0,
            "W_c must be at least one datagram"
        );
        assert!(
            transfer.rate_ceiling_bps > 0,
            "a transfer needs a rate ceiling"
        );
        let rtt_now_ns = transfer.rtt_ns;
        Self {
            transfer,
            pacing,
            next_new: 0,
            resend: RangeSet::new(),
            received_below: 0,
            burst_sent: 0,
            next_at_ns: 0,
            early_ns: 0,
            catch_up_ns: 0,
            fin_at_ns: None,
            tail: None,
            done: false,
            packets: 0,
            held: RangeSet::new(),
            guarded: RangeSet::new(),
            guard_log: VecDeque::new(),
            sent_log: VecDeque::new(),
            rtt_now_ns,
            tuner: None,
            governor: None,
            tagger: None,
            stats: SenderStats::default(),
        }
    }

    /// A transfer taken up again: `held` are the blocks the receiver already has.
    pub fn resume(transfer: Transfer, pacing: Pacing, held: RangeSet) -> Self {
        let mut sender = Self::new(transfer, pacing);
        sender.held = held;
        sender
    }

    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Every block below this has arrived (as the receiver last said).
    pub fn received_below(&self) -> u64 {
        self.received_below
    }

    /// How far new blocks have gone (held ones count as gone).
    pub fn new_blocks_sent(&self) -> u64 {
        self.next_new
    }

    /// Let datagrams leave up to `early_ns` ahead of their time, so that a driver can
    /// hand the kernel a batch at once, and catch up on up to `catch_up_ns` lost to a
    /// late wake-up: never faster than the ceiling over any span longer than their sum.
    pub fn allow_early(&mut self, early_ns: u64, catch_up_ns: u64) {
        self.early_ns = early_ns;
        self.catch_up_ns = catch_up_ns;
    }

    pub fn pacing(&self) -> Pacing {
        self.pacing
    }

    /// Change W_c and T_s (a tuner's step); takes effect from the next burst.
    pub fn set_pacing(&mut self, pacing: Pacing) {
        assert!(
            pacing.burst_datagrams > 0,
            "W_c must be at least one datagram"
        );
        self.pacing = pacing;
    }

    /// The next datagram due at `now_ns`, appended to `out`; its length, or None if
    /// nothing is due.
    pub fn poll_transmit(
        &mut self,
        now_ns: u64,
        source: &mut impl BlockSource,
        out: &mut Vec<u8>,
    ) -> Option<usize> {
        self.poll_datagram(now_ns, source, out, false)
            .map(|outgoing| outgoing.len)
    }

    /// As `poll_transmit`, but a block its source holds in place (`BlockSource::in_place`)
    /// stays there, unless the payload is encrypted: `out` gets the datagram's header and
    /// tag, and a driver sends the payload from where it lies between them, with no copy
    /// into the datagram.
    pub fn poll_transmit_in_place(
        &mut self,
        now_ns: u64,
        source: &mut impl BlockSource,
        out: &mut Vec<u8>,
    ) -> Option<Outgoing> {
        let in_place = !self.transfer.key.encrypt;
        self.poll_datagram(now_ns, source, out, in_place)
    }

    fn poll_datagram(
        &mut self,
        now_ns: u64,
        source: &mut impl BlockSource,
        out: &mut Vec<u8>,
        in_place: bool,
    ) -> Option<Outgoing> {
        if self.done || now_ns + self.early_ns < self.next_at_ns {
            return None;
        }
        let start = out.len();
        self.release_guards(now_ns);
        let mut left_in_place = None;
        if let Some(block) = self.next_block(now_ns) {
            left_in_place = self.encode_block(now_ns, block, source, out, in_place);
        } else if self.fin_at_ns.is_none_or(|at| now_ns >= at) {
            let datagram = Datagram {
                transfer_id: self.transfer.id,
                packet: self.packets,
                body: Body::Fin {
                    total_blocks: self.transfer.total_blocks(),
                },
            };
            wire::encode(&self.transfer.key, &datagram, out);
            if self.fin_at_ns.is_none() {
                self.start_tail();
            }
            self.fin_at_ns = Some(now_ns + 2 * self.transfer.rtt_ns.max(1_000_000));
            self.stats.fins_sent += 1;
        } else if let Some(block) = self.next_tail_block(now_ns) {
            left_in_place = self.encode_block(now_ns, block, source, out, in_place);
        } else {
            return None;
        }
        if self.packets.is_multiple_of(16) {
            self.sent_log.push_back((self.packets, now_ns));
        }
        self.packets += 1;
        let len =
            out.len() - start + left_in_place.map_or(0, |block| self.transfer.block_len(block));
        self.pace(now_ns, len);
        self.stats.datagrams_sent += 1;
        Some(Outgoing {
            len,
            in_place: left_in_place,
        })
    }

    /// Append `block`'s DATA datagram to `out`, or (if `in_place` and its source holds
    /// it in place) its header and tag only: then the block, whose payload stayed.
    fn encode_block(
        &mut self,
        now_ns: u64,
        block: u64,
        source: &mut impl BlockSource,
        out: &mut Vec<u8>,
        in_place: bool,
    ) -> Option<u64> {
        let len = self.transfer.block_len(block);
        let (key, id, packet) = (&self.transfer.key, self.transfer.id, self.packets);
        let left = if let Some(payload) = in_place.then(|| source.in_place(block)).flatten() {
            debug_assert_eq!(payload.len(), len, "a block's bytes in place");
            let tagger = self.tagger.get_or_insert_with(|| PartsTagger::new(key));
            wire::encode_data_around(tagger, key, id, packet, block, payload, out);
            true
        } else {
            let fill = |payload: &mut [u8]| source.read(block, payload);
            wire::encode_data(key, id, packet, block, len, fill, out);
            false
        };
        if let Some(tuner) = self.tuner.as_mut() {
            tuner.on_sent(now_ns, len + wire::DATA_OVERHEAD_BYTES);
        }
        if let Some(governor) = self.governor.as_mut() {
            governor.on_sent(now_ns);
        }
        left.then_some(block)
    }

    /// The first pass is over, and the line would idle until the NACKs of its last round
    /// trip come back. A block lost x before the pass ended is named by a NACK in time to
    /// arrive again about a round and a half after it was first sent (later, as the
    /// receiver gathers k gaps or waits a quarter round trip for them): a loss among the
    /// newest always cost the transfer a round trip at its end. So the blocks of the last
    /// half round trip (at the handshake's round trip and the ceiling) go again meanwhile,
    /// newest first: one lost x before the end arrives again x after the first pass's
    /// last, and no later than the NACKs would bring the older ones. At 9.6 Gb/s x 163 ms
    /// with 1e-4 loss (about 13 losses a round trip) the transfer's utilization in the
    /// simulator went from 0.9747 to 0.982-0.987, with the last round trip sent again
    /// whole 0.985-0.987. Half a round trip of them is all on the line before the DONE
    /// they may hasten can come back, so none is still on its way to hold up what follows
    /// on the channel. Only on a calm path: at the full rate and with no queue stretching
    /// the round trip (a host that cannot keep up would only have more to drop).
    fn start_tail(&mut self) {
        let full_rate = self.governor.as_ref().is_none_or(|g| g.scale() >= 1.0);
        let no_queue = self.rtt_now_ns <= self.transfer.rtt_ns + self.transfer.rtt_ns / 4;
        if !(full_rate && no_queue) {
            return;
        }
        let datagram_bits = (self.transfer.datagram_ip_bytes() * 8) as u128;
        let per_half_round_trip = u128::from(self.transfer.rtt_ns / 2)
            * u128::from(self.transfer.rate_ceiling_bps)
            / 1_000_000_000
            / datagram_bits;
        let total = self.transfer.total_blocks();
        let floor = total.saturating_sub(per_half_round_trip.min(u128::from(total)) as u64);
        self.tail = Some((total, floor));
    }

    /// The next block of the last half round trip to send again unasked (`start_tail`):
    /// neither known to have arrived, nor held, nor sent again less than a round trip
    /// ago.
    fn next_tail_block(&mut self, now_ns: u64) -> Option<u64> {
        let (mut next, floor) = self.tail?;
        let floor = floor.max(self.received_below);
        while next > floor {
            next -= 1;
            if self.held.contains(next) || self.guarded.contains(next) {
                continue;
            }
            self.tail = Some((next, floor));
            self.stats.tail_resent += 1;
            self.guard(now_ns, next);
            return Some(next);
        }
        self.tail = None;
        None
    }

    fn has_tail_block(&self) -> bool {
        self.tail
            .is_some_and(|(next, floor)| next > floor.max(self.received_below))
    }

    /// A NACKed block first (lowest first), else the next new one.
    fn next_block(&mut self, now_ns: u64) -> Option<u64> {
        while let Some(block) = self.resend.pop_min() {
            if block >= self.received_below {
                self.stats.blocks_resent += 1;
                self.guard(now_ns, block);
                return Some(block);
            }
        }
        while let Some(held) = self.held.range_containing(self.next_new) {
            self.next_new = held.end;
        }
        (self.next_new < self.transfer.total_blocks()).then(|| {
            self.next_new += 1;
            self.next_new - 1
        })
    }

    fn pace(&mut self, now_ns: u64, len: usize) {
        let wire_bits = ((len + IP_UDP_BYTES) * 8) as u64;
        let scale = self.governor.as_ref().map_or(1.0, Governor::scale);
        let rate_bps = (self.transfer.rate_ceiling_bps as f64 * scale) as u64;
        let spacing_ns = (wire_bits * 1_000_000_000).div_ceil(rate_bps.max(1));
        // Behind the schedule (a late wake-up), the sender catches up by at most
        // `catch_up_ns`: what it lost beyond that is lost, never sent as a burst.
        let latest_ns = now_ns.saturating_sub(self.catch_up_ns);
        // The first datagram sets the schedule; the last new block's follower may wait.
        if self.packets > 1 && self.next_new < self.transfer.total_blocks() {
            self.stats.late_ns += latest_ns.saturating_sub(self.next_at_ns);
        }
        self.next_at_ns = self.next_at_ns.max(latest_ns) + spacing_ns;
        self.burst_sent += 1;
        if self.burst_sent >= self.pacing.burst_datagrams {
            self.burst_sent = 0;
            self.next_at_ns += self
                .tuner
                .as_ref()
                .map_or(self.pacing.idle_ns, Tuner::idle_ns);
        }
    }

    /// A datagram from the receiver.
    pub fn handle_datagram(&mut self, now_ns: u64, bytes: &mut [u8]) {
        let Ok(datagram) = wire::decode(&self.transfer.key, bytes) else {
            self.stats.refused += 1;
            return;
        };
        if datagram.transfer_id != self.transfer.id {
            self.stats.refused += 1;
            return;
        }
        match datagram.body {
            Body::Nack {
                received_below,
                echo,
                missing,
            } => {
                self.stats.nacks_received += 1;
                self.received_below = self.received_below.max(received_below);
                self.sample_rtt(now_ns, echo);
                self.release_guards(now_ns);
                let queued = self.resend.len();
                for range in missing {
                    // Only what was sent, is not known to have arrived, and was not
                    // just sent again.
                    let start = range.start.max(self.received_below);
                    let end = range.end.min(self.next_new);
                    if start < end {
                        for gap in self.guarded.gaps_within(start..end) {
                            self.resend.insert(gap);
                        }
                    }
                }
                let newly = self.resend.len() - queued;
                if let Some(tuner) = self.tuner.as_mut() {
                    tuner.on_nacked(now_ns, newly);
                }
                if let Some(governor) = self.governor.as_mut() {
                    governor.on_nacked(now_ns, newly);
                }
                // A NACK after FIN means the receiver is listening: FIN again later.
                if let Some(at) = self.fin_at_ns.as_mut() {
                    *at = (*at).max(now_ns + 2 * self.transfer.rtt_ns.max(1_000_000));
                }
            }
            Body::Done { total_blocks } if total_blocks == self.transfer.total_blocks() => {
                self.done = true;
            }
            _ => self.stats.refused += 1,
        }
    }

    /// A round-trip sample from the newest logged datagram the receiver had had when
    /// it wrote its NACK; the estimate follows a rise at once and a fall slowly.
    fn sample_rtt(&mut self, now_ns: u64, echo: u64) {
        let mut newest = None;
        while self
            .sent_log
            .front()
            .is_some_and(|&(packet, _)| packet <= echo)
        {
            newest = self.sent_log.pop_front();
        }
        if let Some((_, sent_ns)) = newest {
            let sample = now_ns.saturating_sub(sent_ns);
            self.rtt_now_ns = sample.max((7 * self.rtt_now_ns + sample) / 8);
            if let Some(governor) = self.governor.as_mut() {
                governor.on_rtt(now_ns, sample);
            }
        }
    }

    /// The round trip the NACKs show now (queueing included).
    pub fn rtt_now_ns(&self) -> u64 {
        self.rtt_now_ns
    }

    fn guard(&mut self, now_ns: u64, block: u64) {
        self.guarded.insert(block..block + 1);
        match self.guard_log.back_mut() {
            Some((at, blocks)) if *at == now_ns && blocks.end == block => blocks.end += 1,
            _ => self.guard_log.push_back((now_ns, block..block + 1)),
        }
    }

    /// Resends old enough that a NACK naming them now means they were lost.
    fn release_guards(&mut self, now_ns: u64) {
        let hold_ns = self.rtt_now_ns + self.rtt_now_ns / 4 + 2_000_000;
        while let Some((at, _)) = self.guard_log.front()
            && at + hold_ns <= now_ns
        {
            let (_, blocks) = self.guard_log.pop_front().expect("peeked");
            self.guarded.remove(blocks);
        }
    }

    fn has_new_blocks(&self) -> bool {
        let next = self
            .held
            .range_containing(self.next_new)
            .map_or(self.next_new, |held| held.end);
        next < self.transfer.total_blocks()
    }

    /// Time passing: nothing but what `poll_transmit` checks; kept for the driver's loop.
    pub fn handle_timeout(&mut self, _now_ns: u64) {}

    /// When the sender next wants to be asked for a datagram.
    pub fn poll_timeout(&self) -> Option<u64> {
        if self.done {
            return None;
        }
        let work = !self.resend.is_empty()
            || self.has_new_blocks()
            || (self.fin_at_ns.is_some() && self.has_tail_block());
        if work {
            Some(self.next_at_ns.saturating_sub(self.early_ns))
        } else {
            Some(
                self.next_at_ns
                    .saturating_sub(self.early_ns)
                    .max(self.fin_at_ns.unwrap_or(0)),
            )
        }
    }
}
