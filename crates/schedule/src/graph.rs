//! Path searches over a topology's links, each asking per link what it can do.
//!
//! Links are full-duplex, so a search may cross one either way. Callers pass what a link
//! can do in the slot asked about (usable or not, its width, its feasible starts); the
//! searches know nothing of time or bookings.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::ops::Range;

use crate::intervals::{intersect, push_merging};

/// One link of a path, in the direction it is crossed: `(link, from node, to node)`.
pub type Step = (usize, usize, usize);

/// Nodes and links numbered from 0; each link joins two distinct nodes.
#[derive(Clone, Debug)]
pub struct Graph {
    ends: Vec<(usize, usize)>,
    length_miles: Vec<f64>,
    /// Per node, `(link, neighbour)` in link order, so ties resolve the same way every time.
    adjacency: Vec<Vec<(usize, usize)>>,
}

impl Graph {
    /// # Panics
    /// If a link names a node `>= nodes`, or `ends` and `length_miles` differ in length.
    pub fn new(nodes: usize, ends: Vec<(usize, usize)>, length_miles: Vec<f64>) -> Self {
        assert_eq!(ends.len(), length_miles.len(), "one length per link");
        let mut adjacency = vec![Vec::new(); nodes];
        for (link, &(a, b)) in ends.iter().enumerate() {
            assert!(
                a < nodes && b < nodes,
                "link {link} names a node out of range"
            );
            adjacency[a].push((link, b));
            adjacency[b].push((link, a));
        }
        Self {
            ends,
            length_miles,
            adjacency,
        }
    }

    pub fn nodes(&self) -> usize {
        self.adjacency.len()
    }

    pub fn links(&self) -> usize {
        self.ends.len()
    }

    pub fn ends(&self, link: usize) -> (usize, usize) {
        self.ends[link]
    }

    /// The end of `link` that is not `node` (`node` itself if the link does not touch it).
    pub fn other_end(&self, link: usize, node: usize) -> usize {
        let (a, b) = self.ends[link];
        if node == a { b } else { a }
    }

    /// The usable path with the fewest hops, ties broken by length.
    ///
    /// An A* search: a node's key is its hops and miles from `src`, and it waits its turn
    /// by its hops plus the hops it lies from `dst` in the whole graph (a bound no usable
    /// path can beat), so the search keeps to the nodes that could lie on a fewest-hop
    /// path and asks `usable` about far fewer links.
    pub fn fewest_hops(
        &self,
        src: usize,
        dst: usize,
        mut usable: impl FnMut(usize) -> bool,
    ) -> Option<Vec<Step>> {
        let n = self.nodes();
        let to_go = self.hops_to(dst);
        let mut best: Vec<Option<Key>> = vec![None; n];
        let mut came_by: Vec<Option<(usize, usize)>> = vec![None; n];
        let mut done = vec![false; n];
        let mut checked: Vec<Option<bool>> = vec![None; self.links()];
        let mut heap = BinaryHeap::new();
        let turn = |Key(hops, miles): Key, node: usize| Key(hops + to_go[node], miles);
        if to_go[src] == u32::MAX {
            return None;
        }
        best[src] = Some(Key(0, 0.0));
        heap.push(Reverse((turn(Key(0, 0.0), src), src)));
        while let Some(Reverse((_, node))) = heap.pop() {
            if done[node] {
                continue;
            }
            if node == dst {
                return Some(walk_back(dst, &came_by));
            }
            done[node] = true;
            let Key(hops, miles) = best[node].expect("a queued node has a key");
            for &(link, other) in &self.adjacency[node] {
                if done[other] || to_go[other] == u32::MAX {
                    continue;
                }
                let key = Key(hops + 1, miles + self.length_miles[link]);
                if best[other].is_some_and(|known| known <= key) {
                    continue;
                }
                if *checked[link].get_or_insert_with(|| usable(link)) {
                    best[other] = Some(key);
                    came_by[other] = Some((link, node));
                    heap.push(Reverse((turn(key, other), other)));
                }
            }
        }
        None
    }

    /// Hops from each node to `dst` over any links (`u32::MAX` where it cannot be reached).
    fn hops_to(&self, dst: usize) -> Vec<u32> {
        let mut hops = vec![u32::MAX; self.nodes()];
        hops[dst] = 0;
        let mut queue = std::collections::VecDeque::from([dst]);
        while let Some(node) = queue.pop_front() {
            for &(_, other) in &self.adjacency[node] {
                if hops[other] == u32::MAX {
                    hops[other] = hops[node] + 1;
                    queue.push_back(other);
                }
            }
        }
        hops
    }

