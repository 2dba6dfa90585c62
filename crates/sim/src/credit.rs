//! A lossless link with credit-based flow control, as InfiniBand's link layer has it
//! (IBA vol. 1 rel. 1.2, §7.9 "Flow control": a sender transmits a packet only when the
//! receiving port has advertised buffer for all of it, counted in 64-byte blocks): nothing
//! is ever dropped, and a full buffer pushes back hop by hop to the source.
//!
//! A [`CreditLink`] is a port's input buffer and the line that leaves it. It grants its
//! upstream (a host, or another credit link) credit for `input_buffer_bytes` and returns
//! it as packets leave the buffer for the line; the upstream sees returned credit after
//! its own line's delay, since flow-control packets travel back over the same wire. Its
//! own line sends only against the credit the next port grants (`next_buffer_bytes`;
//! `None` when the next node takes every packet at once, as a host's memory does).
//!
//! So a line of one-way delay d into a buffer of B bytes carries at most about B per 2d:
//! credit for a packet comes back only a round trip after the packet left. That is the
//! bound a range extender's buffer sets on InfiniBand across a continent.
//!
//! One virtual lane; a packet is charged its wire size rounded up to whole blocks.

use std::any::Any;
use std::collections::VecDeque;

use serde::Serialize;

use crate::engine::{Ctx, Node};
use crate::event::NodeId;
use crate::packet::{Kind, Packet};

const PS_PER_NS: u64 = 1_000;
const PS_PER_S: u64 = 1_000_000_000_000;
const PUMP: u64 = 0;
const DELIVER: u64 = 1;
/// IBA vol. 1 §7.9.4: flow-control credits count blocks of 64 bytes.
pub const IB_CREDIT_BLOCK_BYTES: u32 = 64;

/// The line time of `bytes` at `rate_bps`, picoseconds.
fn bytes_ps(bytes: u64, rate_bps: u64) -> u64 {
    (u128::from(bytes) * 8 * u128::from(PS_PER_S) / u128::from(rate_bps)) as u64
}

/// What a packet of `wire_bytes` takes of a buffer counted in `block_bytes` blocks.
pub fn charge_bytes(wire_bytes: u32, block_bytes: u32) -> u64 {
    u64::from(wire_bytes.div_ceil(block_bytes) * block_bytes)
}

/// A credit returned to the upstream node: `len` bytes of buffer freed.
pub fn credit_packet(bytes: u64) -> Packet {
    let mut pkt = Packet::new(Kind::Credit, u32::MAX, 0);
    pkt.len = u32::try_from(bytes).expect("one packet's charge fits u32");
    pkt
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CreditLinkConfig {
    pub rate_bps: u64,
    pub delay_ns: u64,
    /// This port's input buffer: the credit it grants its upstream.
    pub input_buffer_bytes: u64,
    /// The next port's input buffer, whose credit this line sends against; `None`
    /// when the next node takes every packet as it arrives.
    pub next_buffer_bytes: Option<u64>,
    pub block_bytes: u32,
}

/// Constant-rate datagram traffic that shares a credit link's line without credit (a
/// range extender's WAN port also carries what its Ethernet side ports and the WAN
/// switch send): frames of `frame_bytes` arriving every `frame_bytes x 8 / rate_bps`,
/// served first come first served with the credited packets, dropped when more than
/// `queue_bytes` of them wait. They leave the line and go nowhere (the far end counts
/// nothing of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CrossTraffic {
    pub rate_bps: u64,
    pub frame_bytes: u32,
    pub queue_bytes: u64,
}

/// Packets that share a credit link's line without credit: those of flows numbered
/// `first_flow` and up (TCP through a range extender's Ethernet side ports). They wait in
/// a drop-tail queue of `queue_bytes`, are served first come first served with the
/// credited packets (a credited packet without credit lets them by), and go to `next`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DatagramPort {
    pub next: NodeId,
    pub first_flow: u32,
    pub queue_bytes: u64,
}

#[derive(Debug, Clone, Copy)]
struct CrossState {
    config: CrossTraffic,
    /// When the next frame arrives, picoseconds.
    next_ps: u64,
    interval_ps: u64,
}

