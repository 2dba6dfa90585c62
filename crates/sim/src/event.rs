//! The event queue: a sorted vector ordered by (time, target node, insertion sequence),
//! with the earliest event kept beside it.
//!
//! Ties in time pop by node, then in the order they were pushed, so a run is a function
//! of its inputs and seed alone, never of the queue's layout nor of when an event was
//! pushed relative to another node's: on two threads a link learns of a packet from the
//! other part at the end of the window it was sent in, and pushes its release then, not
//! when the packet was sent as on one thread (a link has one event pending at most, and a host
//! pushes its own in the order of what it is handed, so the order is the same on one
//! thread and on two). Most events a handler schedules are due before everything
//! already queued (a link's next release, 1.2 µs on at 10 Gb/s): those wait in `front`
//! and skip the search and the move altogether.

use std::cmp::Ordering;

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
        // Reversed, as for a max-heap: `a > b` means a is due first.
        (other.at_ns, other.target, other.seq).cmp(&(self.at_ns, self.target, self.seq))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[derive(Debug, Default)]
pub struct EventQueue {
    /// Due before every entry in `heap`, in the queue's order.
    front: Option<Entry>,
    /// Sorted latest first, so the next due is at the end.
    heap: Vec<Entry>,
    next_seq: u64,
}

impl EventQueue {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, event: Event) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let entry = Entry {
            at_ns: event.at_ns,
            seq,
            target: event.target,
            token: event.token,
        };
        // `Entry`'s order is reversed for the max-heap: `a > b` means a is due first.
        match self.front {
            Some(front) if entry > front => {
                self.insert(front);
                self.front = Some(entry);
            }
            None if self.heap.last().is_none_or(|top| entry > *top) => self.front = Some(entry),
            _ => self.insert(entry),
        }
    }

    fn insert(&mut self, entry: Entry) {
        // Entries due soon go near the end: a short search from there and a short move.
        let mut at = self.heap.len();
        while at > 0 && self.heap[at - 1] > entry {
            at -= 1;
        }
        self.heap.insert(at, entry);
    }

    pub fn peek_ns(&self) -> Option<u64> {
        self.front
            .or_else(|| self.heap.last().copied())
            .map(|e| e.at_ns)
    }

    pub fn pop(&mut self) -> Option<Event> {
        self.front
            .take()
            .or_else(|| self.heap.pop())
            .map(|e| Event {
                at_ns: e.at_ns,
                target: e.target,
                token: e.token,
            })
    }

    pub fn len(&self) -> usize {
        self.heap.len() + usize::from(self.front.is_some())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
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

    #[test]
    fn ties_between_nodes_pop_by_node_whichever_was_pushed_first() {
        let mut q = EventQueue::new();
        for (at_ns, target, token) in [(7, 2, 0), (7, 1, 1), (3, 5, 2), (7, 1, 3), (7, 0, 4)] {
            q.push(Event {
                at_ns,
                target,
                token,
            });
        }
        let order: Vec<(NodeId, u64)> = std::iter::from_fn(|| q.pop())
            .map(|e| (e.target, e.token))
            .collect();
        assert_eq!(order, vec![(5, 2), (0, 4), (1, 1), (1, 3), (2, 0)]);
    }
}