    /// The links that leave `src`'s side when only `usable` links join nodes; empty when
    /// they join `src` to `dst`. While none of these links is usable, nothing joins them.
    pub fn cut(&self, src: usize, dst: usize, usable: impl Fn(usize) -> bool) -> Vec<usize> {
        let mut sides = DisjointSets::new(self.nodes());
        for (link, &(a, b)) in self.ends.iter().enumerate() {
            if usable(link) {
                sides.join(a, b);
            }
        }
        let side = sides.root(src);
        if sides.root(dst) == side {
            return Vec::new();
        }
        (0..self.links())
            .filter(|&link| {
                let (a, b) = self.ends[link];
                (sides.root(a) == side) != (sides.root(b) == side)
            })
            .collect()
    }

    /// The largest bottleneck width over all paths (0 when none has any).
    pub fn widest_width(&self, src: usize, dst: usize, mut width: impl FnMut(usize) -> i64) -> i64 {
        let n = self.nodes();
        let mut best = vec![0i64; n];
        let mut done = vec![false; n];
        let mut heap = BinaryHeap::new();
        heap.push((i64::MAX, Reverse(src)));
        while let Some((through_here, Reverse(node))) = heap.pop() {
            if done[node] {
                continue;
            }
            if node == dst {
                return through_here;
            }
            done[node] = true;
            for &(link, other) in &self.adjacency[node] {
                if done[other] {
                    continue;
                }
                let through = through_here.min(width(link));
                if through > best[other] {
                    best[other] = through;
                    heap.push((through, Reverse(other)));
                }
            }
        }
        0
    }

    /// ALL-SLOTS: the start times in `domain` at which some path joins `src` to `dst`.
    ///
    /// `starts_on(link, out)` appends to `out` the starts within `domain` at which the
    /// link can carry the request (a flat interval set). The answer is the semiring
    /// closure of USN's path computation, `τ(w) ← τ(w) ⊕ (τ(v) ⊗ L_e)` at its fixpoint:
    /// the starts `t` at which `src` and `dst` are joined by links usable at `t`. It is
    /// found by dividing time, not by propagating sets: over a span in which a link is
    /// usable throughout, its ends are one node; a link usable nowhere in it is gone. If
    /// that joins `src` to `dst`, the whole span is in; if even every link usable
    /// somewhere in the span cannot join them, none of it is; otherwise the span is cut
    /// at the median bound of the links still undecided, and each half searched on the
    /// graph contracted so far. Each bound is looked at on O(log bounds) levels.
    ///
    /// With `Wanted::First` the search stops at the first span it finds: the set
    /// returned starts with the earliest start and may lack later ones.
    pub fn reachable_starts(
        &self,
        src: usize,
        dst: usize,
        domain: &[i64],
        mut starts_on: impl FnMut(usize, &mut Vec<i64>),
        wanted: Wanted,
    ) -> Vec<i64> {
        let (Some(&lo), Some(&hi)) = (domain.first(), domain.last()) else {
            return Vec::new();
        };
        let mut bounds = Vec::new();
        let mut links = Vec::new();
        for (link, &(a, b)) in self.ends.iter().enumerate() {
            let from = bounds.len();
            starts_on(link, &mut bounds);
            if bounds.len() > from {
                links.push(Undecided {
                    a,
                    b,
                    starts: from..bounds.len(),
                });
            }
        }
        let mut found = Vec::new();
        Division {
            bounds: &bounds,
            found: &mut found,
            wanted,
        }
        .search(lo, hi, self.nodes(), src, dst, links);
        intersect(&found, domain)
    }
}

/// How much of the answer a search over time wants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wanted {
    All,
    /// The first span only (spans are searched left to right).
    First,
}

/// A search key: hops first, then miles.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Key(u32, f64);

impl Eq for Key {}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.cmp(&other.0).then(self.1.total_cmp(&other.1))
    }
}

fn walk_back(dst: usize, came_by: &[Option<(usize, usize)>]) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut node = dst;
    while let Some((link, prev)) = came_by[node] {
        steps.push((link, prev, node));
        node = prev;
    }
    steps.reverse();
    steps
}

