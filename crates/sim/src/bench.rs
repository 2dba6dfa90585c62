//! The simulator's speed goal, measured: simulated seconds per wall-clock second for one
//! CUBIC flow at 10 Gb/s over 163 ms (about 813k data packets a second plus ACKs) and
//! for 20 such flows sharing the path. Buffers are large enough that windows never bind.

use serde::Serialize;

use crate::cc::CcKind;
use crate::run::run;
use crate::scenario::{HostSpec, HostsSpec, PathSpec, Scenario, resolve};

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
}

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
    }
}

pub fn bench_case(streams: u32, duration_s: f64) -> BenchCase {
    let resolved = resolve(&scenario(streams, duration_s), None).expect("bench scenario is valid");
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

pub fn bench(duration_s: f64) -> BenchReport {
    BenchReport {
        one_flow: bench_case(1, duration_s),
        twenty_flows: bench_case(20, duration_s),
    }
}
