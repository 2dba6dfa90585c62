//! The three RDMA-capable interconnects of Rashti and Afsahi's comparison ("10-Gigabit
//! iWARP Ethernet: comparative performance analysis with InfiniBand and Myrinet-10G",
//! CAC/IPDPS 2007), each as the same chain of parts: the host that posts and polls, the
//! adapter's host bus, the adapter, its line and switch. The hosts of that study are the
//! same for all (Dell PowerEdge 2850: two 2.8 GHz Xeons, DDR2-400, Intel E7520; §4).
//!
//! Every constant says where it comes from. Three kinds of source: a specification or
//! datasheet; the software's own sources (MVAPICH2, MPICH2, Open-MX); and "assumption",
//! a value no source gives, chosen once, held for every case, and named as such. One
//! constant per adapter and one per MPI library are *fitted*: the adapter's own time per
//! message (no vendor publishes it) to the study's short-message latency, and the MPI
//! library's own time per message to its MPI latency (`fit.rs` derives both and a test
//! holds these values to that derivation). Nothing else is fitted.

use serde::Serialize;

use super::bus::Bus;
use crate::ib::devices::LONGBOW_BUFFER_BYTES;
use crate::ib::wire::{AETH_BYTES, BASE_HEADER_BYTES, RETH_BYTES};

/// How the receiver learns that a message arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Completion {
    /// It polls the last byte of the buffer (RDMA write ping-pong, MPI's RDMA fast path).
    PollMemory,
    /// The adapter writes a completion entry over the bus and the host polls for it.
    Queue { entry_bytes: u64 },
}

/// The link between an adapter and the switch, and the switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Line {
    /// Data rate after line coding, bits/s.
    pub data_bps: u64,
    /// Payload per packet (frame) at most.
    pub packet_payload_bytes: u64,
    /// Bytes each packet costs on the line besides its payload (headers, trailers,
    /// preamble and inter-frame gap).
    pub packet_overhead_bytes: u64,
    /// More on a message's first packet (e.g. InfiniBand's RETH).
    pub first_packet_extra_bytes: u64,
    /// The receiver acknowledges every this many packets (and each message's last), with
    /// an acknowledgement of this many bytes on the reverse line.
    pub ack_every_packets: u64,
    pub ack_bytes: u64,
    /// The switch, port to port, cut-through, with the cables.
    pub switch_ns: u64,
}

/// Where an adapter keeps per-connection state and what a miss costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ContextCache {
    /// Connections whose state the adapter holds on chip; None: no per-connection state.
    pub entries: Option<u32>,
    /// A miss: fetching the connection's state from where it lives.
    pub miss_ns: u64,
}

/// One adapter, its bus and line, on the study's hosts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interconnect {
    pub name: &'static str,
    pub label: &'static str,
    pub bus: Bus,
    pub line: Line,
    /// Completion of the user-level ping-pong the study ran with this adapter.
    pub user_completion: Completion,
    pub context: ContextCache,
    /// What bounds the bytes in flight one way, acknowledged by the receiver: never
    /// reached in a machine room, the whole story across a continent. None: nothing
    /// but the line (and the interconnect cannot leave the machine room, see
    /// `leaves_the_room`).
    pub window_bytes: Option<u64>,
    /// Whether the interconnect can be carried over a wide-area loop at all.
    pub leaves_the_room: bool,
    /// FITTED: the adapter's own time per message, both ends together (descriptor
    /// processing, protocol engine, completion logic).
    pub adapter_ns: u64,
    /// Where MPI receives are matched, and the cost per queue entry passed over.
    pub matching_in_adapter: bool,
    pub match_entry_ns: u64,
}

/// The hosts' side of every interconnect (the same PowerEdge 2850s throughout).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Host {
    /// CPU time to build a work request and ring the doorbell. Assumption (0.25 µs: a
    /// few dozen stores and one uncached write).
    pub post_ns: u64,
    /// CPU time to find a completion (a poll that hits). Assumption (0.1 µs).
    pub poll_ns: u64,
    /// From the doorbell write to the adapter seeing it: a posted write through the
    /// MCH and the link. Assumption (0.2 µs).
    pub doorbell_ns: u64,
    /// From an adapter's DMA read request to its first data: about 0.5 µs, the
    /// 64-byte read latency pcie-bench measured on Xeon E5 hosts (Neugebauer et al.,
    /// "Understanding PCIe performance for end host networking", SIGCOMM 2018, §6),
    /// taken for the E7520 too. Assumption as to the platform.
    pub dma_read_ns: u64,
    /// memcpy of user data into or out of a library's buffers, bytes/s: 1.6 GB/s, half of
    /// a STREAM copy rate of 3.2 GB/s (STREAM counts bytes read and written) for
    /// dual-channel DDR2-400 (6.4 GB/s peak). Assumption: no STREAM result of the PE2850
    /// was found.
    pub copy_bytes_per_s: u64,
    /// Registering (pinning and translating) a buffer not registered before: a fixed
    /// cost and a cost per 4 KiB page. Assumption (10 µs + 0.25 µs per page: the order of
    /// the registration costs Mietke et al. measured for Mellanox's stack, "Analysis of
    /// the memory registration process in the Mellanox InfiniBand software stack",
    /// Euro-Par 2006).
    pub register_ns: u64,
    pub register_page_ns: u64,
}

