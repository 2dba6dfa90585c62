//! The microbenchmarks, shaped like the study's and like perftest and the OSU suite:
//! ping-pong latency and the bandwidth it implies, both-way bandwidth, at the user level
//! (verbs, MX) and under MPI; many connections; parameterized LogP; buffer re-use; MPI
//! queue length. Each runs the fabric; nothing here is a formula of the result.

use serde::Serialize;

use super::fabric::{Fabric, HostWork, Message};
use super::interconnect::{Interconnect, MpiLibrary};
use super::mpi::{Mpi, Send};

/// Message sizes of a sweep: 1 byte to 4 MiB, the OSU benchmarks' default range
/// (`MAX_MSG_SIZE` = 1 << 22).
pub fn sizes() -> Vec<u64> {
    (0..=22).map(|k| 1u64 << k).collect()
}

/// Iterations timed after two untimed ones: every iteration of a ping-pong is the same
/// in a deterministic model once caches are warm, so a few suffice.
const WARMUP: u64 = 2;
const ITERS: u64 = 8;

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Point {
    pub bytes: u64,
    /// Half the average round trip.
    pub latency_us: f64,
    /// bytes / (round trip / 2), MB/s (10^6 bytes), as the study computed it.
    pub bandwidth_mb_s: f64,
}

fn point(bytes: u64, half_rtt_ns: f64) -> Point {
    Point {
        bytes,
        latency_us: half_rtt_ns / 1e3,
        bandwidth_mb_s: bytes as f64 * 1e3 / half_rtt_ns,
    }
}

/// What a level (verbs or MPI) does with one message each way.
trait Level {
    fn send(&mut self, at_ns: u64, from: usize, bytes: u64, connection: u32);
    fn next(&mut self) -> (u64, usize);
    /// CPU time each host spent on messages so far.
    fn cpu_ns(&self) -> [u64; 2];
}

struct User(Fabric);

impl Level for User {
    fn send(&mut self, at_ns: u64, from: usize, bytes: u64, connection: u32) {
        let completion = self.0.ic.user_completion;
        self.0.post(
            at_ns,
            Message {
                from,
                bytes,
                connection,
                completion,
                work: HostWork::default(),
                receiver_adapter_ns: 0,
                tag: 0,
            },
        );
    }

    fn next(&mut self) -> (u64, usize) {
        let (at_ns, m) = self.0.next_delivery().expect("a posted message arrives");
        (at_ns, m.from)
    }

    fn cpu_ns(&self) -> [u64; 2] {
        self.0.busy.cpu_ns
    }
}

struct MpiLevel {
    mpi: Mpi,
    sends: u64,
    /// Per cent of sends whose buffers were not registered before, spread evenly.
    fresh_pct: u64,
}

impl Level for MpiLevel {
    fn send(&mut self, at_ns: u64, from: usize, bytes: u64, _connection: u32) {
        self.sends += 1;
        let fresh_before = (self.sends - 1) * self.fresh_pct / 100;
        let registered = self.sends * self.fresh_pct / 100 == fresh_before;
        let id = self.sends;
        self.mpi.send(
            at_ns,
            Send {
                from,
                bytes,
                registered,
                id,
            },
        );
    }

    fn next(&mut self) -> (u64, usize) {
        let (at_ns, send) = self.mpi.next_completion().expect("a posted send completes");
        (at_ns, send.from)
    }

    fn cpu_ns(&self) -> [u64; 2] {
        self.mpi.fabric.busy.cpu_ns
    }
}

/// The setting of one run: the interconnect, MPI or not, and the knobs of the sweeps.
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    pub ic: Interconnect,
    /// MPI over the interconnect with this library; None: the user level.
    pub mpi: Option<MpiLibrary>,
    /// Connections a ping-pong rotates over (user level).
    pub connections: u32,
    /// Per cent of MPI sends whose buffers were registered before.
    pub reuse_pct: u32,
    /// Non-matching entries in the posted-receive queue ahead of each match.
    pub queue_entries: u64,
    /// Entries in the unexpected-message queue each posted receive searches first.
    pub unexpected_entries: u64,
    /// One-way propagation between the switch ports (what-if distances).
    pub extra_one_way_ns: u64,
}

impl Setup {
    pub fn user(ic: Interconnect) -> Self {
        Self {
            ic,
            mpi: None,
            connections: 1,
            reuse_pct: 100,
            queue_entries: 0,
            unexpected_entries: 0,
            extra_one_way_ns: 0,
        }
    }

    pub fn mpi(ic: Interconnect) -> Self {
        Self {
            mpi: Some(ic.mpi()),
            ..Self::user(ic)
        }
    }

