//! A host: transport endpoints ([`Transport`]) behind one network interface.
//!
//! The interface sends at min(NIC rate, bus ceiling) and is modelled inside the host: each
//! packet's last bit leaves at `max(now, nic free) + size / rate`, and the packet is handed
//! to the first link with that arrival time, so the host needs no event per packet. Like
//! Linux's TCP small queues, a sender only hands the interface a packet while less than
//! `NIC_HORIZON_BYTES` are waiting in it; so a host slower than the path (a PCI-X bus)
//! holds data back rather than dropping it, and its window stops growing, not collapsing.
//!
//! In front of a lossless credit link ([`crate::credit`]) the interface also sends only
//! against the link's credit, so a full buffer downstream holds data in the host.
//!
//! Timers are lazy: each endpoint has at most one wake-up in the event heap; when it fires
//! early (the deadline moved later) it is re-armed, so restarting a timer on every ACK
//! costs nothing.
//!
//! Packets too need no event each where a host has one way in (`Host::with_one_way_in`):
//! its link hands them on in trains, and the host takes each at its arrival time at once
//! when nothing of its own is due before it (its own timers are all it could miss),
//! otherwise at its next own event. Packets and the host's events are then taken in the
//! order the event queue would have given them one event each, ties included.

use std::any::Any;
use std::collections::VecDeque;

use crate::cc::Kernel;
use crate::credit::charge_bytes;
use crate::engine::{Ctx, Node};
use crate::event::NodeId;
use crate::hurricane::{HurricaneReceiver, HurricaneSender};
use crate::ib::perftest::IbEndpoint;
use crate::packet::{Kind, Packet, RouteStep};
use crate::tcp::receiver::TcpReceiver;
use crate::tcp::sender::TcpSender;
use crate::transport::{FlowReport, Transport};

const PS_PER_NS: u64 = 1_000;
const PS_PER_S: u128 = 1_000_000_000_000;
/// How far ahead of the wire a sender may queue in the interface.
pub const NIC_HORIZON_BYTES: u64 = 64 * 1024;
/// A horizon no interface reaches (half the range, so adding the clock cannot overflow).
const UNBOUNDED_HORIZON_PS: u64 = u64::MAX / 2;
const NIC_TOKEN: u64 = u64::MAX;

/// One end of a flow, indexed by its flow id: each [`Transport`] the simulator has, in
/// an enum rather than a `Box<dyn Transport>` so the per-packet calls are static (a
/// trait object cost 5-11 % of the simulator's speed). A new transport adds a variant.
// Aligned, like `Host` and `Link`, to two cache lines (what x86's adjacent-line
// prefetcher moves together): on two threads a sender's and a receiver's state, written
// at every packet, must not share a line, or the two cores trade it back and forth.
#[repr(align(128))]
pub enum Endpoint {
    TcpSender(TcpSender),
    TcpReceiver(TcpReceiver),
    /// Boxed: an InfiniBand end is larger than TCP's, and TCP's stay compact.
    Ib(Box<IbEndpoint>),
    HurricaneSender(Box<HurricaneSender>),
    HurricaneReceiver(Box<HurricaneReceiver>),
}

macro_rules! each_endpoint {
    ($endpoint:expr, $t:ident => $call:expr) => {
        match $endpoint {
            Endpoint::TcpSender($t) => $call,
            Endpoint::TcpReceiver($t) => $call,
            Endpoint::Ib($t) => $call,
            Endpoint::HurricaneSender($t) => $call,
            Endpoint::HurricaneReceiver($t) => $call,
        }
    };
}

impl Transport for Endpoint {
    #[inline]
    fn handle_packet(&mut self, now_ns: u64, pkt: &Packet) {
        each_endpoint!(self, t => t.handle_packet(now_ns, pkt));
    }
    #[inline]
    fn poll_transmit(&mut self, now_ns: u64) -> Option<Packet> {
        each_endpoint!(self, t => Transport::poll_transmit(t, now_ns))
    }
    #[inline]
    fn poll_timeout(&self) -> Option<u64> {
        each_endpoint!(self, t => Transport::poll_timeout(t))
    }
    #[inline]
    fn handle_timeout(&mut self, now_ns: u64) {
        each_endpoint!(self, t => t.handle_timeout(now_ns));
    }
    fn held_by_interface(&self) -> bool {
        each_endpoint!(self, t => t.held_by_interface())
    }
    #[inline]
    fn packet_left(&mut self, left_ns: u64) {
        each_endpoint!(self, t => t.packet_left(left_ns));
    }
    fn report(&self) -> FlowReport {
        each_endpoint!(self, t => t.report())
    }
}

