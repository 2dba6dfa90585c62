//! The study's measurements and the sweeps, for one interconnect: what
//! `longhaul-sim rdma` prints.

use serde::Serialize;

use super::bus::Way;
use super::interconnect::{HOST, Host, Interconnect, MpiLibrary};
use super::micro::{LogP, Point, Setup, bothway, logp, pingpong, sizes, stream_gap_ns};

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MpiPoint {
    pub bytes: u64,
    pub latency_us: f64,
    /// Ping-pong bandwidth, bytes / (round trip / 2) (the study's "bidirectional").
    pub bandwidth_mb_s: f64,
    /// Both sides sending at once, bytes both ways per second.
    pub bothway_mb_s: f64,
    pub protocol: &'static str,
}

/// The figures the study reports, as this model gives them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    pub user_latency_us: f64,
    pub user_peak_mb_s: f64,
    pub user_bothway_peak_mb_s: f64,
    pub mpi_latency_us: f64,
    pub mpi_peak_mb_s: f64,
    pub mpi_bothway_peak_mb_s: f64,
    pub mpi_bothway_1mb_mb_s: f64,
    /// The smallest size of the sweep that MPI sends by rendezvous.
    pub switch_point_bytes: u64,
    /// The bus's raw rate (one way of PCIe), MB/s.
    pub bus_raw_mb_s: f64,
    /// What the bus lets the adapter read from memory at most, MB/s.
    pub bus_read_mb_s: f64,
    /// The line's data rate, MB/s.
    pub line_mb_s: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Profile {
    pub interconnect: Interconnect,
    pub mpi_library: MpiLibrary,
    pub host: Host,
    pub user: Vec<Point>,
    pub user_bothway_mb_s: Vec<(u64, f64)>,
    pub mpi: Vec<MpiPoint>,
    pub summary: Summary,
}

fn peak(values: impl Iterator<Item = f64>) -> f64 {
    values.fold(0.0, f64::max)
}

pub fn profile(ic: Interconnect) -> Profile {
    let user_setup = Setup::user(ic);
    let mpi_setup = Setup::mpi(ic);
    let lib = ic.mpi();
    let user: Vec<Point> = sizes()
        .into_iter()
        .map(|b| pingpong(&user_setup, b))
        .collect();
    let user_bothway: Vec<(u64, f64)> = sizes()
        .into_iter()
        .map(|b| (b, bothway(&user_setup, b)))
        .collect();
    let mpi: Vec<MpiPoint> = sizes()
        .into_iter()
        .map(|bytes| {
            let p = pingpong(&mpi_setup, bytes);
            MpiPoint {
                bytes,
                latency_us: p.latency_us,
                bandwidth_mb_s: p.bandwidth_mb_s,
                bothway_mb_s: bothway(&mpi_setup, bytes),
                protocol: protocol(Some(lib), bytes),
            }
        })
        .collect();
    let summary = Summary {
        user_latency_us: user[0].latency_us,
        user_peak_mb_s: peak(user.iter().map(|p| p.bandwidth_mb_s)),
        user_bothway_peak_mb_s: peak(user_bothway.iter().map(|p| p.1)),
        mpi_latency_us: mpi[0].latency_us,
        mpi_peak_mb_s: peak(mpi.iter().map(|p| p.bandwidth_mb_s)),
        mpi_bothway_peak_mb_s: peak(mpi.iter().map(|p| p.bothway_mb_s)),
        mpi_bothway_1mb_mb_s: mpi
            .iter()
            .find(|p| p.bytes == 1 << 20)
            .map_or(0.0, |p| p.bothway_mb_s),
        switch_point_bytes: mpi
            .iter()
            .find(|p| p.protocol == "rendezvous")
            .map_or(0, |p| p.bytes),
        bus_raw_mb_s: ic.bus.raw_bytes_per_s() as f64 / 1e6,
        bus_read_mb_s: ic.bus.streaming_bytes_per_s(Way::Down, 1 << 20) / 1e6,
        line_mb_s: ic.line.data_bps as f64 / 8e6,
    };
    Profile {
        interconnect: ic,
        mpi_library: lib,
        host: HOST,
        user,
        user_bothway_mb_s: user_bothway,
        mpi,
        summary,
    }
}

/// Latency of a user-level ping-pong that rotates over this many connections.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ConnectionsPoint {
    pub connections: u32,
    pub latency_us: f64,
}

pub const CONNECTIONS: [u32; 9] = [1, 2, 4, 8, 16, 32, 64, 128, 256];

pub fn connections(ic: Interconnect, bytes: u64) -> Vec<ConnectionsPoint> {
    CONNECTIONS
        .into_iter()
        .map(|connections| ConnectionsPoint {
            connections,
            latency_us: pingpong(
                &Setup {
                    connections,
                    ..Setup::user(ic)
                },
                bytes,
            )
            .latency_us,
        })
        .collect()
}

