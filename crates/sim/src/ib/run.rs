//! An InfiniBand connection across a wide-area loop, built and run: two hosts with
//! HCAs, a range extender at each end of the WAN (and IB switches, if asked), one
//! perftest- or OSU-shaped test; UDP cross traffic on the WAN line and TCP between
//! hosts on the extenders' Ethernet side ports, if asked.
//!
//! ```text
//!  HCA A ==IB== [switches] == extender A ----WAN (layer, delay)---- extender B == [switches] ==IB== HCA B
//!                            side port host C -/                  \- side port host D
//! ```
//!
//! The devices and where their constants come from are in [`super::devices`].
//!
//! A range extender (Obsidian Longbow XR class) behaves as a two-port switch: an IB port
//! and a WAN port, and a buffer between them. The IB link into it, the WAN between the
//! two, and the IB link out are three links in series, each with its own credit-based
//! flow control (IBA vol. 1 §7.9); the extender's large buffer is what lets credit
//! across the WAN cover the round trip. So the WAN carries at most
//! `extender_buffer_bytes` per WAN round trip: with buffer B and round trip T, the
//! line's rate R is reached only when B >= R x T (an 8 Gb/s SDR line over USN's 163 ms
//! loop needs 163 MB). Each direction is built the same way; ACKs, NAKs, read
//! requests and read responses travel the reverse one.

use std::time::Instant;

use longhaul_link::layer::Layer;
use serde::Serialize;

use super::devices::{Connection, Extender, Hca, IbSwitch, cross_traffic};
use super::mpi::{Benchmark, EAGER_LIMIT_BYTES, MpiRank, MpiRecord, OSU_WINDOW, OsuTest};
use super::perftest::{self, AppRecord, Driver, IbEndpoint, Role};
use super::qp::{QpConfig, QpCounters, Service, Verb, ack_timeout_ns};
use super::wire::{BASE_HEADER_BYTES, LinkSpeed, RETH_BYTES};
use crate::cc::{CcKind, Kernel};
use crate::credit::{
    CreditLink, CreditLinkConfig, CrossTraffic, DatagramPort, IB_CREDIT_BLOCK_BYTES,
};
use crate::engine::Sim;
use crate::event::NodeId;
use crate::host::{Endpoint, Host};
use crate::presets::kernel_defaults;
use crate::run::{Perf, TcpFlow, tcp_receiver, tcp_sender};
use crate::scenario::HostConfig;
use crate::transport::{FlowReport, Transport};
use longhaul_link::layer::ETHERNET_PHY_OVERHEAD_BYTES;

const NS_PER_MS: f64 = 1e6;
/// perftest reports MB/sec as bytes / 2^20 (`print_report` divides by 0x100000).
pub const PERFTEST_MB: f64 = 1_048_576.0;

/// The perftest tools modelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tool {
    SendBw,
    WriteBw,
    ReadBw,
    /// `ib_rdma_bw` (`rdma_bw.c`): RDMA write, its own defaults.
    RdmaBw,
    SendLat,
    WriteLat,
    ReadLat,
    /// OSU's MPI benchmarks over the QP ([`super::mpi`]).
    OsuLatency,
    OsuBw,
    OsuBibw,
}

impl Tool {
    pub fn parse(name: &str) -> Result<Self, String> {
        let name = name.trim_start_matches("ib_");
        Ok(match name {
            "send_bw" => Tool::SendBw,
            "write_bw" => Tool::WriteBw,
            "read_bw" => Tool::ReadBw,
            "rdma_bw" => Tool::RdmaBw,
            "send_lat" => Tool::SendLat,
            "write_lat" => Tool::WriteLat,
            "read_lat" => Tool::ReadLat,
            "osu_latency" => Tool::OsuLatency,
            "osu_bw" => Tool::OsuBw,
            "osu_bibw" => Tool::OsuBibw,
            _ => {
                return Err(format!(
                    "test {name:?} is not one of send_bw, write_bw, read_bw, rdma_bw, \
                     send_lat, write_lat, read_lat, osu_latency, osu_bw, osu_bibw"
                ));
            }
        })
    }

