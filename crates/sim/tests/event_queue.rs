//! The event queue pops in nondecreasing time, ties in insertion order.

use longhaul_sim::event::{Event, EventQueue};
use proptest::prelude::*;

proptest! {
    #[test]
    fn pops_in_time_order_then_insertion_order(
        times in prop::collection::vec(0u64..50, 0..300),
        pops_between in prop::collection::vec(0usize..4, 0..300),
    ) {
        let mut q = EventQueue::new();
        let mut popped: Vec<Event> = Vec::new();
        let mut floor = 0u64;
        // Interleave pushes (never into the past, as the simulator never does) and pops.
        for (token, &t) in times.iter().enumerate() {
            q.push(Event { at_ns: floor + t, target: 0, token: token as u64 });
            for _ in 0..pops_between.get(token).copied().unwrap_or(0) {
                if let Some(e) = q.pop() {
                    floor = e.at_ns;
                    popped.push(e);
                }
            }
        }
        while let Some(e) = q.pop() {
            popped.push(e);
        }
        prop_assert_eq!(popped.len(), times.len());
        for w in popped.windows(2) {
            prop_assert!(w[0].at_ns <= w[1].at_ns);
            if w[0].at_ns == w[1].at_ns {
                prop_assert!(w[0].token < w[1].token, "tie broken out of insertion order");
            }
        }
    }
}
