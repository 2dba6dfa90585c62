//! Named hosts and connections of the `UltraScience` Net, selectable in a scenario with
//! `host_preset` and `path_preset` (fields given beside a preset override it).
//!
//! # Hosts
//!
//! | name | NIC | bus ceiling | MTU | buffers |
//! |---|---|---|---|---|
//! | `usn-type-1` | 10GigE | 16 Gb/s (PCI-Express x8) | 9000 | auto-tuning, 4 MiB ceilings |
//! | `usn-type-2` | 10GigE | 16 Gb/s (PCI-Express x8) | 9000 | auto-tuning, 4 MiB ceilings |
//! | `usn-type-3` | 10GigE | 6.5 Gb/s (PCI-X) | 9000 | fixed 256 KiB, no auto-tuning |
//! | `linux-2.6.18` | 10GigE | none | 1500 | auto-tuning, stock 4 MiB ceilings |
//!
//! Types I and II (Opteron and Xeon, both PCI-Express, Linux 2.6.18/2.6.23) differ only
//! in CPU, which the model does not see. USN's 10GigE hosts ran jumbo frames (MTU 9000),
//! chosen here; set `mtu_bytes` to 1500 to compare. The ceilings are 2.6.18's stock
//! `tcp_rmem`/`tcp_wmem` maxima (4 MiB): the publications say only "auto-tuning on", and
//! with them one stream stays under 1 Gb/s at 1,400 miles as published (16 MiB, the
//! usual tuning of the era, gives 3.5 Gb/s there). The window is three quarters of the
//! buffer (`tcp_adv_win_scale` = 2). All use delayed ACKs (40
//! ms), a 200 ms minimum RTO, RFC 3390 initial windows and no initial ssthresh.
//!
//! # Connections
//!
//! `usn-<miles>-oc192` (OC192 SONET, 9.6 Gb/s payload) and `usn-<miles>-wanphy` (10GigE
//! WAN-PHY, 9.29 Gb/s) for every loop-back in `data/reference/rtt.csv`: 0.2, 1400,
//! 2800, 4200, 5600, 7000, 8400, 9800, 11200, 12600, 6600, 8600, 17200, 25800 and 34400
//! miles, with the published ping RTTs (0.28 ms ... 653 ms), so e.g. `usn-8600-wanphy` is
//! 9.29 Gb/s at 163 ms. The bottleneck queue (the Force10 E300 port buffer, not
//! published) is taken as 4 MiB; the line is lossless. Both are assumptions to calibrate.

use serde::Serialize;

use crate::cc::TcpStack;
use crate::scenario::{HostConfig, PathConfig};
use longhaul_link::Loss;

pub const OC192_PAYLOAD_BPS: f64 = 9.6e9;
pub const WAN_PHY_BPS: f64 = 9.29e9;
pub const USN_QUEUE_BYTES: u64 = 4 << 20;
/// Ethernet preamble, header, FCS and inter-frame gap.
pub const ETHERNET_FRAMING_BYTES: u32 = 38;
/// ACKs queue on the return path too, but never overflow it in practice.
pub const REVERSE_QUEUE_BYTES: u64 = 64 << 20;

/// (miles, RTT ms, loop) as published (rtt.csv).
pub const USN_LOOPS: [(f64, f64, &str); 15] = [
    (0.2, 0.28, "ORNL local"),
    (1400.0, 26.8, "ORNL-Chicago x1"),
    (2800.0, 53.4, "ORNL-Chicago x2"),
    (4200.0, 79.9, "ORNL-Chicago x3"),
    (5600.0, 106.0, "ORNL-Chicago x4"),
    (7000.0, 132.0, "ORNL-Chicago x5"),
    (8400.0, 159.0, "ORNL-Chicago x6"),
    (9800.0, 185.0, "ORNL-Chicago x7"),
    (11200.0, 212.0, "ORNL-Chicago x8"),
    (12600.0, 238.0, "ORNL-Chicago x9"),
    (6600.0, 128.0, "ORNL-Chicago-Seattle"),
    (8600.0, 163.0, "ORNL-Chicago-Seattle-Sunnyvale x1"),
    (17200.0, 327.0, "ORNL-Chicago-Seattle-Sunnyvale x2"),
    (25800.0, 490.0, "ORNL-Chicago-Seattle-Sunnyvale x3"),
    (34400.0, 653.0, "ORNL-Chicago-Seattle-Sunnyvale x4"),
];

const LAYERS: [(&str, f64); 2] = [("oc192", OC192_PAYLOAD_BPS), ("wanphy", WAN_PHY_BPS)];