/// What a credit link saw. `data_*` count TCP payload bytes, for the conservation check.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CreditCounters {
    pub packets_in: u64,
    pub packets_out: u64,
    /// Packets an upstream sent without credit for them (a wiring fault: a node that
    /// ignores flow control); dropped, and never expected.
    pub packets_over_credit: u64,
    pub data_bytes_over_credit: u64,
    pub max_buffer_bytes: u64,
    /// Times the head packet waited for credit from the next port.
    pub credit_stalls: u64,
    pub data_bytes_in: u64,
    pub data_bytes_delivered: u64,
    /// Cross traffic's frames put on the line, and dropped for want of queue.
    pub cross_frames_sent: u64,
    pub cross_frames_dropped: u64,
    /// Packets of the datagram port put on the line, and dropped for want of queue.
    pub datagrams_sent: u64,
    pub datagrams_dropped: u64,
}

pub struct CreditLink {
    config: CreditLinkConfig,
    next: NodeId,
    upstream: Option<NodeId>,
    /// Credit the next port grants this line now (None: it takes every packet at once).
    credit_bytes: Option<u64>,
    /// Credit on its way back over the line: (when it arrives, bytes), in time order.
    returning: VecDeque<(u64, u64)>,
    /// The input buffer: (when each packet's last bit arrived, the packet).
    buffer: VecDeque<(u64, Packet)>,
    buffer_bytes: u64,
    line_free_ps: u64,
    /// Packets on the line: (arrival at the next node, packet). Handed over on arrival,
    /// since a host takes a packet when it is handed over.
    on_line: VecDeque<(u64, Packet)>,
    stalled: bool,
    /// The one pending pump wake-up that counts (others are stale and ignored).
    pump_at_ns: Option<u64>,
    cross: Option<CrossState>,
    datagrams: Option<DatagramPort>,
    /// The datagram port's queue: (arrival, packet), and its bytes.
    datagram_queue: VecDeque<(u64, Packet)>,
    datagram_bytes: u64,
    counters: CreditCounters,
}

fn data_bytes(pkt: &Packet) -> u64 {
    if pkt.kind == Kind::Data {
        u64::from(pkt.len)
    } else {
        0
    }
}

impl CreditLink {
    /// A link into `next`; `upstream` is told of freed buffer (credit), if it takes it.
    pub fn new(config: CreditLinkConfig, next: NodeId, upstream: Option<NodeId>) -> Self {
        assert!(config.block_bytes > 0, "credit blocks are at least a byte");
        Self {
            credit_bytes: config.next_buffer_bytes,
            config,
            next,
            upstream,
            returning: VecDeque::new(),
            buffer: VecDeque::new(),
            buffer_bytes: 0,
            line_free_ps: 0,
            on_line: VecDeque::new(),
            stalled: false,
            pump_at_ns: None,
            cross: None,
            datagrams: None,
            datagram_queue: VecDeque::new(),
            datagram_bytes: 0,
            counters: CreditCounters::default(),
        }
    }

    /// Take packets of `port`'s flows beside the credited ones.
    #[must_use]
    pub fn with_datagrams(mut self, port: DatagramPort) -> Self {
        self.datagrams = Some(port);
        self
    }

    /// How long a packet arriving at `at_ns` waits for the line, first come first
    /// served: what is on it, and everything queued before it. Datagrams (and cross
    /// traffic) are dropped when this is more than their queue's worth of line time, as
    /// a drop-tail queue of that many bytes before the line would drop them.
    fn line_time_ahead_ps(&self, at_ns: u64) -> u64 {
        let queued = self.buffer_bytes + self.datagram_bytes;
        self.line_free_ps.saturating_sub(at_ns * PS_PER_NS) + bytes_ps(queued, self.config.rate_bps)
    }

    fn is_datagram(&self, pkt: &Packet) -> bool {
        self.datagrams.is_some_and(|d| pkt.flow >= d.first_flow)
    }

