//! Many hosts on a graph of switches and duplex links: a topology such as USN's (sites,
//! core and edge switches, OC192 and 10GigE links, hosts at the edges) with TCP flows
//! between any two hosts, each on a route of its own.
//!
//! A flow's route is the list of links it crosses from its sending host to its receiving
//! host: given by link ids (so a loop can leave a switch on one of two parallel circuits
//! and come back on the other, as USN's loops did), or else the path of least delay.
//! Its acknowledgements come back over the same links. Routes are carried by the packet,
//! source-routing style: a switch forwards a packet onto the next link of its flow's
//! route in its direction (`Packet::route`), so one switch can be crossed
//! twice by a loop. Switches forward at once; queueing, rate, delay and loss belong to
//! the links (one drop-tail [`Link`] per direction). A host has one link: its interface.

use std::any::Any;
use std::collections::{BTreeMap, BinaryHeap};
use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::cc::CcKind;
use crate::engine::{Ctx, Node, Sim};
use crate::event::NodeId;
use crate::host::Host;
use crate::link::{Link, LinkConfig};
use crate::packet::{Packet, RouteStep};
use crate::presets;
use crate::run::{
    Counters, Perf, Schedule, Sum, TcpFlow, derive_seed, ns, sum, tcp_receiver, tcp_sender,
};
use crate::scenario::{
    HostConfig, HostSpec, ScenarioError, default_cc, default_interval_s, default_streams, err,
    named_host_preset, non_negative, parse_json, positive, resolve_host,
};
use crate::transport::Transport;
use longhaul_link::Loss;

