//! The devices at the ends of a wide-area InfiniBand connection: the host channel
//! adapter and its bus, the range extenders and their WAN line, and how the two sides
//! set up the connection. Every constant cites where it comes from.

use longhaul_link::layer::Layer;
use serde::Serialize;

use super::wire::LinkSpeed;
use crate::credit::CrossTraffic;

/// How the two sides set up the connection, and the QP attributes each way picks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Connection {
    /// RDMA CM (librdmacm, the kernel's `ib_cm`): the local ACK timeout comes from the
    /// subnet manager's path record, packet life time + 1 (`cm.c` `cm_ack_timeout`);
    /// OpenSM answers a packet life time of its subnet timeout, 0x12 (~1 s) on any path
    /// that is not a loopback (`osm_sa_path_record.c`, `OSM_DEFAULT_SUBNET_TIMEOUT`): 19.
    Cm,
    /// perftest's own exchange over a TCP socket: the tools hard-code `timeout = 14`
    /// (67 ms) and `retry_cnt = 7` when they move the QP to RTS (`send_bw.c` et al.).
    Socket,
}

impl Connection {
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "cm" | "rdma_cm" => Ok(Connection::Cm),
            "socket" | "sockets" => Ok(Connection::Socket),
            _ => Err(format!("connection set-up {name:?} is not cm or socket")),
        }
    }

    pub fn ack_timeout_exponent(self) -> u32 {
        match self {
            Connection::Cm => 0x12 + 1,
            Connection::Socket => 14,
        }
    }
}

/// The host channel adapter and the bus behind it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Hca {
    pub speed: LinkSpeed,
    /// Payload the host bus carries at most, bits/s. PCIe 1.x x8: 8 lanes x 2.5 GT/s x
    /// 8/10 = 16 Gb/s per direction, of which transaction-layer packets of 128 bytes of
    /// payload (the usual MaxPayloadSize of the time) carry 128 of every 152 bytes
    /// (a 4-DW header 16, sequence number 2, LCRC 4, framing 2: PCIe base spec 1.1
    /// §2.2, §3.5, §4.2): 13.47 Gb/s.
    pub bus_payload_bps: u64,
    /// Queue pair limits of the adapter: unacknowledged packets per RC QP. InfiniHost
    /// documents no such limit below the PSN space's half (2^23 packets, IBA §9.7.2).
    pub max_unacked_packets: u64,
    /// The RC responder acknowledges at least every this many packets (and every
    /// message's last): one ACK per 64 packets is an assumption, since no adapter's
    /// coalescing is published; it only changes how much of the reverse line ACKs take.
    pub ack_every_packets: u64,
    /// The shortest transport timer the adapter runs, whatever the QP's timeout asks:
    /// Mellanox firmware raises smaller timeouts to about 500 ms (documented for
    /// ConnectX-2 by the RAMCloud project, "Mellanox NIC timeouts", which patched the
    /// firmware to go lower); taken to hold for InfiniHost III too.
    pub min_ack_timeout_ns: u64,
    /// The adapter's time to take up one work request (`QpConfig::wqe_ns`). 0 by default:
    /// no per-request cost of InfiniHost III was found published; what it changes is the
    /// message rate of small messages, which USN's WAN results do not depend on.
    pub wqe_ns: u64,
}

/// PCIe 1.x x8 with 128-byte TLPs (see [`Hca::bus_payload_bps`]).
pub const PCIE_1_X8_PAYLOAD_BPS: u64 = 16_000_000_000 * 128 / 152;

/// PCI-X 133 (64 bits x 133.33 MHz, PCI-X Addendum 1.0), the bus of the first
/// InfiniHost generation: its raw rate, since a burst carries no per-packet header (its
/// address and attribute phases are not modelled), as for the TCP hosts' presets.
pub const PCI_X_133_PAYLOAD_BPS: u64 = crate::presets::PCI_X_133_BPS as u64;

impl Hca {
    /// The host bus by name: `pcie-x8` or `pci-x`.
    pub fn bus_by_name(name: &str) -> Result<u64, String> {
        match name {
            "pcie-x8" | "pcie" => Ok(PCIE_1_X8_PAYLOAD_BPS),
            "pci-x" | "pcix" => Ok(PCI_X_133_PAYLOAD_BPS),
            _ => Err(format!("bus {name:?} is not pcie-x8 or pci-x")),
        }
    }

    /// A Mellanox InfiniHost III class HCA on PCIe x8, at `speed`.
    pub fn infinihost_pcie_x8(speed: LinkSpeed) -> Self {
        Self {
            speed,
            bus_payload_bps: PCIE_1_X8_PAYLOAD_BPS,
            max_unacked_packets: 1 << 23,
            ack_every_packets: 64,
            min_ack_timeout_ns: 500_000_000,
            wqe_ns: 0,
        }
    }
}

/// A range extender pair on the WAN.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Extender {
    pub wan: Layer,
    /// Its IB port's speed: Longbow XR's is 4X SDR (its 8 Gb/s of data fits an OC-192c
    /// payload), so a DDR HCA behind it runs at SDR.
    pub ib_speed: LinkSpeed,
    /// The buffer each extender grants the other across the WAN.
    pub buffer_bytes: u64,
}

/// InfiniBand switches between each host and its extender (or between the hosts), one
/// virtual lane: each is a port's input buffer and its line, with credit-based flow
/// control like every IB link. No switch of the USN setup is modelled by default (its
/// hosts met the Longbows directly); the latency and buffer of a given switch are its
/// datasheet's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct IbSwitch {
    /// Switches on each side.
    pub count: u32,
    /// Port to port, the cable's propagation included.
    pub latency_ns: u64,
    /// Each input port's buffer for the virtual lane used.
    pub buffer_bytes: u64,
}

/// Obsidian publishes no buffer size we could find. USN measured near the line rate
/// over 163 ms (8,600 miles), which an 8 Gb/s line reaches only with at least 163 MB
/// of credit; 256 MiB is the assumption, above that bound, held for every case.
pub const LONGBOW_BUFFER_BYTES: u64 = 256 << 20;

impl Extender {
    pub fn longbow_xr(wan: Layer) -> Self {
        Self {
            wan,
            ib_speed: LinkSpeed::Sdr4x,
            buffer_bytes: LONGBOW_BUFFER_BYTES,
        }
    }

    /// IB bytes a second the WAN carries: its payload rate, less the per-frame cost of
    /// the layer's framing around each full-MTU IB packet (taken as the layer frames an
    /// Ethernet frame: the extender's own encapsulation is not published).
    pub(crate) fn wan_rate_bps(&self, ib_packet_bytes: u32) -> u64 {
        let line = self
            .wan
            .line_rate_bps()
            .expect("a range extender's WAN layer has a rate");
        self.wan.ip_rate_bps(line, u64::from(ib_packet_bytes)) as u64
    }
}

/// Cross traffic of `gbps` (IP) as the WAN line carries it: 1,500-byte IP packets in the
/// layer's framing. Its queue, 1 MiB, is an assumption (the WAN switch's or extender's
/// buffer for Ethernet is not published).
pub(crate) fn cross_traffic(layer: Layer, gbps: f64) -> CrossTraffic {
    const IP_BYTES: u32 = 1500;
    let frame_bytes = IP_BYTES + layer.frame_overhead_bytes();
    CrossTraffic {
        rate_bps: (gbps * 1e9 * f64::from(frame_bytes) / f64::from(IP_BYTES)) as u64,
        frame_bytes,
        queue_bytes: 1 << 20,
    }
}
