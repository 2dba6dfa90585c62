//! A direction's behaviour, example by example, in virtual time.

use longhaul_link::{
    CrossTraffic, Direction, DirectionConfig, Fate, Faults, Jitter, Layer, Loss, Offer,
    PACING_TOLERANCE_NS, Shape, Slot, kept_runs,
};

const GBPS: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;

fn link(rate_bps: u64, delay_ns: u64) -> Direction<u32> {
    Direction::new(DirectionConfig::new(rate_bps, delay_ns), 1, 0)
}

/// Offer a one-segment frame of `ip_bytes`; whether it was kept.
fn send(link: &mut Direction<u32>, now_ns: u64, ip_bytes: u64, id: u32) -> bool {
    link.offer_frame(now_ns, ip_bytes, id).is_ok()
}

/// Release everything in flight at the earliest instants allowed; (instant, frame).
fn run_out(link: &mut Direction<u32>) -> Vec<(u64, u32)> {
    let mut out = Vec::new();
    while let Some(at) = link.next_release_ns() {
        out.push((at, link.release(at).expect("releasable when it says")));
    }
    out
}

/// Release everything from `woke` on, each as early as allowed.
fn run_out_from(link: &mut Direction<u32>, woke: u64) -> Vec<(u64, u32)> {
    let mut now = woke;
    let mut out = Vec::new();
    while let Some(ready) = link.next_release_ns() {
        now = now.max(ready);
        out.push((now, link.release(now).expect("ready")));
    }
    out
}

fn super_packet(segments: u32, segment_ip_bytes: u64) -> Shape {
    Shape {
        segments,
        ip_bytes: u64::from(segments) * segment_ip_bytes,
        last_segment_ip_bytes: segment_ip_bytes,
    }
}

#[test]
fn a_lone_frame_takes_serialization_plus_delay() {
    let mut l = link(GBPS, 10 * MS);
    assert!(send(&mut l, 5 * MS, 1250, 1));
    // 1,250 bytes at 1 Gb/s: 10 us on the line.
    assert_eq!(l.next_release_ns(), Some(5 * MS + 10_000 + 10 * MS));
    assert!(l.release(15 * MS).is_none(), "not before it is due");
    assert_eq!(run_out(&mut l).len(), 1);
}

#[test]
fn frames_leave_at_the_rate_behind_each_other() {
    let mut l = link(GBPS, MS);
    for k in 0..100 {
        send(&mut l, 0, 1250, k);
    }
    let out = run_out(&mut l);
    for (k, (t, id)) in out.iter().enumerate() {
        assert_eq!(*t, MS + 10_000 * (k as u64 + 1));
        assert_eq!(*id, k as u32);
    }
    let c = l.counters();
    assert_eq!(
        (c.tx_frames, c.tx_bytes, c.lateness.late),
        (100, 125_000, 0)
    );
}

#[test]
fn a_layer_frames_each_segment() {
    let mut config = DirectionConfig::new(10 * GBPS, 0);
    config.layer = Layer::Lanphy;
    let mut l: Direction<u32> = Direction::new(config, 1, 0);
    let Offer::Whole(slot) = l.offer(0, super_packet(45, 1500)) else {
        panic!("kept")
    };
    l.push(slot, 1);
    // 45 x (1,500 + 38) bytes at 10 Gb/s: 0.8 ns a byte.
    assert_eq!(l.next_release_ns(), Some(45 * 1538 * 8 / 10));
    assert_eq!(l.counters().rx_bytes, 45 * 1538);
    // OC192 caps the rate at its payload and frames by GFP-F.
    let mut config = DirectionConfig::new(10 * GBPS, 0);
    config.layer = Layer::Oc192;
    let mut l: Direction<u32> = Direction::new(config, 1, 0);
    l.offer_frame(0, 1474, 1).unwrap();
    // 1,500 wire bytes at 9.58464 Gb/s: 1,252.003 ns, released on the next nanosecond.
    assert_eq!(l.next_release_ns(), Some(1_253));
}

#[test]
fn the_queue_drops_at_the_tail_and_drains_at_the_rate() {
    let mut config = DirectionConfig::new(GBPS, MS);
    config.queue_bytes = Some(100_000);
    let mut l: Direction<u32> = Direction::new(config, 1, 0);
    let kept = (0..200).filter(|&k| send(&mut l, 0, 1000, k)).count();
    assert_eq!(kept, 100);
    let s = l.stats(0);
    assert_eq!(s.counters.dropped_queue_segments, 100);
    assert_eq!(s.queue_bytes, 100_000);
    // Half sent after 400 us: room for 50 more.
    let now = 400_000;
    assert_eq!(l.stats(now).queue_bytes, 50_000);
    assert_eq!((0..60).filter(|&k| send(&mut l, now, 1000, k)).count(), 50);
}

