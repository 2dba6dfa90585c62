//! The discrete-event core: a table of nodes, an event queue, and virtual time in integer
//! nanoseconds.
//!
//! A node is anything that reacts to packets and to its own timers: a link, a host, a
//! traffic source (later an InfiniBand HCA or an MPI rank). The core knows nothing of what
//! a node is; it delivers packets and wakes nodes with the opaque token they scheduled.
//! Packets handed to another node in the same instant are delivered right after the
//! handler returns, in the order they were sent, without going through the heap.
//!
//! The nodes may run in two parts on two threads (`Sim::split`), which meet at the end
//! of each window to trade the packets one sent the other.

use std::any::Any;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::event::{Event, EventQueue, NodeId};
use crate::packet::Packet;

pub trait Node: Any + Send {
    /// `pkt` reaches this node at `arrive_ns` (>= now). A later instant lets a sender
    /// hand over a packet whose last bit leaves it later (its own serialization), so
    /// links need no event for it, and a link hand on a train of frames at once
    /// (`Link::with_trains`) to a node that takes each at its own time.
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
    /// Where the current `Sim::run_until` ends: nothing handed on may arrive at or after
    /// it, so every count read at its end is what it would be event by event.
    pub run_end_ns: u64,
    me: NodeId,
    queue: &'a mut EventQueue,
    outbox: &'a mut Outbox,
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
        self.outbox.send(to, pkt, arrive_ns.max(self.now_ns));
    }

    /// This node's context as if its clock read `at_ns` (>= now): for a node that takes
    /// a packet due later than now and knows nothing can reach it before (a host behind a
    /// link that hands on trains, `crate::host`).
    pub fn at(&mut self, at_ns: u64) -> Ctx<'_> {
        debug_assert!(at_ns >= self.now_ns, "a context in the past");
        Ctx {
            now_ns: at_ns.max(self.now_ns),
            run_end_ns: self.run_end_ns,
            me: self.me,
            queue: self.queue,
            outbox: self.outbox,
        }
    }
}

/// What a part's handlers sent: for its own nodes, delivered in the order sent once the
/// handler returns; for the other part's, handed over in that order at the window's
/// end. Sorted as they are sent, so a packet for the other part is copied once into
/// `foreign` and not first into `local` (on two threads `deliver_outbox` had taken 15 %
/// of each thread's `perf` samples, against 6.5 % on one thread).
#[derive(Default)]
struct Outbox {
    local: Vec<Sent>,
    foreign: Vec<Sent>,
    /// Whether each node (by id) is this part's.
    ours: Vec<bool>,
}

impl Outbox {
    fn send(&mut self, to: NodeId, pkt: Packet, arrive_ns: u64) {
        let queue = if self.ours[to] {
            &mut self.local
        } else {
            &mut self.foreign
        };
        queue.push((to, pkt, arrive_ns));
    }
}

/// A share of the nodes with its own clock, event queue and outbox. A simulation is one
/// part, or two that run side by side on two threads (`Sim::split`).
///
/// Aligned to two cache lines: the two parts sit side by side in `Sim::parts`, and each
/// writes its clock and queue at every event: sharing a line, the two cores would trade
/// it at every event.
#[derive(Default)]
#[repr(align(128))]
struct Part {
    now_ns: u64,
    /// The end of the `Sim::run_until` being run (not of a window: the two parts' nodes
    /// see the same one as one part's do).
    run_end_ns: u64,
    queue: EventQueue,
    /// Indexed by node id; `None` for the other part's nodes.
    nodes: Vec<Option<Box<dyn Node>>>,
    outbox: Outbox,
    events_processed: u64,
}

impl Part {
    fn start(&mut self) {
        for id in 0..self.nodes.len() {
            let Some((node, mut ctx)) = self.node_with_ctx(id) else {
                continue;
            };
            node.start(&mut ctx);
            self.deliver_outbox();
        }
    }

