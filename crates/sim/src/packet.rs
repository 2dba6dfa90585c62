//! The packet: a small `Copy` value, so links and hosts move it without allocating.
//!
//! Fields are transport-neutral where they can be (`seq`, `len`, `ack`); a protocol gives
//! them its meaning. TCP uses them as a segment or an acknowledgement with up to
//! `MAX_SACK_BLOCKS` SACK blocks and timestamps (RFC 7323), which give every ACK an RTT
//! sample and the receiver its own RTT estimate for buffer auto-tuning.

/// SACK blocks an ACK carries: 3 fit in the TCP option space beside timestamps.
pub const MAX_SACK_BLOCKS: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A TCP segment carrying `len` bytes starting at `seq`.
    Data,
    /// A TCP acknowledgement: cumulative `ack`, window `wnd_bytes`, SACK blocks.
    Ack,
    /// Filler (cross traffic) that only occupies links; nobody consumes it.
    Filler,
    /// Link-level flow control from a credit link to the node upstream of it: `len`
    /// bytes of its input buffer freed ([`crate::credit`]).
    Credit,
    /// A UDP datagram whose bytes wait in its flow's wire under number `seq`
    /// ([`crate::hurricane`]); `len` is the DATA payload it carries, if any.
    Datagram,
}

/// A half-open byte range `[start, end)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Range {
    pub start: u64,
    pub end: u64,
}

/// Where a packet is on its flow's route through a network of switches: its direction
/// (the high bit: from the flow's receiving end back to its sending end) and how many
/// links of that direction's route it has entered (the low seven bits). One byte, so a
/// packet stays small (the simulator's time goes mostly to moving packets).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RouteStep(u8);

impl RouteStep {
    const BACK: u8 = 0x80;
    /// The longest route a step can count.
    pub const MAX_HOPS: usize = 127;

    /// Leaving the host: onto the first link of the route, in this direction.
    pub fn first(back: bool) -> Self {
        Self(1 | if back { Self::BACK } else { 0 })
    }

    pub fn back(self) -> bool {
        self.0 & Self::BACK != 0
    }

    /// Links of the route entered so far: the index of the next one.
    pub fn hop(self) -> usize {
        usize::from(self.0 & !Self::BACK)
    }

    #[must_use]
    pub fn next(self) -> Self {
        debug_assert!(self.hop() < Self::MAX_HOPS);
        Self(self.0 + 1)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet {
    pub kind: Kind,
    pub flow: u32,
    /// Bytes on the wire, headers and framing included: what links serialize and queue.
    pub wire_bytes: u32,
    /// Payload bytes (what goodput counts).
    pub len: u32,
    pub seq: u64,
    pub ack: u64,
    pub wnd_bytes: u64,
    /// Sender's clock when sent (`TSval`) and the peer's `TSval` it echoes (`TSecr`).
    pub ts_ns: u64,
    pub ts_echo_ns: u64,
    /// On an ACK, the `TSval` and end of the data segment that caused it: what Linux's
    /// RACK learns by finding the newly delivered segment in its retransmission queue.
    pub delivered_ts_ns: u64,
    pub delivered_end: u64,
    pub retransmit: bool,
    /// SACK blocks as offsets from `ack` (TCP's own blocks are 32-bit sequence numbers):
    /// half the bytes of absolute ones, which keeps a packet at 96 bytes.
    sack: [(u32, u32); MAX_SACK_BLOCKS],
    /// On a network of switches ([`crate::network`]): where the packet is on its flow's
    /// route.
    pub route: RouteStep,
    sack_count: u8,
}

impl Packet {
    /// An empty packet of `kind` for `flow`; callers fill in what their protocol uses.
    pub fn new(kind: Kind, flow: u32, wire_bytes: u32) -> Self {
        Self {
            kind,
            flow,
            wire_bytes,
            len: 0,
            seq: 0,
            ack: 0,
            wnd_bytes: 0,
            ts_ns: 0,
            ts_echo_ns: 0,
            delivered_ts_ns: 0,
            delivered_end: 0,
            retransmit: false,
            route: RouteStep::default(),
            sack_count: 0,
            sack: [(0, 0); MAX_SACK_BLOCKS],
        }
    }

    /// The SACK blocks, most recent first.
    pub fn sack_blocks(&self) -> impl Iterator<Item = Range> + '_ {
        self.sack[..usize::from(self.sack_count)]
            .iter()
            .map(|&(start, end)| Range {
                start: self.ack + u64::from(start),
                end: self.ack + u64::from(end),
            })
    }

    /// Carry `blocks` (at most `MAX_SACK_BLOCKS`, above `ack`, set before).
    pub fn set_sack_blocks(&mut self, blocks: &[Range]) {
        let offset =
            |at: u64| u32::try_from(at - self.ack).expect("a SACK block within 4 GiB of the ACK");
        for (slot, block) in self.sack.iter_mut().zip(blocks) {
            *slot = (offset(block.start), offset(block.end));
        }
        self.sack_count = blocks.len().min(MAX_SACK_BLOCKS) as u8;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_route_step_keeps_its_direction_as_it_counts() {
        let step = RouteStep::first(true).next().next();
        assert!(step.back());
        assert_eq!(step.hop(), 3);
        assert!(!RouteStep::first(false).back());
        assert_eq!(std::mem::size_of::<Packet>(), 96);
    }
}
