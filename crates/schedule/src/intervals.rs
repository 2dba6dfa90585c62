//! Sets of integer instants as sorted, disjoint, half-open intervals.
//!
//! These are the elements of the closed semiring of USN's path computation: union is ⊕,
//! intersection is ⊗, the empty set is 0̄ and the whole line 1̄. A set is stored flat,
//! as boundaries `[l0, h0, l1, h1, ...]` with `l0 < h0 < l1 < h1 ...`: adjacent
//! intervals are merged, so equal sets have equal boundaries.
//!
//! Time is an integer (longhaul uses microseconds since the Unix epoch), so the start
//! times of a reservation of length `d` inside a free interval `[l, h)` are again a
//! half-open interval, `[l, h - d + 1)`.

/// Stands for minus infinity: every real instant is greater.
pub const NEG_INF: i64 = -(1 << 62);
/// Stands for plus infinity: every real instant is smaller.
pub const POS_INF: i64 = 1 << 62;

/// `a ⊕ b`.
pub fn union(a: &[i64], b: &[i64]) -> Vec<i64> {
    if a.is_empty() {
        return b.to_vec();
    }
    if b.is_empty() {
        return a.to_vec();
    }
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        let (lo, hi) = if j >= b.len() || (i < a.len() && a[i] <= b[j]) {
            i += 2;
            (a[i - 2], a[i - 1])
        } else {
            j += 2;
            (b[j - 2], b[j - 1])
        };
        push_merging(&mut out, lo, hi);
    }
    out
}

/// `a ⊗ b`.
pub fn intersect(a: &[i64], b: &[i64]) -> Vec<i64> {
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let lo = a[i].max(b[j]);
        let hi = a[i + 1].min(b[j + 1]);
        if lo < hi {
            out.push(lo);
            out.push(hi);
        }
        if a[i + 1] < b[j + 1] {
            i += 2;
        } else {
            j += 2;
        }
    }
    out
}

/// Every instant not in `a`.
pub fn complement(a: &[i64]) -> Vec<i64> {
    let mut bounds = Vec::with_capacity(a.len() + 2);
    bounds.push(NEG_INF);
    bounds.extend_from_slice(a);
    bounds.push(POS_INF);
    bounds
        .chunks_exact(2)
        .filter(|pair| pair[0] < pair[1])
        .flatten()
        .copied()
        .collect()
}

/// The instants of `a` that are not in `b`.
pub fn difference(a: &[i64], b: &[i64]) -> Vec<i64> {
    if a.is_empty() || b.is_empty() {
        return a.to_vec();
    }
    intersect(a, &complement(b))
}

/// The instants `t` with `[t, t + duration)` inside `a`: the start times that fit.
///
/// An unbounded end stays unbounded. `duration` must be at least 1.
pub fn erode(a: &[i64], duration: i64) -> Vec<i64> {
    assert!(duration >= 1, "duration must be at least 1, got {duration}");
    let mut out = Vec::with_capacity(a.len());
    for pair in a.chunks_exact(2) {
        push_eroded(&mut out, pair[0], pair[1], duration);
    }
    out
}

/// Append to `out` the starts that fit `[lo, hi)` (`erode` of one interval, in place).
pub(crate) fn push_eroded(out: &mut Vec<i64>, lo: i64, hi: i64, duration: i64) {
    let last = if hi == POS_INF { hi } else { hi - duration + 1 };
    if lo < last {
        out.push(lo);
        out.push(last);
    }
}

/// Whether `t` is in `a`.
pub fn contains(a: &[i64], t: i64) -> bool {
    a.partition_point(|&b| b <= t) % 2 == 1
}

/// The flat set covering `(lo, hi)` pairs given in any order; empty pairs are dropped.
pub fn normalize(mut pairs: Vec<(i64, i64)>) -> Vec<i64> {
    pairs.retain(|&(lo, hi)| lo < hi);
    pairs.sort_unstable();
    let mut out = Vec::with_capacity(pairs.len() * 2);
    for (lo, hi) in pairs {
        push_merging(&mut out, lo, hi);
    }
    out
}

/// Whether `a` is in normal form: an even number of strictly increasing boundaries.
pub fn is_normal(a: &[i64]) -> bool {
    a.len().is_multiple_of(2) && a.windows(2).all(|w| w[0] < w[1])
}

pub(crate) fn push_merging(out: &mut Vec<i64>, lo: i64, hi: i64) {
    match out.last_mut() {
        Some(last) if lo <= *last => *last = (*last).max(hi),
        _ => {
            out.push(lo);
            out.push(hi);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const UNIVERSE: std::ops::Range<i64> = -5..45;

    fn set() -> impl Strategy<Value = Vec<i64>> {
        prop::collection::vec((0i64..40, 0i64..40), 0..6).prop_map(normalize)
    }

    fn members(a: &[i64]) -> Vec<bool> {
        UNIVERSE.map(|t| contains(a, t)).collect()
    }

    proptest! {
        #[test]
        fn operations_match_pointwise_logic(a in set(), b in set()) {
            let (ma, mb) = (members(&a), members(&b));
            let or: Vec<bool> = ma.iter().zip(&mb).map(|(x, y)| *x || *y).collect();
            let and: Vec<bool> = ma.iter().zip(&mb).map(|(x, y)| *x && *y).collect();
            let minus: Vec<bool> = ma.iter().zip(&mb).map(|(x, y)| *x && !*y).collect();
            prop_assert_eq!(members(&union(&a, &b)), or);
            prop_assert_eq!(members(&intersect(&a, &b)), and);
            prop_assert_eq!(members(&difference(&a, &b)), minus);
            prop_assert!(is_normal(&union(&a, &b)));
            prop_assert!(is_normal(&intersect(&a, &b)));
            prop_assert!(is_normal(&difference(&a, &b)));
        }

        #[test]
        fn erosion_keeps_starts_that_fit(a in set(), d in 1i64..12) {
            let eroded = erode(&a, d);
            for t in UNIVERSE {
                let fits = (t..t + d).all(|u| contains(&a, u));
                prop_assert_eq!(contains(&eroded, t), fits);
            }
        }

        #[test]
        fn complement_is_an_involution(a in set()) {
            prop_assert_eq!(complement(&complement(&a)), a);
        }
    }

    #[test]
    fn adjacent_intervals_merge() {
        assert_eq!(normalize(vec![(0, 5), (5, 9)]), vec![0, 9]);
        assert_eq!(union(&[0, 5], &[5, 9]), vec![0, 9]);
    }

    #[test]
    fn unbounded_ends_stay_unbounded() {
        assert_eq!(erode(&[NEG_INF, 10], 4), vec![NEG_INF, 7]);
        assert_eq!(erode(&[3, POS_INF], 4), vec![3, POS_INF]);
        assert_eq!(complement(&[]), vec![NEG_INF, POS_INF]);
    }
}
