//! Building the simulated testbed from a resolved scenario, running it interval by
//! interval, and reporting in the shape of iperf3's JSON.
//!
//! Topology: sender host -> forward link (the bottleneck: rate, delay, queue, loss, cross
//! traffic) -> [receiver interface, when the receiver's bus is slower than the path] ->
//! receiver host -> reverse link (same rate and delay, its own queue and loss) -> sender
//! host. On a credit-based path the forward link is a lossless credit link whose far end
//! is a second one, the far buffer, feeding the receiver at its interface's rate.

use std::time::Instant;

use serde::Serialize;

use crate::cc::{CcKind, Kernel, Window};
use crate::credit::{CreditLink, CreditLinkConfig, IB_CREDIT_BLOCK_BYTES};
use crate::engine::Sim;
use crate::event::NodeId;
use crate::host::{Endpoint, Host};
use crate::transport::Transport;
use longhaul_link::Loss;

use crate::link::{CbrSource, DelayLine, Link, LinkConfig};
use crate::scenario::{HostConfig, Resolved};
use crate::tcp::receiver::{ReceiverConfig, TcpReceiver};
use crate::tcp::sender::{SenderConfig, TcpSender};

const NS_PER_S: f64 = 1e9;
const NS_PER_MS: f64 = 1e6;
/// Receive ring of a NIC, in full frames, when the receiver's bus is the bottleneck.
const RX_RING_FRAMES: u64 = 4096;
/// The shortest one-way delay run on two threads (`Sim::split`): below it the two
/// sides would meet too often for what each does between meetings (at 10 Gb/s a
/// millisecond of the path is about 1,200 events, some 0.1 ms of work).
const MIN_LOOKAHEAD_NS: u64 = 1_000_000;