/// At most one pending heap event per timer.
#[derive(Debug, Clone, Copy, Default)]
struct LazyTimer {
    pending_ns: Option<u64>,
}

impl LazyTimer {
    /// Make sure a wake-up at or before `deadline` is pending; returns one to schedule.
    fn want(&mut self, deadline: Option<u64>) -> Option<u64> {
        let deadline = deadline?;
        match self.pending_ns {
            Some(p) if p <= deadline => None,
            _ => {
                self.pending_ns = Some(deadline);
                Some(deadline)
            }
        }
    }

    /// A wake-up at `at_ns` fired; whether it is the one this timer counts on.
    fn fired(&mut self, at_ns: u64) -> bool {
        if self.pending_ns == Some(at_ns) {
            self.pending_ns = None;
            true
        } else {
            false
        }
    }
}

/// The host's own wake-ups, one timer per endpoint and the interface's, and the earliest
/// one pending: a host with one way in asks for it at every packet, and keeping it
/// rather than scanning every timer there took a tenth off `twenty_flows`' instructions
/// (callgrind). A timer's pending wake-up only ever moves earlier or fires, so the
/// earliest needs a scan only when it fires.
#[derive(Debug)]
struct OwnTimers {
    endpoints: Vec<LazyTimer>,
    nic: LazyTimer,
    earliest_ns: u64,
}

impl OwnTimers {
    fn new(endpoints: usize) -> Self {
        Self {
            endpoints: vec![LazyTimer::default(); endpoints],
            nic: LazyTimer::default(),
            earliest_ns: u64::MAX,
        }
    }

    /// The timer a token names: `NIC_TOKEN`, or an endpoint's index.
    fn timer(&mut self, token: u64) -> &mut LazyTimer {
        if token == NIC_TOKEN {
            &mut self.nic
        } else {
            &mut self.endpoints[token as usize]
        }
    }

    /// `LazyTimer::want` of the timer `token` names.
    fn want(&mut self, token: u64, deadline: Option<u64>) -> Option<u64> {
        let at = self.timer(token).want(deadline)?;
        self.earliest_ns = self.earliest_ns.min(at);
        Some(at)
    }

    /// `LazyTimer::fired` of the timer `token` names.
    fn fired(&mut self, token: u64, at_ns: u64) -> bool {
        let fired = self.timer(token).fired(at_ns);
        if fired && at_ns == self.earliest_ns {
            self.earliest_ns = self.scan_earliest_ns();
        }
        fired
    }

    /// The earliest wake-up pending, from every timer.
    fn scan_earliest_ns(&self) -> u64 {
        self.endpoints
            .iter()
            .chain(std::iter::once(&self.nic))
            .filter_map(|t| t.pending_ns)
            .min()
            .unwrap_or(u64::MAX)
    }

