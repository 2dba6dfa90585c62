//! The layer a line runs at: the rate its payload is carried at, and the bytes each IP
//! packet costs on it beyond its own (framing).
//!
//! A loop of USN was an Ethernet frame's journey over several layers: the host's 10GigE
//! LAN-PHY, the edge switch's 10GigE WAN-PHY into the SONET switch, OC192 across the
//! country. The emulated line is the one that limits the circuit; its layer decides how
//! many IP bytes a second fit through it. Each figure below cites where it comes from.

use serde::{Deserialize, Serialize};

/// Bits per second of a SONET STS-Nc synchronous payload envelope: N x 87 columns of 9
/// bytes, less one column of path overhead and, for N > 3, N/3 - 1 columns of fixed
/// stuff, 8,000 frames a second (ANSI T1.105-2001 §7.2; Telcordia GR-253-CORE §3.3.2).
const fn sts_nc_payload_bps(n: u64) -> u64 {
    let stuff = if n > 3 { n / 3 - 1 } else { 0 };
    let columns = n * 87 - 1 - stuff;
    columns * 9 * 8 * 8_000
}

/// Ethernet's cost per frame beyond the IP packet on a full-duplex Ethernet PHY: preamble
/// (7) and start delimiter (1), MAC header (14), FCS (4), and the minimum inter-packet gap
/// of 96 bit times (12) (IEEE 802.3-2008 clause 3, frame format; clause 4, interFrameGap).
pub const ETHERNET_PHY_OVERHEAD_BYTES: u32 = 38;

/// Ethernet over SONET by frame-mapped GFP (ITU-T G.7041/Y.1303 §7.1): the MAC frame from
/// destination address to FCS (14 + 4 bytes) behind a 4-byte core header and a 4-byte
/// payload type header, with no extension header and no payload FCS. GFP does not carry
/// the preamble, start delimiter or inter-packet gap; idle frames fill the gaps.
///
/// Why GFP-F: it is the standard mapping of Ethernet into a SONET payload (G.7041, with
/// virtual concatenation, G.707), which SONET switches of the Ciena `CoreDirector` class use for
/// Ethernet private lines; USN's SONET channels carried Ethernet VLANs between its edge
/// switches. Packet over SONET (PPP in HDLC, RFC 2615) would cost 9 bytes but carries
/// no Ethernet frame.
pub const GFP_F_ETHERNET_OVERHEAD_BYTES: u32 = 4 + 4 + 14 + 4;

/// The line layers longhaul emulates and simulates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// No framing: the rate counts IP bytes (benchmarks, and circuits described by rate).
    #[default]
    Ip,
    /// OC-192c SONET, Ethernet mapped by GFP-F: 9.58464 Gb/s of payload.
    Oc192,
    /// OC-48c SONET, GFP-F: 2.39616 Gb/s.
    Oc48,
    /// OC-12c SONET, GFP-F: 599.04 Mb/s.
    Oc12,
    /// OC-3c SONET, GFP-F: 149.76 Mb/s.
    Oc3,
    /// 10GigE WAN-PHY (10GBASE-W): Ethernet at the rate an STS-192c payload carries it.
    Wanphy,
    /// 10GigE LAN-PHY (10GBASE-R): 10 Gb/s.
    Lanphy,
    /// Gigabit Ethernet: 1 Gb/s.
    Gige,
}

impl Layer {
    pub const ALL: [Layer; 8] = [
        Layer::Ip,
        Layer::Oc192,
        Layer::Oc48,
        Layer::Oc12,
        Layer::Oc3,
        Layer::Wanphy,
        Layer::Lanphy,
        Layer::Gige,
    ];

    /// The rate the line serializes framed bytes at (None: any rate, as configured).
    pub const fn line_rate_bps(self) -> Option<u64> {
        match self {
            Layer::Ip => None,
            Layer::Oc192 => Some(sts_nc_payload_bps(192)),
            Layer::Oc48 => Some(sts_nc_payload_bps(48)),
            Layer::Oc12 => Some(sts_nc_payload_bps(12)),
            Layer::Oc3 => Some(sts_nc_payload_bps(3)),
            // The WAN interface sublayer carries the 64B/66B-coded stream in the STS-192c
            // payload (IEEE 802.3-2008 clause 50, WIS; clause 49, 64B/66B PCS), so the
            // MAC's data rate is that payload's 64/66; the MAC holds to it by stretching
            // its inter-packet gap (clause 4, ifsStretchMode). 9.58464 x 64/66 = 9.2942 Gb/s.
            Layer::Wanphy => Some(sts_nc_payload_bps(192) * 64 / 66),
            // IEEE 802.3-2008 clause 44 (10 Gb/s baseband): a 10 Gb/s MAC data rate.
            Layer::Lanphy => Some(10_000_000_000),
            // IEEE 802.3-2008 clause 34 (1000 Mb/s baseband).
            Layer::Gige => Some(1_000_000_000),
        }
    }