    /// The OSU benchmark this tool runs, if it is one.
    pub fn osu(self) -> Option<Benchmark> {
        match self {
            Tool::OsuLatency => Some(Benchmark::Latency),
            Tool::OsuBw => Some(Benchmark::Bandwidth),
            Tool::OsuBibw => Some(Benchmark::BiBandwidth),
            _ => None,
        }
    }

    pub fn verb(self) -> Verb {
        match self {
            Tool::SendBw | Tool::SendLat | Tool::OsuLatency | Tool::OsuBw | Tool::OsuBibw => {
                Verb::Send
            }
            Tool::WriteBw | Tool::RdmaBw | Tool::WriteLat => Verb::Write,
            Tool::ReadBw | Tool::ReadLat => Verb::Read,
        }
    }

    pub fn is_bandwidth(self) -> bool {
        matches!(
            self,
            Tool::SendBw | Tool::WriteBw | Tool::ReadBw | Tool::RdmaBw
        )
    }

    /// perftest 1.2's defaults (iterations, send-queue depth): `send_bw.c` 1000/300,
    /// `write_bw.c` 5000/100, `read_bw.c` 1000/100, `rdma_bw.c` 1000/100, the latency tests
    /// 1000/50.
    pub fn default_iters_and_depth(self) -> (u64, u64) {
        match self {
            Tool::SendBw => (1000, 300),
            Tool::WriteBw => (5000, 100),
            Tool::ReadBw | Tool::RdmaBw => (1000, 100),
            Tool::SendLat | Tool::WriteLat | Tool::ReadLat => (1000, 50),
            // osu_*.c: set per message size (`OsuTest::new`); the depth is unused.
            Tool::OsuLatency | Tool::OsuBw | Tool::OsuBibw => (0, 1),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IbTest {
    pub tool: Tool,
    pub service: Service,
    pub bytes: u64,
    pub iters: u64,
    pub tx_depth: u64,
    pub qps: u32,
    pub bidirectional: bool,
    /// MPI (OSU tools): warm-up rounds before the `iters` timed ones, the window of
    /// sends per round, and the eager limit.
    pub skip: u64,
    pub window: u64,
    pub eager_limit_bytes: u64,
    pub connection: Connection,
    /// RDMA reads outstanding per QP (perftest `read_bw`'s `-o`, default 4: "the device
    /// capability on gen2", `read_bw.c`).
    pub max_reads: u32,
    pub mtu_bytes: u32,
    pub rtt_ms: f64,
    pub hca: Hca,
    pub extender: Option<Extender>,
    pub switch: Option<IbSwitch>,
    /// Give up after this much virtual time.
    pub time_limit_s: f64,
    /// UDP cross traffic onto the forward WAN line, Gb/s (USN's cross-traffic profile
    /// injected 1-4 Gb/s from extra hosts through the WAN switch).
    pub cross_traffic_gbps: f64,
    /// Ordinary traffic through the extender's two 1GigE side ports onto the same WAN
    /// line, Gb/s (at most 2).
    pub side_ports_gbps: f64,
    /// TCP streams (CUBIC, stock Linux 6.x hosts on 1GigE) from a host on the near
    /// extender's side port to one on the far extender's, beside the IB traffic.
    pub side_tcp_streams: u32,
}

impl IbTest {
    /// The tool with perftest's defaults on a loop of `rtt_ms` between Longbows over
    /// OC-192 SONET, 4X SDR HCAs on PCIe x8, MTU 2048, one RC QP, RDMA CM.
    pub fn new(tool: Tool, bytes: u64, rtt_ms: f64) -> Self {
        let (mut iters, tx_depth) = tool.default_iters_and_depth();
        let mut skip = 0;
        if let Some(benchmark) = tool.osu() {
            let osu = OsuTest::new(benchmark, bytes);
            (iters, skip) = (osu.iters, osu.skip);
        }
        Self {
            tool,
            service: Service::Rc,
            bytes,
            iters,
            tx_depth,
            qps: 1,
            bidirectional: false,
            skip,
            window: OSU_WINDOW,
            eager_limit_bytes: EAGER_LIMIT_BYTES,
            connection: Connection::Cm,
            max_reads: 4,
            mtu_bytes: 2048,
            rtt_ms,
            hca: Hca::infinihost_pcie_x8(LinkSpeed::Sdr4x),
            extender: Some(Extender::longbow_xr(Layer::Oc192)),
            switch: None,
            time_limit_s: 3_600.0,
            cross_traffic_gbps: 0.0,
            side_ports_gbps: 0.0,
            side_tcp_streams: 0,
        }
    }

    /// What is wrong with the test, if anything.
    pub fn check(&self) -> Result<(), String> {
        super::wire::check_mtu(self.mtu_bytes)?;
        self.tool.verb().check(self.service)?;
        let fragmented = self.tool.osu().is_some(); // MPI cuts its messages for UD
        if self.service == Service::Ud && !fragmented && self.bytes > u64::from(self.mtu_bytes) {
            return Err(format!(
                "UD carries one packet per message: {} bytes is more than the MTU {}",
                self.bytes, self.mtu_bytes
            ));
        }
        if self.iters == 0 || self.tx_depth == 0 || self.qps == 0 {
            return Err("iterations, tx depth and QPs are at least 1".into());
        }
        if !(self.rtt_ms.is_finite() && self.rtt_ms >= 0.0) {
            return Err(format!("round trip {} ms is not a time", self.rtt_ms));
        }
        if !(0.0..=2.0).contains(&self.side_ports_gbps) {
            return Err("the side ports are two 1GigE ports: at most 2 Gb/s".into());
        }
        if !(0.0..=10.0).contains(&self.cross_traffic_gbps) {
            return Err("cross traffic is 0 to 10 Gb/s".into());
        }
        if self.extender.is_none() && self.rtt_ms > 0.0 {
            return Err(format!(
                "without range extenders the HCAs are back to back (a cable of metres, no \
                 delay modelled): a round trip of {} ms needs --wan (oc192, wanphy, lanphy)",
                self.rtt_ms
            ));
        }
        if self.side_tcp_streams > 0 && self.extender.is_none() {
            return Err("side-port TCP crosses the extenders' WAN line: give a --wan layer".into());
        }
        let datagrams = self.cross_traffic_gbps + self.side_ports_gbps;
        if datagrams > 0.0 && self.extender.is_none() {
            return Err("cross traffic shares the extenders' WAN line: give a --wan layer".into());
        }
        if let Some(switch) = self.switch
            && switch.count > 0
            && switch.buffer_bytes < u64::from(self.mtu_bytes + BASE_HEADER_BYTES + RETH_BYTES)
        {
            return Err("a switch port's buffer must hold a packet of the MTU".into());
        }
        if self.bidirectional && !self.tool.is_bandwidth() {
            return Err(
                "-b (both ways) is for bandwidth tests (osu_bibw runs MPI both ways)".into(),
            );
        }
        if self.tool.osu().is_some() && (self.qps != 1 || self.window == 0) {
            return Err("an MPI test runs on one QP per peer, with a window of at least 1".into());
        }
        if self.tool.osu().is_some() && self.bytes > 0xffff_ffff {
            return Err("an MPI message here is at most 4 GiB".into());
        }
        Ok(())
    }

    fn qp_config(&self) -> QpConfig {
        let max_reads = if self.tool.verb() == Verb::Read {
            self.max_reads
        } else {
            1 // perftest sets max_rd_atomic = 1 outside read tests
        };
        QpConfig {
            service: self.service,
            mtu_bytes: self.mtu_bytes,
            max_unacked_packets: self.hca.max_unacked_packets,
            max_reads,
            ack_timeout_ns: ack_timeout_ns(self.connection.ack_timeout_exponent())
                .max(self.hca.min_ack_timeout_ns),
            retry_count: 7,
            ack_every_packets: self.hca.ack_every_packets,
            wqe_ns: self.hca.wqe_ns,
        }
    }

    /// The link speed both ends of each IB link train to.
    fn link_speed(&self) -> LinkSpeed {
        match self.extender {
            Some(e) if e.ib_speed == LinkSpeed::Sdr4x => LinkSpeed::Sdr4x,
            _ => self.hca.speed,
        }
    }

    /// The rate a host's interface puts IB bytes on its link: the link's data rate, or
    /// the bus's payload rate scaled to full-MTU packets if that is lower.
    fn interface_rate_bps(&self) -> u64 {
        let link = self.link_speed().data_rate_bps();
        let full = u64::from(self.mtu_bytes + BASE_HEADER_BYTES);
        let bus = self.hca.bus_payload_bps * full / u64::from(self.mtu_bytes);
        link.min(bus)
    }

    fn roles(&self) -> (Role, Role) {
        let verb = self.tool.verb();
        let stream = Role::Stream {
            verb,
            bytes: self.bytes,
            iters: self.iters,
            tx_depth: self.tx_depth,
        };
        match self.tool {
            _ if self.tool.is_bandwidth() => {
                let other = if self.bidirectional {
                    stream
                } else {
                    Role::Passive
                };
                (stream, other)
            }
            Tool::ReadLat => (
                Role::ReadOneByOne {
                    bytes: self.bytes,
                    iters: self.iters,
                },
                Role::Passive,
            ),
            _ => {
                let ping = |starts| Role::PingPong {
                    verb,
                    bytes: self.bytes,
                    iters: self.iters,
                    starts,
                };
                (ping(true), ping(false))
            }
        }
    }
}

/// One side's results, perftest's way.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SideReport {
    pub bw_average_mb_s: Option<f64>,
    pub bw_peak_mb_s: Option<f64>,
    pub completed: u64,
    pub failed: u64,
    pub messages_arrived: u64,
    pub qps: Vec<QpCounters>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LatencyReport {
    pub typical_us: f64,
    pub average_us: f64,
    pub min_us: f64,
    pub max_us: f64,
}

/// An OSU benchmark's figure, as OSU prints it, and what the MPI layer did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MpiReport {
    pub benchmark: Benchmark,
    /// Latency: µs one way; bandwidth: MB/s of 10^6 bytes.
    pub value: Option<f64>,
    pub unit: &'static str,
    pub protocol: &'static str,
    pub rank0: MpiRecord,
    pub rank1: MpiRecord,
}

fn mpi_rank<'a>(side: &[&'a IbEndpoint]) -> Option<&'a MpiRank> {
    match side.first()?.driver() {
        Driver::Mpi(rank) => Some(rank),
        Driver::Perftest(_) => None,
    }
}

