//! The free bandwidth of one link over time, as a step function of integer instants.

use std::collections::BTreeMap;

use crate::intervals::{NEG_INF, POS_INF};

/// Capacity minus the load of the bookings active at each instant.
///
/// `times[k]` is where segment `k` starts (`times[0]` is minus infinity) and `free[k]`
/// the free bandwidth from there to the next breakpoint. A booking `[start, end)` is
/// active at `t` when `start <= t < end`; two bookings that start at the same instant
/// both count. Free bandwidth may go negative (a capacity shrunk under old bookings):
/// that only means nothing more fits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FreeTimeline {
    capacity_mbps: i64,
    times: Vec<i64>,
    free: Vec<i64>,
}

impl FreeTimeline {
    /// An idle link.
    pub fn idle(capacity_mbps: i64) -> Self {
        Self {
            capacity_mbps,
            times: vec![NEG_INF],
            free: vec![capacity_mbps],
        }
    }

    /// From `(start, end, mbps)` loads, each taking `mbps` during `[start, end)`.
    pub fn build(capacity_mbps: i64, loads: &[(i64, i64, i64)]) -> Self {
        let mut delta: BTreeMap<i64, i64> = BTreeMap::new();
        for &(start, end, mbps) in loads {
            *delta.entry(start).or_default() -= mbps;
            *delta.entry(end).or_default() += mbps;
        }
        let mut timeline = Self::idle(capacity_mbps);
        let mut level = capacity_mbps;
        for (t, change) in delta {
            if change != 0 {
                level += change;
                timeline.times.push(t);
                timeline.free.push(level);
            }
        }
        timeline
    }

    /// This timeline with more loads: one rebuild, cheaper than many `add_load`s.
    #[must_use]
    pub fn with_loads(&self, loads: &[(i64, i64, i64)]) -> Self {
        let mut all = Vec::with_capacity(self.times.len() + loads.len());
        // Each step of the current function is a load from its breakpoint onwards.
        for k in 1..self.times.len() {
            all.push((self.times[k], POS_INF, self.free[k - 1] - self.free[k]));
        }
        all.extend_from_slice(loads);
        let mut timeline = Self::build(self.capacity_mbps, &all);
        // Loads open to the far end cancel there; drop that breakpoint.
        if timeline.times.last() == Some(&POS_INF) {
            timeline.times.pop();
            timeline.free.pop();
        }
        timeline
    }

    pub fn capacity_mbps(&self) -> i64 {
        self.capacity_mbps
    }

    pub fn times(&self) -> &[i64] {
        &self.times
    }

    pub fn free(&self) -> &[i64] {
        &self.free
    }

    /// The last breakpoint, after which the link stays as it is (`NEG_INF` if it never changes).
    pub fn last_change(&self) -> i64 {
        *self
            .times
            .last()
            .expect("a timeline always has its first segment")
    }

    /// Take `mbps` more during `[start, end)` (give back, if negative).
    ///
    /// The timeline stays canonical (no breakpoint where the free bandwidth does not
    /// change), so releasing what was booked leaves it as it was, not longer.
    pub fn add_load(&mut self, start: i64, end: i64, mbps: i64) {
        let lo = self.split_at(start);
        let hi = self.split_at(end);
        for free in &mut self.free[lo..hi] {
            *free -= mbps;
        }
        // Only the two edges can now match their neighbours: inside, all moved together.
        // The later one first, so that removing it leaves the earlier one's index as it is.
        self.merge_with_previous(hi);
        self.merge_with_previous(lo);
    }

    pub fn free_at(&self, t: i64) -> i64 {
        self.free[self.segment_of(t)]
    }

    /// The least free bandwidth at any instant of `[start, end)`.
    pub fn min_free(&self, start: i64, end: i64) -> i64 {
        let (i, j) = self.segments_over(start, end);
        self.free[i..j]
            .iter()
            .copied()
            .min()
            .expect("at least one segment overlaps")
    }

    /// The starts `t` with `[t, t + duration)` inside `[lo, hi)` and `need_mbps` free throughout.
    pub fn free_starts(&self, need_mbps: i64, lo: i64, hi: i64, duration: i64) -> Vec<i64> {
        let mut starts = Vec::new();
        self.push_free_starts(need_mbps, lo, hi, duration, &mut starts);
        starts
    }

    /// `free_starts`, appended to `out` (a flat interval set whose last bound is below `lo`):
    /// one pass over the window and no allocation of its own, as the path searches ask
    /// this of every link.
    pub fn push_free_starts(
        &self,
        need_mbps: i64,
        lo: i64,
        hi: i64,
        duration: i64,
        out: &mut Vec<i64>,
    ) {
        assert!(duration >= 1, "duration must be at least 1, got {duration}");
        let (i, j) = self.segments_over(lo, hi);
        let mut run: Option<i64> = None;
        for k in i..j {
            let seg_lo = self.times[k].max(lo);
            if self.free[k] >= need_mbps {
                run.get_or_insert(seg_lo);
            } else if let Some(from) = run.take() {
                push_eroded(out, from, seg_lo, duration);
            }
        }
        if let Some(from) = run {
            push_eroded(out, from, hi, duration);
        }
    }