    /// The earliest wake-up pending (`u64::MAX`: none).
    fn earliest_ns(&self) -> u64 {
        self.earliest_ns
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostCounters {
    pub data_bytes_sent: u64,
    pub data_bytes_received: u64,
    pub packets_sent: u64,
    pub packets_received: u64,
}

/// Credit the first hop grants, when it is a credit link.
#[derive(Debug, Clone, Copy)]
struct LinkCredit {
    bytes: u64,
    block_bytes: u32,
    /// The largest packet this host sends: the credit it needs before it asks a flow.
    frame_bytes: u32,
    waiting: bool,
}

/// Aligned to two cache lines: see `Endpoint`.
#[repr(align(128))]
pub struct Host {
    egress: NodeId,
    credit: Option<LinkCredit>,
    /// On a network: each endpoint's flow id, and each flow id's endpoint (`u32::MAX`
    /// for flows this host has no end of). Empty: endpoint `i` is flow `i`.
    flow_ids: Vec<u32>,
    slot_of_flow: Vec<u32>,
    /// Whether each endpoint is its flow's receiving end (its packets travel back).
    back: Vec<bool>,
    rate_bps: u64,
    nic_free_ps: u64,
    horizon_ps: u64,
    nic_blocked: bool,
    endpoints: Vec<Endpoint>,
    /// Each endpoint's `held_by_interface`, asked once.
    held: Vec<bool>,
    timers: OwnTimers,
    round_robin: usize,
    counters: HostCounters,
    way_in: Option<OneWayIn>,
}

/// A host whose packets all come from one link that hands them on in trains
/// (`Link::with_trains`), each due at its own arrival time, possibly later than now. The
/// host takes each at that time, at once, as long as nothing of its own is due before
/// (nothing else can reach it), and holds the rest, in order, until its next event.
#[derive(Debug)]
struct OneWayIn {
    /// Whether a packet and an event of the host's own due in the same nanosecond are
    /// taken packet first: they would be on a link that woke for it, if the link's node
    /// id is the smaller (`crate::event`'s order).
    packet_first_on_tie: bool,
    held: VecDeque<(u64, Packet)>,
}

impl Host {
    /// A host sending through `egress` at `rate_bps`, with endpoints indexed by flow id.
    pub fn new(egress: NodeId, rate_bps: u64, endpoints: Vec<Endpoint>) -> Self {
        let horizon_ps =
            (u128::from(NIC_HORIZON_BYTES) * 8 * PS_PER_S / u128::from(rate_bps)) as u64;
        let n = endpoints.len();
        Self {
            egress,
            credit: None,
            flow_ids: Vec::new(),
            slot_of_flow: Vec::new(),
            back: Vec::new(),
            rate_bps,
            nic_free_ps: 0,
            horizon_ps,
            nic_blocked: false,
            held: endpoints.iter().map(Transport::held_by_interface).collect(),
            endpoints,
            timers: OwnTimers::new(n),
            round_robin: 0,
            counters: HostCounters::default(),
            way_in: None,
        }
    }

    /// Take packets due later than now, as a link with trains hands them on: the host
    /// promises that `link` is its only way in (no other node sends it anything), and
    /// `me` is its own node id.
    #[must_use]
    pub fn with_one_way_in(mut self, link: NodeId, me: NodeId) -> Self {
        self.way_in = Some(OneWayIn {
            packet_first_on_tie: link < me,
            held: VecDeque::new(),
        });
        self
    }

    /// Send only against the credit of the credit link `egress` is: its input buffer of
    /// `buffer_bytes`, counted in `block_bytes` blocks; `frame_bytes` is the largest
    /// packet this host sends.
    #[must_use]
    pub fn with_link_credit(
        mut self,
        buffer_bytes: u64,
        block_bytes: u32,
        frame_bytes: u32,
    ) -> Self {
        self.credit = Some(LinkCredit {
            bytes: buffer_bytes,
            block_bytes,
            frame_bytes,
            waiting: false,
        });
        self
    }

    /// The interface of a host on `kernel`. ns-3's sockets hand each segment to the
    /// device's queue as they send it (`TcpSocketBase::SendDataPacket`, through
    /// `Ipv4L3Protocol::Send` to the device's drop-tail queue), with no TCP small queues: a
    /// flow's whole window enters the interface at once, flows in the order they send, so
    /// an ns-3 host has no horizon. Linux keeps `NIC_HORIZON_BYTES`.
    #[must_use]
    pub fn on_kernel(mut self, kernel: Kernel) -> Self {
        if kernel == Kernel::Ns3 {
            self.horizon_ps = UNBOUNDED_HORIZON_PS;
        }
        self
    }

    /// Endpoints that are not indexed by flow id: `ends[i]` = (flow id, whether it is the
    /// flow's receiving end), for a host among many on a network.
    #[must_use]
    pub fn with_flow_ids(mut self, ends: &[(u32, bool)]) -> Self {
        assert_eq!(ends.len(), self.endpoints.len(), "one flow id per endpoint");
        let flows = ends.iter().map(|&(f, _)| f as usize + 1).max().unwrap_or(0);
        self.slot_of_flow = vec![u32::MAX; flows];
        for (slot, &(flow, _)) in ends.iter().enumerate() {
            self.slot_of_flow[flow as usize] = slot as u32;
        }
        self.flow_ids = ends.iter().map(|&(f, _)| f).collect();
        self.back = ends.iter().map(|&(_, b)| b).collect();
        self
    }

    /// The endpoint of `flow` on this host, if it has one.
    fn slot(&self, flow: u32) -> Option<usize> {
        if self.slot_of_flow.is_empty() {
            return Some(flow as usize).filter(|&i| i < self.endpoints.len());
        }
        match self.slot_of_flow.get(flow as usize) {
            Some(&slot) if slot != u32::MAX => Some(slot as usize),
            _ => None,
        }
    }

    /// Flow id of endpoint `i`.
    pub fn flow_id(&self, i: usize) -> u32 {
        self.flow_ids.get(i).copied().unwrap_or(i as u32)
    }

    pub fn endpoints(&self) -> &[Endpoint] {
        &self.endpoints
    }

    pub fn counters(&self) -> &HostCounters {
        &self.counters
    }

    fn nic_has_room(&self, now_ns: u64) -> bool {
        self.nic_free_ps <= now_ns * PS_PER_NS + self.horizon_ps
    }

    /// Whether the next hop has buffer for the largest packet; if not, wait for credit.
    fn has_credit(&mut self) -> bool {
        let Some(credit) = &mut self.credit else {
            return true;
        };
        let needed = charge_bytes(credit.frame_bytes, credit.block_bytes);
        credit.waiting = credit.bytes < needed;
        !credit.waiting
    }

    fn transmit(&mut self, i: usize, mut pkt: Packet, ctx: &mut Ctx<'_>) {
        // The egress link is the first of the route; a switch takes the next.
        pkt.route = RouteStep::first(self.back.get(i).copied().unwrap_or(false));
        if let Some(credit) = &mut self.credit {
            credit.bytes -= charge_bytes(pkt.wire_bytes, credit.block_bytes);
        }
        // u64 arithmetic: a frame's bits in picoseconds fit (65,535 * 8e12 < 2^64), and a
        // u128 division is a library call on every packet.
        let ser_ps = u64::from(pkt.wire_bytes) * 8 * PS_PER_S as u64 / self.rate_bps;
        self.nic_free_ps = self.nic_free_ps.max(ctx.now_ns * PS_PER_NS) + ser_ps;
        if pkt.kind == Kind::Data {
            self.counters.data_bytes_sent += u64::from(pkt.len);
        }
        self.counters.packets_sent += 1;
        let left_ns = self.nic_free_ps.div_ceil(PS_PER_NS);
        self.endpoints[i].packet_left(left_ns);
        ctx.send(self.egress, pkt, left_ns);
    }

    /// The interface is full: wake when half of what waits in it has gone. Like a NIC's
    /// coalesced transmit completions, one wake-up then refills it with many packets
    /// (about 21 full frames at MTU 1500) instead of one event per packet.
    fn block_nic(&mut self, ctx: &mut Ctx<'_>) {
        self.nic_blocked = true;
        let at_ns = self
            .nic_free_ps
            .saturating_sub(self.horizon_ps / 2)
            .div_ceil(PS_PER_NS);
        if let Some(at) = self.timers.want(NIC_TOKEN, Some(at_ns.max(ctx.now_ns))) {
            ctx.schedule(at, NIC_TOKEN);
        }
    }

    /// Let flow `i` send what its windows allow; returns whether it sent anything.
    fn serve(&mut self, i: usize, budget: usize, ctx: &mut Ctx<'_>) -> bool {
        let mut sent = 0;
        while sent < budget {
            if !self.nic_has_room(ctx.now_ns) {
                self.block_nic(ctx);
                break;
            }
            if !self.has_credit() {
                break;
            }
            let Some(pkt) = self.endpoints[i].poll_transmit(ctx.now_ns) else {
                break;
            };
            self.transmit(i, pkt, ctx);
            sent += 1;
        }
        sent > 0
    }

    /// Serve every flow one packet at a time in turn until the interface fills or nobody
    /// has anything to send, then arm each flow's timer once. A send never brings a
    /// flow's deadline before one already pending, so arming after every packet (a refill
    /// is about 21 of them) scheduled nothing more, for 3 % of the simulator's
    /// instructions.
    fn serve_all(&mut self, ctx: &mut Ctx<'_>) {
        self.nic_blocked = false;
        self.serve_in_turn(ctx);
        for i in 0..self.endpoints.len() {
            self.arm(i, ctx);
        }
    }

    fn serve_in_turn(&mut self, ctx: &mut Ctx<'_>) {
        let n = self.endpoints.len();
        loop {
            let mut progressed = false;
            for k in 0..n {
                let i = (self.round_robin + k) % n;
                progressed |= self.serve(i, 1, ctx);
                if self.nic_blocked {
                    self.round_robin = (i + 1) % n;
                    return;
                }
            }
            if !progressed {
                return;
            }
        }
    }

    fn arm(&mut self, i: usize, ctx: &mut Ctx<'_>) {
        let deadline = self.endpoints[i].poll_timeout();
        // A deadline already past fires now (and must be recorded as now to match).
        if let Some(at) = self
            .timers
            .want(i as u64, deadline.map(|d| d.max(ctx.now_ns)))
        {
            ctx.schedule(at, i as u64);
        }
    }

    /// After flow `i` changed: send if the interface is free (else its wake-up will);
    /// what the interface does not hold back (acknowledgements) leaves at once.
    fn after_change(&mut self, i: usize, ctx: &mut Ctx<'_>) {
        if !self.held[i] {
            while self.has_credit()
                && let Some(pkt) = self.endpoints[i].poll_transmit(ctx.now_ns)
            {
                self.transmit(i, pkt, ctx);
            }
        } else if !self.nic_blocked {
            self.serve(i, usize::MAX, ctx);
        }
        self.arm(i, ctx);
    }
}

impl Node for Host {
    fn on_packet(&mut self, pkt: Packet, arrive_ns: u64, ctx: &mut Ctx<'_>) {
        let Some(way_in) = &self.way_in else {
            // Taken now whenever it arrives: a credit link hands a host its credit early.
            self.take(pkt, ctx);
            return;
        };
        if way_in.held.is_empty() && self.may_take_at(arrive_ns) {
            self.take(pkt, &mut ctx.at(arrive_ns));
        } else if let Some(way_in) = &mut self.way_in {
            way_in.held.push_back((arrive_ns, pkt));
        }
    }

    fn on_timer(&mut self, token: u64, ctx: &mut Ctx<'_>) {
        self.on_own_event(token, ctx);
        self.take_held(ctx);
    }

    fn start(&mut self, ctx: &mut Ctx<'_>) {
        self.serve_all(ctx);
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Host {
    /// Whether a packet arriving at `at_ns` comes before every event of the host's own:
    /// then nothing can change what the host does with it, so it may be taken now.
    fn may_take_at(&self, at_ns: u64) -> bool {
        let own_ns = self.timers.earliest_ns();
        at_ns < own_ns
            || (at_ns == own_ns && self.way_in.as_ref().is_some_and(|w| w.packet_first_on_tie))
    }

    /// Take the held packets that now come before the host's next event of its own.
    fn take_held(&mut self, ctx: &mut Ctx<'_>) {
        loop {
            let Some(&(at_ns, _)) = self.way_in.as_ref().and_then(|w| w.held.front()) else {
                return;
            };
            debug_assert!(at_ns >= ctx.now_ns, "a held packet overdue");
            if !self.may_take_at(at_ns) {
                return;
            }
            let Some((_, pkt)) = self.way_in.as_mut().and_then(|w| w.held.pop_front()) else {
                return;
            };
            self.take(pkt, &mut ctx.at(at_ns));
        }
    }

    /// `pkt` arrives now.
    fn take(&mut self, pkt: Packet, ctx: &mut Ctx<'_>) {
        if pkt.kind == Kind::Credit {
            if let Some(credit) = &mut self.credit {
                credit.bytes += u64::from(pkt.len);
                if std::mem::take(&mut credit.waiting) && !self.nic_blocked {
                    self.serve_all(ctx);
                }
            }
            return;
        }
        self.counters.packets_received += 1;
        if pkt.kind == Kind::Data {
            self.counters.data_bytes_received += u64::from(pkt.len);
        }
        let Some(i) = self.slot(pkt.flow) else {
            return;
        };
        self.endpoints[i].handle_packet(ctx.now_ns, &pkt);
        self.after_change(i, ctx);
    }

    fn on_own_event(&mut self, token: u64, ctx: &mut Ctx<'_>) {
        if !self.timers.fired(token, ctx.now_ns) {
            return;
        }
        if token == NIC_TOKEN {
            self.serve_all(ctx);
            return;
        }
        let i = token as usize;
        self.endpoints[i].handle_timeout(ctx.now_ns);
        self.after_change(i, ctx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::{CcKind, Window};
    use crate::engine::Sim;
    use crate::tcp::sender::SenderConfig;

    proptest::proptest! {
        /// Whatever the host asks of its timers, the earliest it keeps is the earliest
        /// pending: tokens 0-2 are endpoints, 3 the interface.
        #[test]
        fn own_timers_keep_the_earliest_pending(
            steps in proptest::collection::vec((0u64..4, proptest::bool::ANY, 0u64..50), 1..200)
        ) {
            let mut timers = OwnTimers::new(3);
            for (which, fire, at_ns) in steps {
                let token = if which == 3 { NIC_TOKEN } else { which };
                if fire {
                    let pending = timers.timer(token).pending_ns;
                    timers.fired(token, pending.unwrap_or(at_ns));
                } else {
                    timers.want(token, Some(at_ns));
                }
                proptest::prop_assert_eq!(timers.earliest_ns(), timers.scan_earliest_ns());
            }
        }
    }

    /// The interface's far side: the flow of every packet handed to it, in order.
    #[derive(Default)]
    struct Wire {
        flows: Vec<u32>,
    }

    impl Node for Wire {
        fn on_packet(&mut self, pkt: Packet, _arrive_ns: u64, _ctx: &mut Ctx<'_>) {
            self.flows.push(pkt.flow);
        }
        fn on_timer(&mut self, _token: u64, _ctx: &mut Ctx<'_>) {}
        fn as_any(&self) -> &dyn Any {
            self
        }
    }

    /// `count` TCP senders of `cc`, flows 0.., each with `config` and ten segments to
    /// start.
    fn tcp_senders(count: u32, cc: CcKind, config: SenderConfig) -> Vec<Endpoint> {
        (0..count)
            .map(|flow| {
                let cc = cc.build(Window::new(config.mss_bytes, 10.0, None), config.kernel);
                Endpoint::TcpSender(TcpSender::new(flow, config, cc))
            })
            .collect()
    }

    /// Eight flows whose connections open together, ten segments each, through a
    /// 10 Gb/s interface: the order their segments reach the wire.
    fn order_on_the_wire(kernel: Kernel) -> Vec<u32> {
        let config = SenderConfig {
            mss_bytes: 1448,
            frame_overhead_bytes: 2,
            min_rto_ns: 200_000_000,
            snd_buf_bytes: u64::MAX / 4,
            transfer_bytes: None,
            kernel,
            start_ns: 0,
            handshake_ns: 1_000_000,
        };
        let senders = tcp_senders(8, CcKind::Reno, config);
        let mut sim = Sim::new();
        sim.add(Box::new(
            Host::new(1, 10_000_000_000, senders).on_kernel(kernel),
        ));
        sim.add(Box::new(Wire::default()));
        sim.run_until(2_000_000);
        sim.get::<Wire>(1).expect("the wire").flows.clone()
    }

    /// Four flows from 10 Gb/s interfaces over 1 Gb/s x 50 ms with 1e-4 random loss each
    /// way, sender (node 0) -> link (1) -> receiver (2) -> link (3) -> sender, for 4 s;
    /// with `trains`, both links hand on trains and both hosts take them. Each end's
    /// report, each host's counters, and the events taken.
    fn lossy_path(
        trains: bool,
        kernel: Kernel,
        cc: CcKind,
    ) -> (Vec<FlowReport>, Vec<HostCounters>, u64) {
        use crate::link::{Link, LinkConfig};
        use crate::tcp::receiver::{ReceiverConfig, TcpReceiver};
        use longhaul_link::Loss;
        let config = SenderConfig {
            mss_bytes: 1448,
            frame_overhead_bytes: 38,
            min_rto_ns: 200_000_000,
            snd_buf_bytes: 8 << 20,
            transfer_bytes: None,
            kernel,
            start_ns: 0,
            handshake_ns: 50_000_000,
        };
        let senders = tcp_senders(4, cc, config);
        let receivers = (0..4)
            .map(|flow| {
                let config = ReceiverConfig {
                    mss_bytes: 1448,
                    frame_overhead_bytes: 38,
                    delayed_ack: true,
                    delayed_ack_timeout_ns: 40_000_000,
                    auto_tuning: true,
                    rcv_buf_bytes: 6 << 20,
                    kernel,
                };
                Endpoint::TcpReceiver(TcpReceiver::new(flow, config))
            })
            .collect();
        let line = LinkConfig {
            rate_bps: 1_000_000_000,
            delay_ns: 25_000_000,
            queue_bytes: 625_000,
            loss: Loss::random(1e-4),
        };
        let link = |next, seed| {
            let link = Link::new(line, next, seed);
            Box::new(if trains { link.with_trains() } else { link })
        };
        let host = |egress, endpoints, way_in, me| {
            let host = Host::new(egress, 10_000_000_000, endpoints).on_kernel(kernel);
            Box::new(if trains {
                host.with_one_way_in(way_in, me)
            } else {
                host
            })
        };
        let mut sim = Sim::new();
        sim.add(host(1, senders, 3, 0));
        sim.add(link(2, 7));
        sim.add(host(3, receivers, 1, 2));
        sim.add(link(0, 11));
        for second in 1..=4 {
            sim.run_until(second * 1_000_000_000);
        }
        let hosts = [0, 2].map(|id| sim.get::<Host>(id).expect("a host"));
        let reports = hosts
            .iter()
            .flat_map(|h| h.endpoints().iter().map(Transport::report))
            .collect();
        let counters = hosts.iter().map(|h| h.counters().clone()).collect();
        (reports, counters, sim.events_processed())
    }

    /// ns-3's hosts have no horizon in the interface, Linux's do: their own events fall
    /// differently among the packets. Here packets and a host's own events fall due in
    /// the same nanosecond, and which is taken first changes the run (taking the packet
    /// first on the sender, whose way in has the larger id, fails this).
    #[test]
    fn trains_change_when_links_wake_and_nothing_that_happens() {
        for (kernel, cc) in [(Kernel::Linux6, CcKind::Cubic), (Kernel::Ns3, CcKind::Reno)] {
            let (reports, counters, events) = lossy_path(false, kernel, cc);
            let (train_reports, train_counters, train_events) = lossy_path(true, kernel, cc);
            assert!(reports.iter().any(|r| r.retransmits > 0), "{reports:?}");
            assert_eq!(train_reports, reports, "{kernel:?}");
            assert_eq!(train_counters, counters, "{kernel:?}");
            assert!(train_events * 4 < events, "{train_events} against {events}");
        }
    }

    #[test]
    fn an_ns3_host_sends_each_window_whole_in_turn_where_linux_holds_back_and_interleaves() {
        let in_turn: Vec<u32> = (0..8).flat_map(|f| std::iter::repeat_n(f, 10)).collect();
        assert_eq!(order_on_the_wire(Kernel::Ns3), in_turn);
        // 64 KiB ahead of the wire (four windows and a half), then one packet per flow
        // in turn as the interface drains.
        let linux = order_on_the_wire(Kernel::Linux6);
        assert_eq!(linux.len(), 80);
        assert_eq!(linux[..40], in_turn[..40]);
        assert_ne!(linux, in_turn);
    }
}