    /// Share the line with `cross` traffic.
    #[must_use]
    pub fn with_cross(mut self, cross: CrossTraffic) -> Self {
        assert!(cross.rate_bps > 0 && cross.frame_bytes > 0);
        let interval_ps = u64::from(cross.frame_bytes) * 8 * PS_PER_S / cross.rate_bps;
        self.cross = Some(CrossState {
            config: cross,
            next_ps: 0,
            interval_ps: interval_ps.max(1),
        });
        self
    }

    /// Put on the line, in order, every cross frame that arrived by `until_ps` (they are
    /// ahead of whatever arrived later); a frame that finds more than its queue's worth
    /// of line time ahead of it is dropped.
    fn serve_cross(&mut self, until_ps: u64) {
        let Some(cross) = &mut self.cross else { return };
        let rate = self.config.rate_bps;
        let ser_ps = bytes_ps(u64::from(cross.config.frame_bytes), rate);
        let queue_ps = bytes_ps(cross.config.queue_bytes, rate);
        while cross.next_ps <= until_ps {
            let arrival = cross.next_ps;
            cross.next_ps += cross.interval_ps;
            if self.line_free_ps.saturating_sub(arrival) > queue_ps {
                self.counters.cross_frames_dropped += 1;
                continue;
            }
            self.line_free_ps = self.line_free_ps.max(arrival) + ser_ps;
            self.counters.cross_frames_sent += 1;
        }
    }

    pub fn config(&self) -> &CreditLinkConfig {
        &self.config
    }

    pub fn counters(&self) -> &CreditCounters {
        &self.counters
    }

    /// TCP payload bytes in the buffer or on the line at `now_ns`.
    pub fn data_bytes_in_flight(&self) -> u64 {
        let held = self.buffer.iter().chain(&self.on_line);
        held.map(|(_, p)| data_bytes(p)).sum()
    }

    fn charge(&self, pkt: &Packet) -> u64 {
        charge_bytes(pkt.wire_bytes, self.config.block_bytes)
    }

    fn take_returned_credit(&mut self, now_ns: u64) {
        while let Some(&(at_ns, bytes)) = self.returning.front() {
            if at_ns > now_ns {
                break;
            }
            self.returning.pop_front();
            if let Some(credit) = &mut self.credit_bytes {
                *credit += bytes;
            }
        }
    }

    /// Pump at `at_ns` unless a wake-up at or before it is pending.
    fn wake_pump(&mut self, at_ns: u64, ctx: &mut Ctx<'_>) {
        if self.pump_at_ns.is_none_or(|p| at_ns < p) {
            self.pump_at_ns = Some(at_ns);
            ctx.schedule(at_ns, PUMP);
        }
    }

    fn deliver(&mut self, ctx: &mut Ctx<'_>) {
        while let Some(&(at_ns, pkt)) = self.on_line.front() {
            if at_ns > ctx.now_ns {
                ctx.schedule(at_ns, DELIVER);
                return;
            }
            self.on_line.pop_front();
            self.counters.data_bytes_delivered += data_bytes(&pkt);
            let next = match self.datagrams {
                Some(port) if pkt.flow >= port.first_flow => port.next,
                _ => self.next,
            };
            ctx.send(next, pkt, ctx.now_ns);
        }
    }