    /// `(instant, free)` at `start` and wherever the free bandwidth changes before `end`.
    pub fn steps(&self, start: i64, end: i64) -> Vec<(i64, i64)> {
        let (i, j) = self.segments_over(start, end);
        (i..j)
            .map(|k| (self.times[k].max(start), self.free[k]))
            .collect()
    }

    fn segment_of(&self, t: i64) -> usize {
        self.times.partition_point(|&b| b <= t) - 1
    }

    /// The segments `i..j` that overlap `[start, end)`; never empty, it holds `start`'s own.
    fn segments_over(&self, start: i64, end: i64) -> (usize, usize) {
        let i = self.segment_of(start);
        let j = i + 1 + self.times[i + 1..].partition_point(|&b| b < end);
        (i, j)
    }

    /// Drop breakpoint `k` if it does not change the free bandwidth.
    fn merge_with_previous(&mut self, k: usize) {
        if k > 0 && k < self.times.len() && self.free[k] == self.free[k - 1] {
            self.times.remove(k);
            self.free.remove(k);
        }
    }

    /// Make `t` a breakpoint (the new segment copies the free bandwidth it splits); its index.
    fn split_at(&mut self, t: i64) -> usize {
        let k = self.times.partition_point(|&b| b < t);
        if self.times.get(k) != Some(&t) {
            self.times.insert(k, t);
            self.free.insert(k, self.free[k - 1]);
        }
        k
    }
}

/// Append the starts that fit a run `[lo, hi)` of free instants (an unbounded end stays so).
fn push_eroded(out: &mut Vec<i64>, lo: i64, hi: i64, duration: i64) {
    let last = if hi == POS_INF { hi } else { hi - duration + 1 };
    if lo < last {
        out.push(lo);
        out.push(last);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const CAPACITY: i64 = 10;

    fn loads() -> impl Strategy<Value = Vec<(i64, i64, i64)>> {
        prop::collection::vec((0i64..30, 1i64..15, 1i64..6), 0..8)
            .prop_map(|v| v.into_iter().map(|(s, d, m)| (s, s + d, m)).collect())
    }

    fn brute_free(loads: &[(i64, i64, i64)], t: i64) -> i64 {
        CAPACITY
            - loads
                .iter()
                .filter(|&&(s, e, _)| s <= t && t < e)
                .map(|&(_, _, m)| m)
                .sum::<i64>()
    }

    proptest! {
        #[test]
        fn free_is_capacity_minus_concurrent_load(l in loads()) {
            let timeline = FreeTimeline::build(CAPACITY, &l);
            for t in -2..50 {
                prop_assert_eq!(timeline.free_at(t), brute_free(&l, t));
            }
        }

        #[test]
        fn loads_added_one_by_one_equal_loads_built_at_once(a in loads(), b in loads()) {
            let mut timeline = FreeTimeline::build(CAPACITY, &a);
            for &(s, e, m) in &b {
                timeline.add_load(s, e, m);
            }
            let together = FreeTimeline::build(CAPACITY, &[a.clone(), b.clone()].concat());
            let merged = FreeTimeline::build(CAPACITY, &a).with_loads(&b);
            for t in -2..50 {
                prop_assert_eq!(timeline.free_at(t), together.free_at(t));
            }
            // One canonical form, however the loads arrived.
            prop_assert_eq!(&merged, &together);
            prop_assert_eq!(&timeline, &together);
        }

        #[test]
        fn min_free_and_free_starts_match_brute_force(
            l in loads(), need in 0i64..12, lo in -2i64..30, width in 1i64..30, d in 1i64..10
        ) {
            let timeline = FreeTimeline::build(CAPACITY, &l);
            let hi = lo + width;
            let least = (lo..hi).map(|t| brute_free(&l, t)).min().unwrap();
            prop_assert_eq!(timeline.min_free(lo, hi), least);
            let starts = timeline.free_starts(need, lo, hi, d);
            for t in lo - 3..hi + 3 {
                let fits = lo <= t && t + d <= hi && (t..t + d).all(|u| brute_free(&l, u) >= need);
                prop_assert_eq!(crate::intervals::contains(&starts, t), fits);
            }
        }
    }

    proptest! {
        #[test]
        fn releasing_every_load_leaves_an_idle_timeline(l in loads()) {
            let mut timeline = FreeTimeline::build(CAPACITY, &l);
            for &(s, e, m) in &l {
                timeline.add_load(s, e, -m);
            }
            prop_assert_eq!(timeline, FreeTimeline::idle(CAPACITY));
        }
    }

    #[test]
    fn equal_bookings_at_the_same_instant_count_twice() {
        let timeline = FreeTimeline::build(CAPACITY, &[(5, 10, 4), (5, 10, 4)]);
        assert_eq!(timeline.free_at(5), CAPACITY - 8);
        let mut added = FreeTimeline::build(CAPACITY, &[(5, 10, 4)]);
        added.add_load(5, 10, 4);
        assert_eq!(added.min_free(0, 20), CAPACITY - 8);
    }
}
