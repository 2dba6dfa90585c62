//! One direction of a link as a simulation node: `longhaul_link`'s `Direction`, the same
//! model the emulator runs, driven in virtual time. The node adds what only the simulator
//! needs: an event at the front frame's arrival, and counts of TCP payload bytes for the
//! conservation check.
//!
//! The simulator's packets carry their framed size (`wire_bytes`, headers and framing
//! included: the hosts frame them), so the line counts them as they are, with no framing
//! of its own.

use std::any::Any;
use std::collections::VecDeque;

use longhaul_link::{Direction, DirectionConfig, Fate, Loss};
use serde::Serialize;

use crate::engine::{Ctx, Node};
use crate::event::NodeId;
use crate::packet::{Kind, Packet};

const PS_PER_NS: u64 = 1_000;
const PS_PER_S: u128 = 1_000_000_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LinkConfig {
    pub rate_bps: u64,
    pub delay_ns: u64,
    pub queue_bytes: u64,
    pub loss: Loss,
}

impl LinkConfig {
    fn direction(&self) -> DirectionConfig {
        let mut config = DirectionConfig::new(self.rate_bps, self.delay_ns);
        config.queue_bytes = Some(self.queue_bytes);
        config.frame_overhead_bytes = Some(0);
        config.loss = self.loss;
        config
    }
}

/// What a link saw. `data_*` count TCP payload bytes, for the conservation check.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LinkCounters {
    pub packets_in: u64,
    pub wire_bytes_in: u64,
    pub packets_dropped_queue: u64,
    pub packets_dropped_line: u64,
    pub data_bytes_in: u64,
    pub data_bytes_dropped: u64,
    pub data_bytes_delivered: u64,
    pub max_queue_bytes: u64,
}

/// Aligned to two cache lines, so a link on one thread never shares one with the host
/// beside it on the other (`crate::host::Endpoint`).
#[repr(align(128))]
pub struct Link {
    config: LinkConfig,
    next: NodeId,
    /// Where each flow's packets go next, by flow id; `next` for the rest (cross traffic).
    routes: Vec<NodeId>,
    line: Direction<Packet>,
    line_data_bytes: u64,
    counters: LinkCounters,
    /// Whether every node after this link takes packets due later than now
    /// (`with_trains`).
    trains: bool,
}

/// At most this many frames handed on per event: a bound on what one release puts in
/// the outbox at once (chosen, not tuned; one event per frame cost 12 % of `one_flow` on
/// one thread against this).
pub const TRAIN_FRAMES: u32 = 64;

impl Link {
    pub fn new(config: LinkConfig, next: NodeId, seed: u64) -> Self {
        Self {
            line: Direction::in_virtual_time(config.direction(), seed),
            config,
            next,
            routes: Vec::new(),
            line_data_bytes: 0,
            counters: LinkCounters::default(),
            trains: false,
        }
    }

    /// Hand on, at each release, the frames due after it too (up to `TRAIN_FRAMES`, all
    /// before the run's end), each with its own arrival time, instead of waking once per
    /// frame. Only for a link whose next nodes all take a packet at its arrival time
    /// however early it is handed to them (a link, a delay line, a host whose only way
    /// in this link is: `Host::with_one_way_in`). The frames are the same and leave at
    /// the same instants: what is in the line then cannot change, as a frame offered
    /// later queues behind every frame already in it.
    #[must_use]
    pub fn with_trains(mut self) -> Self {
        self.trains = true;
        self
    }

    /// Send flow `i`'s packets to `routes[i]` instead of the one next node.
    #[must_use]
    pub fn with_routes(mut self, routes: Vec<NodeId>) -> Self {
        self.routes = routes;
        self
    }

    fn next_for(&self, pkt: &Packet) -> NodeId {
        self.routes
            .get(pkt.flow as usize)
            .copied()
            .unwrap_or(self.next)
    }

    pub fn config(&self) -> &LinkConfig {
        &self.config
    }

    pub fn counters(&self) -> LinkCounters {
        LinkCounters {
            max_queue_bytes: self.line.counters().queue_max_bytes,
            ..self.counters.clone()
        }
    }

    /// TCP payload bytes admitted but not yet at the far end.
    pub fn data_bytes_in_flight(&self) -> u64 {
        self.line_data_bytes
    }
}

fn data_bytes(pkt: &Packet) -> u64 {
    if pkt.kind == Kind::Data {
        u64::from(pkt.len)
    } else {
        0
    }
}

impl Node for Link {
    fn on_packet(&mut self, pkt: Packet, arrive_ns: u64, ctx: &mut Ctx<'_>) {
        let data = data_bytes(&pkt);
        let c = &mut self.counters;
        c.packets_in += 1;
        c.wire_bytes_in += u64::from(pkt.wire_bytes);
        c.data_bytes_in += data;
        let was_empty = self.line.in_flight_frames() == 0;
        match self
            .line
            .offer_frame(arrive_ns, u64::from(pkt.wire_bytes), pkt)
        {
            Ok(()) => {
                self.line_data_bytes += data;
                if was_empty && let Some(at) = self.line.next_release_ns() {
                    ctx.schedule(at, 0);
                }
            }
            Err(fate) => {
                match fate {
                    Fate::Dropped => c.packets_dropped_queue += 1,
                    Fate::Lost(_) => c.packets_dropped_line += 1,
                }
                c.data_bytes_dropped += data;
            }
        }
    }