    fn run_until(&mut self, end_ns: u64) {
        while let Some(at_ns) = self.queue.peek_ns() {
            if at_ns >= end_ns {
                break;
            }
            let event = self.queue.pop().expect("peeked");
            self.now_ns = event.at_ns;
            self.events_processed += 1;
            let (node, mut ctx) = self
                .node_with_ctx(event.target)
                .expect("events go to the part's own nodes");
            node.on_timer(event.token, &mut ctx);
            self.deliver_outbox();
        }
        self.now_ns = self.now_ns.max(end_ns);
    }

    /// Deliver what handlers sent this part's nodes, in order, including what the
    /// receivers send in turn.
    fn deliver_outbox(&mut self) {
        let mut next = 0;
        while next < self.outbox.local.len() {
            let (to, pkt, arrive_ns) = self.outbox.local[next];
            next += 1;
            self.deliver(to, pkt, arrive_ns);
        }
        self.outbox.local.clear();
    }

    /// `pkt` reaches this part's node `to` at `arrive_ns`.
    #[inline]
    fn deliver(&mut self, to: NodeId, pkt: Packet, arrive_ns: u64) {
        let (node, mut ctx) = self
            .node_with_ctx(to)
            .expect("the outbox sorts packets by part");
        node.on_packet(pkt, arrive_ns, &mut ctx);
    }

    /// This part's node `id` (None if it is the other part's) and its context at the
    /// part's clock.
    #[inline]
    fn node_with_ctx(&mut self, id: NodeId) -> Option<(&mut dyn Node, Ctx<'_>)> {
        let node = self.nodes[id].as_deref_mut()?;
        let ctx = Ctx {
            now_ns: self.now_ns,
            run_end_ns: self.run_end_ns,
            me: id,
            queue: &mut self.queue,
            outbox: &mut self.outbox,
        };
        Some((node, ctx))
    }

    /// Take the other part's packets for this part's nodes, sent before `now_ns`.
    fn receive(&mut self, packets: &[Sent]) {
        for &(to, pkt, arrive_ns) in packets {
            self.deliver(to, pkt, arrive_ns);
            self.deliver_outbox();
        }
    }
}

/// A packet on its way: to whom, and when it arrives.
type Sent = (NodeId, Packet, u64);

/// One `run_until` on two parts: from `from_ns` to `end_ns`, in windows that start at
/// `window_ns` and never exceed `lookahead_ns`.
#[allow(clippy::struct_field_names)] // units in names
struct Windows {
    from_ns: u64,
    end_ns: u64,
    window_ns: u64,
    lookahead_ns: u64,
}

/// How many packets the two parts should trade per window. Windows are sized to it from
/// what they traded in the last one: at 10 Gb/s with one flow (833 data packets and some
/// 420 ACKs a millisecond) about 5 ms; a lightly loaded path gets windows as long as its
/// lookahead, so it meets rarely. Fixed windows of 1 to 81.5 ms ran the busy 10 Gb/s
/// path within the machine's spread of each other; sizing by traffic is for the light
/// ones: with one core kept busy by another process, `lossy` ran 153 times real time
/// against 65 with windows fixed at 5 ms (`longhaul-sim bench --seconds 10`).
const TRADED_PER_WINDOW: u64 = 6_144;
/// The shortest window.
const MIN_WINDOW_NS: u64 = 50_000;

impl Windows {
    /// The window after one of `window_ns` in which the parts traded `traded` packets:
    /// scaled toward `TRADED_PER_WINDOW`, at most twice as long. Both parts know both
    /// counts after the meeting, so both choose the same; and the results do not depend
    /// on the windows anyway, only on each being within the lookahead.
    fn next(&self, window_ns: u64, traded: u64) -> u64 {
        let scaled =
            u128::from(window_ns) * u128::from(TRADED_PER_WINDOW) / u128::from(traded.max(1));
        u64::try_from(scaled)
            .unwrap_or(u64::MAX)
            .min(window_ns.saturating_mul(2))
            .max(MIN_WINDOW_NS)
            .min(self.lookahead_ns)
    }
}