/// A link whose queue has room for 19 of the 20 segments of the super-packet offered
/// last: the link, and the parts `offer` gave.
fn cut_by_a_full_queue() -> (Direction<u32>, Vec<Result<Slot, Fate>>) {
    let mut config = DirectionConfig::new(GBPS, MS);
    config.queue_bytes = Some(80_000 + 28_500);
    let mut l: Direction<u32> = Direction::new(config, 1, 0);
    assert!(send(&mut l, 0, 80_000, 0));
    let Offer::Cut(parts) = l.offer(0, super_packet(20, 1500)) else {
        panic!("cut")
    };
    (l, parts)
}

#[test]
fn a_full_queue_keeps_the_segments_of_a_super_packet_that_fit() {
    let (mut l, parts) = cut_by_a_full_queue();
    assert_eq!(parts.iter().filter(|p| p.is_ok()).count(), 19);
    assert_eq!(parts[19], Err(Fate::Dropped));
    for (k, part) in parts.into_iter().enumerate() {
        if let Ok(slot) = part {
            l.push(slot, 1 + k as u32);
        }
    }
    let c = l.counters();
    assert_eq!((c.split_frames, c.dropped_queue_segments), (1, 1));
    assert_eq!(run_out(&mut l).len(), 20);
}

#[test]
fn kept_segments_that_are_neighbours_on_the_line_go_on_as_one_run() {
    let (mut l, parts) = cut_by_a_full_queue();
    let runs = kept_runs(&parts);
    assert_eq!(runs.len(), 1);
    let (first, slot) = runs[0];
    assert_eq!((first, slot.segments()), (0, 19));
    // Pushed as one frame, it leaves when its last segment would have.
    let (mut singles, single_parts) = cut_by_a_full_queue();
    for slot in single_parts.into_iter().flatten() {
        singles.push(slot, 1);
    }
    l.push(slot, 1);
    let out = run_out(&mut l);
    assert_eq!(out.len(), 2);
    assert_eq!(out[1].0, run_out(&mut singles).last().unwrap().0);
    // A segment lost in the middle parts the runs; runs keep their first index.
    let lost = [Ok(slot), Err(Fate::Dropped), Ok(slot)];
    let split: Vec<u32> = kept_runs(&lost).iter().map(|(first, _)| *first).collect();
    assert_eq!(split, [0, 2]);
}

#[test]
fn losses_fall_on_segments_and_still_use_the_line() {
    let mut config = DirectionConfig::new(10 * GBPS, MS);
    config.loss = Loss::random(0.01);
    config.queue_bytes = Some(1_000_000_000);
    let mut l: Direction<u32> = Direction::new(config, 3, 0);
    let frames = 4_000u64;
    let mut kept = 0u64;
    for k in 0..frames {
        match l.offer(0, super_packet(44, 1500)) {
            Offer::Whole(slot) => {
                l.push(slot, k as u32);
                kept += 44;
            }
            Offer::Cut(parts) => {
                for slot in parts.into_iter().flatten() {
                    l.push(slot, k as u32);
                    kept += 1;
                }
            }
            Offer::Refused(_) => unreachable!("a super-packet is cut, not refused"),
        }
    }
    let c = l.counters().clone();
    let segments = 44 * frames;
    let lost = c.lost_random_segments;
    let sigma = (segments as f64 * 0.01 * 0.99).sqrt();
    assert!(
        (lost as f64 - segments as f64 * 0.01).abs() < 5.0 * sigma,
        "{lost}"
    );
    assert_eq!(kept + lost, segments);
    // Every segment was on the line: the last leaves when all of them would have.
    let out = run_out(&mut l);
    let last = out.last().unwrap().0;
    assert!(last >= MS + segments * 1500 * 8 / 10, "{last}");
}

#[test]
fn a_late_release_delays_what_follows_and_never_hurries_it() {
    let mut l = link(GBPS, MS);
    for k in 0..1000 {
        send(&mut l, k * 10_000, 1250, k as u32); // at the line rate: no queue
    }
    let woke = l.next_release_ns().unwrap() + 800_000; // 0.8 ms late
    let out = run_out_from(&mut l, woke);
    for pair in out.windows(2) {
        let gap = pair[1].0 - pair[0].0;
        assert!(gap + PACING_TOLERANCE_NS >= 10_000, "{pair:?}");
    }
    // The line was held back by the lateness (less the tolerance), and only once.
    let c = l.counters();
    assert_eq!(c.lateness.late, 1);
    assert_eq!(c.lateness.max_ns, 800_000);
    assert_eq!(c.late_held_ns, 800_000 - PACING_TOLERANCE_NS);
    assert_eq!(c.stalls, 0);
    let first_due = MS + 10_000;
    let last = out.last().unwrap().0;
    assert_eq!(
        last,
        first_due + 999 * 10_000 + 800_000 - PACING_TOLERANCE_NS
    );
}

