//! A set of u64 values kept as disjoint, non-adjacent half-open ranges (the shape of
//! quinn's `range_set`): what the receiver has, what the sender must send again.

use std::collections::BTreeMap;
use std::ops::Range;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeSet {
    /// start -> end, disjoint and never touching.
    ranges: BTreeMap<u64, u64>,
    /// How many values the ranges hold (kept, not summed: a lossy transfer has many).
    count: u64,
}

impl RangeSet {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// How many values the set holds.
    pub fn len(&self) -> u64 {
        self.count
    }

    /// The range of the set that holds `value`, if any.
    pub fn range_containing(&self, value: u64) -> Option<Range<u64>> {
        self.ranges
            .range(..=value)
            .next_back()
            .filter(|(_, end)| value < **end)
            .map(|(&start, &end)| start..end)
    }

    pub fn contains(&self, value: u64) -> bool {
        self.ranges
            .range(..=value)
            .next_back()
            .is_some_and(|(_, &end)| value < end)
    }

    /// Add `range`; true if any value in it was new.
    pub fn insert(&mut self, range: Range<u64>) -> bool {
        if range.is_empty() {
            return false;
        }
        if let Some(grown) = self.extend_in_place(&range) {
            return grown;
        }
        let (mut start, mut end) = (range.start, range.end);
        let mut swallowed = 0;
        // Merge with a range that starts at or before `start` and reaches it.
        if let Some((&s, &e)) = self.ranges.range(..=start).next_back()
            && e >= start
        {
            start = s;
            end = end.max(e);
            swallowed += e - s;
            self.ranges.remove(&s);
        }
        // Swallow every range that starts inside [start, end].
        while let Some((&s, &e)) = self.ranges.range(start..=end).next() {
            end = end.max(e);
            swallowed += e - s;
            self.ranges.remove(&s);
        }
        self.ranges.insert(start, end);
        let before = self.count;
        self.count = self.count - swallowed + (end - start);
        self.count > before
    }

    /// `insert` where `range` starts inside or just after the range before it and
    /// reaches no later one: a receiver taking blocks in order, the common case. That
    /// range grows where it is, found by one lookup, with no removal and insertion in the
    /// tree (at 9.6 Gb/s the receiver inserts 800,000 blocks a second). None where this
    /// does not hold.
    fn extend_in_place(&mut self, range: &Range<u64>) -> Option<bool> {
        // The last range starting at or before `range.end`: if it starts after
        // `range.start`, `range` reaches (or touches) it; if it ends before
        // `range.start`, `range` does not touch the one before.
        let (&start, end) = self.ranges.range_mut(..=range.end).next_back()?;
        if start > range.start || *end < range.start {
            return None;
        }
        if range.end <= *end {
            return Some(false);
        }
        self.count += range.end - *end;
        *end = range.end;
        Some(true)
    }

    /// Remove `range`.
    pub fn remove(&mut self, range: Range<u64>) {
        // Nothing to remove, the common case of a receiver clearing what it no longer
        // misses: one lookup and no allocation.
        let last_before_end = self.ranges.range(..range.end).next_back();
        if range.is_empty() || last_before_end.is_none_or(|(_, &end)| end <= range.start) {
            return;
        }
        let overlapping: Vec<(u64, u64)> = self
            .ranges
            .range(..range.end)
            .rev()
            .take_while(|(_, e)| **e > range.start)
            .map(|(&s, &e)| (s, e))
            .collect();
        for (s, e) in overlapping {
            self.ranges.remove(&s);
            self.count -= e - s;
            if s < range.start {
                self.ranges.insert(s, range.start);
                self.count += range.start - s;
            }
            if e > range.end {
                self.ranges.insert(range.end, e);
                self.count += e - range.end;
            }
        }
    }

    /// The lowest value, taken out of the set.
    pub fn pop_min(&mut self) -> Option<u64> {
        let (&s, &e) = self.ranges.iter().next()?;
        self.ranges.remove(&s);
        if s + 1 < e {
            self.ranges.insert(s + 1, e);
        }
        self.count -= 1;
        Some(s)
    }