pub const HOST: Host = Host {
    post_ns: 250,
    poll_ns: 100,
    doorbell_ns: 200,
    dma_read_ns: 500,
    copy_bytes_per_s: 1_600_000_000,
    register_ns: 10_000,
    register_page_ns: 250,
};

/// Ethernet's cost per frame beyond the IP packet: header 14, FCS 4, preamble 8,
/// inter-frame gap 12 (IEEE 802.3).
const ETHERNET_FRAME_BYTES: u64 = 38;
/// The smallest Ethernet frame, 64 bytes, with preamble and gap: a TCP ACK.
const ETHERNET_MIN_FRAME_BYTES: u64 = 64 + 20;

/// iWARP over a 1,500-byte MTU: IP 20 and TCP 20 (the offload engine's own TCP, no
/// options assumed), MPA's length 2 and CRC 4 and a 4-byte marker every 512 bytes of the
/// TCP stream (RFC 5044 §4-6: three per frame), DDP/RDMAP's tagged header 14
/// (RFC 5041 §4.2, RFC 5040 §4): 1,428 bytes of data per frame.
const IWARP_FRAME_OVERHEAD_BYTES: u64 = 20 + 20 + 2 + 4 + 3 * 4 + 14;
const IWARP_PAYLOAD_BYTES: u64 = 1500 - IWARP_FRAME_OVERHEAD_BYTES;

/// Fujitsu XG700-CX4, the study's 10GigE switch: 450 ns port to port, cut-through
/// (Fujitsu's announced figure, not checked against its datasheet here), with 5 m of CX4
/// cable (25 ns) each side.
const XG700_NS: u64 = 450 + 2 * 25;

/// NetEffect `NE010e`: a PCIe x8 card whose iWARP engine sits on an internal 64-bit,
/// 133 MHz PCI-X bus (the study, §4 and §6.2), behind a 10GBASE-CX4 port.
pub const IWARP: Interconnect = Interconnect {
    name: "iwarp",
    label: "NetEffect NE010e iWARP",
    bus: Bus::PCI_X_133,
    line: Line {
        data_bps: 10_000_000_000,
        packet_payload_bytes: IWARP_PAYLOAD_BYTES,
        packet_overhead_bytes: IWARP_FRAME_OVERHEAD_BYTES + ETHERNET_FRAME_BYTES,
        first_packet_extra_bytes: 0,
        // TCP's delayed ACK: one per two full segments (RFC 1122 §4.2.3.2, RFC 5681 §4.2).
        ack_every_packets: 2,
        ack_bytes: ETHERNET_MIN_FRAME_BYTES,
        switch_ns: XG700_NS,
    },
    user_completion: Completion::PollMemory,
    // Connection state lives in the card's 256 MB of DDR2 (the study's §4); how many
    // connections its on-chip cache holds is not published: 64 is an assumption, and a
    // miss reads the card's DDR2 (0.2 µs, assumption).
    context: ContextCache {
        entries: Some(64),
        miss_ns: 200,
    },
    // The offload engine's TCP window per connection: not published; 256 KiB is an
    // assumption (TCP's window without scaling is 64 KiB, RFC 7323 §2; offload engines
    // of the time offered a few hundred KiB of buffer per connection).
    window_bytes: Some(256 << 10),
    leaves_the_room: true,
    adapter_ns: 8_000,
    matching_in_adapter: false,
    match_entry_ns: HOST_MATCH_ENTRY_NS,
};

