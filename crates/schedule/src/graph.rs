//! Path searches over a topology's links, each asking per link what it can do.
//!
//! Links are full-duplex, so a search may cross one either way. Callers pass what a link
//! can do in the slot asked about (usable or not, its width, its feasible starts); the
//! searches know nothing of time or bookings.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};

use crate::intervals::{difference, intersect, union};

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
    pub fn fewest_hops(
        &self,
        src: usize,
        dst: usize,
        mut usable: impl FnMut(usize) -> bool,
    ) -> Option<Vec<Step>> {
        let n = self.nodes();
        let mut best: Vec<Option<Key>> = vec![None; n];
        let mut came_by: Vec<Option<(usize, usize)>> = vec![None; n];
        let mut done = vec![false; n];
        let mut checked: Vec<Option<bool>> = vec![None; self.links()];
        let mut heap = BinaryHeap::new();
        best[src] = Some(Key(0, 0.0));
        heap.push(Reverse((Key(0, 0.0), src)));
        while let Some(Reverse((Key(hops, miles), node))) = heap.pop() {
            if done[node] {
                continue;
            }
            if node == dst {
                return Some(walk_back(dst, &came_by));
            }
            done[node] = true;
            for &(link, other) in &self.adjacency[node] {
                if done[other] {
                    continue;
                }
                let key = Key(hops + 1, miles + self.length_miles[link]);
                if best[other].is_some_and(|known| known <= key) {
                    continue;
                }
                if *checked[link].get_or_insert_with(|| usable(link)) {
                    best[other] = Some(key);
                    came_by[other] = Some((link, node));
                    heap.push(Reverse((key, other)));
                }
            }
        }
        None
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
    /// `starts_on(link)` gives the starts within `domain` at which the link can carry
    /// the request. This is the semiring closure of USN's path computation,
    /// `τ(w) ← τ(w) ⊕ (τ(v) ⊗ L_e)`, run to its fixpoint (a walk never adds a start
    /// its simple sub-path lacks, so the fixpoint is the union over simple paths), with
    /// two savings: links free over the whole domain impose nothing, so the nodes they
    /// join are merged first and share one label; and a label passes on only what it
    /// gained since it last did.
    pub fn reachable_starts(
        &self,
        src: usize,
        dst: usize,
        domain: &[i64],
        mut starts_on: impl FnMut(usize) -> Vec<i64>,
    ) -> Vec<i64> {
        if domain.is_empty() {
            return Vec::new();
        }
        let mut merged = DisjointSets::new(self.nodes());
        let mut partial = Vec::new();
        for (link, &(a, b)) in self.ends.iter().enumerate() {
            let starts = starts_on(link);
            if starts == domain {
                merged.join(a, b);
            } else if !starts.is_empty() {
                partial.push((a, b, starts));
            }
        }
        let (source, target) = (merged.root(src), merged.root(dst));
        if source == target {
            return domain.to_vec();
        }
        let mut neighbours: Vec<Vec<(usize, usize)>> = vec![Vec::new(); self.nodes()];
        for (k, &(a, b, _)) in partial.iter().enumerate() {
            let (ra, rb) = (merged.root(a), merged.root(b));
            if ra != rb {
                neighbours[ra].push((rb, k));
                neighbours[rb].push((ra, k));
            }
        }
        let mut label: Vec<Vec<i64>> = vec![Vec::new(); self.nodes()];
        let mut pending: Vec<Option<Vec<i64>>> = vec![None; self.nodes()];
        let mut queue = VecDeque::from([source]);
        label[source] = domain.to_vec();
        pending[source] = Some(domain.to_vec());
        while let Some(node) = queue.pop_front() {
            let delta = pending[node]
                .take()
                .expect("a queued node has a pending delta");
            for &(other, k) in &neighbours[node] {
                let reached = intersect(&delta, &partial[k].2);
                if reached.is_empty() {
                    continue;
                }
                let gained = difference(&reached, &label[other]);
                if gained.is_empty() {
                    continue;
                }
                label[other] = union(&label[other], &gained);
                if let Some(waiting) = pending[other].take() {
                    pending[other] = Some(union(&waiting, &gained));
                } else {
                    queue.push_back(other);
                    pending[other] = Some(gained);
                }
            }
            if label[target] == domain {
                break;
            }
        }
        std::mem::take(&mut label[target])
    }
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
        let got = g.reachable_starts(0, 3, &[0, 100], |l| starts[l].clone());
        assert_eq!(got, vec![5, 10, 35, 40]);
        let all = g.reachable_starts(0, 3, &[0, 100], |_| vec![0, 100]);
        assert_eq!(all, vec![0, 100]);
    }
}
