//! Named hosts and connections of the `UltraScience` Net, selectable in a scenario with
//! `host_preset` and `path_preset` (fields given beside a preset override it).
//!
//! # Hosts
//!
//! A host with no preset takes its kernel's stock defaults ([`kernel_defaults`]); every
//! value below cites where it comes from.
//!
//! | name | kernel | NIC | bus ceiling | MTU | buffers |
//! |---|---|---|---|---|---|
//! | `usn-type-1` | 2.6.18 | 10GigE (Myri-10G) | 16 Gb/s (PCI Express 1.x x8) | 9000 (assumed) | auto-tuning, 4 MiB ceilings |
//! | `usn-type-2` | 2.6.18 | 10GigE (Myri-10G) | 16 Gb/s (PCI Express 1.x x8) | 9000 (assumed) | auto-tuning, 4 MiB ceilings |
//! | `usn-type-3` | 2.6.18 | 10GigE | 8.53 Gb/s (PCI-X 133 MHz) | 9000 (assumed) | auto-tuning, 4 MiB ceilings |
//! | `linux-2.6.18` | 2.6.18 | 10GigE | none | 1500 | auto-tuning, 4 MiB ceilings |
//! | `linux-6.x` | 6.x | 10GigE | none | 1500 | auto-tuning, 4 MiB send / 6 MiB receive |
//!
//! The USN hosts of the TCP profiles: "quad-core dual-socket 2.0 GHz Opteron or dual-core
//! dual-socket 2.6 GHz Xeon, PCI-Express, Myrinet 10GigE NIC, Linux 2.6.18/2.6.23,
//! auto-tuning on" (Rao, Wu, Poole et al., the USN TCP-over-10GigE-WAN-PHY measurements,
//! 2008). Types I and II differ only in CPU, which the model does not see; both run
//! 2.6.18 here, the older of the two kernels named (2.6.23 is not modelled). Sources:
//! - kernel defaults: [`kernel_defaults`];
//! - the Myri-10G NIC (10G-PCIE-8A): 10 Gb/s Ethernet in a PCI Express x8 slot;
//! - PCI Express 1.x x8: 8 lanes of 2.5 GT/s with 8b/10b coding, 16 Gb/s of data each way
//!   (PCI Express Base Specification 1.1, section 4.2), before packet overheads;
//! - PCI-X 133: 64 bits at 133 MHz, 8.53 Gb/s (PCI-X Addendum to the PCI Local Bus
//!   Specification 1.0). The PCI-X host type is SYSTEM's "PCI-X vs PCI-Express" host
//!   limit; no USN table gives its figures;
//! - MTU 9000: an assumption, not in the published host description (jumbo frames were
//!   the usual setting of 10GigE testbeds of the time); set `mtu_bytes` to 1500 to compare.
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

use crate::cc::Kernel;
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
                    credit_buffer_bytes: None,
                },
            });
        }
    }
    out
}

/// PCI Express 1.x x8: 8 lanes x 2.5 GT/s x 8/10 (PCI Express Base Specification 1.1, 4.2).
pub const PCIE_1_X8_BPS: f64 = 16e9;
/// PCI-X 133: 64 bits x 133.33 MHz (PCI-X Addendum to the PCI Local Bus Specification 1.0).
pub const PCI_X_133_BPS: f64 = 64.0 * 133.33e6;
pub const TEN_GIGE_BPS: f64 = 10e9;