/// splitmix64: independent seeds for each random stream from the scenario's seed.
pub fn derive_seed(seed: u64, stream: u64) -> u64 {
    let mut z = seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The nodes of one simulated testbed.
pub struct Testbed {
    pub sim: Sim,
    pub sender: NodeId,
    pub receiver: NodeId,
    pub links: Vec<NodeId>,
    /// Each longer flow group's stretch beyond the bottleneck.
    pub delays: Vec<NodeId>,
    /// The forward path's credit links, on a credit-based path.
    pub credit_links: Vec<NodeId>,
    /// Whether each flow, by id, carries data from the receiving host back.
    pub reverse: Vec<bool>,
    pub cross: Option<NodeId>,
}

pub(crate) fn ns(ms: f64) -> u64 {
    (ms * NS_PER_MS).round() as u64
}

/// The group of each flow, by flow id: groups take consecutive ids in their order.
fn group_of_flows(r: &Resolved) -> Vec<usize> {
    r.flows
        .iter()
        .enumerate()
        .flat_map(|(g, group)| std::iter::repeat_n(g, group.streams as usize))
        .collect()
}

/// How long after its connection opens a flow's data may leave. ns-3's
/// `BulkSendApplication` connects when it starts, so its data follows the SYN / SYN-ACK
/// round trip; with millisecond timestamps that phase decides the RTT samples ns-3's
/// controllers see. Linux flows start connected, as iperf3 times them.
fn handshake_ns(kernel: Kernel, rtt_ms: f64) -> u64 {
    if kernel == Kernel::Ns3 { ns(rtt_ms) } else { 0 }
}

/// What a TCP flow is, beside its hosts.
pub(crate) struct TcpFlow {
    pub id: u32,
    pub cc: CcKind,
    pub frame_overhead_bytes: u32,
    pub transfer_bytes: Option<u64>,
    pub start_ms: f64,
    pub rtt_ms: f64,
}

/// A flow's sending end on a host configured as `host`.
pub(crate) fn tcp_sender(flow: &TcpFlow, host: &HostConfig) -> Endpoint {
    let mss = host.mss_bytes();
    let cc = flow.cc.build(
        Window::new(
            mss,
            host.initial_cwnd(),
            host.initial_ssthresh_segments.map(f64::from),
        ),
        host.kernel,
    );
    let config = SenderConfig {
        mss_bytes: mss,
        frame_overhead_bytes: flow.frame_overhead_bytes,
        min_rto_ns: ns(host.min_rto_ms),
        snd_buf_bytes: host.snd_buf_max_bytes,
        transfer_bytes: flow.transfer_bytes,
        kernel: host.kernel,
        start_ns: ns(flow.start_ms),
        handshake_ns: handshake_ns(host.kernel, flow.rtt_ms),
    };
    Endpoint::TcpSender(TcpSender::new(flow.id, config, cc))
}

/// A flow's receiving end on a host configured as `host`.
pub(crate) fn tcp_receiver(flow: &TcpFlow, host: &HostConfig) -> Endpoint {
    let config = ReceiverConfig {
        mss_bytes: host.mss_bytes(),
        frame_overhead_bytes: flow.frame_overhead_bytes,
        delayed_ack: host.delayed_ack,
        delayed_ack_timeout_ns: ns(host.delayed_ack_timeout_ms),
        auto_tuning: host.auto_tuning,
        rcv_buf_bytes: host.rcv_buf_max_bytes,
        kernel: host.kernel,
    };
    Endpoint::TcpReceiver(TcpReceiver::new(flow.id, config))
}

fn reverse_flows(r: &Resolved) -> Vec<bool> {
    group_of_flows(r)
        .iter()
        .map(|&g| r.flows[g].reverse)
        .collect()
}

/// Each flow's two ends: (those on the sending host, those on the receiving host),
/// indexed by flow id. A reverse group's data leaves the receiving host.
fn endpoints(r: &Resolved, group_of: &[usize]) -> (Vec<Endpoint>, Vec<Endpoint>) {
    group_of
        .iter()
        .enumerate()
        .map(|(i, &g)| {
            let flow = TcpFlow {
                id: i as u32,
                cc: r.flows[g].cc,
                frame_overhead_bytes: r.path.frame_overhead_bytes,
                transfer_bytes: r.transfer_bytes,
                start_ms: r.start_ms,
                rtt_ms: r.flows[g].rtt_ms,
            };
            if r.flows[g].reverse {
                (
                    tcp_receiver(&flow, &r.sender),
                    tcp_sender(&flow, &r.receiver),
                )
            } else {
                (
                    tcp_sender(&flow, &r.sender),
                    tcp_receiver(&flow, &r.receiver),
                )
            }
        })
        .unzip()
}

/// Each group longer than the path gets a delay line (node id, extra one-way delay)
/// numbered from `first_id`; the bottleneck routes its flows through it. No routes when
/// every flow has the path's RTT.
fn plan_delays(
    r: &Resolved,
    group_of: &[usize],
    first_id: NodeId,
    fwd_next: NodeId,
) -> (Vec<Option<(NodeId, u64)>>, Vec<NodeId>) {
    let mut next_id = first_id;
    let delay_ids: Vec<Option<(NodeId, u64)>> = r
        .flows
        .iter()
        .map(|group| {
            let extra_ns = ns(group.rtt_ms - r.path.rtt_ms);
            (extra_ns > 0).then(|| {
                next_id += 1;
                (next_id - 1, extra_ns)
            })
        })
        .collect();
    let routes = if next_id == first_id {
        Vec::new()
    } else {
        group_of
            .iter()
            .map(|&g| delay_ids[g].map_or(fwd_next, |(id, _)| id))
            .collect()
    };
    (delay_ids, routes)
}

/// How many threads a run may use: two splits the path at its links (`Sim::split`)
/// where the path is long enough, with the same results as one in every case tested.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threads {
    One,
    Two,
}

