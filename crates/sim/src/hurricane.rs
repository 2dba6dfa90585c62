//! Hurricane in the simulator: the `hurricane` crate's own sans-IO sender and receiver
//! (the state machines `hurricane send` and `hurricane recv` run, the sender set up by
//! the same `driver::sender_for`) as transport endpoints of simulated hosts, across the
//! link model the emulator runs: the same rate, delay, queue and loss, in virtual time.
//!
//! ```text
//!  host A [sender] --forward link (rate, delay, queue, loss)--> host B [receiver]
//!         ^---------------- reverse link (rate, delay) ----------------'
//! ```
//!
//! The simulator's packets carry no bytes, and a Hurricane datagram must arrive whole to
//! pass its tag; so each datagram's bytes wait in the flow's [`Wire`] while a
//! [`Kind::Datagram`] packet standing for them (its `seq` the datagram's number on that
//! wire, its `wire_bytes` the IP packet's size) crosses the links. A link keeps the
//! order of what it carries, so a datagram still waiting ahead of the one that arrives
//! was lost on the way, and is let go.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use hurricane::driver::{SendOptions, sender_for};
use hurricane::pattern::{PatternCheck, PatternSource};
use hurricane::range_set::RangeSet;
use hurricane::receiver::{Receiver, ReceiverStats};
use hurricane::sender::{Pacing, Sender, SenderStats};
use hurricane::wire::{DATA_OVERHEAD_BYTES, Key};
use hurricane::{IP_UDP_BYTES, Transfer};
use longhaul_link::Loss;
use serde::Serialize;

use crate::engine::{Node, Sim};
use crate::host::{Endpoint, Host};
use crate::link::{Link, LinkConfig};
use crate::packet::{Kind, Packet};
use crate::run::derive_seed;
use crate::transport::{FlowReport, Transport};

/// The datagrams on their way, each direction in the order sent, numbered.
#[derive(Default)]
struct Queues {
    next_number: u64,
    /// [to the receiver, to the sender].
    waiting: [VecDeque<(u64, Vec<u8>)>; 2],
    /// Buffers of datagrams delivered or lost, for the next ones.
    spare: Vec<Vec<u8>>,
}

/// Where one flow's datagram bytes wait while their packets cross the links. Shared by
/// the flow's two ends (which the simulator may run on two threads).
#[derive(Clone, Default)]
pub struct Wire(Arc<Mutex<Queues>>);

const TO_RECEIVER: usize = 0;
const TO_SENDER: usize = 1;

impl Wire {
    /// A buffer for the next datagram (empty).
    fn buffer(&self) -> Vec<u8> {
        let mut queues = self.0.lock().expect("a Hurricane end panicked");
        let mut buf = queues.spare.pop().unwrap_or_default();
        buf.clear();
        buf
    }

    /// Put `bytes` on their way in `direction`; the number the packet carries.
    fn post(&self, direction: usize, bytes: Vec<u8>) -> u64 {
        let mut queues = self.0.lock().expect("a Hurricane end panicked");
        let number = queues.next_number;
        queues.next_number += 1;
        queues.waiting[direction].push_back((number, bytes));
        number
    }

    /// The bytes of datagram `number`, which arrived; those sent before it in the same
    /// direction and still waiting were lost.
    fn take(&self, direction: usize, number: u64) -> Option<Vec<u8>> {
        let mut queues = self.0.lock().expect("a Hurricane end panicked");
        let Queues { waiting, spare, .. } = &mut *queues;
        let waiting = &mut waiting[direction];
        while let Some((front, _)) = waiting.front()
            && *front < number
        {
            let (_, lost) = waiting.pop_front().expect("peeked");
            spare.push(lost);
        }
        match waiting.front() {
            Some((front, _)) if *front == number => waiting.pop_front().map(|(_, b)| b),
            _ => None,
        }
    }

    fn give_back(&self, buf: Vec<u8>) {
        self.0
            .lock()
            .expect("a Hurricane end panicked")
            .spare
            .push(buf);
    }

