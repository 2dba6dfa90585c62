//! A topology's links with their free bandwidth over time, and the four USN queries.
//!
//! A request books whole granules on every link it crosses (`booked`), so the same
//! request may take more on a SONET link (150 Mb/s granules) than on an Ethernet one.
//! Times are integer microseconds; nothing here reads a clock.

use std::sync::Arc;

use crate::graph::{Graph, Step};
use crate::intervals::NEG_INF;
use crate::timeline::FreeTimeline;

/// Per link: capacity and granularity in Mb/s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkRate {
    pub capacity_mbps: i64,
    pub granularity_mbps: i64,
}

impl LinkRate {
    /// What a request of `mbps` takes on this link: whole granules.
    pub fn booked(self, mbps: i64) -> i64 {
        (mbps + self.granularity_mbps - 1).div_euclid(self.granularity_mbps) * self.granularity_mbps
    }

    /// The largest request this link can carry with `free_mbps` left.
    pub fn bookable(self, free_mbps: i64) -> i64 {
        (free_mbps.div_euclid(self.granularity_mbps) * self.granularity_mbps).max(0)
    }
}

/// A graph whose links have rates and timelines. Cloning is cheap: timelines are shared
/// until one is changed.
#[derive(Clone, Debug)]
pub struct Network {
    graph: Arc<Graph>,
    rates: Arc<[LinkRate]>,
    timelines: Vec<Arc<FreeTimeline>>,
}

impl Network {
    /// An idle network.
    ///
    /// # Panics
    /// If `rates` does not give one entry per link, or a granularity is not positive.
    pub fn new(graph: Graph, rates: Vec<LinkRate>) -> Self {
        assert_eq!(rates.len(), graph.links(), "one rate per link");
        assert!(
            rates.iter().all(|r| r.granularity_mbps > 0),
            "granularity must be positive"
        );
        let timelines = rates
            .iter()
            .map(|r| Arc::new(FreeTimeline::idle(r.capacity_mbps)))
            .collect();
        Self {
            graph: Arc::new(graph),
            rates: rates.into(),
            timelines,
        }
    }

    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    pub fn rate(&self, link: usize) -> LinkRate {
        self.rates[link]
    }

    pub fn timeline(&self, link: usize) -> &FreeTimeline {
        &self.timelines[link]
    }

    /// Book `(link, start, end, mbps)` requests; with `release`, give them back instead.
    ///
    /// # Panics
    /// If a booking names a link out of range.
    pub fn add_bookings(&mut self, bookings: &[(usize, i64, i64, i64)], release: bool) {
        let sign = if release { -1 } else { 1 };
        let mut loads: Vec<Vec<(i64, i64, i64)>> = vec![Vec::new(); self.graph.links()];
        for &(link, start, end, mbps) in bookings {
            loads[link].push((start, end, sign * self.rates[link].booked(mbps)));
        }
        for (link, load) in loads.iter().enumerate() {
            match load.as_slice() {
                [] => {}
                &[(start, end, mbps)] => {
                    Arc::make_mut(&mut self.timelines[link]).add_load(start, end, mbps);
                }
                many => self.timelines[link] = Arc::new(self.timelines[link].with_loads(many)),
            }
        }
    }

    /// Query 1: the fewest-hop (then shortest) path with `need` free throughout `[lo, hi)`.
    pub fn fixed_slot(
        &self,
        src: usize,
        dst: usize,
        need: i64,
        lo: i64,
        hi: i64,
    ) -> Option<Vec<Step>> {
        self.graph.fewest_hops(src, dst, |link| {
            self.rates[link].booked(need) <= self.timelines[link].min_free(lo, hi)
        })
    }

    /// Query 3: the highest bandwidth some path has free throughout `[lo, hi)`, and the
    /// fewest-hop (then shortest) path that has it. `(0, None)` when no path has any.
    pub fn max_bandwidth(
        &self,
        src: usize,
        dst: usize,
        lo: i64,
        hi: i64,
    ) -> (i64, Option<Vec<Step>>) {
        let best = self.graph.widest_width(src, dst, |link| {
            self.rates[link].bookable(self.timelines[link].min_free(lo, hi))
        });
        if best <= 0 {
            return (0, None);
        }
        (best, self.fixed_slot(src, dst, best, lo, hi))
    }