/// A stock host of `kernel` on a 10GigE NIC with no bus ceiling and MTU 1500: the host
/// when none is named. Every Linux value is the kernel's own default:
/// - socket-buffer ceilings (`tcp_wmem[2]`, `tcp_rmem[2]`): 2.6.18 `tcp_init` sets both
///   to min(4 MiB, `tcp_mem[1]` / 128), 4 MiB on any host with a few hundred MiB of RAM
///   (2.6.23's the same);
///   6.x `tcp_init` 4 MiB for sending and 6 MiB for receiving;
/// - auto-tuning on (`sysctl_tcp_moderate_rcvbuf` = 1 in both);
/// - delayed ACKs of at least 40 ms (`TCP_DELACK_MIN` = HZ/25) and a 200 ms minimum RTO
///   (`TCP_RTO_MIN` = HZ/5), `include/net/tcp.h` of both;
/// - initial window: 2.6.18 `tcp_init_cwnd` gives 2, 3 or 4 segments by MSS (RFC 3390,
///   the `None` here); 6.x 10 (`TCP_INIT_CWND`, RFC 6928).
///
/// ns-3.37's defaults are not modelled: its cases give every value.
pub fn kernel_defaults(kernel: Kernel) -> HostConfig {
    let (snd_buf_max_bytes, rcv_buf_max_bytes, initial_cwnd_segments) = match kernel {
        Kernel::Linux2_6_18 | Kernel::Linux2_6_23 => (4 << 20, 4 << 20, None),
        Kernel::Linux6 | Kernel::Ns3 => (4 << 20, 6 << 20, Some(10)),
    };
    HostConfig {
        nic_rate_bps: TEN_GIGE_BPS,
        bus_rate_bps: None,
        mtu_bytes: 1500,
        auto_tuning: true,
        snd_buf_max_bytes,
        rcv_buf_max_bytes,
        delayed_ack: true,
        delayed_ack_timeout_ms: 40.0,
        min_rto_ms: 200.0,
        initial_cwnd_segments,
        initial_ssthresh_segments: None,
        kernel,
    }
}

pub fn host_presets() -> Vec<HostPreset> {
    let pcie = HostConfig {
        bus_rate_bps: Some(PCIE_1_X8_BPS),
        mtu_bytes: 9000,
        ..kernel_defaults(Kernel::Linux2_6_18)
    };
    let pcix = HostConfig {
        bus_rate_bps: Some(PCI_X_133_BPS),
        ..pcie.clone()
    };
    vec![
        HostPreset {
            name: "usn-type-1",
            description: "USN type I: quad-core Opteron, PCI Express x8, Myri-10G, Linux 2.6.18, auto-tuning",
            host: pcie.clone(),
        },
        HostPreset {
            name: "usn-type-2",
            description: "USN type II: dual-core Xeon, PCI Express x8, Myri-10G, Linux 2.6.18, auto-tuning",
            host: pcie,
        },
        HostPreset {
            name: "usn-type-3",
            description: "a USN-era host on a PCI-X 133 bus (8.53 Gb/s), Linux 2.6.18, auto-tuning",
            host: pcix,
        },
        HostPreset {
            name: "linux-2.6.18",
            description: "stock Linux 2.6.18 defaults on a 10GigE NIC, MTU 1500",
            host: kernel_defaults(Kernel::Linux2_6_18),
        },
        HostPreset {
            name: "linux-6.x",
            description: "stock Linux 6.x defaults on a 10GigE NIC, MTU 1500",
            host: kernel_defaults(Kernel::Linux6),
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
    fn the_usn_hosts_run_2_6_18_with_its_stock_ceilings_on_their_buses() {
        let h = host_preset("usn-type-3").unwrap();
        assert!((h.bus_rate_bps.unwrap() - 8.533e9).abs() < 1e6);
        let pcie = host_preset("usn-type-1").unwrap();
        assert_eq!(pcie.bus_rate_bps, Some(16e9));
        for host in [h, pcie] {
            assert_eq!(host.kernel, Kernel::Linux2_6_18);
            assert!(host.auto_tuning);
            assert_eq!(host.rcv_buf_max_bytes, 4 << 20);
        }
        assert!(host_preset("nonesuch").is_none());
    }

    #[test]
    fn a_kernel_brings_its_own_defaults() {
        let old = kernel_defaults(Kernel::Linux2_6_18);
        let new = kernel_defaults(Kernel::Linux6);
        assert_eq!(
            (old.rcv_buf_max_bytes, new.rcv_buf_max_bytes),
            (4 << 20, 6 << 20)
        );
        assert_eq!(old.initial_cwnd(), 3.0); // MSS 1448: RFC 3390
        assert_eq!(new.initial_cwnd(), 10.0);
    }
}