#[test]
fn a_stall_delays_what_was_due_and_the_line_catches_up_in_its_next_gap() {
    // Two bursts at the line rate, 10 ms each, 40 ms apart; the releaser wakes 5 ms late
    // for the first frame.
    let mut l = link(GBPS, 50 * MS);
    let mut id = 0;
    for start in [0, 50 * MS] {
        for k in 0..1000 {
            send(&mut l, start + k * 10_000, 1250, id);
            id += 1;
        }
    }
    let first_due = l.next_release_ns().unwrap();
    let out = run_out_from(&mut l, first_due + 5 * MS);
    for pair in out.windows(2) {
        assert!(
            pair[1].0 - pair[0].0 + PACING_TOLERANCE_NS >= 10_000,
            "{pair:?}"
        );
    }
    // The first burst left 5 ms late, back to back at the rate; the second, on time.
    let due = |id: usize| first_due + (id as u64 % 1000) * 10_000 + (id as u64 / 1000) * 50 * MS;
    assert!(
        out[999].0 - due(999) >= 5 * MS - PACING_TOLERANCE_NS,
        "{:?}",
        out[999]
    );
    assert!(
        out[1000..].iter().all(|&(at, id)| at == due(id as usize)),
        "on time"
    );
    let s = l.stats(out[999].0);
    assert_eq!(s.queue_bytes, 0, "a stall is lateness, not queue");
    assert_eq!(s.counters.stalls, 1);
    assert_eq!(s.counters.late_held_ns, 5 * MS - PACING_TOLERANCE_NS);
    assert_eq!(s.counters.paced_held_ns, 0);
}

#[test]
fn a_rate_cut_drains_what_is_queued_at_the_new_rate() {
    let mut config = DirectionConfig::new(10 * GBPS, 10 * MS);
    config.queue_bytes = Some(100_000_000);
    let mut l: Direction<u32> = Direction::new(config.clone(), 1, 0);
    for k in 0..16_000 {
        send(&mut l, 0, 1250, k); // 20 MB queued at once
    }
    let cut_at = MS;
    let mut slower = config;
    slower.rate_bps = GBPS;
    l.reconfigure(cut_at, slower);
    let out = run_out(&mut l);
    // Frames begun before the cut (1 ms at 10 Gb/s: 1,000 of them) are in flight and
    // arrive at the old spacing only if the far end could take them: it is at 1 Gb/s now.
    let after: Vec<u64> = out
        .iter()
        .map(|(t, _)| *t)
        .filter(|t| *t > 11 * MS)
        .collect();
    for pair in after.windows(2) {
        assert!(
            pair[1] - pair[0] + PACING_TOLERANCE_NS >= 10_000,
            "{pair:?}"
        );
    }
    let last = out.last().unwrap().0;
    // 15,000 frames queued at the cut, at 1 Gb/s: 150 ms after it, plus the delay.
    assert!(last >= cut_at + 150 * MS + 10 * MS, "{last}");
    assert!(l.stats(last).max_1ms_rate_ratio <= 1.0 + 0.006);
}

#[test]
fn a_delay_cut_keeps_order_and_does_not_burst() {
    let mut config = DirectionConfig::new(GBPS, 80 * MS);
    config.queue_bytes = Some(10_000_000);
    let mut l: Direction<u32> = Direction::new(config.clone(), 1, 0);
    let mut t = 0;
    let mut id = 0;
    while t < 20 * MS {
        send(&mut l, t, 1250, id);
        id += 1;
        t += 10_000;
    }
    let mut shorter = config;
    shorter.delay_ns = 13 * MS;
    l.reconfigure(t, shorter);
    while t < 40 * MS {
        send(&mut l, t, 1250, id);
        id += 1;
        t += 10_000;
    }
    let out = run_out(&mut l);
    assert!(out.windows(2).all(|w| w[0].1 < w[1].1), "in order");
    for pair in out.windows(2) {
        assert!(
            pair[1].0 - pair[0].0 + PACING_TOLERANCE_NS >= 10_000,
            "{pair:?}"
        );
    }
    assert!(l.stats(out.last().unwrap().0).max_1ms_rate_ratio <= 1.006);
    assert!(
        l.counters().paced_held_ns > 0,
        "the bunched frames held the line"
    );
}