    fn on_timer(&mut self, _token: u64, ctx: &mut Ctx<'_>) {
        let mut at_ns = ctx.now_ns;
        let mut train = 0;
        loop {
            match self.line.release_or_next(at_ns) {
                Ok(pkt) => {
                    let data = data_bytes(&pkt);
                    self.line_data_bytes -= data;
                    self.counters.data_bytes_delivered += data;
                    ctx.send(self.next_for(&pkt), pkt, at_ns);
                    train += 1;
                }
                Err(Some(next_ns))
                    if self.trains && train < TRAIN_FRAMES && next_ns < ctx.run_end_ns =>
                {
                    at_ns = next_ns;
                }
                Err(next) => {
                    if let Some(at) = next {
                        ctx.schedule(at, 0);
                    }
                    return;
                }
            }
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A fixed propagation delay with no rate and no queue: the stretch of a longer flow's
/// path beyond the shared bottleneck. Packets leave in the order they came, each
/// `delay_ns` after it arrived.
pub struct DelayLine {
    delay_ns: u64,
    next: NodeId,
    in_flight: VecDeque<(u64, Packet)>,
    data_bytes_in_flight: u64,
}

impl DelayLine {
    pub fn new(delay_ns: u64, next: NodeId) -> Self {
        Self {
            delay_ns,
            next,
            in_flight: VecDeque::new(),
            data_bytes_in_flight: 0,
        }
    }

    /// TCP payload bytes on their way through.
    pub fn data_bytes_in_flight(&self) -> u64 {
        self.data_bytes_in_flight
    }
}

impl Node for DelayLine {
    fn on_packet(&mut self, pkt: Packet, arrive_ns: u64, ctx: &mut Ctx<'_>) {
        let leave_ns = arrive_ns + self.delay_ns;
        debug_assert!(self.in_flight.back().is_none_or(|(at, _)| *at <= leave_ns));
        if self.in_flight.is_empty() {
            ctx.schedule(leave_ns, 0);
        }
        self.data_bytes_in_flight += data_bytes(&pkt);
        self.in_flight.push_back((leave_ns, pkt));
    }

    fn on_timer(&mut self, _token: u64, ctx: &mut Ctx<'_>) {
        while let Some(&(at_ns, pkt)) = self.in_flight.front() {
            if at_ns > ctx.now_ns {
                ctx.schedule(at_ns, 0);
                break;
            }
            self.in_flight.pop_front();
            self.data_bytes_in_flight -= data_bytes(&pkt);
            ctx.send(self.next, pkt, ctx.now_ns);
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Constant-bit-rate cross traffic into a link (the UDP cross-traffic of the USN
/// cross-traffic profiles). It wakes once per `BATCH_NS` and hands the link the packets
/// of that batch with their exact arrival times: cheap, and a TCP packet arriving inside
/// the batch queues behind at most one batch of filler.
pub struct CbrSource {
    link: NodeId,
    packet_bytes: u32,
    gap_ps: u64,
    next_ps: u64,
    sent_packets: u64,
}

const BATCH_NS: u64 = 20_000;

impl CbrSource {
    pub fn new(link: NodeId, rate_bps: u64, packet_bytes: u32) -> Self {
        let gap_ps = (u128::from(packet_bytes) * 8 * PS_PER_S / u128::from(rate_bps)) as u64;
        Self {
            link,
            packet_bytes,
            gap_ps: gap_ps.max(1),
            next_ps: 0,
            sent_packets: 0,
        }
    }

    pub fn sent_packets(&self) -> u64 {
        self.sent_packets
    }
}

impl Node for CbrSource {
    fn on_packet(&mut self, _pkt: Packet, _arrive_ns: u64, _ctx: &mut Ctx<'_>) {}

    fn on_timer(&mut self, _token: u64, ctx: &mut Ctx<'_>) {
        let until_ps = (ctx.now_ns + BATCH_NS) * PS_PER_NS;
        while self.next_ps < until_ps {
            let pkt = Packet::new(Kind::Filler, u32::MAX, self.packet_bytes);
            ctx.send(self.link, pkt, self.next_ps / PS_PER_NS);
            self.sent_packets += 1;
            self.next_ps += self.gap_ps;
        }
        ctx.schedule(self.next_ps / PS_PER_NS, 0);
    }

    fn start(&mut self, ctx: &mut Ctx<'_>) {
        ctx.schedule(0, 0);
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_keeps_the_models_timing() {
        // 1000 bytes at 8 Gb/s = 1 us each, then 1 us of delay: what the emulator's
        // link does to the same frames.
        let config = LinkConfig {
            rate_bps: 8_000_000_000,
            delay_ns: 1_000,
            queue_bytes: 2_500,
            loss: Loss::NONE,
        };
        let mut line: Direction<u32> = Direction::new(config.direction(), 1, 0);
        assert!(line.offer_frame(0, 1000, 1).is_ok());
        assert!(line.offer_frame(0, 1000, 2).is_ok());
        assert_eq!(
            line.offer_frame(0, 1000, 3),
            Err(Fate::Dropped),
            "2000 queued + 1000 > 2500"
        );
        assert_eq!(line.next_release_ns(), Some(2_000));
        assert_eq!(line.release(2_000), Some(1));
        assert_eq!(line.next_release_ns(), Some(3_000));
    }
}
