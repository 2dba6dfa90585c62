//! InfiniBand on the wire: link data rates, the headers each packet carries, and how a
//! packet's InfiniBand meaning rides in the simulator's transport-neutral [`Packet`].
//!
//! Sources: InfiniBand Architecture Specification vol. 1 rel. 1.2.1 (IBA) for the packet
//! format (§5.4 and §7.7-7.8 local route header and CRCs, §9.2-9.3 base and extended
//! transport headers), vol. 2 rel. 1.2.1 §5.2 for the lane rates and 8b/10b coding.

use serde::Serialize;

use crate::packet::{Kind, Packet};

/// Local Route Header (IBA vol. 1 §7.7).
pub const LRH_BYTES: u32 = 8;
/// Base Transport Header (§9.2).
pub const BTH_BYTES: u32 = 12;
/// RDMA Extended Transport Header: virtual address, key, DMA length (§9.3.3); on the
/// first (or only) packet of an RDMA write and on a read request.
pub const RETH_BYTES: u32 = 16;
/// ACK Extended Transport Header: syndrome and message sequence number (§9.3.5); on
/// ACKs and NAKs and on the first, last and only packets of a read response.
pub const AETH_BYTES: u32 = 4;
/// Datagram Extended Transport Header: queue key and source QP (§9.3.2), on UD packets.
pub const DETH_BYTES: u32 = 8;
/// Invariant CRC (§7.8.1) and variant CRC (§7.8.2).
pub const ICRC_BYTES: u32 = 4;
pub const VCRC_BYTES: u32 = 2;
/// What every packet carries whatever its opcode: LRH, BTH, ICRC, VCRC. No global route
/// header: a loop across range extenders is one subnet (§8.3, GRH only between subnets).
pub const BASE_HEADER_BYTES: u32 = LRH_BYTES + BTH_BYTES + ICRC_BYTES + VCRC_BYTES;

/// The signalling rate and width of a link; the data rate is 8/10 of the signal
/// (8b/10b, IBA vol. 2 §5.2.1): 4X SDR 4 lanes x 2.5 Gbaud = 8 Gb/s of data, DDR 16.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkSpeed {
    Sdr4x,
    Ddr4x,
}

impl LinkSpeed {
    pub const fn data_rate_bps(self) -> u64 {
        match self {
            LinkSpeed::Sdr4x => 8_000_000_000,
            LinkSpeed::Ddr4x => 16_000_000_000,
        }
    }

    pub fn parse(name: &str) -> Result<Self, String> {
        match name.to_ascii_lowercase().as_str() {
            "sdr" | "4x-sdr" | "sdr4x" => Ok(LinkSpeed::Sdr4x),
            "ddr" | "4x-ddr" | "ddr4x" => Ok(LinkSpeed::Ddr4x),
            _ => Err(format!("link speed {name:?} is not sdr or ddr")),
        }
    }
}

/// Path MTUs IBA allows (§7.7.8: 256, 512, 1024, 2048, 4096 bytes of payload).
pub fn check_mtu(mtu_bytes: u32) -> Result<u32, String> {
    if [256, 512, 1024, 2048, 4096].contains(&mtu_bytes) {
        Ok(mtu_bytes)
    } else {
        Err(format!(
            "MTU {mtu_bytes} is not one of 256, 512, 1024, 2048, 4096"
        ))
    }
}

/// What a packet is, as its BTH opcode says (§9.2.1, table 35), reduced to what the
/// model tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Opcode {
    SendFirst = 1,
    SendMiddle,
    SendLast,
    SendOnly,
    WriteFirst,
    WriteMiddle,
    WriteLast,
    WriteOnly,
    ReadRequest,
    ReadResponseFirst,
    ReadResponseMiddle,
    ReadResponseLast,
    ReadResponseOnly,
    Ack,
    /// NAK, PSN sequence error (§9.7.5.2.2): the responder expected an earlier PSN.
    NakSequence,
    /// A UD send (always one packet).
    UdSend,
}

const OPCODES: [Opcode; 16] = [
    Opcode::SendFirst,
    Opcode::SendMiddle,
    Opcode::SendLast,
    Opcode::SendOnly,
    Opcode::WriteFirst,
    Opcode::WriteMiddle,
    Opcode::WriteLast,
    Opcode::WriteOnly,
    Opcode::ReadRequest,
    Opcode::ReadResponseFirst,
    Opcode::ReadResponseMiddle,
    Opcode::ReadResponseLast,
    Opcode::ReadResponseOnly,
    Opcode::Ack,
    Opcode::NakSequence,
    Opcode::UdSend,
];

impl Opcode {
    /// Header bytes beyond the payload: the base headers and the extended ones this
    /// opcode carries (§9.3, table 36 of "required headers").
    pub const fn header_bytes(self) -> u32 {
        BASE_HEADER_BYTES
            + match self {
                Opcode::WriteFirst | Opcode::WriteOnly | Opcode::ReadRequest => RETH_BYTES,
                Opcode::ReadResponseFirst
                | Opcode::ReadResponseLast
                | Opcode::ReadResponseOnly
                | Opcode::Ack
                | Opcode::NakSequence => AETH_BYTES,
                Opcode::UdSend => DETH_BYTES,
                _ => 0,
            }
    }

    /// Whether the packet ends a message (the responder completes it, and an RC
    /// responder acknowledges it).
    pub const fn ends_message(self) -> bool {
        matches!(
            self,
            Opcode::SendLast
                | Opcode::SendOnly
                | Opcode::WriteLast
                | Opcode::WriteOnly
                | Opcode::ReadResponseLast
                | Opcode::ReadResponseOnly
                | Opcode::UdSend
        )
    }