pub fn build(r: &Resolved, threads: Threads) -> Testbed {
    if let Some(far_bytes) = r.path.credit_buffer_bytes {
        return build_credit_path(r, far_bytes);
    }
    let one_way_ns = ns(r.path.rtt_ms / 2.0);
    let rate_bps = r.path.rate_bps as u64;
    let receiver_rate = r.receiver.egress_rate_bps();
    let needs_rx_nic = receiver_rate < r.path.rate_bps;
    // Node ids, in the order they are added.
    let sender_id = 0;
    let fwd_id = 1;
    let receiver_id = 2;
    let rev_id = 3;
    let rx_nic_id = needs_rx_nic.then_some(4);
    let cross_id = (r.path.cross_traffic_bps > 0.0).then_some(if needs_rx_nic { 5 } else { 4 });

    let group_of = group_of_flows(r);
    let (senders, receivers) = endpoints(r, &group_of);

    let mut sim = Sim::new();
    // Trains (`Link::with_trains`) where a host has one way in and is the only one to
    // feed the link it sends on, which it may then feed ahead of time. The sender's
    // way in is the return link, but the cross traffic feeds its forward link in
    // batches, and what is ahead of what there is the order of the calls. The
    // receiver's is the forward link, or the interface after it, unless delay lines
    // bring some flows in by other ways.
    let trains_back = cross_id.is_none();
    let sender =
        Host::new(fwd_id, r.sender.egress_rate_bps() as u64, senders).on_kernel(r.sender.kernel);
    sim.add(Box::new(if trains_back {
        sender.with_one_way_in(rev_id, sender_id)
    } else {
        sender
    }));
    let fwd = LinkConfig {
        rate_bps,
        delay_ns: one_way_ns,
        queue_bytes: r.path.queue_bytes,
        loss: r.path.loss,
    };
    let fwd_next = rx_nic_id.unwrap_or(receiver_id);
    // The groups' delay lines are added after every other node.
    let first_delay_id = 4 + usize::from(needs_rx_nic) + usize::from(cross_id.is_some());
    let (delay_ids, routes) = plan_delays(r, &group_of, first_delay_id, fwd_next);
    let delays: Vec<NodeId> = delay_ids.iter().flatten().map(|&(id, _)| id).collect();
    let trains = delays.is_empty();
    let mut fwd_link = Link::new(fwd, fwd_next, derive_seed(r.seed, 1)).with_routes(routes);
    if trains {
        fwd_link = fwd_link.with_trains();
    }
    sim.add(Box::new(fwd_link));
    let receiver_way_in = trains.then_some(rx_nic_id.unwrap_or(fwd_id));
    add_receiver_and_return(
        &mut sim,
        r,
        receivers,
        (receiver_id, sender_id),
        (receiver_way_in, trains_back),
    );
    let mut links = vec![fwd_id, rev_id];
    if let Some(id) = rx_nic_id {
        let ring = RX_RING_FRAMES * u64::from(r.receiver.mtu_bytes + r.path.frame_overhead_bytes);
        let nic = LinkConfig {
            rate_bps: receiver_rate as u64,
            delay_ns: 0,
            queue_bytes: ring,
            loss: Loss::NONE,
        };
        let nic = Link::new(nic, receiver_id, 0);
        let nic = if trains { nic.with_trains() } else { nic };
        assert_eq!(sim.add(Box::new(nic)), id);
        links.push(id);
    }
    if let Some(id) = cross_id {
        let cbr = CbrSource::new(
            fwd_id,
            r.path.cross_traffic_bps as u64,
            r.path.cross_traffic_packet_bytes,
        );
        assert_eq!(sim.add(Box::new(cbr)), id);
    }
    for &(id, extra_ns) in delay_ids.iter().flatten() {
        assert_eq!(sim.add(Box::new(DelayLine::new(extra_ns, fwd_next))), id);
    }
    if threads == Threads::Two && one_way_ns >= MIN_LOOKAHEAD_NS && cross_id.is_none() {
        // The sender and the return link on one thread, the forward link and everything
        // after it to the receiver on the other: the two links' delay bounds the window,
        // and each link has one host feeding it, so it is offered its packets in the
        // order it would be on one thread. Not with the constant-rate cross traffic,
        // which feeds the forward link from the receiving side in batches, interleaved
        // with the sender's packets by the order of the calls.
        let receiving_side: Vec<NodeId> = [fwd_id, receiver_id]
            .into_iter()
            .chain(rx_nic_id)
            .chain(delays.iter().copied())
            .collect();
        sim.split(&receiving_side, one_way_ns);
    }
    Testbed {
        sim,
        sender: sender_id,
        receiver: receiver_id,
        links,
        delays,
        credit_links: Vec::new(),
        reverse: reverse_flows(r),
        cross: cross_id,
    }
}

