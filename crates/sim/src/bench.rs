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
//!
//! Each case runs `repetitions` times, the cases taking turns (so a slow minute of the
//! machine falls on all of them alike): a run is deterministic, so only its wall time
//! varies, and a case reports the median run's speed with the least and most.

use serde::Serialize;

use crate::cc::CcKind;
use crate::ib::run::{IbTest, Tool};
use crate::run::run;
use crate::scenario::{FlowGroupSpec, HostSpec, HostsSpec, PathSpec, Scenario, resolve};
use longhaul_link::Loss;

/// One run of a case.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BenchRun {
    pub simulated_s: f64,
    pub wall_s: f64,
    pub events: u64,
    pub goodput_bps: f64,
}

/// A case over its runs: the median run's speed (`realtime_factor`, `events_per_s`,
/// `wall_s`), the least and most real-time factor, and what every run simulated alike.
#[derive(Debug, Clone, Serialize)]
pub struct BenchCase {
    pub events_per_s: f64,
    pub realtime_factor: f64,
    pub realtime_factor_min: f64,
    pub realtime_factor_max: f64,
    pub repetitions: usize,
    pub simulated_s: f64,
    pub wall_s: f64,
    pub events: u64,
    pub goodput_bps: f64,
}

impl BenchCase {
    /// The case over `runs` (at least one, all of the same simulation); of an even
    /// number of runs, the slower of the middle two is the median.
    pub fn over(runs: &[BenchRun]) -> Self {
        assert!(!runs.is_empty(), "a case needs a run");
        let mut walls: Vec<f64> = runs.iter().map(|r| r.wall_s).collect();
        walls.sort_by(f64::total_cmp);
        let median_wall_s = walls[walls.len() / 2];
        let first = runs[0];
        let factor = |wall_s: f64| first.simulated_s / wall_s.max(1e-9);
        Self {
            events_per_s: first.events as f64 / median_wall_s.max(1e-9),
            realtime_factor: factor(median_wall_s),
            realtime_factor_min: factor(walls[walls.len() - 1]),
            realtime_factor_max: factor(walls[0]),
            repetitions: runs.len(),
            simulated_s: first.simulated_s,
            wall_s: median_wall_s,
            events: first.events,
            goodput_bps: first.goodput_bps,
        }
    }
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

pub fn bench_run(scenario: &Scenario) -> BenchRun {
    let resolved = resolve(scenario, None).expect("bench scenario is valid");
    let report = run(&resolved);
    BenchRun {
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

pub fn ib_run(test: &IbTest) -> BenchRun {
    let report = crate::ib::run::run(test);
    BenchRun {
        simulated_s: report.perf.simulated_s,
        wall_s: report.perf.wall_s,
        events: report.events,
        goodput_bps: report.goodput_gbps.unwrap_or(0.0) * 1e9,
    }
}

/// Every case `repetitions` times (at least once), taking turns; `progress` hears of
/// each run as it ends (the case's name, the repetition from 1, the run).
pub fn bench(
    duration_s: f64,
    repetitions: usize,
    mut progress: impl FnMut(&str, usize, &BenchRun),
) -> BenchReport {
    let (one, twenty) = (scenario(1, duration_s), scenario(20, duration_s));
    let (lossy, mixed) = (lossy_scenario(duration_s), mixed_scenario(duration_s));
    let ib = ib_write_test(duration_s);
    let cases: [(&str, &dyn Fn() -> BenchRun); 5] = [
        ("one_flow", &|| bench_run(&one)),
        ("twenty_flows", &|| bench_run(&twenty)),
        ("lossy", &|| bench_run(&lossy)),
        ("mixed", &|| bench_run(&mixed)),
        ("ib_write", &|| ib_run(&ib)),
    ];
    let mut runs: [Vec<BenchRun>; 5] = Default::default();
    for repetition in 1..=repetitions.max(1) {
        for ((name, run_once), its_runs) in cases.iter().zip(&mut runs) {
            let one = run_once();
            progress(name, repetition, &one);
            its_runs.push(one);
        }
    }
    let [one_flow, twenty_flows, lossy, mixed, ib_write] = runs.map(|r| BenchCase::over(&r));
    BenchReport {
        one_flow,
        twenty_flows,
        lossy,
        mixed,
        ib_write,
    }
}

#[cfg(test)]
// The figures compared are exact in binary (15 s over 1.0, 1.5 or 3.0 s of wall time).
#[allow(clippy::float_cmp)]
mod tests {
    use super::*;

    fn run_of(wall_s: f64) -> BenchRun {
        BenchRun {
            simulated_s: 15.0,
            wall_s,
            events: 3_000_000,
            goodput_bps: 7.6e9,
        }
    }

    #[test]
    fn a_case_reports_its_median_run_with_the_least_and_most() {
        let case = BenchCase::over(&[run_of(1.5), run_of(1.0), run_of(3.0)]);
        assert_eq!(case.repetitions, 3);
        assert_eq!(case.wall_s, 1.5);
        assert_eq!(case.realtime_factor, 10.0);
        assert_eq!(case.realtime_factor_min, 5.0);
        assert_eq!(case.realtime_factor_max, 15.0);
        assert_eq!(case.events_per_s, 2_000_000.0);
        assert_eq!((case.events, case.goodput_bps), (3_000_000, 7.6e9));
    }

    #[test]
    fn one_run_is_its_own_median() {
        let case = BenchCase::over(&[run_of(2.0)]);
        assert_eq!(case.realtime_factor, 7.5);
        assert_eq!(case.realtime_factor_min, case.realtime_factor_max);
    }
}
