//! A set of disjoint, non-adjacent byte ranges: the sender's SACK scoreboard and the
//! receiver's out-of-order queue. A `BTreeMap` from start to end keeps every operation
//! logarithmic in the number of holes, which after a slow-start overshoot on a long fat
//! pipe can reach tens of thousands.

use std::collections::BTreeMap;

use crate::packet::Range;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeSet {
    map: BTreeMap<u64, u64>,
    total_bytes: u64,
}

/// What an insertion newly covered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Inserted {
    pub new_bytes: u64,
    /// Of `new_bytes`, those below the pivot the caller gave.
    pub new_below_pivot: u64,
}

fn overlap(a: u64, b: u64, c: u64, d: u64) -> u64 {
    b.min(d).saturating_sub(a.max(c))
}

impl RangeSet {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    pub fn first(&self) -> Option<Range> {
        self.map
            .first_key_value()
            .map(|(&start, &end)| Range { start, end })
    }

    /// The end of the highest range.
    pub fn highest_end(&self) -> Option<u64> {
        self.map.last_key_value().map(|(_, &end)| end)
    }

    pub fn iter(&self) -> impl Iterator<Item = Range> + '_ {
        self.map.iter().map(|(&start, &end)| Range { start, end })
    }

    /// The range that contains byte `at`.
    pub fn containing(&self, at: u64) -> Option<Range> {
        let (&start, &end) = self.map.range(..=at).next_back()?;
        (at < end).then_some(Range { start, end })
    }

    /// The first range starting after `at`.
    pub fn next_start_after(&self, at: u64) -> Option<u64> {
        self.map.range(at + 1..).next().map(|(&s, _)| s)
    }

    /// `at`, or the end of the range that covers it.
    pub fn skip_covered(&self, at: u64) -> u64 {
        self.containing(at).map_or(at, |r| r.end)
    }

    /// Add `[start, end)`, merging with what it touches.
    pub fn insert(&mut self, start: u64, end: u64, pivot: u64) -> Inserted {
        if start >= end {
            return Inserted::default();
        }
        let mut lo = start;
        let mut hi = end;
        let mut covered = 0;
        let mut covered_below = 0;
        // A range starting at or before `start` may overlap or touch it.
        if let Some((&s, &e)) = self.map.range(..=start).next_back()
            && e >= start
        {
            lo = s;
            hi = hi.max(e);
            covered += overlap(s, e, start, end);
            covered_below += overlap(s, e, start, end.min(pivot));
            self.map.remove(&s);
            self.total_bytes -= e - s;
        }
        while let Some((&s, &e)) = self.map.range(start..=end).next() {
            hi = hi.max(e);
            covered += overlap(s, e, start, end);
            covered_below += overlap(s, e, start, end.min(pivot));
            self.map.remove(&s);
            self.total_bytes -= e - s;
        }
        self.map.insert(lo, hi);
        self.total_bytes += hi - lo;
        Inserted {
            new_bytes: (end - start) - covered,
            new_below_pivot: end.min(pivot).saturating_sub(start) - covered_below,
        }
    }

    /// Forget everything below `at`; returns the bytes removed.
    pub fn remove_below(&mut self, at: u64) -> u64 {
        let mut removed = 0;
        while let Some((&s, &e)) = self.map.first_key_value() {
            if s >= at {
                break;
            }
            self.map.remove(&s);
            if e <= at {
                removed += e - s;
                self.total_bytes -= e - s;
            } else {
                removed += at - s;
                self.total_bytes -= at - s;
                self.map.insert(at, e);
                break;
            }
        }
        removed
    }

    /// Forget `[start, end)`; returns the bytes removed.
    pub fn remove(&mut self, start: u64, end: u64) -> u64 {
        if start >= end {
            return 0;
        }
        let mut removed = 0;
        // The range starting below `start` may reach into it: keep its head (and its
        // tail, if it reaches past `end`).
        if let Some((&s, &e)) = self.map.range(..start).next_back()
            && e > start
        {
            self.map.insert(s, start);
            if e > end {
                self.map.insert(end, e);
            }
            removed += e.min(end) - start;
        }
        while let Some((&s, &e)) = self.map.range(start..end).next() {
            self.map.remove(&s);
            if e > end {
                self.map.insert(end, e);
            }
            removed += e.min(end) - s;
        }
        self.total_bytes -= removed;
        removed
    }

    /// Bytes covered within `[a, b)`; walks the ranges there, so meant for short spans.
    pub fn covered_in(&self, a: u64, b: u64) -> u64 {
        if a >= b {
            return 0;
        }
        let mut sum = 0;
        for (&s, &e) in self.map.range(..b).rev() {
            if e <= a {
                break;
            }
            sum += overlap(s, e, a, b);
        }
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The brute-force oracle: a set of bytes.
    fn bytes(ops: &[(u64, u64)]) -> std::collections::BTreeSet<u64> {
        ops.iter().flat_map(|&(s, e)| s..e).collect()
    }

    proptest! {
        #[test]
        fn matches_a_set_of_bytes(
            ops in prop::collection::vec((0u64..200, 0u64..20), 1..40),
            pivot in 0u64..220,
            cut in 0u64..220,
            a in 0u64..220,
            len in 0u64..60,
        ) {
            let ops: Vec<(u64, u64)> = ops.into_iter().map(|(s, l)| (s, s + l)).collect();
            let mut set = RangeSet::new();
            for (i, &(s, e)) in ops.iter().enumerate() {
                let before = bytes(&ops[..i]);
                let got = set.insert(s, e, pivot);
                let new: Vec<u64> = (s..e).filter(|b| !before.contains(b)).collect();
                prop_assert_eq!(got.new_bytes, new.len() as u64);
                prop_assert_eq!(got.new_below_pivot, new.iter().filter(|&&b| b < pivot).count() as u64);
            }
            let all = bytes(&ops);
            prop_assert_eq!(set.total_bytes(), all.len() as u64);
            // Disjoint and not touching.
            let ranges: Vec<Range> = set.iter().collect();
            for w in ranges.windows(2) {
                prop_assert!(w[0].end < w[1].start);
            }
            let b = a + len;
            prop_assert_eq!(set.covered_in(a, b), all.range(a..b.max(a)).count() as u64);
            let mut punched = set.clone();
            prop_assert_eq!(punched.remove(a, b), all.range(a..b).count() as u64);
            let left: std::collections::BTreeSet<u64> =
                all.iter().copied().filter(|x| !(a..b).contains(x)).collect();
            prop_assert_eq!(punched.total_bytes(), left.len() as u64);
            prop_assert_eq!(punched.iter().flat_map(|r| r.start..r.end).collect::<std::collections::BTreeSet<u64>>(), left);
            let removed = set.remove_below(cut);
            prop_assert_eq!(removed, all.range(..cut).count() as u64);
            prop_assert_eq!(set.total_bytes(), all.range(cut..).count() as u64);
        }
    }

    #[test]
    fn skips_and_finds() {
        let mut set = RangeSet::new();
        set.insert(10, 20, 0);
        set.insert(30, 40, 0);
        assert_eq!(set.skip_covered(5), 5);
        assert_eq!(set.skip_covered(15), 20);
        assert_eq!(set.next_start_after(20), Some(30));
        assert_eq!(set.next_start_after(30), None);
        assert_eq!(set.highest_end(), Some(40));
        assert_eq!(set.containing(35), Some(Range { start: 30, end: 40 }));
    }
}