    /// Query 4: the starts in `[first, stop)` at which `need` fits for `duration` on some path.
    pub fn slots(
        &self,
        src: usize,
        dst: usize,
        need: i64,
        duration: i64,
        first: i64,
        stop: i64,
    ) -> Vec<i64> {
        if stop <= first {
            return Vec::new();
        }
        let window_end = stop + duration - 1;
        self.graph
            .reachable_starts(src, dst, &[first, stop], |link| {
                let booked = self.rates[link].booked(need);
                self.timelines[link].free_starts(booked, first, window_end, duration)
            })
    }

    /// Query 2: the earliest start at or after `first` at which `need` fits for `duration`.
    ///
    /// None when no path could ever carry `need`.
    pub fn earliest(
        &self,
        src: usize,
        dst: usize,
        need: i64,
        duration: i64,
        first: i64,
    ) -> Option<i64> {
        let fits_when_idle = |link: usize| {
            let rate = self.rates[link];
            rate.booked(need) <= rate.capacity_mbps
        };
        self.graph.fewest_hops(src, dst, fits_when_idle)?;
        // After the last change every link is idle, so a start there is feasible. Search
        // up to it in windows that double, so that an early answer is found cheaply.
        let last = first.max(self.last_change());
        let (mut first, mut span) = (first, duration);
        while first <= last {
            let stop = first.saturating_add(span).min(last + 1);
            if let Some(&start) = self.slots(src, dst, need, duration, first, stop).first() {
                return Some(start);
            }
            first = stop;
            span = span.saturating_mul(2);
        }
        None
    }

    /// The last instant at which any link's free bandwidth changes (`NEG_INF` if none does).
    pub fn last_change(&self) -> i64 {
        self.timelines
            .iter()
            .map(|t| t.last_change())
            .max()
            .unwrap_or(NEG_INF)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OC192: LinkRate = LinkRate {
        capacity_mbps: 9600,
        granularity_mbps: 150,
    };

    /// Two parallel OC192 circuits between nodes 0 and 1.
    fn pair() -> Network {
        Network::new(
            Graph::new(2, vec![(0, 1), (0, 1)], vec![700.0, 700.0]),
            vec![OC192, OC192],
        )
    }

    #[test]
    fn requests_book_whole_granules() {
        assert_eq!(OC192.booked(5000), 5100);
        assert_eq!(OC192.booked(150), 150);
        assert_eq!(OC192.bookable(9599), 9450);
        assert_eq!(OC192.bookable(-10), 0);
    }

    #[test]
    fn the_four_queries_on_two_circuits() {
        let mut net = pair();
        net.add_bookings(&[(0, 0, 100, 9600), (1, 0, 50, 4800)], false);
        assert_eq!(net.fixed_slot(0, 1, 4800, 0, 10), Some(vec![(1, 0, 1)]));
        assert_eq!(net.fixed_slot(0, 1, 4801, 0, 10), None);
        assert_eq!(
            net.max_bandwidth(0, 1, 0, 10),
            (4800, Some(vec![(1, 0, 1)]))
        );
        assert_eq!(net.earliest(0, 1, 9600, 10, 0), Some(50));
        assert_eq!(net.slots(0, 1, 9600, 10, 0, 200), vec![50, 200]);
        assert_eq!(net.earliest(0, 1, 9601, 10, 0), None);
    }

    #[test]
    fn clones_share_timelines_until_changed() {
        let original = pair();
        let mut changed = original.clone();
        changed.add_bookings(&[(0, 0, 10, 150)], false);
        assert_eq!(original.timeline(0).free_at(5), 9600);
        assert_eq!(changed.timeline(0).free_at(5), 9450);
        assert!(Arc::ptr_eq(&original.timelines[1], &changed.timelines[1]));
        changed.add_bookings(&[(0, 0, 10, 150)], true);
        assert_eq!(changed.timeline(0).free_at(5), 9600);
    }
}
