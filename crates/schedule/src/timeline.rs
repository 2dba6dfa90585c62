//! The free bandwidth of one link over time, as a step function of integer instants.
//!
//! A link of a busy network collects tens of thousands of breakpoints a year, and every
//! booking is a new version of a few links (the control plane keeps old versions for
//! readers). So the function is held in chunks shared between versions: a booking copies
//! the chunks it touches, not the link's whole year; and each chunk's least and most free
//! bandwidth are kept beside the chunk starts, so a search over a long window takes a
//! chunk with room throughout (or none anywhere) whole.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::intervals::{NEG_INF, POS_INF, push_eroded};

/// Segments a chunk is built with; one grown past twice this is split in two.
const CHUNK: usize = 32;

/// Capacity minus the load of the bookings active at each instant.
///
/// A step function: segment `k` starts at breakpoint `times[k]` (the first at minus
/// infinity) and has `free[k]` until the next breakpoint. A booking `[start, end)` is
/// active at `t` when `start <= t < end`; two bookings that start at the same instant
/// both count. Free bandwidth may go negative (a capacity shrunk under old bookings):
/// that only means nothing more fits. Equal timelines compare equal however they are
/// chunked, and no breakpoint leaves the free bandwidth as it was.
#[derive(Clone, Debug)]
pub struct FreeTimeline {
    capacity_mbps: i64,
    /// Where each chunk's first segment starts; `firsts[0]` is minus infinity.
    firsts: Vec<i64>,
    /// Each chunk's least and most free bandwidth, beside `firsts` so that a search over
    /// a long window reads them without visiting the chunks.
    ranges: Vec<(i64, i64)>,
    chunks: Vec<Arc<Chunk>>,
}

/// Room in a chunk: one more than twice `CHUNK`, as a chunk splits after an insertion.
const ROOM: usize = 2 * CHUNK + 1;

/// Consecutive segments, held inline so that a search reaches them in one step.
#[derive(Clone, Debug)]
struct Chunk {
    len: usize,
    times: [i64; ROOM],
    free: [i64; ROOM],
}

impl Chunk {
    fn new(times: &[i64], free: &[i64]) -> Self {
        let mut chunk = Self {
            len: times.len(),
            times: [0; ROOM],
            free: [0; ROOM],
        };
        chunk.times[..times.len()].copy_from_slice(times);
        chunk.free[..free.len()].copy_from_slice(free);
        chunk
    }

    fn times(&self) -> &[i64] {
        &self.times[..self.len]
    }

    fn free(&self) -> &[i64] {
        &self.free[..self.len]
    }

    fn insert(&mut self, k: usize, t: i64, free: i64) {
        self.times.copy_within(k..self.len, k + 1);
        self.free.copy_within(k..self.len, k + 1);
        self.times[k] = t;
        self.free[k] = free;
        self.len += 1;
    }

    fn remove(&mut self, k: usize) {
        self.times.copy_within(k + 1..self.len, k);
        self.free.copy_within(k + 1..self.len, k);
        self.len -= 1;
    }

    /// Move the segments from `at` on into a new chunk.
    fn split_off(&mut self, at: usize) -> Self {
        let rest = Self::new(&self.times[at..self.len], &self.free[at..self.len]);
        self.len = at;
        rest
    }

    fn append(&mut self, other: &Self) {
        let (from, to) = (self.len, self.len + other.len);
        self.times[from..to].copy_from_slice(other.times());
        self.free[from..to].copy_from_slice(other.free());
        self.len = to;
    }

    /// The least and the most free bandwidth in the chunk.
    fn range(&self) -> (i64, i64) {
        let free = self.free().iter().copied();
        let least = free.clone().min().expect("a chunk is never empty");
        (least, free.max().expect("a chunk is never empty"))
    }
}

impl PartialEq for FreeTimeline {
    fn eq(&self, other: &Self) -> bool {
        self.capacity_mbps == other.capacity_mbps
            && self.times() == other.times()
            && self.free() == other.free()
    }
}

impl Eq for FreeTimeline {}

impl FreeTimeline {
    /// An idle link.
    pub fn idle(capacity_mbps: i64) -> Self {
        Self::from_segments(capacity_mbps, &[NEG_INF], &[capacity_mbps])
    }

