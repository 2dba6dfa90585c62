//! The simulator's speed goal, measured: simulated seconds per wall-clock second at
//! 10 Gb/s, MTU 1500 (about 813k data packets a second plus ACKs), for
//! - `one_flow`: one CUBIC flow over 163 ms, loss-free;
//! - `twenty_flows`: twenty such flows sharing the path;
//! - `lossy`: one CUBIC flow over 163 ms with 1e-5 random loss (recovery, SACK
//!   scoreboards and retransmissions on every few hundred milliseconds);
//! - `mixed`: twenty flows, ten round-trip times from 26.8 to 163 ms, CUBIC and H-TCP
//!   alternating;
//! - `ib_write`: InfiniBand RDMA write of 8 MB messages (`ib_rdma_bw`, RC, one QP) at
//!   8,600 miles (163.488 ms) between range extenders, 4X SDR: about 482k 2 KB packets a
//!   second, for as many messages as fill the seconds asked for.
//!
//! Buffers are large enough that windows never bind. `events` counts scheduled events
//! only (a packet handed from one node to the next in the same instant is a call).

use serde::Serialize;

use crate::cc::CcKind;
use crate::ib::run::{IbTest, Tool};
use crate::run::run;
use crate::scenario::{FlowGroupSpec, HostSpec, HostsSpec, PathSpec, Scenario, resolve};
use longhaul_link::Loss;

#[derive(Debug, Clone, Serialize)]
pub struct BenchCase {
    pub events_per_s: f64,
    pub realtime_factor: f64,
    pub simulated_s: f64,
    pub wall_s: f64,
    pub events: u64,
    pub goodput_bps: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    pub one_flow: BenchCase,
    pub twenty_flows: BenchCase,
    pub lossy: BenchCase,
    pub mixed: BenchCase,
    pub ib_write: BenchCase,
}

/// Random loss per packet of the `lossy` case.
pub const LOSSY_LOSS: f64 = 1e-5;
/// The `mixed` case's round-trip times: ten, evenly spaced over the USN loops' range.
pub const MIXED_RTT_MS: (f64, f64) = (26.8, 163.0);

/// The bench scenario: `streams` CUBIC flows, 10 Gb/s, 163 ms, MTU 1500.
pub fn scenario(streams: u32, duration_s: f64) -> Scenario {
    let host = HostSpec {
        nic_rate_bps: Some(10e9),
        mtu_bytes: Some(1500),
        auto_tuning: Some(false),
        snd_buf_max_bytes: Some(512 << 20),
        rcv_buf_max_bytes: Some(512 << 20),
        ..HostSpec::default()
    };
    Scenario {
        duration_s,
        interval_s: 1.0,
        omit_s: 0.0,
        cc: CcKind::Cubic,
        streams,
        transfer_bytes: None,
        seed: Some(1),
        start_ms: 0.0,
        path_preset: None,
        path: PathSpec {
            rate_bps: Some(10e9),
            rtt_ms: Some(163.0),
            queue_bytes: Some(16 << 20),
            ..PathSpec::default()
        },
        host_preset: None,
        hosts: HostsSpec {
            sender: host.clone(),
            receiver: host,
        },
        flows: None,
    }
}

/// One CUBIC flow as in `scenario`, with `LOSSY_LOSS` random loss.
pub fn lossy_scenario(duration_s: f64) -> Scenario {
    let mut s = scenario(1, duration_s);
    s.path.loss = Some(Loss::random(LOSSY_LOSS));
    s
}

/// Twenty flows in ten groups of two, round-trip times spread evenly over
/// `MIXED_RTT_MS`, CUBIC and H-TCP by turns.
pub fn mixed_scenario(duration_s: f64) -> Scenario {
    let mut s = scenario(1, duration_s);
    let (low, high) = MIXED_RTT_MS;
    s.path.rtt_ms = Some(low);
    s.flows = Some(
        (0..10)
            .map(|i| FlowGroupSpec {
                streams: 2,
                cc: if i % 2 == 0 {
                    CcKind::Cubic
                } else {
                    CcKind::Htcp
                },
                rtt_ms: Some(low + (high - low) * f64::from(i) / 9.0),
                reverse: false,
            })
            .collect(),
    );
    s
}

pub fn bench_case(scenario: &Scenario) -> BenchCase {
    let resolved = resolve(scenario, None).expect("bench scenario is valid");
    let report = run(&resolved);
    BenchCase {
        events_per_s: report.perf.events_per_s,
        realtime_factor: report.perf.realtime_factor,
        simulated_s: report.perf.simulated_s,
        wall_s: report.perf.wall_s,
        events: report.counters.events_processed,
        goodput_bps: report.end.sum_received.bits_per_second,
    }
}

/// The `ib_write` case: 8 MB RDMA writes over USN's 8,600-mile loop for about
/// `duration_s` of transfer at the 4X SDR link's payload rate.
pub fn ib_write_test(duration_s: f64) -> IbTest {
    const MESSAGE_BYTES: u64 = 8 << 20;
    let payload_bytes_per_s = 8e9 / 8.0 * 2048.0 / 2074.0;
    let mut test = IbTest::new(Tool::RdmaBw, MESSAGE_BYTES, 163.488);
    test.iters = ((duration_s * payload_bytes_per_s / MESSAGE_BYTES as f64).round() as u64).max(2);
    test
}

pub fn ib_case(test: &IbTest) -> BenchCase {
    let report = crate::ib::run::run(test);
    BenchCase {
        events_per_s: report.perf.events_per_s,
        realtime_factor: report.perf.realtime_factor,
        simulated_s: report.perf.simulated_s,
        wall_s: report.perf.wall_s,
        events: report.events,
        goodput_bps: report.goodput_gbps.unwrap_or(0.0) * 1e9,
    }
}

pub fn bench(duration_s: f64) -> BenchReport {
    BenchReport {
        one_flow: bench_case(&scenario(1, duration_s)),
        twenty_flows: bench_case(&scenario(20, duration_s)),
        lossy: bench_case(&lossy_scenario(duration_s)),
        mixed: bench_case(&mixed_scenario(duration_s)),
        ib_write: ib_case(&ib_write_test(duration_s)),
    }
}