    #[cfg(test)]
    fn spare_buffers(&self) -> usize {
        self.0.lock().expect("a Hurricane end panicked").spare.len()
    }

    /// Datagrams on their way now, both directions.
    pub fn in_flight(&self) -> usize {
        let queues = self.0.lock().expect("a Hurricane end panicked");
        queues.waiting.iter().map(VecDeque::len).sum()
    }
}

fn datagram(flow: u32, number: u64, udp_bytes: usize, payload_bytes: usize) -> Packet {
    let mut pkt = Packet::new(Kind::Datagram, flow, (udp_bytes + IP_UDP_BYTES) as u32);
    pkt.seq = number;
    pkt.len = payload_bytes as u32;
    pkt
}

/// The sending end: blocks of the pattern `hurricane send --bytes` sends.
pub struct HurricaneSender {
    flow: u32,
    sender: Sender,
    source: PatternSource,
    wire: Wire,
    buf: Vec<u8>,
    /// The latest time the host handed it something or asked it for a datagram.
    seen_ns: Option<u64>,
    done_ns: Option<u64>,
}

impl HurricaneSender {
    pub fn new(flow: u32, transfer: Transfer, options: &SendOptions, wire: Wire) -> Self {
        let block_bytes = transfer.block_bytes as usize;
        let (sender, _) = sender_for(transfer, RangeSet::new(), options);
        Self {
            flow,
            sender,
            source: PatternSource { block_bytes },
            wire,
            buf: Vec::new(),
            seen_ns: None,
            done_ns: None,
        }
    }

    pub fn stats(&self) -> SenderStats {
        self.sender.stats
    }

    /// When the receiver's DONE came.
    pub fn done_ns(&self) -> Option<u64> {
        self.done_ns
    }
}

impl Transport for HurricaneSender {
    fn handle_packet(&mut self, now_ns: u64, pkt: &Packet) {
        self.seen_ns = Some(now_ns);
        if pkt.kind != Kind::Datagram {
            return;
        }
        if let Some(mut bytes) = self.wire.take(TO_SENDER, pkt.seq) {
            self.sender.handle_datagram(now_ns, &mut bytes);
            self.wire.give_back(bytes);
        }
        if self.sender.is_done() && self.done_ns.is_none() {
            self.done_ns = Some(now_ns);
        }
    }

    fn poll_transmit(&mut self, now_ns: u64) -> Option<Packet> {
        self.seen_ns = Some(now_ns);
        let mut buf = std::mem::take(&mut self.buf);
        if buf.capacity() == 0 {
            buf = self.wire.buffer();
        }
        let Some(len) = self
            .sender
            .poll_transmit(now_ns, &mut self.source, &mut buf)
        else {
            self.buf = buf;
            return None;
        };
        let payload = len.saturating_sub(DATA_OVERHEAD_BYTES);
        let number = self.wire.post(TO_RECEIVER, buf);
        Some(datagram(self.flow, number, len, payload))
    }

    /// The sender's deadline is when its next datagram is due. After the host handed it
    /// something or asked it for a datagram, the host served it unless its interface was
    /// full; so a deadline already due then waits for the interface, whose own wake-up
    /// serves it, and a timer for it would fire at once, again and again.
    fn poll_timeout(&self) -> Option<u64> {
        let at = self.sender.poll_timeout()?;
        self.seen_ns.is_none_or(|seen| at > seen).then_some(at)
    }

    fn handle_timeout(&mut self, now_ns: u64) {
        self.seen_ns = Some(now_ns);
        self.sender.handle_timeout(now_ns);
    }

    fn held_by_interface(&self) -> bool {
        true
    }

    fn report(&self) -> FlowReport {
        FlowReport {
            sent_bytes: self.sender.new_blocks_sent() * self.source.block_bytes as u64,
            retransmits: self.sender.stats.blocks_resent,
            srtt_ns: self.sender.rtt_now_ns(),
            ..FlowReport::default()
        }
    }
}