/// Where the two parts meet at the end of each window: the packets each sent the other
/// (by the part they go to, and by the window's parity, so a part can post the next
/// window's while the other still reads this one's), and a count of arrivals.
#[derive(Default)]
struct Meeting {
    mail: [[Mutex<Vec<Sent>>; 2]; 2],
    arrived: AtomicU64,
    lock: Mutex<()>,
    met: Condvar,
    /// A part panicked: the other stops waiting for it and panics too, not hangs.
    failed: AtomicBool,
}

/// How long a part that reached the window's end first spins before it sleeps, giving
/// up the core every `YIELD_EVERY` spins. Waking a sleeping thread costs tens of
/// microseconds on a virtual machine. `longhaul-sim bench --seconds 10`, two runs of
/// each on an otherwise idle two-core machine: spinning 200 us and yielding, `one_flow`
/// 11.8 and 11.5 times real time; sleeping at once 9.6 and 10.5; with one core kept busy
/// by another process 7.6 against 8.2 (and 8.7 on one thread), `lossy` 153 against 117.
const SPIN_FOR: Duration = Duration::from_micros(200);
const YIELD_EVERY: u32 = 64;

impl Meeting {
    /// Wait until both parts have arrived `round + 1` times: spin a little, then sleep.
    fn wait(&self, round: u64) {
        let everyone = 2 * (round + 1);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == everyone {
            let _held = self.lock.lock().expect("a part panicked");
            self.met.notify_all();
            return;
        }
        let since = Instant::now();
        let mut spins = 0u32;
        while self.arrived.load(Ordering::Acquire) < everyone {
            self.check();
            std::hint::spin_loop();
            spins += 1;
            if spins.is_multiple_of(YIELD_EVERY) {
                // The other part may be waiting for this core.
                std::thread::yield_now();
                if since.elapsed() > SPIN_FOR {
                    break;
                }
            }
        }
        let mut held = self.lock.lock().expect("a part panicked");
        while self.arrived.load(Ordering::Acquire) < everyone {
            self.check();
            held = self.met.wait(held).expect("a part panicked");
        }
    }

    fn check(&self) {
        assert!(
            !self.failed.load(Ordering::Acquire),
            "the other part of the simulation panicked"
        );
    }

    /// Called by a part that panics, as it unwinds: wake the other to panic as well.
    fn fail(&self) {
        self.failed.store(true, Ordering::Release);
        let _held = self.lock.lock();
        self.met.notify_all();
    }

    /// Hand `packets` to the part `to` for the window after `round`, taking back an
    /// empty buffer (the one that part read two windows ago), so no window allocates.
    fn post(&self, to: usize, round: u64, packets: &mut Vec<Sent>) {
        let mut slot = self.mail[to][(round % 2) as usize]
            .lock()
            .expect("a part panicked");
        debug_assert!(slot.is_empty(), "read before it is written again");
        std::mem::swap(&mut *slot, packets);
    }

    /// How many packets the other part sent the part `me` in `round`.
    fn count(&self, me: usize, round: u64) -> u64 {
        self.mail[me][(round % 2) as usize]
            .lock()
            .expect("a part panicked")
            .len() as u64
    }

    /// Deliver to `part` (the part `me`) what the other sent it in `round`.
    fn deliver(&self, part: &mut Part, me: usize, round: u64) {
        let mut slot = self.mail[me][(round % 2) as usize]
            .lock()
            .expect("a part panicked");
        part.receive(&slot);
        slot.clear();
    }
}

