//! The event queue: a binary heap ordered by (time, insertion sequence).
//!
//! Ties in time pop in the order they were pushed, so a run is a function of its inputs
//! and seed alone, never of the heap's internal layout.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Index of a node in the simulator's node table.
pub type NodeId = usize;

/// One scheduled wake-up: at `at_ns`, node `target` gets `token`, whose meaning only the
/// target knows (so new node types need no new event kinds in the core).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    pub at_ns: u64,
    pub target: NodeId,
    pub token: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    at_ns: u64,
    seq: u64,
    target: NodeId,
    token: u64,
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        // BinaryHeap is a max-heap: reverse so the earliest (then the first pushed) is on top.
        (other.at_ns, other.seq).cmp(&(self.at_ns, self.seq))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    next_seq: u64,
}

impl EventQueue {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, event: Event) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry {
            at_ns: event.at_ns,
            seq,
            target: event.target,
            token: event.token,
        });
    }

    pub fn peek_ns(&self) -> Option<u64> {
        self.heap.peek().map(|e| e.at_ns)
    }

    pub fn pop(&mut self) -> Option<Event> {
        self.heap.pop().map(|e| Event {
            at_ns: e.at_ns,
            target: e.target,
            token: e.token,
        })
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_then_insertion_order() {
        let mut q = EventQueue::new();
        for (at_ns, token) in [(5, 0), (1, 1), (5, 2), (1, 3)] {
            q.push(Event {
                at_ns,
                target: 0,
                token,
            });
        }
        let order: Vec<u64> = std::iter::from_fn(|| q.pop()).map(|e| e.token).collect();
        assert_eq!(order, vec![1, 3, 0, 2]);
    }
}