/// The receiving end: checks every byte against the pattern, keeps none.
pub struct HurricaneReceiver {
    flow: u32,
    receiver: Receiver,
    sink: PatternCheck,
    wire: Wire,
    first_ns: Option<u64>,
    /// The payload of the first datagram in, which crossed the line before the clock
    /// started (as `hurricane recv` leaves its first receive out).
    first_bytes: u64,
    complete_ns: Option<u64>,
}

impl HurricaneReceiver {
    pub fn new(flow: u32, transfer: Transfer, nack_group: u32, wire: Wire) -> Self {
        let sink = PatternCheck::new(transfer.block_bytes);
        Self {
            flow,
            receiver: Receiver::new(transfer, nack_group),
            sink,
            wire,
            first_ns: None,
            first_bytes: 0,
            complete_ns: None,
        }
    }

    pub fn stats(&self) -> ReceiverStats {
        self.receiver.stats
    }

    pub fn corrupted_bytes(&self) -> u64 {
        self.sink.corrupted_bytes
    }

    /// (first datagram in, last block in), as `hurricane recv` times a transfer.
    pub fn timed(&self) -> Option<(u64, u64)> {
        Some((self.first_ns?, self.complete_ns?))
    }

    pub fn bytes(&self) -> u64 {
        self.sink.bytes
    }

    /// The bytes that came in within `timed`'s span.
    pub fn timed_bytes(&self) -> u64 {
        self.sink.bytes - self.first_bytes
    }
}

impl Transport for HurricaneReceiver {
    fn handle_packet(&mut self, now_ns: u64, pkt: &Packet) {
        if pkt.kind != Kind::Datagram {
            return;
        }
        let Some(mut bytes) = self.wire.take(TO_RECEIVER, pkt.seq) else {
            return;
        };
        self.receiver
            .handle_datagram(now_ns, &mut bytes, &mut self.sink);
        if self.first_ns.is_none() {
            self.first_ns = Some(now_ns);
            self.first_bytes = self.sink.bytes;
        }
        self.wire.give_back(bytes);
        if self.receiver.is_complete() && self.complete_ns.is_none() {
            self.complete_ns = Some(now_ns);
        }
    }

    fn poll_transmit(&mut self, now_ns: u64) -> Option<Packet> {
        let mut buf = self.wire.buffer();
        let Some(len) = self.receiver.poll_transmit(now_ns, &mut buf) else {
            self.wire.give_back(buf);
            return None;
        };
        let number = self.wire.post(TO_SENDER, buf);
        Some(datagram(self.flow, number, len, 0))
    }

    fn poll_timeout(&self) -> Option<u64> {
        self.receiver.poll_timeout()
    }

    fn handle_timeout(&mut self, now_ns: u64) {
        self.receiver.handle_timeout(now_ns);
    }

    fn held_by_interface(&self) -> bool {
        false // NACKs and DONE leave at once
    }

    fn report(&self) -> FlowReport {
        FlowReport {
            received_bytes: self.sink.bytes,
            ..FlowReport::default()
        }
    }
}

/// One transfer over a dedicated channel: `hurricane send --bytes` with its defaults
/// (W_c 64 datagrams, T_s 0, NACK groups of 16, the governor on, no tuning), the
/// channel a reserved circuit as the emulator makes it (IP packets at `rate_bps`, one
/// bandwidth-delay product of queue unless given, random loss each way).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HurricaneTest {
    pub rate_bps: u64,
    pub rtt_ms: f64,
    pub loss: f64,
    pub queue_bytes: Option<u64>,
    pub bytes: u64,
    /// Payload per datagram: 1,427 fills a 1,500-byte IP packet.
    pub block_bytes: u32,
    /// k: new missing blocks that make a NACK.
    pub nack_group: u32,
    /// The hosts' interfaces (the circuit's rate is the bottleneck below it).
    pub nic_rate_bps: u64,
    pub seed: u64,
    /// Give up after this much virtual time.
    pub time_limit_s: f64,
}

impl HurricaneTest {
    pub fn new(rate_bps: u64, rtt_ms: f64, bytes: u64) -> Self {
        Self {
            rate_bps,
            rtt_ms,
            loss: 0.0,
            queue_bytes: None,
            bytes,
            block_bytes: hurricane::driver::block_bytes_for_mtu(1500),
            nack_group: hurricane::driver::DEFAULT_NACK_GROUP,
            nic_rate_bps: rate_bps.max(10_000_000_000),
            seed: 1,
            time_limit_s: 600.0,
        }
    }

