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
}

/// A half-open byte range `[start, end)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Range {
    pub start: u64,
    pub end: u64,
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
    /// On a network of switches ([`crate::network`]): whether the packet travels from the
    /// flow's receiving end to its sending end, and how many links of that direction's
    /// route it has entered.
    pub back: bool,
    pub hop: u8,
    pub sack_count: u8,
    pub sack: [Range; MAX_SACK_BLOCKS],
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
            back: false,
            hop: 0,
            sack_count: 0,
            sack: [Range::default(); MAX_SACK_BLOCKS],
        }
    }

    pub fn sack_blocks(&self) -> &[Range] {
        &self.sack[..usize::from(self.sack_count)]
    }
}