fn mpi_report(t: &IbTest, clients: &[&IbEndpoint], servers: &[&IbEndpoint]) -> Option<MpiReport> {
    let benchmark = t.tool.osu()?;
    let (zero, one) = (mpi_rank(clients)?, mpi_rank(servers)?);
    let protocol = match t.service {
        Service::Ud => "datagrams",
        Service::Uc => "direct, acknowledged",
        Service::Rc if t.bytes <= t.eager_limit_bytes => "eager",
        Service::Rc => "rendezvous",
    };
    Some(MpiReport {
        benchmark,
        value: zero.figure(),
        unit: if benchmark == Benchmark::Latency {
            "us"
        } else {
            "MB/s"
        },
        protocol,
        rank0: zero.record().clone(),
        rank1: one.record().clone(),
    })
}

/// TCP through the side ports over the whole run (from time 0, slow start included).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SideTcpReport {
    pub streams: u32,
    pub goodput_gbps: f64,
    pub retransmits: u64,
    /// Its packets the side port's queue dropped.
    pub dropped: u64,
}

fn side_tcp_report(b: &Built, t: &IbTest, simulated_s: f64) -> Option<SideTcpReport> {
    let (near, far) = b.side_hosts?;
    let sum = |id: NodeId, pick: fn(&FlowReport) -> u64| -> u64 {
        let host = b.sim.get::<Host>(id).expect("a side host");
        host.endpoints().iter().map(|e| pick(&e.report())).sum()
    };
    let received = sum(far, |r| r.received_bytes);
    let wan = b
        .sim
        .get::<CreditLink>(b.extender_links[0])
        .expect("the WAN port");
    Some(SideTcpReport {
        streams: t.side_tcp_streams,
        goodput_gbps: received as f64 * 8.0 / simulated_s.max(1e-9) / 1e9,
        retransmits: sum(near, |r| r.retransmits),
        dropped: wan.counters().datagrams_dropped,
    })
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExtenderReport {
    pub max_buffer_bytes: u64,
    pub credit_stalls: u64,
    pub cross_frames_sent: u64,
    pub cross_frames_dropped: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IbReport {
    pub source: &'static str,
    pub test: IbTest,
    pub interface_rate_bps: u64,
    pub wan_rate_bps: Option<u64>,
    /// The sending side (the one that starts), and its peer.
    pub client: SideReport,
    pub server: SideReport,
    /// Both sides' averages added, as perftest's `-b` reports (MB/s of 2^20 bytes).
    pub bw_average_mb_s: Option<f64>,
    /// The same in bits per second of payload (10^9).
    pub goodput_gbps: Option<f64>,
    pub latency: Option<LatencyReport>,
    /// OSU benchmarks: their figure.
    pub mpi: Option<MpiReport>,
    /// Forward direction (client to server): extender A's WAN port, then B's IB port.
    pub extenders: Vec<ExtenderReport>,
    /// TCP through the extenders' side ports, when there was any.
    pub side_tcp: Option<SideTcpReport>,
    pub finished: bool,
    pub simulated_s: f64,
    /// Scheduled events the run took off the queue.
    pub events: u64,
    pub perf: Perf,
}

struct Built {
    sim: Sim,
    client: NodeId,
    server: NodeId,
    /// The forward direction's extender ports: the near one's WAN port, the far one's
    /// IB port (empty without extenders).
    extender_links: Vec<NodeId>,
    /// The side-port TCP hosts (sending, receiving), when there are streams.
    side_hosts: Option<(NodeId, NodeId)>,
}

/// One credit-controlled hop of a direction: a port's input buffer and the line leaving
/// it.
struct Hop {
    rate_bps: u64,
    delay_ns: u64,
    buffer_bytes: u64,
    cross: Option<CrossTraffic>,
    datagrams: Option<DatagramPort>,
}

/// The hops from one host to the other: the near switches' ports, the near extender's
/// WAN port and the far extender's IB port, the far switches' ports. The last one's
/// line ends in the host, which takes every packet at once.
fn hops(t: &IbTest, forward: bool, side_host: Option<NodeId>) -> Vec<Hop> {
    let link = t.link_speed().data_rate_bps();
    let switch = |_| Hop {
        rate_bps: link,
        delay_ns: t.switch.map_or(0, |s| s.latency_ns),
        buffer_bytes: t.switch.map_or(0, |s| s.buffer_bytes),
        cross: None,
        datagrams: None,
    };
    let switches = t.switch.map_or(0, |s| s.count);
    let mut found: Vec<Hop> = (0..switches).map(switch).collect();
    if let Some(extender) = t.extender {
        let datagram_gbps = t.cross_traffic_gbps + t.side_ports_gbps;
        found.push(Hop {
            rate_bps: extender.wan_rate_bps(t.mtu_bytes + BASE_HEADER_BYTES),
            delay_ns: (t.rtt_ms / 2.0 * NS_PER_MS).round() as u64,
            buffer_bytes: extender.buffer_bytes,
            cross: (datagram_gbps > 0.0 && forward)
                .then(|| cross_traffic(extender.wan, datagram_gbps)),
            datagrams: side_host.map(|next| DatagramPort {
                next,
                first_flow: SIDE_TCP_FIRST_FLOW,
                queue_bytes: SIDE_PORT_QUEUE_BYTES,
            }),
        });
        found.push(Hop {
            rate_bps: link,
            delay_ns: 0,
            buffer_bytes: extender.buffer_bytes,
            cross: None,
            datagrams: None,
        });
        found.extend((0..switches).map(switch));
    }
    found
}

/// Add a direction's hops as credit links with the next free node ids, each sending
/// against the next one's buffer and returning credit to the one before (the host
/// `from` for the first); returns their ids in order.
fn add_direction(sim: &mut Sim, hops: Vec<Hop>, (from, to): (NodeId, NodeId)) -> Vec<NodeId> {
    let first_id = sim.node_count();
    let ids: Vec<NodeId> = (first_id..first_id + hops.len()).collect();
    let next_buffers: Vec<Option<u64>> = hops
        .iter()
        .skip(1)
        .map(|h| Some(h.buffer_bytes))
        .chain([None])
        .collect();
    for (k, (hop, next_buffer)) in hops.into_iter().zip(next_buffers).enumerate() {
        let config = CreditLinkConfig {
            rate_bps: hop.rate_bps,
            delay_ns: hop.delay_ns,
            input_buffer_bytes: hop.buffer_bytes,
            next_buffer_bytes: next_buffer,
            block_bytes: IB_CREDIT_BLOCK_BYTES,
        };
        let next = ids.get(k + 1).copied().unwrap_or(to);
        let upstream = if k == 0 { from } else { ids[k - 1] };
        let mut link = CreditLink::new(config, next, Some(upstream));
        if let Some(cross) = hop.cross {
            link = link.with_cross(cross);
        }
        if let Some(port) = hop.datagrams {
            link = link.with_datagrams(port);
        }
        assert_eq!(sim.add(Box::new(link)), ids[k]);
    }
    ids
}

fn osu_test(t: &IbTest, benchmark: Benchmark) -> OsuTest {
    OsuTest {
        benchmark,
        bytes: t.bytes,
        iters: t.iters,
        skip: t.skip,
        window: t.window,
        eager_limit_bytes: t.eager_limit_bytes,
    }
}

fn endpoints(t: &IbTest, role: Role, rank: u8) -> Vec<Endpoint> {
    if let Some(benchmark) = t.tool.osu() {
        let mpi = MpiRank::new(rank, osu_test(t, benchmark), t.service, t.mtu_bytes);
        let qp = super::qp::Qp::new(t.qp_config());
        return vec![Endpoint::Ib(Box::new(IbEndpoint::driven(
            0,
            qp,
            Driver::Mpi(mpi),
        )))];
    }
    (0..t.qps)
        .map(|qp| {
            let qp_state = super::qp::Qp::new(t.qp_config());
            Endpoint::Ib(Box::new(IbEndpoint::new(qp, qp_state, role)))
        })
        .collect()
}

fn build(t: &IbTest) -> Built {
    let (client_id, server_id) = (0, 1);
    let mut sim = Sim::new();
    let (client_role, server_role) = t.roles();
    let rate = t.interface_rate_bps();
    let max_frame = t.mtu_bytes + BASE_HEADER_BYTES + RETH_BYTES;
    // The hosts come first (ids 0 and 1), then each direction's hops, then the hosts on
    // the extenders' side ports.
    let hop_count = hops(t, true, None).len();
    let (near_side, far_side) = (2 + 2 * hop_count, 3 + 2 * hop_count);
    let side = t.side_tcp_streams > 0;
    let forward = hops(t, true, side.then_some(far_side));
    let backward = hops(t, false, side.then_some(near_side));
    let client_egress = if forward.is_empty() { server_id } else { 2 };
    let server_egress = if backward.is_empty() {
        client_id
    } else {
        2 + forward.len()
    };
    let host = |egress: NodeId, first: Option<&Hop>, role, rank| {
        let host = Host::new(egress, rate, endpoints(t, role, rank));
        match first {
            Some(hop) => host.with_link_credit(hop.buffer_bytes, IB_CREDIT_BLOCK_BYTES, max_frame),
            None => host,
        }
    };
    sim.add(Box::new(host(
        client_egress,
        forward.first(),
        client_role,
        0,
    )));
    sim.add(Box::new(host(
        server_egress,
        backward.first(),
        server_role,
        1,
    )));
    // Each direction's extender ports follow its near switches.
    let switches = t.switch.map_or(0, |s| s.count as usize);
    let extenders = if t.extender.is_some() { 2 } else { 0 };
    let forward_links = add_direction(&mut sim, forward, (client_id, server_id));
    let backward_links = add_direction(&mut sim, backward, (server_id, client_id));
    let extender_links = forward_links[switches..switches + extenders].to_vec();
    if side {
        let (senders, receivers) =
            side_tcp_hosts(t, forward_links[switches], backward_links[switches]);
        assert_eq!(sim.add(Box::new(senders)), near_side);
        assert_eq!(sim.add(Box::new(receivers)), far_side);
    }
    Built {
        sim,
        client: client_id,
        server: server_id,
        extender_links,
        side_hosts: side.then_some((near_side, far_side)),
    }
}

/// Flow ids of side-port TCP streams start here, far above any QP's.
const SIDE_TCP_FIRST_FLOW: u32 = 1 << 20;
/// The side port's queue into the WAN line: an assumption (the extender's Ethernet
/// buffer is not published), as for cross traffic.
const SIDE_PORT_QUEUE_BYTES: u64 = 1 << 20;

/// A 1GigE side port's host: stock Linux 6.x (CUBIC), MTU 1500.
fn side_host_config() -> HostConfig {
    HostConfig {
        nic_rate_bps: 1e9,
        bus_rate_bps: None,
        mtu_bytes: 1500,
        ..kernel_defaults(Kernel::Linux6)
    }
}

/// The hosts on the near and far extenders' side ports, sending into `near_wan` and
/// acknowledging into `far_wan` (each extender's WAN port).
fn side_tcp_hosts(t: &IbTest, near_wan: NodeId, far_wan: NodeId) -> (Host, Host) {
    let host = side_host_config();
    let flows: Vec<TcpFlow> = (0..t.side_tcp_streams)
        .map(|k| TcpFlow {
            id: SIDE_TCP_FIRST_FLOW + k,
            cc: CcKind::Cubic,
            frame_overhead_bytes: ETHERNET_PHY_OVERHEAD_BYTES,
            transfer_bytes: None,
            start_ms: 0.0,
            rtt_ms: t.rtt_ms,
        })
        .collect();
    let ends = |back| -> Vec<(u32, bool)> { flows.iter().map(|f| (f.id, back)).collect() };
    let rate = host.egress_rate_bps() as u64;
    let senders = flows.iter().map(|f| tcp_sender(f, &host)).collect();
    let receivers = flows.iter().map(|f| tcp_receiver(f, &host)).collect();
    (
        Host::new(near_wan, rate, senders).with_flow_ids(&ends(false)),
        Host::new(far_wan, rate, receivers).with_flow_ids(&ends(true)),
    )
}

fn records(sim: &Sim, host: NodeId) -> Vec<&IbEndpoint> {
    let host = sim.get::<Host>(host).expect("a host");
    host.endpoints()
        .iter()
        .filter_map(|e| match e {
            Endpoint::Ib(ib) => Some(ib.as_ref()),
            _ => None,
        })
        .collect()
}

/// Whether a side has done what its role (or its MPI rank) asks.
fn side_done(endpoints: &[&IbEndpoint], role: Role) -> bool {
    endpoints.iter().all(|e| {
        let r = match e.driver() {
            Driver::Mpi(rank) => return rank.finished(),
            Driver::Perftest(app) => app.record(),
        };
        let finished = r.completed.len() as u64 + r.failed;
        match role {
            Role::Stream { iters, .. } | Role::ReadOneByOne { iters, .. } => finished >= iters,
            Role::PingPong { iters, starts, .. } => {
                let answers = r.samples_ns.len() as u64;
                (if starts { answers } else { finished }) >= iters
            }
            Role::Passive => true,
        }
    })
}

fn side_report(endpoints: &[&IbEndpoint], bytes: u64, bandwidth: bool) -> SideReport {
    let recs: Vec<&AppRecord> = endpoints.iter().filter_map(|e| e.record()).collect();
    let mb = |bps: f64| bps / PERFTEST_MB;
    let streaming = bandwidth && recs.iter().any(|r| !r.completed.is_empty());
    SideReport {
        bw_average_mb_s: streaming
            .then(|| perftest::average_bytes_per_s(&recs, bytes).map(mb))
            .flatten(),
        bw_peak_mb_s: (streaming && recs.len() == 1)
            .then(|| perftest::peak_bytes_per_s(recs[0], bytes).map(mb))
            .flatten(),
        completed: recs.iter().map(|r| r.completed.len() as u64).sum(),
        failed: recs.iter().map(|r| r.failed).sum(),
        messages_arrived: recs.iter().map(|r| r.messages_arrived).sum(),
        qps: endpoints.iter().map(|e| *e.qp().counters()).collect(),
    }
}

/// When the last completion, arrival or MPI round of either side happened.
fn last_event_ns(clients: &[&IbEndpoint], servers: &[&IbEndpoint]) -> Option<u64> {
    clients
        .iter()
        .chain(servers)
        .filter_map(|e| match e.driver() {
            Driver::Mpi(rank) => rank.record().end_ns,
            Driver::Perftest(app) => {
                let r = app.record();
                [r.completed.last(), r.samples_ns.last()]
                    .into_iter()
                    .flatten()
                    .max()
                    .copied()
            }
        })
        .max()
}

/// perftest's latency figures from the client's record.
fn latency(t: &IbTest, record: &AppRecord) -> Option<LatencyReport> {
    let us = |ns: f64| ns / 1e3;
    let samples: Vec<f64> = match t.tool {
        Tool::ReadLat => record.samples_ns.iter().map(|&s| s as f64).collect(),
        Tool::SendLat | Tool::WriteLat => {
            // Each answer's arrival less the post it answers, halved (one way).
            record
                .samples_ns
                .iter()
                .zip(&record.posted)
                .map(|(&back, &sent)| (back - sent) as f64 / 2.0)
                .collect()
        }
        _ => return None,
    };
    if samples.is_empty() {
        return None;
    }
    let mut sorted = samples.clone();
    sorted.sort_by(f64::total_cmp);
    Some(LatencyReport {
        typical_us: us(sorted[sorted.len() / 2]),
        average_us: us(samples.iter().sum::<f64>() / samples.len() as f64),
        min_us: us(sorted[0]),
        max_us: us(sorted[sorted.len() - 1]),
    })
}

/// Run one test to its end (or the time limit) and report.
pub fn run(t: &IbTest) -> IbReport {
    let wall = Instant::now();
    let mut b = build(t);
    let (client_role, server_role) = t.roles();
    let limit_ns = (t.time_limit_s * 1e9) as u64;
    // Advance in steps of a round trip or more, checking whether both sides are done.
    let step_ns = ((t.rtt_ms * NS_PER_MS) as u64).max(1_000_000);
    let mut finished = false;
    while b.sim.now_ns() < limit_ns {
        b.sim.run_until((b.sim.now_ns() + step_ns).min(limit_ns));
        let done = side_done(&records(&b.sim, b.client), client_role)
            && side_done(&records(&b.sim, b.server), server_role);
        if done {
            finished = true;
            break;
        }
    }
    let clients = records(&b.sim, b.client);
    let servers = records(&b.sim, b.server);
    let bandwidth = t.tool.is_bandwidth();
    let client = side_report(&clients, t.bytes, bandwidth);
    let server = side_report(&servers, t.bytes, bandwidth);
    let total = match (client.bw_average_mb_s, server.bw_average_mb_s) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    };
    let extenders = b
        .extender_links
        .iter()
        .map(|&id| {
            let c = b
                .sim
                .get::<CreditLink>(id)
                .expect("a credit link")
                .counters();
            ExtenderReport {
                max_buffer_bytes: c.max_buffer_bytes,
                credit_stalls: c.credit_stalls,
                cross_frames_sent: c.cross_frames_sent,
                cross_frames_dropped: c.cross_frames_dropped,
            }
        })
        .collect();
    // The run stepped past its end by up to a step: its length is its last event's time.
    let end_ns = if finished {
        last_event_ns(&clients, &servers).unwrap_or(b.sim.now_ns())
    } else {
        b.sim.now_ns()
    };
    let simulated_s = end_ns as f64 / 1e9;
    IbReport {
        source: "simulated",
        test: t.clone(),
        interface_rate_bps: t.interface_rate_bps(),
        wan_rate_bps: t
            .extender
            .map(|e| e.wan_rate_bps(t.mtu_bytes + BASE_HEADER_BYTES)),
        latency: clients[0].record().and_then(|r| latency(t, r)),
        mpi: mpi_report(t, &clients, &servers),
        client,
        server,
        bw_average_mb_s: total,
        goodput_gbps: total.map(|mb| mb * PERFTEST_MB * 8.0 / 1e9),
        extenders,
        side_tcp: side_tcp_report(&b, t, simulated_s),
        finished,
        simulated_s,
        events: b.sim.events_processed(),
        perf: Perf::since(wall, simulated_s, b.sim.events_processed()),
    }
}