/// Mellanox MHEA28-XT: InfiniHost III Ex, MemFree (its state lives in host memory),
/// PCIe x8, 4X SDR, through a Mellanox MTS2400 (InfiniScale III) switch.
pub const INFINIBAND: Interconnect = Interconnect {
    name: "ib",
    label: "Mellanox MHEA28-XT InfiniBand",
    bus: Bus::Pcie { lanes: 8 },
    line: Line {
        // 4X SDR: 10 Gb/s of 8b/10b (IBA vol. 2 §5.2).
        data_bps: 8_000_000_000,
        // MVAPICH2's VAPI channel: RDMA_DEFAULT_MTU is MTU1024 unless built for DDR
        // (`vapi_param.h`); the study's verbs tests used the same HCAs.
        packet_payload_bytes: 1024,
        packet_overhead_bytes: BASE_HEADER_BYTES as u64,
        first_packet_extra_bytes: RETH_BYTES as u64,
        // One ACK per 64 packets, as the IB model's HCA (`ib::devices::Hca`, an assumption).
        ack_every_packets: 64,
        ack_bytes: (BASE_HEADER_BYTES + AETH_BYTES) as u64,
        // InfiniScale III: under 200 ns port to port (Mellanox's announced figure, not
        // checked against the MTS2400 datasheet here), with 5 m of copper each side.
        switch_ns: 200 + 2 * 25,
    },
    user_completion: Completion::PollMemory,
    // MemFree: QP context is cached on chip and fetched from host memory on a miss (a DMA
    // read of one context entry: its size the firmware reports at run time, mthca's
    // QUERY_DEV_LIM qpc_entry_sz in Linux 2.6.18, so 256 bytes is an assumption). How
    // many the cache holds is not published: 32 is an assumption.
    context: ContextCache {
        entries: Some(32),
        miss_ns: HOST.dma_read_ns + 256 * 1_000_000_000 / 2_000_000_000,
    },
    // IB's link-level credit is a switch port's buffer: across a loop only range
    // extenders carry it, and then their buffer bounds it (Obsidian Longbow XR, the
    // buffer the IB model assumes, `ib::devices::LONGBOW_BUFFER_BYTES`).
    window_bytes: Some(LONGBOW_BUFFER_BYTES),
    leaves_the_room: true,
    adapter_ns: 3_160,
    matching_in_adapter: false,
    match_entry_ns: HOST_MATCH_ENTRY_NS,
};

/// MX has no connections: an endpoint sends to any peer with the same state, and
/// matches receives in the NIC's firmware (Myricom, "Myrinet Express (MX): a high
/// performance, low-level, message-passing interface"). Its firmware's cost per entry
/// passed over: 0.2 µs (assumption: an embedded processor of a few hundred MHz walking
/// a list in SRAM).
const MX_MATCH_ENTRY_NS: u64 = 200;

/// A host library's match loop: one list node not in cache per entry, about a DRAM
/// access on the E7520 platform (0.1 µs, assumption).
const HOST_MATCH_ENTRY_NS: u64 = 100;

/// Myri-10G's own packets: MX's header and Myrinet's route and CRC, 40 bytes
/// (assumption); MX moves large data in 4 KiB pages (Open-MX, which speaks MX's
/// protocol, pulls page-sized fragments: `OMX_PULL_REPLY_LENGTH_MAX` 4096 in MX wire
/// compatibility).
const MX_PAGE_BYTES: u64 = 4096;
const MX_HEADER_BYTES: u64 = 40;

/// Myri-10G 10G-PCIE-8A-C in a PCIe x8 slot forced to x4 (the study, §4), over its
/// 16-port Myri-10G switch (MXoM).
pub const MX_MYRINET: Interconnect = Interconnect {
    name: "mxom",
    label: "Myri-10G MX over Myrinet",
    bus: Bus::Pcie { lanes: 4 },
    line: Line {
        // Myrinet-10G: 10 Gb/s of data over 10GBASE-CX4 signalling (Myricom Myri-10G
        // product list: "10 Gbit/s data rate").
        data_bps: 10_000_000_000,
        packet_payload_bytes: MX_PAGE_BYTES,
        packet_overhead_bytes: MX_HEADER_BYTES,
        first_packet_extra_bytes: 0,
        // MX acknowledges in the library, about once per message or 8 fragments
        // (assumption; the acknowledgements are small either way).
        ack_every_packets: 8,
        ack_bytes: MX_HEADER_BYTES,
        // Myri-10G switch crossbar: 300 ns (assumption, no datasheet figure found), with
        // cables.
        switch_ns: 300 + 2 * 25,
    },
    user_completion: Completion::Queue { entry_bytes: 64 },
    context: ContextCache {
        entries: None,
        miss_ns: 0,
    },
    // MX moves large messages by pulls: 4 blocks of 8 replies of 4 KiB outstanding
    // (Open-MX in MX wire compatibility: `OMX_PULL_BLOCK_DESCS_NR` 4,
    // `OMX_PULL_REPLY_PER_BLOCK` 8, `OMX_PULL_REPLY_LENGTH_MAX` 4096): 128 KiB.
    window_bytes: Some(4 * 8 * MX_PAGE_BYTES),
    // Myrinet's links and switches are a machine room's; MX over Ethernet can be routed
    // over a WAN PHY loop.
    leaves_the_room: false,
    adapter_ns: 1_570,
    matching_in_adapter: true,
    match_entry_ns: MX_MATCH_ENTRY_NS,
};

