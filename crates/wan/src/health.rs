//! The emulator's record of how faithfully it ran, kept in short intervals so that a
//! measurement can ask what happened during its own run: `health` since an instant.
//!
//! Every `INTERVAL_NS` the engine notes each direction's counters (cumulative) and the
//! worst of the interval (lateness, the largest 1 ms rate, the fullest queue) and its own
//! CPU time. A question about a run is answered from the note at or before its start and
//! the notes after it; the last `KEPT` notes (ten minutes) are kept.

use std::collections::VecDeque;

use longhaul_link::{Counters, Lateness, Peaks};
use serde::Serialize;

pub const INTERVAL_NS: u64 = 100_000_000;
const KEPT: usize = 6_000;

#[derive(Clone)]
struct Note {
    at_ns: u64,
    counters: [Counters; 2],
    /// The worst of the interval that ended at `at_ns`.
    peaks: [Peaks; 2],
    cpu_ns: u64,
}

pub struct HealthLog {
    notes: VecDeque<Note>,
}

/// What one direction went through between two instants.
#[derive(Debug, Clone, Serialize)]
pub struct DirectionHealth {
    pub tx_frames: u64,
    pub tx_bytes: u64,
    pub rx_bytes: u64,
    pub dropped_queue_segments: u64,
    pub lost_segments: u64,
    pub late_releases: u64,
    pub lateness_max_ns: u64,
    /// An upper bound on the 99th percentile of lateness over the releases.
    pub lateness_p99_ns: u64,
    /// Line time lost to late releases.
    pub late_held_ns: u64,
    pub paced_held_ns: u64,
    pub stalls: u64,
    pub max_1ms_rate_ratio: f64,
}

/// What `health` answers.
#[derive(Debug, Clone, Serialize)]
pub struct Health {
    /// The instant the answer covers from (the note at or before the one asked for).
    pub from_ns: u64,
    pub to_ns: u64,
    pub a_to_b: DirectionHealth,
    pub b_to_a: DirectionHealth,
    /// CPU time the emulator used, as a share of one core.
    pub cpu_cores: f64,
}

impl HealthLog {
    pub fn new(now_ns: u64, counters: [Counters; 2], cpu_ns: u64) -> Self {
        let mut notes = VecDeque::with_capacity(KEPT);
        notes.push_back(Note {
            at_ns: now_ns,
            counters,
            peaks: [Peaks::default(); 2],
            cpu_ns,
        });
        Self { notes }
    }

    /// Whether an interval has ended at `now_ns`.
    pub fn due(&self, now_ns: u64) -> bool {
        self.notes
            .back()
            .is_none_or(|n| now_ns >= n.at_ns + INTERVAL_NS)
    }

    pub fn note(&mut self, now_ns: u64, counters: [Counters; 2], peaks: [Peaks; 2], cpu_ns: u64) {
        if self.notes.len() == KEPT {
            self.notes.pop_front();
        }
        self.notes.push_back(Note {
            at_ns: now_ns,
            counters,
            peaks,
            cpu_ns,
        });
    }

    /// What happened from `since_ns` to the last note.
    pub fn since(&self, since_ns: u64) -> Health {
        let last = self.notes.back().expect("a note from the start");
        let start = self
            .notes
            .iter()
            .rposition(|n| n.at_ns <= since_ns)
            .unwrap_or(0);
        let first = &self.notes[start];
        let after = self.notes.range(start + 1..);
        let mut peaks = [Peaks::default(); 2];
        for note in after {
            for (peak, seen) in peaks.iter_mut().zip(&note.peaks) {
                peak.lateness_max_ns = peak.lateness_max_ns.max(seen.lateness_max_ns);
                peak.max_1ms_rate_ratio = peak.max_1ms_rate_ratio.max(seen.max_1ms_rate_ratio);
            }
        }
        let span_ns = last.at_ns.saturating_sub(first.at_ns).max(1);
        Health {
            from_ns: first.at_ns,
            to_ns: last.at_ns,
            a_to_b: direction(&last.counters[0], &first.counters[0], &peaks[0]),
            b_to_a: direction(&last.counters[1], &first.counters[1], &peaks[1]),
            cpu_cores: last.cpu_ns.saturating_sub(first.cpu_ns) as f64 / span_ns as f64,
        }
    }
}