fn miles_label(miles: f64) -> String {
    if miles.fract() == 0.0 {
        format!("{miles:.0}")
    } else {
        format!("{miles}")
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct PathPreset {
    pub name: String,
    pub description: String,
    pub length_miles: f64,
    pub path: PathConfig,
}

#[derive(Debug, Clone, Serialize)]
pub struct HostPreset {
    pub name: &'static str,
    pub description: &'static str,
    pub host: HostConfig,
}

pub fn path_presets() -> Vec<PathPreset> {
    let mut out = Vec::new();
    for (layer, rate_bps) in LAYERS {
        for (miles, rtt_ms, name) in USN_LOOPS {
            out.push(PathPreset {
                name: format!("usn-{}-{layer}", miles_label(miles)),
                description: format!("USN loop-back {name}, {layer}, published RTT"),
                length_miles: miles,
                path: PathConfig {
                    rate_bps,
                    rtt_ms,
                    queue_bytes: USN_QUEUE_BYTES,
                    reverse_queue_bytes: REVERSE_QUEUE_BYTES,
                    loss: Loss::NONE,
                    reverse_loss: Loss::NONE,
                    cross_traffic_bps: 0.0,
                    cross_traffic_packet_bytes: 1500,
                    frame_overhead_bytes: ETHERNET_FRAMING_BYTES,
                },
            });
        }
    }
    out
}

/// Stock Linux 2.6.18 on a 10GigE NIC, no bus limit: the host when none is named.
pub fn default_host() -> HostConfig {
    HostConfig {
        nic_rate_bps: 10e9,
        bus_rate_bps: None,
        mtu_bytes: 1500,
        auto_tuning: true,
        snd_buf_max_bytes: 4 << 20,
        rcv_buf_max_bytes: 4 << 20,
        delayed_ack: true,
        delayed_ack_timeout_ms: 40.0,
        min_rto_ms: 200.0,
        initial_cwnd_segments: None,
        initial_ssthresh_segments: None,
        stack: TcpStack::Linux,
    }
}

pub fn host_presets() -> Vec<HostPreset> {
    let pcie = HostConfig {
        bus_rate_bps: Some(16e9),
        mtu_bytes: 9000,
        ..default_host()
    };
    let pcix = HostConfig {
        bus_rate_bps: Some(6.5e9),
        auto_tuning: false,
        snd_buf_max_bytes: 256 << 10,
        rcv_buf_max_bytes: 256 << 10,
        ..pcie.clone()
    };
    vec![
        HostPreset {
            name: "usn-type-1",
            description: "USN type I: dual-socket quad-core Opteron, PCI-Express, 10GigE, auto-tuning",
            host: pcie.clone(),
        },
        HostPreset {
            name: "usn-type-2",
            description: "USN type II: dual-socket dual-core Xeon, PCI-Express, 10GigE, auto-tuning",
            host: pcie,
        },
        HostPreset {
            name: "usn-type-3",
            description: "USN type III: PCI-X bus (6.5 Gb/s), fixed 256 KiB buffers, no auto-tuning",
            host: pcix,
        },
        HostPreset {
            name: "linux-2.6.18",
            description: "stock Linux 2.6.18 defaults on a 10GigE NIC, MTU 1500",
            host: default_host(),
        },
    ]
}

pub fn path_preset(name: &str) -> Option<PathConfig> {
    path_presets()
        .into_iter()
        .find(|p| p.name == name)
        .map(|p| p.path)
}

pub fn host_preset(name: &str) -> Option<HostConfig> {
    host_presets()
        .into_iter()
        .find(|p| p.name == name)
        .map(|p| p.host)
}

#[cfg(test)]
// The values compared are exact (powers of two, table constants).
#[allow(clippy::float_cmp)]
mod tests {
    use super::*;

    #[test]
    fn the_usn_connections_carry_the_published_rtts() {
        let p = path_preset("usn-8600-wanphy").unwrap();
        assert_eq!((p.rate_bps, p.rtt_ms), (9.29e9, 163.0));
        assert_eq!(path_preset("usn-0.2-oc192").unwrap().rtt_ms, 0.28);
        assert_eq!(path_preset("usn-1400-oc192").unwrap().rtt_ms, 26.8);
        assert_eq!(path_preset("usn-6600-oc192").unwrap().rtt_ms, 128.0);
        // About 9.5 us per mile one way.
        for (miles, rtt_ms, _) in USN_LOOPS.iter().skip(1) {
            let us_per_mile = rtt_ms * 1000.0 / 2.0 / miles;
            assert!((9.0..10.0).contains(&us_per_mile), "{miles}: {us_per_mile}");
        }
    }

    #[test]
    fn type_3_is_bus_limited_with_fixed_windows() {
        let h = host_preset("usn-type-3").unwrap();
        assert_eq!(h.bus_rate_bps, Some(6.5e9));
        assert!(!h.auto_tuning);
        assert!(host_preset("nonesuch").is_none());
    }
}
