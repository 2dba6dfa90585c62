//! The strict rate, as properties: whatever the arrivals, however late the releaser wakes,
//! however the rate and delay change meanwhile, no window carries more than the rate
//! allows (plus the pacing tolerance), and lateness only ever delays.

use longhaul_link::{
    CrossTraffic, Direction, DirectionConfig, Jitter, Loss, PACING_TOLERANCE_NS, Shape,
};
use proptest::prelude::*;

/// A frame arriving `gap_us` after the previous one, of `segments` segments of `bytes`.
#[derive(Debug, Clone)]
struct Arrival {
    gap_ns: u64,
    segments: u32,
    segment_bytes: u64,
}

#[derive(Debug, Clone)]
struct Change {
    /// Before which arrival.
    at_arrival: usize,
    rate_bps: u64,
    delay_ns: u64,
}

#[derive(Debug, Clone)]
struct Release {
    at_ns: u64,
    wire_bytes: u64,
    epoch: usize,
    id: u32,
}

fn arrivals() -> impl Strategy<Value = Vec<Arrival>> {
    prop::collection::vec(
        (0u64..400_000, 1u32..=45, 40u64..=1500).prop_map(|(gap_ns, segments, segment_bytes)| {
            Arrival {
                gap_ns,
                segments,
                segment_bytes,
            }
        }),
        1..300,
    )
}

fn changes() -> impl Strategy<Value = Vec<Change>> {
    prop::collection::vec(
        (0usize..300, 10_000_000u64..10_000_000_000, 0u64..60_000_000).prop_map(
            |(at_arrival, rate_bps, delay_ns)| Change {
                at_arrival,
                rate_bps,
                delay_ns,
            },
        ),
        0..3,
    )
}

/// How late the releaser wakes, release by release (cycled): mostly on time or a little
/// late, now and then by tens of milliseconds.
fn wake_lateness() -> impl Strategy<Value = Vec<u64>> {
    prop::collection::vec(
        prop_oneof![3 => Just(0u64), 3 => 0u64..20_000, 1 => 0u64..30_000_000],
        1..40,
    )
}

fn jitter() -> impl Strategy<Value = Option<Jitter>> {
    prop::option::of((1u32..8, 1_000u64..500_000)).prop_map(|j| {
        j.map(|(hops, mean_ns_per_hop)| Jitter {
            hops,
            mean_ns_per_hop,
        })
    })
}

/// Run the link as an emulator would, waking `lateness[k]` late for its k-th release
/// (cyclically); every release, with the rate epoch it fell in.
fn run(
    config: &DirectionConfig,
    arrivals: &[Arrival],
    changes: &[Change],
    lateness_ns: &[u64],
) -> (Vec<Release>, Direction<u32>, Vec<u64>) {
    let link = Direction::new(config.clone(), 7, 0);
    run_on(link, 0, arrivals, changes, lateness_ns)
}

/// `run` on `link`, whose clock starts at `start_ns`; the releases' instants are counted
/// from it.
fn run_on(
    mut link: Direction<u32>,
    start_ns: u64,
    arrivals: &[Arrival],
    changes: &[Change],
    lateness_ns: &[u64],
) -> (Vec<Release>, Direction<u32>, Vec<u64>) {
    let mut releases = Vec::new();
    let mut arrived_at = Vec::new();
    let mut epoch = 0;
    let mut rates = vec![link.line_rate_bps()];
    let mut next_arrival = 0;
    let mut t_arrival = start_ns;
    let mut now = start_ns;
    let mut wake = 0usize;
    loop {
        let arrival_at = arrivals.get(next_arrival).map(|a| t_arrival + a.gap_ns);
        let release_at = link
            .next_release_ns()
            .map(|at| at + lateness_ns[wake % lateness_ns.len()]);
        let (at, is_arrival) = match (arrival_at, release_at) {
            (None, None) => break,
            (Some(a), Some(r)) if a <= r => (a, true),
            (Some(a), None) => (a, true),
            (_, Some(r)) => (r, false),
        };
        now = now.max(at);
        if is_arrival {
            let a = &arrivals[next_arrival];
            for change in changes.iter().filter(|c| c.at_arrival == next_arrival) {
                let mut new = link.config().clone();
                new.rate_bps = change.rate_bps;
                new.delay_ns = change.delay_ns;
                link.reconfigure(now, new);
                epoch += 1;
                rates.push(link.line_rate_bps());
            }
            t_arrival = at;
            let shape = Shape {
                segments: a.segments,
                ip_bytes: u64::from(a.segments) * a.segment_bytes,
                last_segment_ip_bytes: a.segment_bytes,
            };
            let id = next_arrival as u32;
            match link.offer(now, shape) {
                longhaul_link::Offer::Whole(slot) => {
                    link.push(slot, id);
                }
                longhaul_link::Offer::Cut(parts) => {
                    // As the emulator pushes them: neighbouring kept segments as one run.
                    for (_, slot) in longhaul_link::kept_runs(&parts) {
                        link.push(slot, id);
                    }
                }
                longhaul_link::Offer::Refused(_) => {}
            }
            arrived_at.push(now);
            next_arrival += 1;
        } else {
            wake += 1;
            loop {
                let before = link.counters().tx_bytes;
                let Some(id) = link.release(now) else { break };
                releases.push(Release {
                    at_ns: now - start_ns,
                    wire_bytes: link.counters().tx_bytes - before,
                    epoch,
                    id,
                });
            }
        }
    }
    (releases, link, rates)
}