fn direction(now: &Counters, then: &Counters, peaks: &Peaks) -> DirectionHealth {
    let lateness = Lateness {
        late: now.lateness.late - then.lateness.late,
        max_ns: peaks.lateness_max_ns,
        sum_ns: now.lateness.sum_ns - then.lateness.sum_ns,
        histogram_us: now
            .lateness
            .histogram_us
            .iter()
            .zip(&then.lateness.histogram_us)
            .map(|(a, b)| a - b)
            .collect(),
    };
    let releases = now.tx_frames - then.tx_frames;
    DirectionHealth {
        tx_frames: releases,
        tx_bytes: now.tx_bytes - then.tx_bytes,
        rx_bytes: now.rx_bytes - then.rx_bytes,
        dropped_queue_segments: now.dropped_queue_segments - then.dropped_queue_segments,
        lost_segments: (now.lost_random_segments + now.lost_burst_segments)
            - (then.lost_random_segments + then.lost_burst_segments),
        late_releases: lateness.late,
        lateness_max_ns: lateness.max_ns,
        lateness_p99_ns: lateness.quantile_ns(0.99, releases),
        late_held_ns: now.late_held_ns - then.late_held_ns,
        paced_held_ns: now.paced_held_ns - then.paced_held_ns,
        stalls: now.stalls - then.stalls,
        max_1ms_rate_ratio: peaks.max_1ms_rate_ratio,
    }
}

/// CPU time the calling thread (the engine's) has used, user and system, in nanoseconds.
pub fn cpu_ns() -> u64 {
    // SAFETY: getrusage fills the struct it is given, which is plain old data.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a rusage, RUSAGE_THREAD.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &raw mut usage) } != 0 {
        return 0;
    }
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    ns(usage.ru_utime) + ns(usage.ru_stime)
}

/// This process's resident memory, in bytes (0 if it cannot be read).
pub fn rss_bytes() -> u64 {
    let Ok(statm) = std::fs::read_to_string("/proc/self/statm") else {
        return 0;
    };
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    // SAFETY: sysconf reads a constant.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages * u64::try_from(page).unwrap_or(4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counters(tx: u64, late: u64) -> Counters {
        let mut c = Counters {
            tx_frames: tx,
            tx_bytes: tx * 1000,
            ..Counters::default()
        };
        for _ in 0..late {
            c.lateness.record(3_000);
        }
        c
    }

    #[test]
    fn a_run_is_answered_from_the_notes_around_it() {
        let mut log = HealthLog::new(0, [counters(0, 0), counters(0, 0)], 0);
        let peak = |ns| Peaks {
            lateness_max_ns: ns,
            max_1ms_rate_ratio: 1.0,
        };
        log.note(
            100,
            [counters(10, 1), counters(5, 0)],
            [peak(50_000), Peaks::default()],
            10,
        );
        log.note(
            200,
            [counters(30, 2), counters(9, 0)],
            [peak(3_000), Peaks::default()],
            60,
        );
        log.note(
            300,
            [counters(60, 2), counters(9, 0)],
            [peak(1_000), Peaks::default()],
            110,
        );
        // A run that began at 150: from the note at 100, the worst after it.
        let h = log.since(150);
        assert_eq!((h.from_ns, h.to_ns), (100, 300));
        assert_eq!(h.a_to_b.tx_frames, 50);
        assert_eq!(h.a_to_b.late_releases, 1);
        assert_eq!(h.a_to_b.lateness_max_ns, 3_000);
        assert!((h.cpu_cores - 0.5).abs() < 1e-9);
        assert_eq!(log.since(0).a_to_b.lateness_max_ns, 50_000);
    }
}
