//! The discrete-event core: a table of nodes, an event queue, and virtual time in integer
//! nanoseconds.
//!
//! A node is anything that reacts to packets and to its own timers: a link, a host, a
//! traffic source (later an InfiniBand HCA or an MPI rank). The core knows nothing of what
//! a node is; it delivers packets and wakes nodes with the opaque token they scheduled.
//! Packets handed to another node in the same instant are delivered right after the
//! handler returns, in the order they were sent, without going through the heap.

use std::any::Any;

use crate::event::{Event, EventQueue, NodeId};
use crate::packet::Packet;

pub trait Node: Any {
    /// `pkt` reaches this node. `arrive_ns >= now` lets a sender hand over a packet whose
    /// last bit leaves it later (its own serialization), so links need no event for it.
    fn on_packet(&mut self, pkt: Packet, arrive_ns: u64, ctx: &mut Ctx<'_>);
    /// A timer this node scheduled with `token` is due.
    fn on_timer(&mut self, token: u64, ctx: &mut Ctx<'_>);
    /// Called once at time 0, before any event.
    fn start(&mut self, _ctx: &mut Ctx<'_>) {}
    fn as_any(&self) -> &dyn Any;
}

/// What a node may do while it handles something: read the clock, schedule its own
/// timers, and send packets to other nodes.
pub struct Ctx<'a> {
    pub now_ns: u64,
    me: NodeId,
    queue: &'a mut EventQueue,
    outbox: &'a mut Vec<(NodeId, Packet, u64)>,
}

impl Ctx<'_> {
    pub fn me(&self) -> NodeId {
        self.me
    }

    /// Wake this node at `at_ns` (not before now) with `token`.
    pub fn schedule(&mut self, at_ns: u64, token: u64) {
        debug_assert!(at_ns >= self.now_ns, "timer in the past");
        self.queue.push(Event {
            at_ns: at_ns.max(self.now_ns),
            target: self.me,
            token,
        });
    }

    /// Hand `pkt` to node `to`, arriving at `arrive_ns` (>= now).
    pub fn send(&mut self, to: NodeId, pkt: Packet, arrive_ns: u64) {
        self.outbox.push((to, pkt, arrive_ns.max(self.now_ns)));
    }
}

#[derive(Default)]
pub struct Sim {
    now_ns: u64,
    queue: EventQueue,
    nodes: Vec<Box<dyn Node>>,
    outbox: Vec<(NodeId, Packet, u64)>,
    events_processed: u64,
    started: bool,
}

impl Sim {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add(&mut self, node: Box<dyn Node>) -> NodeId {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    /// Replace a node (used to wire nodes that point at each other).
    pub fn replace(&mut self, id: NodeId, node: Box<dyn Node>) {
        self.nodes[id] = node;
    }

    /// Nodes added so far: the id the next one gets.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    pub fn node(&self, id: NodeId) -> &dyn Node {
        self.nodes[id].as_ref()
    }

    /// The node `id` as its concrete type, for reading its counters after a run.
    pub fn get<T: Node>(&self, id: NodeId) -> Option<&T> {
        self.nodes[id].as_any().downcast_ref::<T>()
    }

    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }

    /// Scheduled events taken off the queue. Packets handed between nodes in the same
    /// instant are calls, not events, and are not counted.
    pub fn events_processed(&self) -> u64 {
        self.events_processed
    }

    /// Run every event due before `end_ns`, then set the clock to `end_ns`.
    pub fn run_until(&mut self, end_ns: u64) {
        if !self.started {
            self.started = true;
            for id in 0..self.nodes.len() {
                let mut ctx = Ctx {
                    now_ns: self.now_ns,
                    me: id,
                    queue: &mut self.queue,
                    outbox: &mut self.outbox,
                };
                self.nodes[id].start(&mut ctx);
                self.deliver_outbox();
            }
        }
        while let Some(at_ns) = self.queue.peek_ns() {
            if at_ns >= end_ns {
                break;
            }
            let event = self.queue.pop().expect("peeked");
            self.now_ns = event.at_ns;
            self.events_processed += 1;
            let mut ctx = Ctx {
                now_ns: self.now_ns,
                me: event.target,
                queue: &mut self.queue,
                outbox: &mut self.outbox,
            };
            self.nodes[event.target].on_timer(event.token, &mut ctx);
            self.deliver_outbox();
        }
        self.now_ns = self.now_ns.max(end_ns);
    }

    /// Deliver what handlers sent, in order, including what the receivers send in turn.
    fn deliver_outbox(&mut self) {
        let mut next = 0;
        while next < self.outbox.len() {
            let (to, pkt, arrive_ns) = self.outbox[next];
            next += 1;
            let mut ctx = Ctx {
                now_ns: self.now_ns,
                me: to,
                queue: &mut self.queue,
                outbox: &mut self.outbox,
            };
            self.nodes[to].on_packet(pkt, arrive_ns, &mut ctx);
        }
        self.outbox.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Kind;

    /// Sends a packet to `peer` every `period_ns` and counts what it receives.
    struct Ticker {
        peer: NodeId,
        period_ns: u64,
        received: Vec<u64>,
    }

    impl Node for Ticker {
        fn on_packet(&mut self, _pkt: Packet, _arrive_ns: u64, ctx: &mut Ctx<'_>) {
            self.received.push(ctx.now_ns);
        }
        fn on_timer(&mut self, _token: u64, ctx: &mut Ctx<'_>) {
            ctx.send(self.peer, Packet::new(Kind::Filler, 0, 100), ctx.now_ns);
            ctx.schedule(ctx.now_ns + self.period_ns, 0);
        }
        fn start(&mut self, ctx: &mut Ctx<'_>) {
            ctx.schedule(self.period_ns, 0);
        }
        fn as_any(&self) -> &dyn Any {
            self
        }
    }

    #[test]
    fn nodes_exchange_packets_in_virtual_time() {
        let mut sim = Sim::new();
        let a = sim.add(Box::new(Ticker {
            peer: 1,
            period_ns: 10,
            received: vec![],
        }));
        let b = sim.add(Box::new(Ticker {
            peer: 0,
            period_ns: 25,
            received: vec![],
        }));
        sim.run_until(100);
        assert_eq!(
            sim.get::<Ticker>(b).unwrap().received,
            (1..10).map(|k| k * 10).collect::<Vec<_>>()
        );
        assert_eq!(sim.get::<Ticker>(a).unwrap().received, vec![25, 50, 75]);
        assert_eq!(sim.now_ns(), 100);
    }
}