/// Fail if some window within one epoch carries more than the rate allows.
fn check_rate(releases: &[Release], rates: &[u64]) -> Result<(), TestCaseError> {
    let tolerance_ns = PACING_TOLERANCE_NS as f64;
    for (j, first) in releases.iter().enumerate() {
        let mut bytes = 0u64;
        for later in &releases[j + 1..] {
            if later.epoch != first.epoch {
                break;
            }
            bytes += later.wire_bytes;
            let span_ns = (later.at_ns - first.at_ns) as f64;
            let allowed = rates[first.epoch] as f64 * (span_ns + tolerance_ns) / 8e9;
            // A byte a frame for the integer division of transmission times.
            let slack = (releases.len() as f64).min(64.0);
            prop_assert!(
                bytes as f64 <= allowed + slack,
                "{bytes} bytes in {span_ns} ns after the release at {} ns; {allowed:.0} allowed",
                first.at_ns
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn no_window_carries_more_than_the_rate(
        rate_bps in 10_000_000u64..10_000_000_000,
        delay_ns in 0u64..50_000_000,
        arrivals in arrivals(),
        changes in changes(),
        lateness_ns in wake_lateness(),
        jitter in jitter(),
    ) {
        let mut config = DirectionConfig::new(rate_bps, delay_ns);
        config.jitter = jitter;
        let (releases, link, rates) = run(&config, &arrivals, &changes, &lateness_ns);
        check_rate(&releases, &rates)?;
        // Every segment offered was delivered, dropped or lost; nothing is left.
        let c = link.counters();
        prop_assert_eq!(link.in_flight_frames(), 0);
        prop_assert_eq!(c.rx_segments, c.tx_segments + c.dropped_queue_segments
            + c.lost_random_segments + c.lost_burst_segments);
    }

    #[test]
    fn lateness_only_delays(
        rate_bps in 10_000_000u64..10_000_000_000,
        delay_ns in 0u64..50_000_000,
        arrivals in arrivals(),
        lateness_ns in prop::collection::vec(0u64..5_000_000, 1..40),
    ) {
        let mut config = DirectionConfig::new(rate_bps, delay_ns);
        config.queue_bytes = Some(10_000_000_000); // nothing dropped: the same frames both ways
        let (punctual, _, _) = run(&config, &arrivals, &[], &[0]);
        let (late, _, _) = run(&config, &arrivals, &[], &lateness_ns);
        prop_assert_eq!(punctual.len(), late.len());
        for (p, l) in punctual.iter().zip(&late) {
            prop_assert_eq!(p.id, l.id, "in order both ways");
            prop_assert!(l.at_ns >= p.at_ns, "frame {} came at {} ns, {} ns on time", l.id, l.at_ns, p.at_ns);
        }
    }

    #[test]
    fn punctual_releases_keep_the_ideal_schedule(
        rate_bps in 10_000_000u64..10_000_000_000,
        delay_ns in 0u64..50_000_000,
        arrivals in arrivals(),
    ) {
        // Released on time, a frame arrives one serialization and one delay after the
        // line was free for it, as the analytic model says: the pacer changes nothing.
        let mut config = DirectionConfig::new(rate_bps, delay_ns);
        config.queue_bytes = Some(10_000_000_000);
        let (releases, link, _) = run(&config, &arrivals, &[], &[0]);
        prop_assert_eq!(link.counters().late_held_ns + link.counters().paced_held_ns, 0);
        let mut line_free_ps = 0u128;
        let mut t = 0u64;
        for (release, arrival) in releases.iter().zip(&arrivals) {
            t += arrival.gap_ns;
            let wire = u128::from(release.wire_bytes);
            line_free_ps = line_free_ps.max(u128::from(t) * 1000) + wire * 8_000_000_000_000 / u128::from(rate_bps);
            let due = (line_free_ps.div_ceil(1000)) as u64 + delay_ns;
            prop_assert!(release.at_ns.abs_diff(due) <= 1, "{} against {}", release.at_ns, due);
        }
    }

    #[test]
    fn where_the_clock_starts_and_how_often_it_moves_change_nothing(
        rate_bps in 10_000_000u64..10_000_000_000,
        delay_ns in 0u64..50_000_000,
        arrivals in arrivals(),
        changes in changes(),
        lateness_ns in wake_lateness(),
        jitter in jitter(),
        cross in prop::option::of((1_000_000u64..5_000_000, 0u64..3_000_000, 0u64..3_000_000)),
        random_loss in prop_oneof![Just(0.0), 0.0..0.05],
        rebase_after_ns in 1u64..20_000_000,
    ) {
        // A line that has run for 300 days (past what a u64 of picoseconds counts from
        // boot) and moves its clock's origin every few milliseconds gives what a line
        // started at 0 that never moves it does, to the nanosecond and the frame.
        let mut config = DirectionConfig::new(rate_bps, delay_ns);
        config.jitter = jitter;
        config.cross = cross.map(|(rate_bps, on_ns, off_ns)| CrossTraffic {
            rate_bps,
            packet_bytes: 1_500,
            on_ns: on_ns.max(1),
            off_ns,
        });
        config.loss = Loss::random(random_loss);
        let start_ns = 300 * 86_400 * 1_000_000_000;
        let (reference, at_zero, _) = run(&config, &arrivals, &changes, &lateness_ns);
        let moving = Direction::new(config.clone(), 7, start_ns).with_rebase_after_ns(rebase_after_ns);
        let (moved, later, _) = run_on(moving, start_ns, &arrivals, &changes, &lateness_ns);
        prop_assert_eq!(reference.len(), moved.len());
        for (r, m) in reference.iter().zip(&moved) {
            prop_assert_eq!((r.at_ns, r.wire_bytes, r.epoch, r.id), (m.at_ns, m.wire_bytes, m.epoch, m.id));
        }
        prop_assert_eq!(at_zero.counters(), later.counters());
    }
}