/// A link not yet known to be usable or not throughout the span searched: its ends in
/// the graph contracted so far, and its usable starts, `bounds[starts]`.
#[derive(Clone)]
struct Undecided {
    a: usize,
    b: usize,
    starts: Range<usize>,
}

/// The state of one `reachable_starts` search: every link's starts, and the spans found.
struct Division<'a> {
    bounds: &'a [i64],
    found: &'a mut Vec<i64>,
    wanted: Wanted,
}

impl Division<'_> {
    /// Add to `found` the starts in `[lo, hi)` at which `src` reaches `dst` over `links`,
    /// in a graph of `nodes` nodes. Spans are searched left to right, so `found` stays sorted.
    fn search(
        &mut self,
        lo: i64,
        hi: i64,
        nodes: usize,
        src: usize,
        dst: usize,
        links: Vec<Undecided>,
    ) {
        let mut whole = DisjointSets::new(nodes);
        let mut undecided = Vec::with_capacity(links.len());
        for link in links {
            let starts = overlapping(self.bounds, link.starts, lo, hi);
            match starts.len() {
                0 => {}
                2 if self.bounds[starts.start] <= lo && self.bounds[starts.start + 1] >= hi => {
                    whole.join(link.a, link.b);
                }
                _ => undecided.push(Undecided { starts, ..link }),
            }
        }
        let (src, dst) = (whole.root(src), whole.root(dst));
        if src == dst {
            push_merging(self.found, lo, hi);
            return;
        }
        let mut somewhere = whole.clone();
        for link in &undecided {
            somewhere.join(link.a, link.b);
        }
        if somewhere.root(src) != somewhere.root(dst) {
            return;
        }
        // Contract: the nodes joined throughout the span become one, numbered anew.
        let mut number = vec![usize::MAX; nodes];
        let mut count = 0;
        let mut renumber = |node: usize| {
            let root = whole.root(node);
            if number[root] == usize::MAX {
                number[root] = count;
                count += 1;
            }
            number[root]
        };
        let (src, dst) = (renumber(src), renumber(dst));
        let mut inner = Vec::new();
        let mut contracted = Vec::with_capacity(undecided.len());
        for link in undecided {
            let (a, b) = (renumber(link.a), renumber(link.b));
            if a != b {
                let bounds = &self.bounds[link.starts.clone()];
                inner.extend(bounds.iter().copied().filter(|&t| lo < t && t < hi));
                contracted.push(Undecided { a, b, ..link });
            }
        }
        // An undecided link has a bound inside the span, so `inner` is not empty.
        let middle = inner.len() / 2;
        let (_, &mut cut, _) = inner.select_nth_unstable(middle);
        self.search(lo, cut, count, src, dst, contracted.clone());
        if self.wanted == Wanted::All || self.found.is_empty() {
            self.search(cut, hi, count, src, dst, contracted);
        }
    }
}

/// The part of the flat set `bounds[starts]` whose intervals overlap `[lo, hi)`.
fn overlapping(bounds: &[i64], starts: Range<usize>, lo: i64, hi: i64) -> Range<usize> {
    let set = &bounds[starts.clone()];
    let pairs = set.len() / 2;
    // Intervals ending at or before `lo`, and those starting at or after `hi`, are out.
    let first = partition_pairs(pairs, |k| set[2 * k + 1] <= lo);
    let last = partition_pairs(pairs, |k| set[2 * k] < hi);
    if first >= last {
        return starts.start..starts.start;
    }
    starts.start + 2 * first..starts.start + 2 * last
}