    /// Whether the packet starts a message (UC resumes at one after a loss).
    pub const fn starts_message(self) -> bool {
        matches!(
            self,
            Opcode::SendFirst
                | Opcode::SendOnly
                | Opcode::WriteFirst
                | Opcode::WriteOnly
                | Opcode::ReadRequest
                | Opcode::UdSend
        )
    }

    pub const fn is_read_response(self) -> bool {
        matches!(
            self,
            Opcode::ReadResponseFirst
                | Opcode::ReadResponseMiddle
                | Opcode::ReadResponseLast
                | Opcode::ReadResponseOnly
        )
    }

    /// The opcode of packet `index` of `count` in a message of kind `first`..`only`.
    pub fn nth(op: [Opcode; 4], index: u64, count: u64) -> Opcode {
        let [first, middle, last, only] = op;
        match (index, count) {
            (_, 1) => only,
            (0, _) => first,
            (i, n) if i + 1 == n => last,
            _ => middle,
        }
    }
}

pub const SEND: [Opcode; 4] = [
    Opcode::SendFirst,
    Opcode::SendMiddle,
    Opcode::SendLast,
    Opcode::SendOnly,
];
pub const WRITE: [Opcode; 4] = [
    Opcode::WriteFirst,
    Opcode::WriteMiddle,
    Opcode::WriteLast,
    Opcode::WriteOnly,
];
pub const READ_RESPONSE: [Opcode; 4] = [
    Opcode::ReadResponseFirst,
    Opcode::ReadResponseMiddle,
    Opcode::ReadResponseLast,
    Opcode::ReadResponseOnly,
];

/// Bytes on the wire of a packet with `payload` bytes: headers, the payload padded to
/// whole 4-byte words (BTH PadCnt, §9.2.3), CRCs.
pub const fn wire_bytes(op: Opcode, payload: u32) -> u32 {
    op.header_bytes() + payload.div_ceil(4) * 4
}

/// Packets a message of `bytes` takes at `mtu_bytes` (a zero-byte message takes one).
pub fn packets_for(bytes: u64, mtu_bytes: u32) -> u64 {
    bytes.div_ceil(u64::from(mtu_bytes)).max(1)
}

/// An InfiniBand packet as the model sees it. In a [`Packet`]: payload-bearing packets
/// (sends, writes, read responses) are `Kind::Data` so links and hosts count their bytes;
/// the rest (ACKs, NAKs, read requests) `Kind::Ack`. `seq` is the PSN (counted in a
/// u64, never wrapped: a run sends far fewer than 2^24 packets per QP's window, and the
/// model does not need the wrap), `wnd_bytes` the opcode, `ack` an ACK's next expected
/// PSN or a read request's DMA length, `ts_ns` when it was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IbPacket {
    pub op: Opcode,
    pub psn: u64,
    pub payload: u32,
    /// ACK/NAK: the next PSN the responder expects; read request: bytes asked for.
    pub value: u64,
}

impl IbPacket {
    pub fn to_packet(self, qp: u32, now_ns: u64) -> Packet {
        let kind = match self.op {
            Opcode::ReadRequest | Opcode::Ack | Opcode::NakSequence => Kind::Ack,
            _ => Kind::Data,
        };
        let mut pkt = Packet::new(kind, qp, wire_bytes(self.op, self.payload));
        pkt.len = self.payload;
        pkt.seq = self.psn;
        pkt.wnd_bytes = self.op as u64;
        pkt.ack = self.value;
        pkt.ts_ns = now_ns;
        pkt
    }

    /// The InfiniBand packet a [`Packet`] carries, if it carries one.
    pub fn from_packet(pkt: &Packet) -> Option<Self> {
        let code = usize::try_from(pkt.wnd_bytes).ok()?;
        let op = *OPCODES.get(code.checked_sub(1)?)?;
        if !matches!(pkt.kind, Kind::Data | Kind::Ack) {
            return None;
        }
        Some(Self {
            op,
            psn: pkt.seq,
            payload: pkt.len,
            value: pkt.ack,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_write_packet_is_the_mtu_and_26_bytes() {
        assert_eq!(wire_bytes(Opcode::WriteMiddle, 2048), 2074);
        assert_eq!(wire_bytes(Opcode::WriteFirst, 2048), 2090);
        assert_eq!(wire_bytes(Opcode::Ack, 0), 30);
        assert_eq!(wire_bytes(Opcode::UdSend, 2048), 2082);
        assert_eq!(wire_bytes(Opcode::SendOnly, 1), 30);
    }

    #[test]
    fn opcodes_survive_the_packet() {
        for op in OPCODES {
            let ib = IbPacket {
                op,
                psn: 7,
                payload: if op.header_bytes() == BASE_HEADER_BYTES {
                    64
                } else {
                    0
                },
                value: 9,
            };
            assert_eq!(IbPacket::from_packet(&ib.to_packet(3, 5)), Some(ib));
        }
    }

    #[test]
    fn messages_split_into_first_middle_last() {
        let ops: Vec<_> = (0..4).map(|i| Opcode::nth(WRITE, i, 4)).collect();
        assert_eq!(
            ops,
            [
                Opcode::WriteFirst,
                Opcode::WriteMiddle,
                Opcode::WriteMiddle,
                Opcode::WriteLast
            ]
        );
        assert_eq!(Opcode::nth(SEND, 0, 1), Opcode::SendOnly);
        assert_eq!(packets_for(8 << 20, 2048), 4096);
        assert_eq!(packets_for(0, 2048), 1);
    }
}