    pub fn min(&self) -> Option<u64> {
        self.ranges.keys().next().copied()
    }

    pub fn iter(&self) -> impl Iterator<Item = Range<u64>> + '_ {
        self.ranges.iter().map(|(&s, &e)| s..e)
    }

    /// The parts of `range` the set does not hold, in order: found from the held range
    /// at or before its start, so a span late in a set of many gaps costs a lookup, not
    /// a walk over every gap before it.
    pub fn gaps_within(&self, range: Range<u64>) -> impl Iterator<Item = Range<u64>> + '_ {
        let end = range.end;
        let start = range.start.min(end);
        let mut cursor = start;
        // A held range that starts at or before `range` may reach into it.
        if let Some((_, &held_end)) = self.ranges.range(..=start).next_back() {
            cursor = cursor.max(held_end.min(end));
        }
        let mut held = self.ranges.range(start..end);
        std::iter::from_fn(move || {
            loop {
                if cursor >= end {
                    return None;
                }
                let Some((&s, &e)) = held.next() else {
                    let gap = cursor..end;
                    cursor = end;
                    return Some(gap);
                };
                let gap = cursor..s;
                cursor = cursor.max(e.min(end));
                if !gap.is_empty() {
                    return Some(gap);
                }
            }
        })
    }

    /// The gaps of the set inside `0..end`: what is missing below `end`.
    pub fn gaps_below(&self, end: u64) -> impl Iterator<Item = Range<u64>> + '_ {
        self.gaps_within(0..end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u64, u64),
        Remove(u64, u64),
        PopMin,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0u64..200, 0u64..20).prop_map(|(s, n)| Op::Insert(s, s + n)),
            (0u64..200).prop_map(|s| Op::Insert(s, s + 1)),
            (0u64..200, 0u64..20).prop_map(|(s, n)| Op::Remove(s, s + n)),
            Just(Op::PopMin),
        ]
    }

    proptest! {
        /// The set behaves as a set of values, and its ranges stay disjoint and apart.
        #[test]
        fn agrees_with_a_set_of_values(ops in proptest::collection::vec(op(), 0..60)) {
            let mut set = RangeSet::new();
            let mut model = BTreeSet::new();
            for op in ops {
                match op {
                    Op::Insert(s, e) => {
                        let new = (s..e).any(|v| !model.contains(&v));
                        prop_assert_eq!(set.insert(s..e), new);
                        model.extend(s..e);
                    }
                    Op::Remove(s, e) => {
                        set.remove(s..e);
                        for v in s..e { model.remove(&v); }
                    }
                    Op::PopMin => {
                        let expected = model.iter().next().copied();
                        if let Some(v) = expected { model.remove(&v); }
                        prop_assert_eq!(set.pop_min(), expected);
                    }
                }
                let values: BTreeSet<u64> = set.iter().flatten().collect();
                prop_assert_eq!(&values, &model);
                prop_assert_eq!(set.len(), model.len() as u64);
                let ranges: Vec<_> = set.iter().collect();
                for pair in ranges.windows(2) {
                    prop_assert!(pair[0].end < pair[1].start, "{:?}", ranges);
                }
                let gaps: BTreeSet<u64> = set.gaps_below(220).flatten().collect();
                let missing: BTreeSet<u64> = (0..220).filter(|v| !model.contains(v)).collect();
                prop_assert_eq!(gaps, missing);
                for (start, len) in [(0u64, 220u64), (5, 17), (30, 1), (100, 60)] {
                    let gaps: BTreeSet<u64> = set.gaps_within(start..start + len).flatten().collect();
                    let expected: BTreeSet<u64> = (start..start + len).filter(|v| !model.contains(v)).collect();
                    prop_assert_eq!(gaps, expected);
                }
                for value in 0..220 {
                    let held = set.range_containing(value);
                    prop_assert_eq!(held.is_some(), model.contains(&value));
                    if let Some(held) = held {
                        prop_assert!(held.contains(&value) && ranges.contains(&held));
                    }
                }
            }
        }
    }
}