    fn level(&self) -> Box<dyn Level> {
        let mut fabric = Fabric::new(self.ic);
        fabric.extra_one_way_ns = self.extra_one_way_ns;
        let Some(lib) = self.mpi else {
            return Box::new(User(fabric));
        };
        let mut mpi = Mpi::new(fabric, lib);
        mpi.queue_entries = self.queue_entries;
        mpi.unexpected_entries = self.unexpected_entries;
        Box::new(MpiLevel {
            mpi,
            sends: 0,
            fresh_pct: 100 - u64::from(self.reuse_pct.min(100)),
        })
    }
}

/// Ping-pong: side 0 sends, side 1 answers on arrival; half the round trip.
pub fn pingpong(setup: &Setup, bytes: u64) -> Point {
    let mut level = setup.level();
    let mut at_ns = 0;
    let mut started_ns = 0;
    // Every connection is used once before timing, so only capacity misses count.
    let connections = u64::from(setup.connections);
    let warmup = WARMUP + connections;
    for i in 0..warmup + ITERS.max(connections) {
        if i == warmup {
            started_ns = at_ns;
        }
        let connection = (i % connections) as u32;
        level.send(at_ns, 0, bytes, connection);
        at_ns = level.next().0;
        level.send(at_ns, 1, bytes, connection);
        at_ns = level.next().0;
    }
    let timed = ITERS.max(connections);
    point(bytes, (at_ns - started_ns) as f64 / (2 * timed) as f64)
}

/// Both ways at once: each side sends `bytes` and waits for the other's; the next
/// round starts when both arrived. Total bytes both ways per second, MB/s.
pub fn bothway(setup: &Setup, bytes: u64) -> f64 {
    let mut level = setup.level();
    let mut at_ns = 0;
    let mut started_ns = 0;
    for i in 0..WARMUP + ITERS {
        if i == WARMUP {
            started_ns = at_ns;
        }
        level.send(at_ns, 0, bytes, 0);
        level.send(at_ns, 1, bytes, 0);
        at_ns = level.next().0.max(level.next().0);
    }
    (2 * ITERS * bytes) as f64 * 1e3 / (at_ns - started_ns) as f64
}

/// Back-to-back sends from side 0, `window` outstanding: the time between deliveries
/// in the steady state (LogP's gap g).
pub fn gap_ns(setup: &Setup, bytes: u64, window: u64) -> f64 {
    stream_gap_ns(setup, bytes, window, WARMUP, ITERS)
}

/// As `gap_ns`, timing `rounds` windows after `warmup` windows.
pub fn stream_gap_ns(setup: &Setup, bytes: u64, window: u64, warmup: u64, rounds: u64) -> f64 {
    let mut level = setup.level();
    let total = warmup * window + rounds * window;
    let mut posted = 0;
    while posted < window {
        level.send(0, 0, bytes, 0);
        posted += 1;
    }
    let mut started_ns = 0;
    let mut done = 0;
    let mut at_ns = 0;
    while done < total {
        at_ns = level.next().0;
        done += 1;
        if done == warmup * window {
            started_ns = at_ns;
        }
        if posted < total {
            level.send(at_ns, 0, bytes, 0);
            posted += 1;
        }
    }
    (at_ns - started_ns) as f64 / (total - warmup * window) as f64
}

/// Parameterized LogP at one size (Kielmann et al., "Fast measurement of LogP
/// parameters for message passing platforms", IPDPS workshops 2000): the sender's and
/// receiver's CPU time per message (`o_s`, `o_r`), the gap between messages (g), and the
/// latency left when the overheads are taken out (L).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LogP {
    pub bytes: u64,
    pub o_s_us: f64,
    pub o_r_us: f64,
    pub g_us: f64,
    pub l_us: f64,
}

/// Sends outstanding while the gap is measured: enough to keep every server busy (64
/// small messages, or 256 KiB of large ones), at least two.
fn gap_window(bytes: u64) -> u64 {
    ((256 << 10) / bytes).clamp(2, 64)
}

pub fn logp(setup: &Setup, bytes: u64) -> LogP {
    let sends = 16;
    let mut level = setup.level();
    // One-way sends, spaced far apart, to read each side's CPU time per message alone.
    let mut at_ns = 0;
    for _ in 0..sends {
        level.send(at_ns, 0, bytes, 0);
        at_ns = level.next().0 + 1_000_000;
    }
    let cpu = level.cpu_ns();
    let o_s = cpu[0] as f64 / f64::from(sends);
    let o_r = cpu[1] as f64 / f64::from(sends);
    let half_rtt = pingpong(setup, bytes).latency_us * 1e3;
    LogP {
        bytes,
        o_s_us: o_s / 1e3,
        o_r_us: o_r / 1e3,
        g_us: gap_ns(setup, bytes, gap_window(bytes)) / 1e3,
        l_us: (half_rtt - o_s - o_r).max(0.0) / 1e3,
    }
}