/// The receiving host (node `receiver`), and after it the reverse link back to the
/// sender (node `receiver + 1`: the path's rate and delay, its own queue and loss).
/// `trains`: the receiver's only way in, whose trains it takes, and whether the sender
/// takes the reverse link's (`Link::with_trains`).
fn add_receiver_and_return(
    sim: &mut Sim,
    r: &Resolved,
    receivers: Vec<Endpoint>,
    (receiver, sender): (NodeId, NodeId),
    (way_in, trains_back): (Option<NodeId>, bool),
) {
    let rate_bps = r.receiver.egress_rate_bps() as u64;
    let mut host = Host::new(receiver + 1, rate_bps, receivers).on_kernel(r.receiver.kernel);
    if let Some(link) = way_in {
        host = host.with_one_way_in(link, receiver);
    }
    assert_eq!(sim.add(Box::new(host)), receiver);
    let rev = LinkConfig {
        rate_bps: r.path.rate_bps as u64,
        delay_ns: ns(r.path.rtt_ms / 2.0),
        queue_bytes: r.path.reverse_queue_bytes,
        loss: r.path.reverse_loss,
    };
    let back = Link::new(rev, sender, derive_seed(r.seed, 2));
    sim.add(Box::new(if trains_back {
        back.with_trains()
    } else {
        back
    }));
}

/// sender -> credit link (the path: rate, delay, the near buffer `queue_bytes`) -> credit
/// link (the far buffer, at the receiver's interface rate) -> receiver -> reverse link.
fn build_credit_path(r: &Resolved, far_bytes: u64) -> Testbed {
    let (sender_id, fwd_id, receiver_id, rev_id, far_id) = (0, 1, 2, 3, 4);
    let one_way_ns = ns(r.path.rtt_ms / 2.0);
    let rate_bps = r.path.rate_bps as u64;
    let frame_bytes = r.sender.mtu_bytes + r.path.frame_overhead_bytes;
    let group_of = group_of_flows(r);
    let (senders, receivers) = endpoints(r, &group_of);
    let mut sim = Sim::new();
    let sender = Host::new(fwd_id, r.sender.egress_rate_bps() as u64, senders).with_link_credit(
        r.path.queue_bytes,
        IB_CREDIT_BLOCK_BYTES,
        frame_bytes,
    );
    sim.add(Box::new(sender));
    let fwd = CreditLinkConfig {
        rate_bps,
        delay_ns: one_way_ns,
        input_buffer_bytes: r.path.queue_bytes,
        next_buffer_bytes: Some(far_bytes),
        block_bytes: IB_CREDIT_BLOCK_BYTES,
    };
    sim.add(Box::new(CreditLink::new(fwd, far_id, Some(sender_id))));
    // The sender also hears from the credit link: no trains back.
    add_receiver_and_return(
        &mut sim,
        r,
        receivers,
        (receiver_id, sender_id),
        (None, false),
    );
    let far = CreditLinkConfig {
        rate_bps: (r.receiver.egress_rate_bps() as u64).min(rate_bps),
        delay_ns: 0,
        input_buffer_bytes: far_bytes,
        next_buffer_bytes: None,
        block_bytes: IB_CREDIT_BLOCK_BYTES,
    };
    assert_eq!(
        sim.add(Box::new(CreditLink::new(far, receiver_id, Some(fwd_id)))),
        far_id
    );
    Testbed {
        sim,
        sender: sender_id,
        receiver: receiver_id,
        links: vec![rev_id],
        delays: Vec::new(),
        credit_links: vec![fwd_id, far_id],
        reverse: reverse_flows(r),
        cross: None,
    }
}