    /// From `(start, end, mbps)` loads, each taking `mbps` during `[start, end)`.
    pub fn build(capacity_mbps: i64, loads: &[(i64, i64, i64)]) -> Self {
        let mut delta: BTreeMap<i64, i64> = BTreeMap::new();
        for &(start, end, mbps) in loads {
            *delta.entry(start).or_default() -= mbps;
            *delta.entry(end).or_default() += mbps;
        }
        let (mut times, mut free) = (vec![NEG_INF], vec![capacity_mbps]);
        let mut level = capacity_mbps;
        for (t, change) in delta {
            if change != 0 {
                level += change;
                times.push(t);
                free.push(level);
            }
        }
        Self::from_segments(capacity_mbps, &times, &free)
    }

    /// This timeline with more loads: one rebuild, cheaper than many `add_load`s.
    #[must_use]
    pub fn with_loads(&self, loads: &[(i64, i64, i64)]) -> Self {
        let (times, free) = (self.times(), self.free());
        let mut all = Vec::with_capacity(times.len() + loads.len());
        // Each step of the current function is a load from its breakpoint onwards.
        for k in 1..times.len() {
            all.push((times[k], POS_INF, free[k - 1] - free[k]));
        }
        all.extend_from_slice(loads);
        let built = Self::build(self.capacity_mbps, &all);
        // Loads open to the far end cancel there; drop that breakpoint.
        let (mut times, mut free) = (built.times(), built.free());
        if times.last() == Some(&POS_INF) {
            times.pop();
            free.pop();
        }
        Self::from_segments(self.capacity_mbps, &times, &free)
    }

    fn from_segments(capacity_mbps: i64, times: &[i64], free: &[i64]) -> Self {
        let chunks: Vec<Arc<Chunk>> = times
            .chunks(CHUNK)
            .zip(free.chunks(CHUNK))
            .map(|(t, f)| Arc::new(Chunk::new(t, f)))
            .collect();
        Self {
            capacity_mbps,
            firsts: chunks.iter().map(|c| c.times[0]).collect(),
            ranges: chunks.iter().map(|c| c.range()).collect(),
            chunks,
        }
    }

    pub fn capacity_mbps(&self) -> i64 {
        self.capacity_mbps
    }

    /// Every breakpoint, the first being minus infinity.
    pub fn times(&self) -> Vec<i64> {
        self.chunks
            .iter()
            .flat_map(|c| c.times().iter().copied())
            .collect()
    }

    /// The free bandwidth from each breakpoint on.
    pub fn free(&self) -> Vec<i64> {
        self.chunks
            .iter()
            .flat_map(|c| c.free().iter().copied())
            .collect()
    }

    /// The last breakpoint, after which the link stays as it is (`NEG_INF` if it never changes).
    pub fn last_change(&self) -> i64 {
        let last = self.chunks.last().expect("a timeline always has a chunk");
        *last.times().last().expect("a chunk is never empty")
    }

    /// Take `mbps` more during `[start, end)` (give back, if negative).
    ///
    /// The timeline stays canonical (no breakpoint where the free bandwidth does not
    /// change), so releasing what was booked leaves it as it was, not longer.
    pub fn add_load(&mut self, start: i64, end: i64, mbps: i64) {
        self.split_at(start);
        self.split_at(end);
        let mut c = self.chunk_of(start);
        while c < self.chunks.len() && self.firsts[c] < end {
            let chunk = Arc::make_mut(&mut self.chunks[c]);
            let len = chunk.len;
            for (t, free) in chunk.times[..len].iter().zip(&mut chunk.free[..len]) {
                if start <= *t && *t < end {
                    *free -= mbps;
                }
            }
            self.ranges[c] = chunk.range();
            c += 1;
        }
        // Only the two edges can now match their neighbours: inside, all moved together.
        self.merge_at(end);
        self.merge_at(start);
    }

    pub fn free_at(&self, t: i64) -> i64 {
        let (c, k) = self.segment_of(t);
        self.chunks[c].free[k]
    }