/// The number of leading pairs `0..pairs` for which `before` holds (it holds for a prefix).
fn partition_pairs(pairs: usize, before: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, pairs);
    while lo < hi {
        let mid = usize::midpoint(lo, hi);
        if before(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

#[derive(Clone)]
struct DisjointSets {
    parent: Vec<usize>,
}

impl DisjointSets {
    fn new(n: usize) -> Self {
        Self {
            parent: (0..n).collect(),
        }
    }

    fn root(&mut self, mut node: usize) -> usize {
        while self.parent[node] != node {
            self.parent[node] = self.parent[self.parent[node]];
            node = self.parent[node];
        }
        node
    }

    fn join(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.root(a), self.root(b));
        self.parent[ra] = rb;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::intervals::{contains, normalize};
    use proptest::prelude::*;

    /// Whether `src` reaches `dst` over the links usable at `t`, by a plain search.
    fn joined_at(
        ends: &[(usize, usize)],
        sets: &[Vec<i64>],
        src: usize,
        dst: usize,
        t: i64,
    ) -> bool {
        let mut reached = vec![src];
        let mut k = 0;
        while k < reached.len() {
            let node = reached[k];
            k += 1;
            for (link, &(a, b)) in ends.iter().enumerate() {
                let other = if a == node {
                    b
                } else if b == node {
                    a
                } else {
                    continue;
                };
                if contains(&sets[link], t) && !reached.contains(&other) {
                    reached.push(other);
                }
            }
        }
        reached.contains(&dst)
    }

    fn set() -> impl Strategy<Value = Vec<i64>> {
        prop::collection::vec((0i64..40, 0i64..40), 0..4).prop_map(normalize)
    }

    proptest! {
        #[test]
        fn reachable_starts_are_the_instants_at_which_usable_links_join_the_ends(
            ends in prop::collection::vec((0usize..6, 0usize..6), 1..12),
            sets in prop::collection::vec(set(), 12),
            domain in set(),
        ) {
            let ends: Vec<_> = ends.into_iter().filter(|(a, b)| a != b).collect();
            let g = Graph::new(6, ends.clone(), vec![1.0; ends.len()]);
            let sets: Vec<Vec<i64>> = sets[..ends.len()].iter().map(|s| intersect(s, &domain)).collect();
            let starts_on = |link: usize, out: &mut Vec<i64>| out.extend(&sets[link]);
            let got = g.reachable_starts(0, 5, &domain, starts_on, Wanted::All);
            prop_assert!(crate::intervals::is_normal(&got));
            let first = g.reachable_starts(0, 5, &domain, starts_on, Wanted::First);
            prop_assert_eq!(first.first(), got.first());
            for t in -2..44 {
                let expected = contains(&domain, t) && joined_at(&ends, &sets, 0, 5, t);
                prop_assert_eq!(contains(&got, t), expected, "t = {}", t);
            }
        }
    }

    /// 0 - 1 - 3 and 0 - 2 - 3, the lower route longer; plus a long direct 0 - 3 link.
    fn diamond() -> Graph {
        Graph::new(
            4,
            vec![(0, 1), (1, 3), (0, 2), (2, 3), (0, 3)],
            vec![1.0, 1.0, 2.0, 2.0, 50.0],
        )
    }

    #[test]
    fn fewest_hops_prefers_hops_then_length() {
        let g = diamond();
        assert_eq!(g.fewest_hops(0, 3, |_| true), Some(vec![(4, 0, 3)]));
        assert_eq!(
            g.fewest_hops(0, 3, |l| l != 4),
            Some(vec![(0, 0, 1), (1, 1, 3)])
        );
        assert_eq!(
            g.fewest_hops(0, 3, |l| l >= 2 && l != 4),
            Some(vec![(2, 0, 2), (3, 2, 3)])
        );
        assert_eq!(g.fewest_hops(0, 3, |l| l == 0), None);
    }

    #[test]
    fn widest_width_is_the_best_bottleneck() {
        let g = diamond();
        let widths = [5, 1, 3, 4, 2];
        assert_eq!(g.widest_width(0, 3, |l| widths[l]), 3);
        assert_eq!(g.widest_width(0, 3, |_| 0), 0);
    }

    #[test]
    fn reachable_starts_unions_paths_and_intersects_links() {
        let g = diamond();
        let starts = [vec![0, 10], vec![5, 20], vec![30, 40], vec![35, 50], vec![]];
        let got = g.reachable_starts(
            0,
            3,
            &[0, 100],
            |l, out| out.extend(&starts[l]),
            Wanted::All,
        );
        assert_eq!(got, vec![5, 10, 35, 40]);
        let first = g.reachable_starts(
            0,
            3,
            &[0, 100],
            |l, out| out.extend(&starts[l]),
            Wanted::First,
        );
        assert_eq!(first, vec![5, 10]);
        let all = g.reachable_starts(0, 3, &[0, 100], |_, out| out.extend([0, 100]), Wanted::All);
        assert_eq!(all, vec![0, 100]);
    }
}