/// A link's queue when none is given: one bandwidth-delay product of its own round trip,
/// and never less than this many full frames.
const MIN_DEFAULT_QUEUE_FRAMES: u64 = 64;

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkScenario {
    pub duration_s: f64,
    #[serde(default = "default_interval_s")]
    pub interval_s: f64,
    #[serde(default)]
    pub omit_s: f64,
    #[serde(default)]
    pub seed: Option<u64>,
    pub hosts: Vec<NetHostSpec>,
    #[serde(default)]
    pub switches: Vec<String>,
    pub links: Vec<NetLinkSpec>,
    pub flows: Vec<NetFlowSpec>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NetHostSpec {
    pub id: String,
    #[serde(default)]
    pub host_preset: Option<String>,
    /// Fields that override the preset (or the kernel's stock values).
    #[serde(default)]
    pub host: HostSpec,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NetLinkSpec {
    pub id: String,
    /// The two ends: host or switch ids.
    pub a: String,
    pub b: String,
    pub rate_bps: f64,
    /// One-way propagation delay.
    pub delay_ms: f64,
    /// Each direction's queue; absent: one bandwidth-delay product of the link's own
    /// round trip, at least 64 full frames.
    #[serde(default)]
    pub queue_bytes: Option<u64>,
    /// Loss in each direction (independent streams).
    #[serde(default)]
    pub loss: Option<Loss>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NetFlowSpec {
    pub from: String,
    pub to: String,
    #[serde(default = "default_cc")]
    pub cc: CcKind,
    #[serde(default = "default_streams")]
    pub streams: u32,
    #[serde(default)]
    pub start_ms: f64,
    #[serde(default)]
    pub transfer_bytes: Option<u64>,
    /// Link ids from `from` to `to`, in order; absent: the path of least delay.
    #[serde(default)]
    pub route: Option<Vec<String>>,
}

/// A link crossed in one direction: (link index, from `a` to `b`).
type Hop = (usize, bool);

/// A flow group with every value filled in and its route found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NetFlow {
    pub from: String,
    pub to: String,
    pub cc: CcKind,
    pub streams: u32,
    pub start_ms: f64,
    pub transfer_bytes: Option<u64>,
    /// Link ids crossed from `from` to `to`.
    pub route: Vec<String>,
    pub rtt_ms: f64,
    #[serde(skip)]
    hops: Vec<Hop>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NetLink {
    pub id: String,
    pub a: String,
    pub b: String,
    pub rate_bps: f64,
    pub delay_ms: f64,
    pub queue_bytes: u64,
    pub loss: Loss,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NetHost {
    pub id: String,
    pub host: HostConfig,
}

/// A network scenario resolved: every value filled in, every route found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResolvedNetwork {
    pub duration_s: f64,
    pub interval_s: f64,
    pub omit_s: f64,
    pub seed: u64,
    pub hosts: Vec<NetHost>,
    pub switches: Vec<String>,
    pub links: Vec<NetLink>,
    pub flows: Vec<NetFlow>,
}

/// Parse and resolve a network scenario; errors name the field.
pub fn load(json: &str, seed: Option<u64>) -> Result<ResolvedNetwork, ScenarioError> {
    resolve(&parse_json(json)?, seed)
}

/// Names of hosts and switches, each once: host ids map to 0..hosts, switches after.
fn node_names(spec: &NetworkScenario) -> Result<BTreeMap<String, usize>, ScenarioError> {
    let mut names = BTreeMap::new();
    let all = spec
        .hosts
        .iter()
        .map(|h| h.id.clone())
        .chain(spec.switches.iter().cloned());
    for (i, name) in all.enumerate() {
        if name.is_empty() || names.insert(name.clone(), i).is_some() {
            return Err(err(
                "hosts",
                format!("node ids must be unique and non-empty: {name:?}"),
            ));
        }
    }
    Ok(names)
}

fn resolve(spec: &NetworkScenario, seed: Option<u64>) -> Result<ResolvedNetwork, ScenarioError> {
    positive("duration_s", spec.duration_s)?;
    positive("interval_s", spec.interval_s)?;
    non_negative("omit_s", spec.omit_s)?;
    let names = node_names(spec)?;
    let hosts = spec
        .hosts
        .iter()
        .map(|h| {
            let field = format!("hosts.{}.host_preset", h.id);
            let preset = named_host_preset(&field, h.host_preset.as_deref())?;
            Ok(NetHost {
                id: h.id.clone(),
                host: resolve_host(&h.id, preset.as_ref(), &h.host)?,
            })
        })
        .collect::<Result<Vec<_>, ScenarioError>>()?;
    let mtu = hosts.first().map_or(1500, |h| h.host.mtu_bytes);
    if let Some(h) = hosts.iter().find(|h| h.host.mtu_bytes != mtu) {
        return Err(err(
            &format!("hosts.{}.mtu_bytes", h.id),
            "every host must have the same MTU",
        ));
    }
    let frame_bytes = u64::from(mtu + presets::ETHERNET_FRAMING_BYTES);
    let links = spec
        .links
        .iter()
        .map(|l| resolve_link(l, &names, frame_bytes))
        .collect::<Result<Vec<_>, _>>()?;
    let mut link_ids = BTreeMap::new();
    for (k, l) in links.iter().enumerate() {
        if link_ids.insert(l.id.clone(), k).is_some() {
            return Err(err("links", format!("link ids must be unique: {:?}", l.id)));
        }
    }
    for h in &hosts {
        let n = links.iter().filter(|l| l.a == h.id || l.b == h.id).count();
        if n != 1 {
            return Err(err(
                &format!("hosts.{}", h.id),
                format!("a host has one link, its interface; it has {n}"),
            ));
        }
    }
    let graph = Graph::new(&names, &links, hosts.len());
    let flows = spec
        .flows
        .iter()
        .enumerate()
        .map(|(i, f)| resolve_flow(i, f, &graph, &link_ids))
        .collect::<Result<Vec<_>, _>>()?;
    if flows.is_empty() {
        return Err(err("flows", "give at least one flow"));
    }
    let total: u32 = flows.iter().map(|f| f.streams).sum();
    if total > crate::scenario::MAX_STREAMS {
        return Err(err(
            "flows",
            format!("at most {} streams in all", crate::scenario::MAX_STREAMS),
        ));
    }
    Ok(ResolvedNetwork {
        duration_s: spec.duration_s,
        interval_s: spec.interval_s,
        omit_s: spec.omit_s,
        seed: seed.or(spec.seed).unwrap_or(1),
        hosts,
        switches: spec.switches.clone(),
        links,
        flows,
    })
}

fn resolve_link(
    l: &NetLinkSpec,
    names: &BTreeMap<String, usize>,
    frame_bytes: u64,
) -> Result<NetLink, ScenarioError> {
    let f = |name: &str| format!("links.{}.{name}", l.id);
    for (end, field) in [(&l.a, "a"), (&l.b, "b")] {
        if !names.contains_key(end) {
            return Err(err(&f(field), format!("no host or switch {end:?}")));
        }
    }
    if l.a == l.b {
        return Err(err(&f("b"), "a link joins two different nodes"));
    }
    let rate_bps = positive(&f("rate_bps"), l.rate_bps)?;
    if rate_bps < 1e3 {
        return Err(err(&f("rate_bps"), "must be at least 1000"));
    }
    let delay_ms = non_negative(&f("delay_ms"), l.delay_ms)?;
    let bdp = (rate_bps * 2.0 * delay_ms / 1e3 / 8.0) as u64;
    let queue_bytes = l
        .queue_bytes
        .unwrap_or_else(|| bdp.max(MIN_DEFAULT_QUEUE_FRAMES * frame_bytes));
    if queue_bytes < frame_bytes {
        return Err(err(
            &f("queue_bytes"),
            format!("must hold at least one frame ({frame_bytes} bytes)"),
        ));
    }
    let loss = l.loss.unwrap_or_default();
    loss.check().map_err(|e| err(&f(&e.field), e.message))?;
    Ok(NetLink {
        id: l.id.clone(),
        a: l.a.clone(),
        b: l.b.clone(),
        rate_bps,
        delay_ms,
        queue_bytes,
        loss,
    })
}

struct Graph<'a> {
    names: &'a BTreeMap<String, usize>,
    links: &'a [NetLink],
    /// Each link's two ends, as node indices.
    ends: Vec<(usize, usize)>,
    hosts: usize,
}

impl<'a> Graph<'a> {
    fn new(names: &'a BTreeMap<String, usize>, links: &'a [NetLink], hosts: usize) -> Self {
        let ends = links.iter().map(|l| (names[&l.a], names[&l.b])).collect();
        Self {
            names,
            links,
            ends,
            hosts,
        }
    }

    /// The node `hop` leads to.
    fn far_end(&self, (k, forward): Hop) -> usize {
        let (a, b) = self.ends[k];
        if forward { b } else { a }
    }

    /// The hop that leaves node `at` over link `k`, if `k` touches `at`.
    fn hop_from(&self, at: usize, k: usize) -> Option<Hop> {
        match self.ends[k] {
            (a, _) if a == at => Some((k, true)),
            (_, b) if b == at => Some((k, false)),
            _ => None,
        }
    }

    /// The links of least total delay from `from` to `to` (Dijkstra; ties to the
    /// fewer hops, then the earlier link); never through another host.
    fn least_delay(&self, from: usize, to: usize) -> Option<Vec<Hop>> {
        let n = self.names.len();
        let mut best: Vec<Option<(u64, u32)>> = vec![None; n];
        let mut via: Vec<Option<Hop>> = vec![None; n];
        let mut heap = BinaryHeap::new();
        best[from] = Some((0, 0));
        heap.push(std::cmp::Reverse((0_u64, 0_u32, from)));
        while let Some(std::cmp::Reverse((d, hops, u))) = heap.pop() {
            if best[u] != Some((d, hops)) || u == to {
                continue;
            }
            if u < self.hosts && u != from {
                continue;
            }
            for (k, l) in self.links.iter().enumerate() {
                let Some(hop) = self.hop_from(u, k) else {
                    continue;
                };
                let v = self.far_end(hop);
                let cand = (d + ns(l.delay_ms), hops + 1);
                if best[v].is_none_or(|old| cand < old) {
                    best[v] = Some(cand);
                    via[v] = Some(hop);
                    heap.push(std::cmp::Reverse((cand.0, cand.1, v)));
                }
            }
        }
        best[to]?;
        let mut route = Vec::new();
        let mut at = to;
        while at != from {
            let (k, forward) = via[at].expect("reached");
            route.push((k, forward));
            at = self.far_end((k, !forward));
        }
        route.reverse();
        Some(route)
    }

    /// Follow link ids from `from`; each must start where the last one ended.
    fn walk(
        &self,
        field: &str,
        from: usize,
        to: usize,
        ids: &[String],
        link_ids: &BTreeMap<String, usize>,
    ) -> Result<Vec<Hop>, ScenarioError> {
        let mut at = from;
        let mut hops = Vec::new();
        for (j, id) in ids.iter().enumerate() {
            let k = *link_ids
                .get(id)
                .ok_or_else(|| err(&format!("{field}[{j}]"), format!("no link {id:?}")))?;
            let hop = self.hop_from(at, k).ok_or_else(|| {
                err(
                    &format!("{field}[{j}]"),
                    format!("link {id:?} does not start where the route is"),
                )
            })?;
            hops.push(hop);
            at = self.far_end(hop);
            if at < self.hosts && at != to {
                return Err(err(
                    &format!("{field}[{j}]"),
                    "a route passes through no host but its last",
                ));
            }
        }
        if at != to || hops.is_empty() {
            return Err(err(field, "the route does not end at the flow's `to` host"));
        }
        Ok(hops)
    }
}

fn resolve_flow(
    i: usize,
    f: &NetFlowSpec,
    graph: &Graph<'_>,
    link_ids: &BTreeMap<String, usize>,
) -> Result<NetFlow, ScenarioError> {
    let field = |name: &str| format!("flows[{i}].{name}");
    let mut ends = [0; 2];
    for (slot, (name, which)) in [(&f.from, "from"), (&f.to, "to")].into_iter().enumerate() {
        match graph.names.get(name) {
            Some(&n) if n < graph.hosts => ends[slot] = n,
            _ => return Err(err(&field(which), format!("no host {name:?}"))),
        }
    }
    if ends[0] == ends[1] {
        return Err(err(&field("to"), "a flow joins two different hosts"));
    }
    if f.streams == 0 {
        return Err(err(&field("streams"), "must be at least 1"));
    }
    non_negative(&field("start_ms"), f.start_ms)?;
    let hops = match &f.route {
        Some(ids) => graph.walk(&field("route"), ends[0], ends[1], ids, link_ids)?,
        None => graph
            .least_delay(ends[0], ends[1])
            .ok_or_else(|| err(&field("to"), format!("no path from {:?}", f.from)))?,
    };
    if hops.len() > RouteStep::MAX_HOPS {
        return Err(err(
            &field("route"),
            format!("at most {} links, got {}", RouteStep::MAX_HOPS, hops.len()),
        ));
    }
    let rtt_ms = 2.0
        * hops
            .iter()
            .map(|&(k, _)| graph.links[k].delay_ms)
            .sum::<f64>();
    Ok(NetFlow {
        from: f.from.clone(),
        to: f.to.clone(),
        cc: f.cc,
        streams: f.streams,
        start_ms: f.start_ms,
        transfer_bytes: f.transfer_bytes,
        route: hops
            .iter()
            .map(|&(k, _)| graph.links[k].id.clone())
            .collect(),
        rtt_ms,
        hops,
    })
}

/// Each flow's route in both directions, as link node ids: `[forward, back]`.
type Routes = Arc<Vec<[Vec<NodeId>; 2]>>;

/// Forwards a packet onto the next link of its flow's route, at once.
pub struct Switch {
    routes: Routes,
}

impl Node for Switch {
    fn on_packet(&mut self, mut pkt: Packet, arrive_ns: u64, ctx: &mut Ctx<'_>) {
        let route = &self.routes[pkt.flow as usize][usize::from(pkt.route.back())];
        let next = route[pkt.route.hop()];
        pkt.route = pkt.route.next();
        ctx.send(next, pkt, arrive_ns);
    }

    fn on_timer(&mut self, _token: u64, _ctx: &mut Ctx<'_>) {}

    fn as_any(&self) -> &dyn Any {
        self
    }
}

struct Built {
    sim: Sim,
    hosts: usize,
    link_nodes: Vec<NodeId>,
    /// Each flow id's group, sending host and receiving host.
    flows: Vec<(usize, usize, usize)>,
}

/// Node ids: hosts, then switches, then each link's two directions (a to b, b to a).
fn build(r: &ResolvedNetwork) -> Built {
    let names: BTreeMap<&str, usize> = r
        .hosts
        .iter()
        .map(|h| h.id.as_str())
        .chain(r.switches.iter().map(String::as_str))
        .enumerate()
        .map(|(i, n)| (n, i))
        .collect();
    let first_link = names.len();
    let half = |(k, forward): Hop| first_link + 2 * k + usize::from(!forward);
    let flows: Vec<(usize, usize, usize)> = r
        .flows
        .iter()
        .enumerate()
        .flat_map(|(g, f)| {
            std::iter::repeat_n(
                (g, names[f.from.as_str()], names[f.to.as_str()]),
                f.streams as usize,
            )
        })
        .collect();
    let routes: Routes = Arc::new(
        flows
            .iter()
            .map(|&(g, _, _)| {
                let hops = &r.flows[g].hops;
                let forward = hops.iter().map(|&h| half(h)).collect();
                let back = hops.iter().rev().map(|&(k, f)| half((k, !f))).collect();
                [forward, back]
            })
            .collect(),
    );
    let mut sim = Sim::new();
    for (h, host) in r.hosts.iter().enumerate() {
        let (k, l) = r
            .links
            .iter()
            .enumerate()
            .find(|(_, l)| l.a == host.id || l.b == host.id)
            .expect("a host has one link");
        let egress = half((k, l.a == host.id));
        let mut endpoints = Vec::new();
        let mut ends = Vec::new();
        for (id, &(g, from, to)) in flows.iter().enumerate() {
            let f = &r.flows[g];
            let flow = TcpFlow {
                id: id as u32,
                cc: f.cc,
                frame_overhead_bytes: presets::ETHERNET_FRAMING_BYTES,
                transfer_bytes: f.transfer_bytes,
                start_ms: f.start_ms,
                rtt_ms: f.rtt_ms,
            };
            if from == h {
                endpoints.push(tcp_sender(&flow, &host.host));
                ends.push((id as u32, false));
            } else if to == h {
                endpoints.push(tcp_receiver(&flow, &host.host));
                ends.push((id as u32, true));
            }
        }
        let rate = host.host.egress_rate_bps() as u64;
        let node = Host::new(egress, rate, endpoints)
            .on_kernel(host.host.kernel)
            .with_flow_ids(&ends);
        assert_eq!(sim.add(Box::new(node)), h);
    }
    for _ in &r.switches {
        sim.add(Box::new(Switch {
            routes: Arc::clone(&routes),
        }));
    }
    let mut link_nodes = Vec::new();
    for (k, l) in r.links.iter().enumerate() {
        for forward in [true, false] {
            let far = names[if forward { l.b.as_str() } else { l.a.as_str() }];
            let config = LinkConfig {
                rate_bps: l.rate_bps as u64,
                delay_ns: ns(l.delay_ms),
                queue_bytes: l.queue_bytes,
                loss: l.loss,
            };
            let seed = derive_seed(r.seed, 2 * k as u64 + u64::from(!forward) + 1);
            let id = sim.add(Box::new(Link::new(config, far, seed)));
            assert_eq!(id, half((k, forward)));
            link_nodes.push(id);
        }
    }
    Built {
        sim,
        hosts: r.hosts.len(),
        link_nodes,
        flows,
    }
}

/// One flow group over one interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupInterval {
    pub start: f64,
    pub end: f64,
    pub bytes: u64,
    pub bits_per_second: f64,
    pub retransmits: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupReport {
    pub from: String,
    pub to: String,
    pub cc: CcKind,
    pub streams: u32,
    pub route: Vec<String>,
    pub rtt_ms: f64,
    pub intervals: Vec<GroupInterval>,
    pub sum_sent: Sum,
    pub sum_received: Sum,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NetworkReport {
    pub source: &'static str,
    pub scenario: ResolvedNetwork,
    pub groups: Vec<GroupReport>,
    pub counters: Counters,
    pub perf: Perf,
}

/// Per flow id: (sent, received, retransmits).
fn snapshot(b: &Built) -> Vec<(u64, u64, u64)> {
    let mut out = vec![(0, 0, 0); b.flows.len()];
    for h in 0..b.hosts {
        let host: &Host = b.sim.get(h).expect("host");
        for (i, e) in host.endpoints().iter().enumerate() {
            let report = e.report();
            let slot = &mut out[host.flow_id(i) as usize];
            slot.0 += report.sent_bytes;
            slot.1 += report.received_bytes;
            slot.2 += report.retransmits;
        }
    }
    out
}

fn group_totals(b: &Built, snap: &[(u64, u64, u64)], g: usize) -> (u64, u64, u64) {
    b.flows
        .iter()
        .zip(snap)
        .filter(|((group, _, _), _)| *group == g)
        .fold((0, 0, 0), |acc, (_, s)| {
            (acc.0 + s.0, acc.1 + s.1, acc.2 + s.2)
        })
}

fn counters(b: &Built) -> Counters {
    let mut c = Counters::new(b.sim.events_processed());
    for h in 0..b.hosts {
        c.tally_host(b.sim.get(h).expect("host"));
    }
    for &id in &b.link_nodes {
        c.tally_link(b.sim.get(id).expect("link"));
    }
    c.check_conservation();
    c
}

/// Run a resolved network to the end and report each flow group.
pub fn run(r: &ResolvedNetwork) -> NetworkReport {
    let wall = Instant::now();
    let mut b = build(r);
    let schedule = Schedule::new(r.omit_s, r.duration_s, r.interval_s);
    b.sim.run_until(schedule.omit_ns);
    let first = snapshot(&b);
    let mut before = first.clone();
    let mut intervals: Vec<Vec<GroupInterval>> = vec![Vec::new(); r.flows.len()];
    for (start, end, until_ns) in schedule.intervals() {
        b.sim.run_until(until_ns);
        let after = snapshot(&b);
        for (g, list) in intervals.iter_mut().enumerate() {
            let (_, got0, re0) = group_totals(&b, &before, g);
            let (_, got1, re1) = group_totals(&b, &after, g);
            let s = sum(start, end, got1 - got0, None);
            list.push(GroupInterval {
                start,
                end,
                bytes: s.bytes,
                bits_per_second: s.bits_per_second,
                retransmits: re1 - re0,
            });
        }
        before = after;
    }
    let groups = r
        .flows
        .iter()
        .zip(intervals)
        .enumerate()
        .map(|(g, (f, intervals))| {
            let (sent0, got0, re0) = group_totals(&b, &first, g);
            let (sent1, got1, re1) = group_totals(&b, &before, g);
            GroupReport {
                from: f.from.clone(),
                to: f.to.clone(),
                cc: f.cc,
                streams: f.streams,
                route: f.route.clone(),
                rtt_ms: f.rtt_ms,
                intervals,
                sum_sent: sum(0.0, r.duration_s, sent1 - sent0, Some(re1 - re0)),
                sum_received: sum(0.0, r.duration_s, got1 - got0, None),
            }
        })
        .collect();
    let counters = counters(&b);
    NetworkReport {
        source: "simulated",
        scenario: r.clone(),
        groups,
        perf: Perf::since(wall, schedule.simulated_s(), counters.events_processed),
        counters,
    }
}