    fn one_way_ns(&self) -> u64 {
        (self.rtt_ms * 1e6 / 2.0).round() as u64
    }

    /// What the payload can reach at the ceiling: `rate x block / IP packet`.
    pub fn payload_ceiling_bps(&self) -> f64 {
        let packet = f64::from(self.block_bytes) + (DATA_OVERHEAD_BYTES + IP_UDP_BYTES) as f64;
        self.rate_bps as f64 * f64::from(self.block_bytes) / packet
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct HurricaneReport {
    pub test: HurricaneTest,
    /// Whether the sender heard DONE within the time limit.
    pub finished: bool,
    /// Payload bytes over the receiver's time (first datagram in to last block in; the
    /// first datagram's own bytes left out, as `hurricane recv` times it).
    pub goodput_bps: f64,
    /// Goodput over the payload ceiling.
    pub utilization: f64,
    /// From the first datagram sent to DONE heard.
    pub sender_seconds: f64,
    pub receiver_seconds: f64,
    pub bytes_received: u64,
    pub corrupted_bytes: u64,
    pub datagrams_sent: u64,
    pub blocks_resent: u64,
    /// Blocks of the last half round trip sent again unasked after the first pass.
    pub tail_resent: u64,
    pub nacks_sent: u64,
    pub duplicates: u64,
    pub lost_forward: u64,
    pub dropped_forward_queue: u64,
    pub lost_reverse: u64,
    pub simulated_s: f64,
    pub wall_s: f64,
    pub realtime_factor: f64,
}

const SENDER: usize = 0;
const FORWARD: usize = 1;
const RECEIVER: usize = 2;
const REVERSE: usize = 3;
/// How far the clock moves between looks at whether the transfer is done.
const STEP_NS: u64 = 10_000_000;

/// Both ends of one transfer, on hosts joined by the two links.
pub fn build(test: &HurricaneTest) -> Sim {
    let rtt_ns = 2 * test.one_way_ns();
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&test.seed.to_be_bytes());
    let transfer = Transfer {
        id: test.seed,
        key: Key::new(key, false),
        block_bytes: test.block_bytes,
        total_bytes: test.bytes,
        rate_ceiling_bps: test.rate_bps,
        // The control exchange's connect: one round trip.
        rtt_ns,
    };
    let options = SendOptions {
        block_bytes: test.block_bytes,
        rate_ceiling_bps: test.rate_bps,
        pacing: Pacing {
            burst_datagrams: hurricane::driver::DEFAULT_BURST_DATAGRAMS,
            idle_ns: 0,
        },
        nack_group: test.nack_group,
        tune: false,
        encrypt: false,
        govern: true,
        deadline: std::time::Duration::from_secs_f64(test.time_limit_s),
    };
    let wire = Wire::default();
    let sender = HurricaneSender::new(0, transfer.clone(), &options, wire.clone());
    let receiver = HurricaneReceiver::new(0, transfer, options.nack_group, wire);
    let link = |loss: f64| LinkConfig {
        rate_bps: test.rate_bps,
        delay_ns: test.one_way_ns(),
        queue_bytes: test
            .queue_bytes
            .unwrap_or((u128::from(test.rate_bps) * u128::from(rtt_ns) / 8_000_000_000) as u64),
        loss: if loss > 0.0 {
            Loss::random(loss)
        } else {
            Loss::NONE
        },
    };
    let mut sim = Sim::new();
    let sender = Endpoint::HurricaneSender(Box::new(sender));
    let receiver = Endpoint::HurricaneReceiver(Box::new(receiver));
    let forward = Link::new(link(test.loss), RECEIVER, derive_seed(test.seed, 1));
    let reverse = Link::new(link(test.loss), SENDER, derive_seed(test.seed, 2));
    let nodes: [(usize, Box<dyn Node>); 4] = [
        (
            SENDER,
            Box::new(Host::new(FORWARD, test.nic_rate_bps, vec![sender])),
        ),
        (FORWARD, Box::new(forward)),
        (
            RECEIVER,
            Box::new(Host::new(REVERSE, test.nic_rate_bps, vec![receiver])),
        ),
        (REVERSE, Box::new(reverse)),
    ];
    for (id, node) in nodes {
        assert_eq!(sim.add(node), id);
    }
    sim
}

fn endpoint(sim: &Sim, host: usize) -> &Endpoint {
    &sim.get::<Host>(host).expect("a host").endpoints()[0]
}

fn sender_end(sim: &Sim) -> &HurricaneSender {
    match endpoint(sim, SENDER) {
        Endpoint::HurricaneSender(sender) => sender,
        _ => unreachable!("node {SENDER} is the sending host"),
    }
}

fn receiver_end(sim: &Sim) -> &HurricaneReceiver {
    match endpoint(sim, RECEIVER) {
        Endpoint::HurricaneReceiver(receiver) => receiver,
        _ => unreachable!("node {RECEIVER} is the receiving host"),
    }
}

/// Run the transfer until the sender hears DONE or the time limit.
pub fn run(test: &HurricaneTest) -> HurricaneReport {
    let started = Instant::now();
    let mut sim = build(test);
    let limit_ns = (test.time_limit_s * 1e9) as u64;
    while sender_end(&sim).done_ns().is_none() && sim.now_ns() < limit_ns {
        sim.run_until(sim.now_ns() + STEP_NS);
    }
    report(test, &sim, started.elapsed().as_secs_f64())
}

fn report(test: &HurricaneTest, sim: &Sim, wall_s: f64) -> HurricaneReport {
    let (sender, receiver) = (sender_end(sim), receiver_end(sim));
    let forward = sim.get::<Link>(FORWARD).expect("a link").counters();
    let reverse = sim.get::<Link>(REVERSE).expect("a link").counters();
    let (first_ns, last_ns) = receiver.timed().unwrap_or((0, 0));
    let receiver_seconds = (last_ns - first_ns) as f64 / 1e9;
    let goodput_bps = if receiver_seconds > 0.0 {
        receiver.timed_bytes() as f64 * 8.0 / receiver_seconds
    } else {
        0.0
    };
    let simulated_s = sim.now_ns() as f64 / 1e9;
    let s = sender.stats();
    let r = receiver.stats();
    HurricaneReport {
        test: test.clone(),
        finished: sender.done_ns().is_some(),
        goodput_bps,
        utilization: goodput_bps / test.payload_ceiling_bps(),
        sender_seconds: sender.done_ns().unwrap_or(0) as f64 / 1e9,
        receiver_seconds,
        bytes_received: receiver.bytes(),
        corrupted_bytes: receiver.corrupted_bytes(),
        datagrams_sent: s.datagrams_sent,
        blocks_resent: s.blocks_resent,
        tail_resent: s.tail_resent,
        nacks_sent: r.nacks_sent,
        duplicates: r.duplicates,
        lost_forward: forward.packets_dropped_line,
        dropped_forward_queue: forward.packets_dropped_queue,
        lost_reverse: reverse.packets_dropped_line,
        simulated_s,
        wall_s,
        realtime_factor: simulated_s / wall_s.max(1e-9),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_datagram_still_waiting_ahead_of_one_that_arrived_was_lost() {
        let wire = Wire::default();
        let numbers: Vec<u64> = (0..4u8).map(|k| wire.post(TO_RECEIVER, vec![k])).collect();
        let back = wire.post(TO_SENDER, vec![9]);
        assert_eq!(wire.take(TO_RECEIVER, numbers[2]), Some(vec![2]));
        assert_eq!(wire.take(TO_RECEIVER, numbers[0]), None, "let go");
        assert_eq!(wire.in_flight(), 2, "one each way");
        assert_eq!(wire.take(TO_SENDER, back), Some(vec![9]));
        assert_eq!(wire.spare_buffers(), 2, "the lost ones' buffers, for reuse");
    }
}