/// One part's side of a run on two parts: each window, take what the other sent in the
/// last, run to the window's end, post what it sent, and meet.
fn drive(part: &mut Part, me: usize, plan: &Windows, meeting: &Meeting) -> u64 {
    struct FailOnPanic<'a>(&'a Meeting);
    impl Drop for FailOnPanic<'_> {
        fn drop(&mut self) {
            if std::thread::panicking() {
                self.0.fail();
            }
        }
    }
    let _guard = FailOnPanic(meeting);
    let other = 1 - me;
    let mut window_ns = plan.window_ns;
    let mut at_ns = plan.from_ns;
    let mut round = 0;
    while at_ns < plan.end_ns {
        if round > 0 {
            meeting.deliver(part, me, round - 1);
        }
        let stop_ns = plan.end_ns.min(at_ns.saturating_add(window_ns));
        part.run_until(stop_ns);
        let sent = part.outbox.foreign.len() as u64;
        meeting.post(other, round, &mut part.outbox.foreign);
        meeting.wait(round);
        window_ns = plan.next(window_ns, sent + meeting.count(me, round));
        at_ns = stop_ns;
        round += 1;
    }
    if round > 0 {
        // What the other part sent in the last window; a node that takes packets from
        // the other part (a link) sends nothing at once, so nothing goes back.
        meeting.deliver(part, me, round - 1);
        debug_assert!(
            part.outbox.foreign.is_empty(),
            "a reply across parts in no time"
        );
    }
    window_ns
}

/// The event core. Its nodes may be split in two parts that run side by side
/// (`split`), as a conservative parallel simulation in windows: a packet one part sends
/// to the other can only go to a node that holds every packet for at least the
/// lookahead (a link, whose propagation delay is the lookahead at least), and no window
/// is longer than that, so neither part needs anything from the other before the
/// window's end, where they trade what they sent. The queue's order does not depend on
/// when a part took a packet (`crate::event`), so a run is a function of its inputs,
/// the same on one thread and on two.
pub struct Sim {
    parts: Vec<Part>,
    /// The part each node belongs to.
    owner: Vec<usize>,
    /// How far one part may run ahead of what the other sent it.
    lookahead_ns: u64,
    /// The next window's length (`Windows::next`).
    window_ns: u64,
    now_ns: u64,
    started: bool,
}

impl Default for Sim {
    fn default() -> Self {
        Self {
            parts: vec![Part::default()],
            owner: Vec::new(),
            lookahead_ns: u64::MAX,
            window_ns: u64::MAX,
            now_ns: 0,
            started: false,
        }
    }
}

impl Sim {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add(&mut self, node: Box<dyn Node>) -> NodeId {
        for part in &mut self.parts[1..] {
            part.nodes.push(None);
            part.outbox.ours.push(false);
        }
        self.parts[0].nodes.push(Some(node));
        self.parts[0].outbox.ours.push(true);
        self.owner.push(0);
        self.owner.len() - 1
    }

    /// Replace a node (used to wire nodes that point at each other).
    pub fn replace(&mut self, id: NodeId, node: Box<dyn Node>) {
        self.parts[self.owner[id]].nodes[id] = Some(node);
    }

    /// Run the nodes `second` on a second thread beside the rest. Every packet sent
    /// from one part to the other must go to a node that holds it `lookahead_ns` at
    /// least before anything it causes reaches another node (a `Link` whose delay is
    /// at least that): the caller's promise, which the topology keeps.
    pub fn split(&mut self, second: &[NodeId], lookahead_ns: u64) {
        assert!(!self.started, "split before the run starts");
        assert!(lookahead_ns > 0, "a lookahead of no time");
        let mut part = Part {
            nodes: (0..self.owner.len()).map(|_| None).collect(),
            ..Part::default()
        };
        part.outbox.ours = vec![false; self.owner.len()];
        for &id in second {
            part.nodes[id] = self.parts[0].nodes[id].take();
            part.outbox.ours[id] = true;
            self.parts[0].outbox.ours[id] = false;
            self.owner[id] = 1;
        }
        self.parts.truncate(1);
        self.parts.push(part);
        self.lookahead_ns = lookahead_ns;
        self.window_ns = lookahead_ns.min(MIN_WINDOW_NS * 20);
    }