/// The same card as MXoM, over Ethernet through the Fujitsu XG700 (MXoE): MX's frames
/// in Ethernet frames, the same 4 KiB pages (jumbo frames).
pub const MX_ETHERNET: Interconnect = Interconnect {
    name: "mxoe",
    label: "Myri-10G MX over Ethernet",
    line: Line {
        packet_overhead_bytes: MX_HEADER_BYTES + ETHERNET_FRAME_BYTES,
        ack_bytes: ETHERNET_MIN_FRAME_BYTES,
        switch_ns: XG700_NS,
        ..MX_MYRINET.line
    },
    adapter_ns: 1_690,
    leaves_the_room: true,
    ..MX_MYRINET
};

pub const ALL: [Interconnect; 4] = [IWARP, INFINIBAND, MX_MYRINET, MX_ETHERNET];

impl Interconnect {
    pub fn by_name(name: &str) -> Result<Interconnect, String> {
        ALL.into_iter()
            .find(|i| i.name == name)
            .ok_or_else(|| format!("interconnect {name:?} is not one of iwarp, ib, mxom, mxoe"))
    }

    /// The line's time for `payload` bytes in one packet.
    pub fn packet_ns(&self, payload: u64, first: bool) -> u64 {
        let extra = if first {
            self.line.first_packet_extra_bytes
        } else {
            0
        };
        wire_ns(
            payload + self.line.packet_overhead_bytes + extra,
            self.line.data_bps,
        )
    }

    pub fn ack_ns(&self) -> u64 {
        wire_ns(self.line.ack_bytes, self.line.data_bps)
    }

    /// The MPI library the study ran over this interconnect.
    pub fn mpi(&self) -> MpiLibrary {
        match self.name {
            "iwarp" => MPICH2_IWARP,
            "ib" => MVAPICH2,
            _ => MPICH_MX,
        }
    }
}

pub(crate) fn wire_ns(bytes: u64, bps: u64) -> u64 {
    (bytes * 8 * 1_000_000_000).div_ceil(bps)
}

/// An MPI library's protocols over one interconnect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MpiLibrary {
    pub name: &'static str,
    /// Messages up to this size are copied through the library's registered buffers;
    /// larger ones go by rendezvous (request, reply, zero-copy transfer, finish).
    pub eager_limit_bytes: u64,
    /// The library's header on every message.
    pub header_bytes: u64,
    /// FITTED: the library's own time per message (both ends together): queueing,
    /// progress engine, header handling.
    pub overhead_ns: u64,
}

/// MVAPICH2 0.9.5 over VAPI, IA32 with PCI Express: the eager threshold is a vbuf's data
/// area (`vapi_param.h`: `RDMA_IBA_EAGER_THRESHOLD` = `VBUF_BUFFER_SIZE` for a small cluster),
/// `VBUF_TOTAL_SIZE` 6 KiB for `_IA32_` with `_PCI_EX_` (`vbuf.h`), less the descriptor and
/// bookkeeping kept in the same vbuf (about 128 bytes on IA32: assumption as to the
/// struct sizes). Header: MPICH2's CH3 packet, 32 bytes (assumption: its eager-send
/// header's fields on IA32).
pub const MVAPICH2: MpiLibrary = MpiLibrary {
    name: "MVAPICH2 0.9.5",
    eager_limit_bytes: 6 * 1024 - 128,
    header_bytes: 32,
    overhead_ns: 200,
};

/// MPICH2-iWARP, built on MPICH2 1.0.3's CH3: CH3's default eager limit,
/// `MPIDI_CH3_EAGER_MAX_MSG_SIZE` = 128000 bytes (`mpidi_ch3_post.h` of the sock and
/// shm channels of MPICH2 1.0.x); the iWARP channel's own is not published.
pub const MPICH2_IWARP: MpiLibrary = MpiLibrary {
    name: "MPICH2-iWARP (MPICH2 1.0.3)",
    eager_limit_bytes: 128_000,
    header_bytes: 32,
    overhead_ns: 1_840,
};

/// MPICH-MX (MPICH 1.2.7) passes messages to MX, whose medium messages end at 32 KiB:
/// larger ones go by MX's rendezvous (Open-MX, speaking MX's protocol:
/// `OMX_MEDIUM_MAX` = 32768, reported as `MX_COPY_SEND_MAX`). MX's header carries the
/// match information, so MPICH-MX adds none of its own.
pub const MPICH_MX: MpiLibrary = MpiLibrary {
    name: "MPICH-MX (MPICH 1.2.7.1)",
    eager_limit_bytes: 32 * 1024,
    header_bytes: 0,
    overhead_ns: 150,
};
