//! The sending side: new blocks in order, NACKed ones first, W_c datagrams at a time then
//! T_s idle, never faster than the rate ceiling; FIN when every block went once, again
//! each two round trips until the receiver says DONE.

use crate::range_set::RangeSet;
use crate::tuner::Tuner;
use crate::wire::{self, Body, Datagram};
use crate::{IP_UDP_BYTES, Transfer};

/// Where the payload of a block comes from (a file, memory).
pub trait BlockSource {
    /// Fill `buf` (exactly the block's length) with `block`'s bytes.
    fn read(&mut self, block: u64, buf: &mut [u8]);
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
}

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
    /// batches): the rate holds over any span longer than this.
    early_ns: u64,
    fin_at_ns: Option<u64>,
    done: bool,
    payload: Vec<u8>,
    /// Datagrams sent so far: the next one's packet number.
    packets: u64,
    /// Blocks the receiver already holds (a resumed transfer): never sent.
    held: RangeSet,
    /// When set, it chooses T_s (the pacing's idle time is its start).
    pub tuner: Option<Tuner>,
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
        Self {
            payload: vec![0; transfer.block_bytes as usize],
            transfer,
            pacing,
            next_new: 0,
            resend: RangeSet::new(),
            received_below: 0,
            burst_sent: 0,
            next_at_ns: 0,
            early_ns: 0,
            fin_at_ns: None,
            done: false,
            packets: 0,
            held: RangeSet::new(),
            tuner: None,
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
    /// hand the kernel a batch at once; never more than that ahead, so never faster than
    /// the ceiling over any longer span. A sender that fell behind does not catch up.
    pub fn allow_early(&mut self, early_ns: u64) {
        self.early_ns = early_ns;
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
        if self.done || now_ns + self.early_ns < self.next_at_ns {
            return None;
        }
        let start = out.len();
        if let Some(block) = self.next_block() {
            let len = self.transfer.block_len(block);
            source.read(block, &mut self.payload[..len]);
            let datagram = Datagram {
                transfer_id: self.transfer.id,
                packet: self.packets,
                body: Body::Data {
                    block,
                    payload: &self.payload[..len],
                },
            };
            wire::encode(&self.transfer.key, &datagram, out);
            if let Some(tuner) = self.tuner.as_mut() {
                tuner.on_sent(now_ns, out.len() - start);
            }
        } else if self.fin_at_ns.is_none_or(|at| now_ns >= at) {
            let datagram = Datagram {
                transfer_id: self.transfer.id,
                packet: self.packets,
                body: Body::Fin {
                    total_blocks: self.transfer.total_blocks(),
                },
            };
            wire::encode(&self.transfer.key, &datagram, out);
            self.fin_at_ns = Some(now_ns + 2 * self.transfer.rtt_ns.max(1_000_000));
            self.stats.fins_sent += 1;
        } else {
            return None;
        }
        self.packets += 1;
        let len = out.len() - start;
        self.pace(now_ns, len);
        self.stats.datagrams_sent += 1;
        Some(len)
    }

    /// A NACKed block first (lowest first), else the next new one.
    fn next_block(&mut self) -> Option<u64> {
        while let Some(block) = self.resend.pop_min() {
            if block >= self.received_below {
                self.stats.blocks_resent += 1;
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
        let spacing_ns = (wire_bits * 1_000_000_000).div_ceil(self.transfer.rate_ceiling_bps);
        self.next_at_ns = self.next_at_ns.max(now_ns) + spacing_ns;
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
                missing,
            } => {
                self.stats.nacks_received += 1;
                self.received_below = self.received_below.max(received_below);
                let queued = self.resend.len();
                for range in missing {
                    // Only what was sent and is not known to have arrived.
                    let start = range.start.max(self.received_below);
                    let end = range.end.min(self.next_new);
                    if start < end {
                        self.resend.insert(start..end);
                    }
                }
                if let Some(tuner) = self.tuner.as_mut() {
                    tuner.on_nacked(now_ns, self.resend.len() - queued);
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
        let work = !self.resend.is_empty() || self.has_new_blocks();
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