    /// The least free bandwidth at any instant of `[start, end)`.
    pub fn min_free(&self, start: i64, end: i64) -> i64 {
        let mut least = i64::MAX;
        let whole = |(least, _): (i64, i64)| Some(least);
        self.walk(start, end, whole, |_, _, free| least = least.min(free));
        least
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
        // The start of the run of instants with room that is open, if one is.
        let mut run: Option<i64> = None;
        let (mut c, mut k) = self.segment_of(lo);
        loop {
            let chunk = &self.chunks[c];
            let times = chunk.times();
            let chunk_end = self.firsts.get(c + 1).copied().unwrap_or(POS_INF);
            let stop = if chunk_end <= hi {
                times.len()
            } else {
                times.partition_point(|&b| b < hi)
            };
            let (least, most) = self.ranges[c];
            if least >= need_mbps {
                run.get_or_insert(times[k].max(lo));
            } else if most < need_mbps {
                if let Some(from) = run.take() {
                    push_eroded(out, from, times[k].max(lo), duration);
                }
            } else {
                // Which segments have room, as bits; then jump from one change to the next.
                let mut room: u128 = 0;
                for (j, &free) in chunk.free().iter().enumerate().take(stop).skip(k) {
                    room |= u128::from(free >= need_mbps) << j;
                }
                while k < stop {
                    if room >> k & 1 == 1 {
                        run.get_or_insert(times[k].max(lo));
                        k += (!(room >> k)).trailing_zeros() as usize;
                    } else {
                        if let Some(from) = run.take() {
                            push_eroded(out, from, times[k].max(lo), duration);
                        }
                        k = (k + (room >> k).trailing_zeros() as usize).min(stop);
                    }
                }
            }
            c += 1;
            k = 0;
            if c == self.chunks.len() || self.firsts[c] >= hi {
                break;
            }
        }
        if let Some(from) = run {
            push_eroded(out, from, hi, duration);
        }
    }

    /// The first `t >= from` with `need_mbps` free throughout `[t, t + duration)`, if any:
    /// read forwards, a chunk with no room anywhere (or room throughout) taken whole.
    pub fn first_free_start(&self, need_mbps: i64, from: i64, duration: i64) -> Option<i64> {
        let mut run: Option<i64> = None;
        let (mut c, mut k) = self.segment_of(from);
        loop {
            let times = self.chunks[c].times();
            let free = self.chunks[c].free();
            let chunk_end = self.firsts.get(c + 1).copied().unwrap_or(POS_INF);
            let (least, most) = self.ranges[c];
            if k == 0 && most < need_mbps {
                run = None;
            } else if k == 0 && least >= need_mbps {
                let from = *run.get_or_insert(times[0].max(from));
                if chunk_end == POS_INF || chunk_end - from >= duration {
                    return Some(from);
                }
            } else {
                for j in k..times.len() {
                    if free[j] < need_mbps {
                        run = None;
                        continue;
                    }
                    let from = *run.get_or_insert(times[j].max(from));
                    let to = times.get(j + 1).copied().unwrap_or(chunk_end);
                    if to == POS_INF || to - from >= duration {
                        return Some(from);
                    }
                }
            }
            c += 1;
            k = 0;
            if c == self.chunks.len() {
                return None;
            }
        }
    }

    /// `(instant, free)` at `start` and wherever the free bandwidth changes before `end`.
    pub fn steps(&self, start: i64, end: i64) -> Vec<(i64, i64)> {
        let mut steps = Vec::new();
        let each_segment = |_| None;
        self.walk(start, end, each_segment, |from, _, free| {
            steps.push((from, free));
        });
        steps
    }

    /// Visit the segments overlapping `[lo, hi)` in order as `(from, to, free)`, clipped
    /// to the window; a chunk inside the window for which `whole` gives a free bandwidth
    /// is visited once, as one piece with that bandwidth.
    fn walk(
        &self,
        lo: i64,
        hi: i64,
        whole: impl Fn((i64, i64)) -> Option<i64>,
        mut visit: impl FnMut(i64, i64, i64),
    ) {
        let (mut c, mut k) = self.segment_of(lo);
        loop {
            let chunk = &self.chunks[c];
            let chunk_end = self.firsts.get(c + 1).copied().unwrap_or(POS_INF);
            let inside = k == 0 && chunk.times[0] >= lo && chunk_end <= hi;
            if let Some(free) = whole(self.ranges[c]).filter(|_| inside) {
                visit(chunk.times[0], chunk_end, free);
            } else {
                let times = chunk.times();
                for k in k..times.len() {
                    let from = times[k];
                    if from >= hi {
                        return;
                    }
                    let to = times.get(k + 1).copied().unwrap_or(chunk_end);
                    visit(from.max(lo), to.min(hi), chunk.free[k]);
                }
            }
            c += 1;
            k = 0;
            if c == self.chunks.len() || self.firsts[c] >= hi {
                return;
            }
        }
    }

    fn chunk_of(&self, t: i64) -> usize {
        self.firsts.partition_point(|&b| b <= t) - 1
    }

    /// The chunk and index of the segment holding `t`.
    fn segment_of(&self, t: i64) -> (usize, usize) {
        let c = self.chunk_of(t);
        (c, self.chunks[c].times().partition_point(|&b| b <= t) - 1)
    }