#[test]
fn cross_traffic_takes_its_share_of_the_line() {
    let mut config = DirectionConfig::new(GBPS, MS);
    config.cross = Some(CrossTraffic {
        rate_bps: GBPS / 2,
        packet_bytes: 1250,
        on_ns: 0,
        off_ns: 0,
    });
    let mut l: Direction<u32> = Direction::new(config.clone(), 1, 0);
    // A quarter of the rate beside half of it: all fits, the line is 3/4 busy.
    let mut t = 0;
    while t < 1_000 * MS {
        send(&mut l, t, 1250, 0);
        t += 40_000;
    }
    let c = l.counters();
    assert_eq!(c.dropped_queue_segments + c.cross_dropped_bytes, 0);
    assert!(
        (c.cross_bytes as i64 - 62_500_000).abs() <= 2 * 1250,
        "{}",
        c.cross_bytes
    );
    // Offered together above the rate, the two share a tail-drop queue.
    let mut busy: Direction<u32> = Direction::new(config, 1, 0);
    let mut t = 0;
    while t < 1_000 * MS {
        send(&mut busy, t, 1250, 0);
        t += 8_000; // 1.25 Gb/s
    }
    let s = busy.stats(t);
    let c = &s.counters;
    let sent = c.rx_bytes - c.dropped_queue_bytes + c.cross_bytes - s.queue_bytes;
    assert!((sent as f64 - 125e6).abs() < 0.001 * 125e6, "{sent}");
    assert!(c.dropped_queue_segments > 0 && c.cross_dropped_bytes > 0);
}

#[test]
fn on_off_cross_traffic_is_off_half_the_time() {
    let mut config = DirectionConfig::new(GBPS, MS);
    config.cross = Some(CrossTraffic {
        rate_bps: GBPS / 4,
        packet_bytes: 1250,
        on_ns: 10 * MS,
        off_ns: 10 * MS,
    });
    let mut l: Direction<u32> = Direction::new(config, 1, 0);
    send(&mut l, 1_000 * MS, 100, 0);
    let cross = l.counters().cross_bytes;
    assert!((cross as i64 - 15_625_000).abs() <= 1_250, "{cross}");
}

#[test]
fn faults_reorder_and_duplicate() {
    let mut config = DirectionConfig::new(GBPS, MS);
    config.faults = Faults {
        reorder: 0.1,
        duplicate: 0.05,
    };
    let mut l: Direction<u32> = Direction::new(config, 9, 0);
    for k in 0..10_000 {
        send(&mut l, u64::from(k) * 20_000, 1250, k);
    }
    let out: Vec<u32> = run_out(&mut l).into_iter().map(|(_, id)| id).collect();
    let c = l.counters();
    assert!((800..1200).contains(&c.reordered), "{}", c.reordered);
    assert!((350..650).contains(&c.duplicated), "{}", c.duplicated);
    assert_eq!(out.len() as u64, 10_000 + c.duplicated);
    let swapped = out.windows(2).filter(|w| w[0] > w[1]).count() as u64;
    assert_eq!(swapped, c.reordered);
    // A frame held back is counted in flight once, not again when it goes back on.
    assert_eq!(l.in_flight_bytes(), 0);
}

#[test]
fn jitter_delays_without_reordering() {
    let mut config = DirectionConfig::new(GBPS, MS);
    config.jitter = Some(Jitter {
        hops: 4,
        mean_ns_per_hop: 50_000,
    });
    let mut l: Direction<u32> = Direction::new(config, 4, 0);
    let mut extra = Vec::new();
    for k in 0..2_000 {
        let at = u64::from(k) * 5 * MS;
        send(&mut l, at, 100, k);
        let due = l.next_release_ns().unwrap();
        extra.push((due - at - MS - 800) as f64);
        l.release(due).unwrap();
    }
    let mean = extra.iter().sum::<f64>() / extra.len() as f64;
    assert!((mean - 200_000.0).abs() < 10_000.0, "{mean}");
}

#[test]
fn a_frame_that_landed_late_spaces_the_next_from_when_it_really_went() {
    let mut l = link(GBPS, MS);
    for k in 0..10 {
        send(&mut l, k * 10_000, 1250, k as u32);
    }
    let first = l.next_release_ns().unwrap();
    l.release(first).unwrap();
    l.landed(first + 300_000); // the machine delivered it 0.3 ms after release said
    let next = l.next_release_ns().unwrap();
    assert!(
        next + PACING_TOLERANCE_NS >= first + 300_000 + 10_000,
        "{next}"
    );
    assert_eq!(l.counters().late_held_ns, 300_000);
    l.landed(first); // on time: nothing changes
    assert_eq!(l.next_release_ns(), Some(next));
}