/// One stream (or the sum) over one interval, as iperf3 reports it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IntervalStream {
    pub socket: u32,
    pub start: f64,
    pub end: f64,
    pub seconds: f64,
    pub bytes: u64,
    pub bits_per_second: f64,
    pub retransmits: u64,
    pub snd_cwnd: u64,
    /// Smoothed RTT at the end of the interval, microseconds (as iperf3).
    pub rtt: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sum {
    pub start: f64,
    pub end: f64,
    pub seconds: f64,
    pub bytes: u64,
    pub bits_per_second: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Interval {
    pub streams: Vec<IntervalStream>,
    pub sum: Sum,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EndStream {
    pub sender: Sum,
    pub receiver: Sum,
    pub fast_recoveries: u64,
    pub timeouts: u64,
    pub max_rcv_window_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct End {
    /// The forward flows: what the run measures.
    pub streams: Vec<EndStream>,
    pub sum_sent: Sum,
    pub sum_received: Sum,
    /// Reverse groups' flows (data from the receiving host back), when there are any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reverse_streams: Vec<EndStream>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sum_reverse_received: Option<Sum>,
}

/// Whole-run counters. `data_*` are TCP payload bytes and obey conservation:
/// sent = delivered + dropped + in flight.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Counters {
    pub events_processed: u64,
    pub data_bytes_sent: u64,
    pub data_bytes_delivered: u64,
    pub data_bytes_dropped: u64,
    pub data_bytes_in_flight: u64,
    pub conserved: bool,
    pub packets_dropped_queue: u64,
    pub packets_dropped_line: u64,
    pub max_queue_bytes: u64,
    pub retransmits: u64,
    pub fast_recoveries: u64,
    pub timeouts: u64,
    pub cross_traffic_packets: u64,
}

/// Wall-clock figures: the only part of a report that differs between equal runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Perf {
    pub wall_s: f64,
    pub simulated_s: f64,
    pub realtime_factor: f64,
    pub events_per_s: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub source: &'static str,
    pub scenario: Resolved,
    pub intervals: Vec<Interval>,
    pub end: End,
    pub counters: Counters,
    pub perf: Perf,
}

/// Per-stream cumulative figures at one instant.
#[derive(Debug, Clone, Copy, Default)]
struct Snapshot {
    received: u64,
    sent: u64,
    retransmits: u64,
    cwnd: u64,
    srtt_ns: u64,
}

/// Flow `i`'s (sending, receiving) ends.
fn flow_ends(t: &Testbed, i: usize) -> (&Endpoint, &Endpoint) {
    let sender: &Host = t.sim.get(t.sender).expect("sender host");
    let receiver: &Host = t.sim.get(t.receiver).expect("receiver host");
    let (a, b) = (&sender.endpoints()[i], &receiver.endpoints()[i]);
    if t.reverse[i] { (b, a) } else { (a, b) }
}

fn snapshot(t: &Testbed) -> Vec<Snapshot> {
    (0..t.reverse.len())
        .map(|i| {
            let (s, r) = flow_ends(t, i);
            let (s, r) = (s.report(), r.report());
            Snapshot {
                sent: s.sent_bytes,
                retransmits: s.retransmits,
                cwnd: s.cwnd_bytes,
                srtt_ns: s.srtt_ns,
                received: r.received_bytes,
            }
        })
        .collect()
}

fn bps(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes as f64 * 8.0 / seconds
    } else {
        0.0
    }
}

pub(crate) fn sum(start: f64, end: f64, bytes: u64, retransmits: Option<u64>) -> Sum {
    Sum {
        start,
        end,
        seconds: end - start,
        bytes,
        bits_per_second: bps(bytes, end - start),
        retransmits,
    }
}