    /// Put on the line, first come first served, every packet that has arrived, finds
    /// the line free and (if credited) has credit; then wake when the next one may go
    /// (line free, packet arrived or credit back).
    fn pump(&mut self, ctx: &mut Ctx<'_>) {
        let now_ns = ctx.now_ns;
        self.take_returned_credit(now_ns);
        loop {
            let credited = self.buffer.front().copied();
            let datagram = self.datagram_queue.front().copied();
            let has_credit = credited.is_some_and(|(_, p)| {
                self.credit_bytes
                    .is_none_or(|credit| self.charge(&p) <= credit)
            });
            let (arrived_ns, pkt, is_datagram) = match (credited, datagram) {
                (None, None) => return,
                (Some((at, p)), Some((dat, _))) if at <= dat && has_credit => (at, p, false),
                (Some((at, p)), None) => (at, p, false),
                (_, Some((dat, d))) => (dat, d, true),
            };
            self.serve_cross(arrived_ns * PS_PER_NS);
            let start_ps = (now_ns * PS_PER_NS)
                .max(self.line_free_ps)
                .max(arrived_ns * PS_PER_NS);
            if start_ps > now_ns * PS_PER_NS {
                self.wake_pump(start_ps.div_ceil(PS_PER_NS), ctx);
                return;
            }
            if !is_datagram && !has_credit {
                // The datagrams behind a stalled packet do not wait for its credit.
                self.serve_cross(now_ns * PS_PER_NS);
                if !self.stalled {
                    self.stalled = true;
                    self.counters.credit_stalls += 1;
                }
                if let Some(&(at_ns, _)) = self.returning.front() {
                    self.wake_pump(at_ns, ctx);
                }
                return;
            }
            if is_datagram {
                self.datagram_queue.pop_front();
                self.datagram_bytes -= u64::from(pkt.wire_bytes);
                self.counters.datagrams_sent += 1;
            } else {
                self.stalled = false;
                self.buffer.pop_front();
                let charge = self.charge(&pkt);
                self.buffer_bytes -= charge;
                if let Some(credit) = &mut self.credit_bytes {
                    *credit -= charge;
                }
                self.counters.packets_out += 1;
                if let Some(up) = self.upstream {
                    ctx.send(up, credit_packet(charge), now_ns);
                }
            }
            let ser_ps = u64::from(pkt.wire_bytes) * 8 * PS_PER_S / self.config.rate_bps;
            self.line_free_ps = start_ps + ser_ps;
            let arrive_ns = self.line_free_ps.div_ceil(PS_PER_NS) + self.config.delay_ns;
            if self.on_line.is_empty() {
                ctx.schedule(arrive_ns, DELIVER);
            }
            self.on_line.push_back((arrive_ns, pkt));
        }
    }
}

impl Node for CreditLink {
    fn on_packet(&mut self, pkt: Packet, arrive_ns: u64, ctx: &mut Ctx<'_>) {
        if pkt.kind == Kind::Credit {
            // Freed buffer at the next port, seen here a line's delay later.
            let at_ns = ctx.now_ns + self.config.delay_ns;
            self.returning.push_back((at_ns, u64::from(pkt.len)));
            if self.stalled {
                self.wake_pump(at_ns, ctx);
            }
            return;
        }
        if self.is_datagram(&pkt) {
            let port = self.datagrams.expect("a datagram port");
            if self.line_time_ahead_ps(arrive_ns) > bytes_ps(port.queue_bytes, self.config.rate_bps)
            {
                self.counters.datagrams_dropped += 1;
                return;
            }
            self.datagram_bytes += u64::from(pkt.wire_bytes);
            self.datagram_queue.push_back((arrive_ns, pkt));
            if self.datagram_queue.len() == 1 {
                self.pump(ctx);
            }
            return;
        }
        let charge = self.charge(&pkt);
        let c = &mut self.counters;
        c.packets_in += 1;
        if self.buffer_bytes + charge > self.config.input_buffer_bytes {
            c.packets_over_credit += 1;
            c.data_bytes_over_credit += data_bytes(&pkt);
            return;
        }
        c.data_bytes_in += data_bytes(&pkt);
        self.buffer_bytes += charge;
        c.max_buffer_bytes = c.max_buffer_bytes.max(self.buffer_bytes);
        self.buffer.push_back((arrive_ns, pkt));
        if self.buffer.len() == 1 {
            self.pump(ctx);
        }
    }

    fn on_timer(&mut self, token: u64, ctx: &mut Ctx<'_>) {
        if token == DELIVER {
            self.deliver(ctx);
        } else if self.pump_at_ns == Some(ctx.now_ns) {
            self.pump_at_ns = None;
            self.pump(ctx);
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packet_takes_whole_blocks() {
        assert_eq!(charge_bytes(1, 64), 64);
        assert_eq!(charge_bytes(64, 64), 64);
        assert_eq!(charge_bytes(2048 + 30, 64), 2112);
    }
}