    /// Nodes added so far: the id the next one gets.
    pub fn node_count(&self) -> usize {
        self.owner.len()
    }

    pub fn node(&self, id: NodeId) -> &dyn Node {
        self.parts[self.owner[id]].nodes[id]
            .as_deref()
            .expect("every node is in its owner's part")
    }

    /// The node `id` as its concrete type, for reading its counters after a run.
    pub fn get<T: Node>(&self, id: NodeId) -> Option<&T> {
        self.node(id).as_any().downcast_ref::<T>()
    }

    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }

    /// Scheduled events taken off the queue. Packets handed between nodes in the same
    /// instant are calls, not events, and are not counted.
    pub fn events_processed(&self) -> u64 {
        self.parts.iter().map(|p| p.events_processed).sum()
    }

    /// Run every event due before `end_ns`, then set the clock to `end_ns`.
    pub fn run_until(&mut self, end_ns: u64) {
        for part in &mut self.parts {
            part.run_end_ns = end_ns;
        }
        if !self.started {
            self.started = true;
            for part in &mut self.parts {
                part.start();
            }
        }
        match self.parts.as_mut_slice() {
            [only] => only.run_until(end_ns),
            [first, second] => {
                let plan = Windows {
                    from_ns: self.now_ns,
                    end_ns,
                    window_ns: self.window_ns,
                    lookahead_ns: self.lookahead_ns,
                };
                let meeting = Meeting::default();
                self.window_ns = std::thread::scope(|s| {
                    s.spawn(|| drive(second, 1, &plan, &meeting));
                    drive(first, 0, &plan, &meeting)
                });
            }
            _ => unreachable!("one part or two"),
        }
        self.now_ns = self.now_ns.max(end_ns);
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

    #[test]
    fn windows_grow_at_most_twofold_toward_the_packets_asked_and_stay_within_the_lookahead() {
        let plan = Windows {
            from_ns: 0,
            end_ns: 1_000_000_000,
            window_ns: 1_000_000,
            lookahead_ns: 10_000_000,
        };
        // Half the packets asked: twice as long; a quarter: still only twice.
        assert_eq!(plan.next(1_000_000, TRADED_PER_WINDOW / 2), 2_000_000);
        assert_eq!(plan.next(1_000_000, TRADED_PER_WINDOW / 4), 2_000_000);
        // Twice the packets asked: half as long, and never below the shortest.
        assert_eq!(plan.next(1_000_000, TRADED_PER_WINDOW * 2), 500_000);
        assert_eq!(plan.next(1_000_000, u64::MAX), MIN_WINDOW_NS);
        // Nothing traded: as long as the lookahead allows.
        assert_eq!(plan.next(8_000_000, 0), 10_000_000);
    }

    /// Panics at its first timer, `at_ns`.
    struct Faulty {
        at_ns: u64,
    }

    impl Node for Faulty {
        fn on_packet(&mut self, _pkt: Packet, _arrive_ns: u64, _ctx: &mut Ctx<'_>) {}
        fn on_timer(&mut self, _token: u64, _ctx: &mut Ctx<'_>) {
            panic!("a node's bug");
        }
        fn start(&mut self, ctx: &mut Ctx<'_>) {
            ctx.schedule(self.at_ns, 0);
        }
        fn as_any(&self) -> &dyn Any {
            self
        }
    }

    #[test]
    fn a_part_that_panics_takes_the_run_down_with_it_rather_than_leave_the_other_waiting() {
        let mut sim = Sim::new();
        sim.add(Box::new(Faulty {
            at_ns: u64::MAX - 1,
        }));
        sim.add(Box::new(Faulty { at_ns: 2_500 }));
        sim.split(&[1], 1_000);
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| sim.run_until(10_000)));
        assert!(run.is_err());
    }
}