    /// Make `t` a breakpoint (the new segment copies the free bandwidth it splits).
    fn split_at(&mut self, t: i64) {
        let c = self.chunk_of(t);
        let k = self.chunks[c].times().partition_point(|&b| b < t);
        if self.chunks[c].times().get(k) == Some(&t) {
            return;
        }
        // `k >= 1`: the chunk starts at or before `t`, and not at it.
        let chunk = Arc::make_mut(&mut self.chunks[c]);
        let free = chunk.free[k - 1];
        chunk.insert(k, t, free);
        if chunk.len == ROOM {
            let rest = chunk.split_off(CHUNK);
            self.ranges[c] = chunk.range();
            self.firsts.insert(c + 1, rest.times[0]);
            self.ranges.insert(c + 1, rest.range());
            self.chunks.insert(c + 1, Arc::new(rest));
        }
    }

    /// Drop breakpoint `t` if the free bandwidth does not change there.
    fn merge_at(&mut self, t: i64) {
        let c = self.chunk_of(t);
        let Ok(k) = self.chunks[c].times().binary_search(&t) else {
            return;
        };
        let before = match (k, c) {
            (0, 0) => return,
            (0, _) => *self.chunks[c - 1]
                .free()
                .last()
                .expect("a chunk is never empty"),
            _ => self.chunks[c].free[k - 1],
        };
        if self.chunks[c].free[k] != before {
            return;
        }
        let chunk = Arc::make_mut(&mut self.chunks[c]);
        chunk.remove(k);
        if chunk.len == 0 {
            self.chunks.remove(c);
            self.firsts.remove(c);
            self.ranges.remove(c);
            return;
        }
        self.firsts[c] = chunk.times[0];
        let size = chunk.len;
        // Keep chunks from thinning out as bookings are released: join two small ones.
        if c + 1 < self.chunks.len() && size + self.chunks[c + 1].len <= CHUNK {
            let next = self.chunks.remove(c + 1);
            self.firsts.remove(c + 1);
            self.ranges.remove(c + 1);
            Arc::make_mut(&mut self.chunks[c]).append(&next);
        }
        self.ranges[c] = self.chunks[c].range();
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

    /// Enough loads to split a link into many chunks, and release some again.
    fn many_loads() -> impl Strategy<Value = Vec<(i64, i64, i64)>> {
        prop::collection::vec((0i64..2000, 1i64..60, 1i64..6), 0..400)
            .prop_map(|v| v.into_iter().map(|(s, d, m)| (s, s + d, m)).collect())
    }

    fn brute_min(loads: &[(i64, i64, i64)], lo: i64, hi: i64) -> i64 {
        (lo..hi).map(|t| brute_free(loads, t)).min().unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn a_timeline_of_many_chunks_answers_as_one_built_at_once(
            l in many_loads(), keep in prop::collection::vec(any::<bool>(), 400),
            windows in prop::collection::vec((0i64..2100, 1i64..300, 0i64..12, 1i64..40), 20),
        ) {
            let mut timeline = FreeTimeline::idle(CAPACITY);
            for &(s, e, m) in &l {
                timeline.add_load(s, e, m);
            }
            // Release some, in another order than they came.
            let mut kept = Vec::new();
            for (k, &(s, e, m)) in l.iter().enumerate().rev() {
                if keep[k] { kept.push((s, e, m)); } else { timeline.add_load(s, e, -m); }
            }
            let built = FreeTimeline::build(CAPACITY, &kept);
            prop_assert_eq!(&timeline, &built);
            prop_assert_eq!(timeline.last_change(), built.last_change());
            for &(lo, width, need, d) in &windows {
                let hi = lo + width;
                prop_assert_eq!(timeline.min_free(lo, hi), brute_min(&kept, lo, hi));
                let opens = (lo..2200).find(|&t| (t..t + d).all(|u| brute_free(&kept, u) >= need));
                prop_assert_eq!(timeline.first_free_start(need, lo, d), opens);
                prop_assert_eq!(timeline.steps(lo, hi), built.steps(lo, hi));
                let starts = timeline.free_starts(need, lo, hi, d);
                prop_assert!(crate::intervals::is_normal(&starts));
                for t in (lo - 2..hi + 2).step_by(3) {
                    let fits = lo <= t && t + d <= hi && (t..t + d).all(|u| brute_free(&kept, u) >= need);
                    prop_assert_eq!(crate::intervals::contains(&starts, t), fits);
                }
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