pub fn logp_sweep(ic: Interconnect) -> Vec<LogP> {
    let setup = Setup::mpi(ic);
    sizes()
        .into_iter()
        .step_by(2)
        .map(|b| logp(&setup, b))
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ReusePoint {
    pub reuse_pct: u32,
    pub bytes: u64,
    pub latency_us: f64,
    pub bandwidth_mb_s: f64,
}

pub const REUSE_PCT: [u32; 5] = [0, 25, 50, 75, 100];
/// One size every library sends eagerly, one every library sends by rendezvous.
pub const REUSE_SIZES: [u64; 2] = [1 << 10, 1 << 18];

pub fn reuse(ic: Interconnect) -> Vec<ReusePoint> {
    let mut points = Vec::new();
    for bytes in REUSE_SIZES {
        for reuse_pct in REUSE_PCT {
            let setup = Setup {
                reuse_pct,
                ..Setup::mpi(ic)
            };
            let p = pingpong(&setup, bytes);
            points.push(ReusePoint {
                reuse_pct,
                bytes,
                latency_us: p.latency_us,
                bandwidth_mb_s: p.bandwidth_mb_s,
            });
        }
    }
    points
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct QueuePoint {
    pub entries: u64,
    /// With `entries` non-matching receives posted ahead of the match.
    pub latency_us: f64,
    /// With `entries` unexpected messages queued, searched at each receive's posting.
    pub unexpected_latency_us: f64,
}

pub const QUEUE_ENTRIES: [u64; 7] = [0, 10, 50, 100, 250, 500, 1000];

pub fn queue(ic: Interconnect, bytes: u64) -> Vec<QueuePoint> {
    QUEUE_ENTRIES
        .into_iter()
        .map(|entries| QueuePoint {
            entries,
            latency_us: pingpong(
                &Setup {
                    queue_entries: entries,
                    ..Setup::mpi(ic)
                },
                bytes,
            )
            .latency_us,
            unexpected_latency_us: pingpong(
                &Setup {
                    unexpected_entries: entries,
                    ..Setup::mpi(ic)
                },
                bytes,
            )
            .latency_us,
        })
        .collect()
}

/// One interconnect carried over a USN loop (what-if): the switch ports a loop apart.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct WanPoint {
    pub miles: f64,
    pub rtt_ms: f64,
    pub user_latency_us: f64,
    pub mpi_latency_us: f64,
    /// 1 MiB messages back to back, enough outstanding to cover twice the loop's
    /// bandwidth-delay product at the line rate, user level, MB/s: what the
    /// interconnect's own window lets through.
    pub stream_mb_s: f64,
}

/// The USN loops of the what-if: (miles, published RTT ms).
pub const WAN_LOOPS: [(f64, f64); 4] = [
    (0.2, 0.28),
    (1400.0, 26.8),
    (6600.0, 128.0),
    (8600.0, 163.0),
];

const WAN_MESSAGE_BYTES: u64 = 1 << 20;

/// The what-if over the loops; empty for an interconnect that cannot leave the room.
pub fn wan(ic: Interconnect) -> Vec<WanPoint> {
    if !ic.leaves_the_room {
        return Vec::new();
    }
    WAN_LOOPS
        .into_iter()
        .map(|(miles, rtt_ms)| {
            let extra_one_way_ns = (rtt_ms * 1e6 / 2.0) as u64;
            let user = Setup {
                extra_one_way_ns,
                ..Setup::user(ic)
            };
            let mpi = Setup {
                extra_one_way_ns,
                ..Setup::mpi(ic)
            };
            let bdp_bytes = rtt_ms * 1e-3 * ic.line.data_bps as f64 / 8.0;
            let window = ((2.0 * bdp_bytes / WAN_MESSAGE_BYTES as f64).ceil() as u64).max(2);
            let gap = stream_gap_ns(&user, WAN_MESSAGE_BYTES, window, 1, 1);
            WanPoint {
                miles,
                rtt_ms,
                user_latency_us: pingpong(&user, 1).latency_us,
                mpi_latency_us: pingpong(&mpi, 1).latency_us,
                stream_mb_s: WAN_MESSAGE_BYTES as f64 * 1e3 / gap,
            }
        })
        .collect()
}

/// One measurement with every knob set: what a campaign run asks for.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PointReport {
    pub interconnect: &'static str,
    pub mpi: bool,
    pub bytes: u64,
    pub latency_us: f64,
    /// Ping-pong bandwidth, bytes / (round trip / 2).
    pub bandwidth_mb_s: f64,
    /// Both sides sending at once, bytes both ways per second.
    pub bothway_mb_s: f64,
    pub protocol: &'static str,
}

/// How a message of `bytes` goes: `user` (no MPI), `eager` or `rendezvous`.
fn protocol(mpi: Option<MpiLibrary>, bytes: u64) -> &'static str {
    match mpi {
        None => "user",
        Some(lib) if bytes <= lib.eager_limit_bytes => "eager",
        Some(_) => "rendezvous",
    }
}

pub fn point(setup: &Setup, bytes: u64) -> PointReport {
    let p = pingpong(setup, bytes);
    PointReport {
        interconnect: setup.ic.name,
        mpi: setup.mpi.is_some(),
        bytes,
        latency_us: p.latency_us,
        bandwidth_mb_s: p.bandwidth_mb_s,
        bothway_mb_s: bothway(setup, bytes),
        protocol: protocol(setup.mpi, bytes),
    }
}