/// The forward flows over one interval (reverse ones are cross traffic, not measured).
fn interval(
    before: &[Snapshot],
    after: &[Snapshot],
    reverse: &[bool],
    start: f64,
    end: f64,
) -> Interval {
    let streams: Vec<IntervalStream> = before
        .iter()
        .zip(after)
        .enumerate()
        .filter(|&(i, _)| !reverse[i])
        .map(|(i, (b, a))| {
            let bytes = a.received - b.received;
            IntervalStream {
                socket: i as u32 + 1,
                start,
                end,
                seconds: end - start,
                bytes,
                bits_per_second: bps(bytes, end - start),
                retransmits: a.retransmits - b.retransmits,
                snd_cwnd: a.cwnd,
                rtt: a.srtt_ns / 1000,
            }
        })
        .collect();
    let bytes = streams.iter().map(|s| s.bytes).sum();
    let retransmits = streams.iter().map(|s| s.retransmits).sum();
    Interval {
        streams,
        sum: sum(start, end, bytes, Some(retransmits)),
    }
}

impl Counters {
    /// Counters of a run that processed `events`, before any node is tallied.
    pub(crate) fn new(events: u64) -> Self {
        Self {
            events_processed: events,
            ..Self::default()
        }
    }

    /// Add what a host sent and received, and its flows' recoveries.
    pub(crate) fn tally_host(&mut self, host: &Host) {
        self.data_bytes_sent += host.counters().data_bytes_sent;
        self.data_bytes_delivered += host.counters().data_bytes_received;
        for e in host.endpoints() {
            let flow = e.report();
            self.retransmits += flow.retransmits;
            self.fast_recoveries += flow.fast_recoveries;
            self.timeouts += flow.timeouts;
        }
    }

    /// Add what a drop-tail link holds and dropped.
    pub(crate) fn tally_link(&mut self, link: &Link) {
        let lc = link.counters();
        self.data_bytes_dropped += lc.data_bytes_dropped;
        self.data_bytes_in_flight += link.data_bytes_in_flight();
        self.packets_dropped_queue += lc.packets_dropped_queue;
        self.packets_dropped_line += lc.packets_dropped_line;
        self.max_queue_bytes = self.max_queue_bytes.max(lc.max_queue_bytes);
    }

    /// Whether every byte sent is delivered, dropped or in flight.
    pub(crate) fn check_conservation(&mut self) {
        self.conserved = self.data_bytes_sent
            == self.data_bytes_delivered + self.data_bytes_dropped + self.data_bytes_in_flight;
    }
}

fn counters(t: &Testbed) -> Counters {
    let mut c = Counters::new(t.sim.events_processed());
    c.cross_traffic_packets = t
        .cross
        .and_then(|id| t.sim.get::<CbrSource>(id))
        .map_or(0, CbrSource::sent_packets);
    for id in [t.sender, t.receiver] {
        c.tally_host(t.sim.get(id).expect("host"));
    }
    for &id in &t.links {
        c.tally_link(t.sim.get(id).expect("link"));
    }
    for &id in &t.delays {
        let line: &DelayLine = t.sim.get(id).expect("delay line");
        c.data_bytes_in_flight += line.data_bytes_in_flight();
    }
    for &id in &t.credit_links {
        let link: &CreditLink = t.sim.get(id).expect("credit link");
        let cc = link.counters();
        c.data_bytes_in_flight += link.data_bytes_in_flight();
        c.data_bytes_dropped += cc.data_bytes_over_credit;
        c.packets_dropped_queue += cc.packets_over_credit;
        c.max_queue_bytes = c.max_queue_bytes.max(cc.max_buffer_bytes);
    }
    c.check_conservation();
    c
}