    /// Bytes each IP packet costs on the line beyond its own.
    pub const fn frame_overhead_bytes(self) -> u32 {
        match self {
            Layer::Ip => 0,
            Layer::Oc192 | Layer::Oc48 | Layer::Oc12 | Layer::Oc3 => GFP_F_ETHERNET_OVERHEAD_BYTES,
            Layer::Wanphy | Layer::Lanphy | Layer::Gige => ETHERNET_PHY_OVERHEAD_BYTES,
        }
    }

    /// The name in configuration files and on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            Layer::Ip => "ip",
            Layer::Oc192 => "oc192",
            Layer::Oc48 => "oc48",
            Layer::Oc12 => "oc12",
            Layer::Oc3 => "oc3",
            Layer::Wanphy => "wanphy",
            Layer::Lanphy => "lanphy",
            Layer::Gige => "gige",
        }
    }

    pub fn parse(name: &str) -> Result<Layer, String> {
        let wanted = name.trim().to_ascii_lowercase().replace(['-', '_'], "");
        Layer::ALL
            .into_iter()
            .find(|layer| layer.name() == wanted)
            .ok_or_else(|| {
                let names: Vec<&str> = Layer::ALL.iter().map(|l| l.name()).collect();
                format!("layer {name:?} is not one of {}", names.join(", "))
            })
    }

    /// IP bytes a second the layer carries for packets of `ip_bytes` at `rate_bps`.
    pub fn ip_rate_bps(self, rate_bps: u64, ip_bytes: u64) -> f64 {
        let wire = ip_bytes + u64::from(self.frame_overhead_bytes());
        rate_bps as f64 * ip_bytes as f64 / wire as f64
    }
}

/// Bytes a label or tag adds to each frame of a channel carried inside another: an IEEE
/// 802.1Q VLAN tag (IEEE 802.1Q-2005 §9.3) or an MPLS label stack entry (RFC 3032 §2.1).
pub const VLAN_TAG_BYTES: u32 = 4;
pub const MPLS_LABEL_BYTES: u32 = 4;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sonet_payloads_are_the_standard_figures() {
        assert_eq!(Layer::Oc192.line_rate_bps(), Some(9_584_640_000));
        assert_eq!(Layer::Oc48.line_rate_bps(), Some(2_396_160_000));
        assert_eq!(Layer::Oc12.line_rate_bps(), Some(599_040_000));
        assert_eq!(Layer::Oc3.line_rate_bps(), Some(149_760_000));
        assert_eq!(Layer::Wanphy.line_rate_bps(), Some(9_294_196_363));
    }

    #[test]
    fn full_size_packets_give_the_goodputs_usn_quoted() {
        // USN quoted 9.6 Gb/s for OC192 and about 9.29 for WAN-PHY: rates of the line.
        // What 1,500-byte IP packets carry is less by the framing.
        let oc192 = Layer::Oc192.ip_rate_bps(9_584_640_000, 1500);
        assert!((oc192 / 1e9 - 9.4213).abs() < 1e-3, "{oc192}");
        let wanphy = Layer::Wanphy.ip_rate_bps(9_294_196_363, 1500);
        assert!((wanphy / 1e9 - 9.0646).abs() < 1e-3, "{wanphy}");
        let lanphy = Layer::Lanphy.ip_rate_bps(10_000_000_000, 1500);
        assert!((lanphy / 1e9 - 9.7529).abs() < 1e-3, "{lanphy}");
    }

    #[test]
    fn names_read_back() {
        for layer in Layer::ALL {
            assert_eq!(Layer::parse(layer.name()), Ok(layer));
        }
        assert_eq!(Layer::parse("WAN-PHY"), Ok(Layer::Wanphy));
        assert!(Layer::parse("oc768").unwrap_err().contains("oc192"));
        let json = serde_json::to_string(&Layer::Lanphy).unwrap();
        assert_eq!(json, "\"lanphy\"");
    }
}