fn end(t: &Testbed, first: &[Snapshot], last: &[Snapshot], duration_s: f64) -> End {
    let stream = |flow: usize| {
        let (start, stop) = (&first[flow], &last[flow]);
        let (sending, receiving) = flow_ends(t, flow);
        let (sending, receiving) = (sending.report(), receiving.report());
        EndStream {
            sender: sum(
                0.0,
                duration_s,
                stop.sent - start.sent,
                Some(stop.retransmits - start.retransmits),
            ),
            receiver: sum(0.0, duration_s, stop.received - start.received, None),
            fast_recoveries: sending.fast_recoveries,
            timeouts: sending.timeouts,
            max_rcv_window_bytes: receiving.max_rcv_window_bytes,
        }
    };
    let (reverse, forward): (Vec<usize>, Vec<usize>) =
        (0..first.len()).partition(|&i| t.reverse[i]);
    let streams: Vec<EndStream> = forward.into_iter().map(stream).collect();
    let reverse_streams: Vec<EndStream> = reverse.into_iter().map(stream).collect();
    let sent = streams.iter().map(|s| s.sender.bytes).sum();
    let retransmits = streams.iter().filter_map(|s| s.sender.retransmits).sum();
    let received = streams.iter().map(|s| s.receiver.bytes).sum();
    let reverse_received = reverse_streams.iter().map(|s| s.receiver.bytes).sum();
    End {
        sum_reverse_received: (!reverse_streams.is_empty())
            .then(|| sum(0.0, duration_s, reverse_received, None)),
        reverse_streams,
        streams,
        sum_sent: sum(0.0, duration_s, sent, Some(retransmits)),
        sum_received: sum(0.0, duration_s, received, None),
    }
}

/// A run's clock: a warm-up left out, then intervals up to the measured duration.
#[allow(clippy::struct_field_names)] // units in names
pub(crate) struct Schedule {
    pub omit_ns: u64,
    duration_ns: u64,
    interval_ns: u64,
}

impl Schedule {
    pub fn new(omit_s: f64, duration_s: f64, interval_s: f64) -> Self {
        Self {
            omit_ns: (omit_s * NS_PER_S).round() as u64,
            duration_ns: (duration_s * NS_PER_S).round() as u64,
            interval_ns: ((interval_s * NS_PER_S).round() as u64).max(1),
        }
    }

    /// Each interval's (start, end) after the warm-up, in seconds, with the virtual
    /// time its end falls at.
    pub fn intervals(&self) -> impl Iterator<Item = (f64, f64, u64)> + use<> {
        let (omit_ns, duration_ns, interval_ns) =
            (self.omit_ns, self.duration_ns, self.interval_ns);
        (0..duration_ns.div_ceil(interval_ns)).map(move |k| {
            let (at_ns, next_ns) = (k * interval_ns, ((k + 1) * interval_ns).min(duration_ns));
            (
                at_ns as f64 / NS_PER_S,
                next_ns as f64 / NS_PER_S,
                omit_ns + next_ns,
            )
        })
    }

    pub fn simulated_s(&self) -> f64 {
        (self.omit_ns + self.duration_ns) as f64 / NS_PER_S
    }
}

impl Perf {
    /// A run that began at `wall`, simulated `simulated_s` and processed `events`.
    pub(crate) fn since(wall: Instant, simulated_s: f64, events: u64) -> Self {
        let wall_s = wall.elapsed().as_secs_f64();
        Perf {
            wall_s,
            simulated_s,
            realtime_factor: simulated_s / wall_s.max(1e-9),
            events_per_s: events as f64 / wall_s.max(1e-9),
        }
    }
}

/// Run a resolved scenario to the end and report, on two threads where it can.
pub fn run(r: &Resolved) -> Report {
    run_with(r, Threads::Two)
}

pub fn run_with(r: &Resolved, threads: Threads) -> Report {
    let wall = Instant::now();
    let mut t = build(r, threads);
    let schedule = Schedule::new(r.omit_s, r.duration_s, r.interval_s);
    t.sim.run_until(schedule.omit_ns);
    let first = snapshot(&t);
    let mut before = first.clone();
    let mut intervals = Vec::new();
    for (start, end, until_ns) in schedule.intervals() {
        t.sim.run_until(until_ns);
        let after = snapshot(&t);
        intervals.push(interval(&before, &after, &t.reverse, start, end));
        before = after;
    }
    let end = end(&t, &first, &before, r.duration_s);
    let counters = counters(&t);
    Report {
        source: "simulated",
        scenario: r.clone(),
        intervals,
        end,
        perf: Perf::since(wall, schedule.simulated_s(), counters.events_processed),
        counters,
    }
}
