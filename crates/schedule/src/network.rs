//! A topology's links with their free bandwidth over time, and the four USN queries.
//!
//! A request books whole granules on every link it crosses (`booked`), so the same
//! request may take more on a SONET link (150 Mb/s granules) than on an Ethernet one.
//! Times are integer microseconds; nothing here reads a clock.

use std::sync::Arc;

use std::collections::BTreeMap;

use crate::graph::{Graph, Step, Wanted};
use crate::intervals::{NEG_INF, intersect};
use crate::timeline::FreeTimeline;

/// Where a request may travel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Way {
    /// Any path from `src` to `dst`. A reservation between ports enters over `first` and
    /// leaves over `last` (the links behind its ports), which are then part of the path;
    /// `src` and `dst` are the nodes those links lead into, and may then be one node.
    Between {
        src: usize,
        dst: usize,
        first: Option<usize>,
        last: Option<usize>,
    },
    /// Exactly these links, walked in order from `start`. A loop-back may cross a link
    /// more than once; each crossing takes its share of the link.
    Along { start: usize, links: Vec<usize> },
}

impl Way {
    /// Any path between two nodes.
    pub fn between(src: usize, dst: usize) -> Self {
        Self::Between {
            src,
            dst,
            first: None,
            last: None,
        }
    }

    /// The links every path of this way crosses, with how many times.
    fn fixed_links(&self) -> Vec<(usize, i64)> {
        let mut times: BTreeMap<usize, i64> = BTreeMap::new();
        let fixed: Vec<usize> = match self {
            Self::Between { first, last, .. } => first.iter().chain(last).copied().collect(),
            Self::Along { links, .. } => links.clone(),
        };
        for link in fixed {
            *times.entry(link).or_default() += 1;
        }
        times.into_iter().collect()
    }

    /// The two nodes a path must be searched between, if any.
    fn search(&self) -> Option<(usize, usize)> {
        match *self {
            Self::Between { src, dst, .. } if src != dst => Some((src, dst)),
            _ => None,
        }
    }
}

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

    /// What `times` crossings of a request of `mbps` take on this link, or None when that
    /// is more than the link has even idle (refused without reading its timeline).
    pub fn carried(self, mbps: i64, times: i64) -> Option<i64> {
        let booked = times * self.booked(mbps);
        (booked <= self.capacity_mbps).then_some(booked)
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

    /// Book a request as the control plane admits one: on a path with room from `start`,
    /// else from the earliest start after it, if that is no later than `latest`. The
    /// start and path booked, or None when there is no such start (or `way` could never
    /// carry `need`).
    pub fn admit(
        &mut self,
        way: &Way,
        need: i64,
        duration: i64,
        start: i64,
        latest: i64,
    ) -> Option<(i64, Vec<Step>)> {
        let end = start.saturating_add(duration);
        let (start, steps) = if let Some(steps) = self.fixed_slot(way, need, start, end) {
            (start, steps)
        } else {
            if !self.ever_fits(way, need) {
                return None;
            }
            let start = self.first_window_start(way, need, duration, start, latest)?;
            let steps = self.fixed_slot(way, need, start, start + duration);
            (start, steps.expect("the earliest start was found feasible"))
        };
        let bookings: Vec<_> = steps
            .iter()
            .map(|&(link, _, _)| (link, start, start + duration, need))
            .collect();
        self.add_bookings(&bookings, false);
        Some((start, steps))
    }

    /// Query 1: a path for `need` free throughout `[lo, hi)`: the fewest hops, then the
    /// shortest, of those that `way` allows.
    pub fn fixed_slot(&self, way: &Way, need: i64, lo: i64, hi: i64) -> Option<Vec<Step>> {
        let fixed = way.fixed_links();
        let fits = |link: usize, times: i64| {
            self.rates[link]
                .carried(need, times)
                .is_some_and(|booked| booked <= self.timelines[link].min_free(lo, hi))
        };
        if !fixed.iter().all(|&(link, times)| fits(link, times)) {
            return None;
        }
        let core = match way.search() {
            Some((src, dst)) => {
                let avoided = self.avoided(way);
                Some(
                    self.graph
                        .fewest_hops(src, dst, |link| !avoided(link) && fits(link, 1))?,
                )
            }
            None => None,
        };
        Some(self.steps(way, core))
    }

    /// Query 3: the highest bandwidth `way` has free throughout `[lo, hi)`, and the path
    /// `fixed_slot` gives for it. `(0, None)` when there is none.
    pub fn max_bandwidth(&self, way: &Way, lo: i64, hi: i64) -> (i64, Option<Vec<Step>>) {
        let width = |link: usize, times: i64| {
            let free = self.timelines[link].min_free(lo, hi);
            self.rates[link].bookable(free.div_euclid(times))
        };
        let mut best = way
            .fixed_links()
            .iter()
            .map(|&(link, times)| width(link, times))
            .min()
            .unwrap_or(i64::MAX);
        if let Some((src, dst)) = way.search() {
            let avoided = self.avoided(way);
            let through = |link: usize| if avoided(link) { 0 } else { width(link, 1) };
            best = best.min(self.graph.widest_width(src, dst, through));
        }
        if best <= 0 || best == i64::MAX {
            return (0, None);
        }
        (best, self.fixed_slot(way, best, lo, hi))
    }

    /// Query 4: the starts in `[first, stop)` at which `need` fits for `duration` on `way`.
    pub fn slots(&self, way: &Way, need: i64, duration: i64, first: i64, stop: i64) -> Vec<i64> {
        self.window(way, need, duration, first, stop, Wanted::All).0
    }

    /// The starts in `[first, stop)`: all of them, or (`Wanted::First`) a set that starts
    /// with the first; and when it has none, the links that cut the ends apart throughout
    /// the window (if such a cut is what stops them).
    fn window(
        &self,
        way: &Way,
        need: i64,
        duration: i64,
        first: i64,
        stop: i64,
        wanted: Wanted,
    ) -> (Vec<i64>, Vec<usize>) {
        if stop <= first {
            return (Vec::new(), Vec::new());
        }
        let window_end = stop + duration - 1;
        let push_starts = |link: usize, times: i64, out: &mut Vec<i64>| {
            if let Some(booked) = self.rates[link].carried(need, times) {
                self.timelines[link].push_free_starts(booked, first, window_end, duration, out);
            }
        };
        let mut domain = vec![first, stop];
        for &(link, times) in &way.fixed_links() {
            let mut starts = Vec::new();
            push_starts(link, times, &mut starts);
            domain = intersect(&domain, &starts);
        }
        let Some((src, dst)) = way.search().filter(|_| !domain.is_empty()) else {
            return (domain, Vec::new());
        };
        let avoided = self.avoided(way);
        let whole = domain.len() == 2;
        let mut starts = Vec::new();
        let mut usable = vec![false; self.graph.links()];
        let starts_on = |link: usize, out: &mut Vec<i64>| {
            let before = out.len();
            if avoided(link) {
                return;
            }
            if whole {
                push_starts(link, 1, out);
            } else {
                starts.clear();
                push_starts(link, 1, &mut starts);
                out.extend(intersect(&starts, &domain));
            }
            usable[link] = out.len() > before;
        };
        let found = self
            .graph
            .reachable_starts(src, dst, &domain, starts_on, wanted);
        let cut = if found.is_empty() && wanted == Wanted::First {
            self.graph.cut(src, dst, |link| usable[link])
        } else {
            Vec::new()
        };
        (found, cut)
    }

    /// Query 2: the earliest start at or after `first` at which `need` fits for `duration`.
    ///
    /// None when `way` could never carry `need`, not even on an idle network.
    pub fn earliest(&self, way: &Way, need: i64, duration: i64, first: i64) -> Option<i64> {
        if !self.ever_fits(way, need) {
            return None;
        }
        // Most requests fit when asked: one path search says so, cheaper than a window.
        if self
            .fixed_slot(way, need, first, first.saturating_add(duration))
            .is_some()
        {
            return Some(first);
        }
        self.first_window_start(way, need, duration, first, i64::MAX)
    }

    /// Whether `way` could carry `need` on an idle network.
    fn ever_fits(&self, way: &Way, need: i64) -> bool {
        let fits_when_idle =
            |link: usize, times: i64| self.rates[link].carried(need, times).is_some();
        let fixed = way.fixed_links();
        if !fixed
            .iter()
            .all(|&(link, times)| fits_when_idle(link, times))
        {
            return false;
        }
        let Some((src, dst)) = way.search() else {
            return true;
        };
        let avoided = self.avoided(way);
        let usable = |link: usize| !avoided(link) && fits_when_idle(link, 1);
        self.graph.fewest_hops(src, dst, usable).is_some()
    }

    /// The first start in `[first, latest]`, searched in windows that double, so that an
    /// early answer is found cheaply. When a window fails because some links cut the ends
    /// apart throughout it, nothing can start before one of them opens: the search goes
    /// on from there.
    fn first_window_start(
        &self,
        way: &Way,
        need: i64,
        duration: i64,
        first: i64,
        latest: i64,
    ) -> Option<i64> {
        let avoided = self.avoided(way);
        // After the last change every link is idle, so a start there is feasible.
        let last = latest.min(first.max(self.last_change()));
        let (mut first, mut span) = (first, duration);
        while first <= last {
            let stop = first.saturating_add(span).min(last + 1);
            let (starts, cut) = self.window(way, need, duration, first, stop, Wanted::First);
            if let Some(&start) = starts.first() {
                return Some(start);
            }
            let opens = cut
                .iter()
                .filter(|&&link| !avoided(link))
                .filter_map(|&link| {
                    let booked = self.rates[link].booked(need);
                    self.timelines[link].first_free_start(booked, stop, duration)
                })
                .min();
            first = opens.map_or(stop, |opens| opens.max(stop));
            span = span.saturating_mul(2);
        }
        None
    }

    /// Whether a search must not use a link: one `way` fixes, or one that touches a node
    /// beyond them (so that the whole path stays simple). Costs nothing without ports.
    fn avoided(&self, way: &Way) -> impl Fn(usize) -> bool + use<> {
        let mut fixed = Vec::new();
        let mut beyond = Vec::new();
        if let Way::Between {
            src,
            dst,
            first,
            last,
        } = *way
        {
            for (link, inner) in [(first, src), (last, dst)] {
                if let Some(link) = link {
                    fixed.push(link);
                    beyond.push(self.graph.other_end(link, inner));
                }
            }
        }
        let graph = Arc::clone(&self.graph);
        move |link| {
            if fixed.is_empty() {
                return false;
            }
            let (a, b) = graph.ends(link);
            fixed.contains(&link) || beyond.contains(&a) || beyond.contains(&b)
        }
    }

    /// The whole path: the fixed first link, the path found, the fixed last link; or the walk.
    fn steps(&self, way: &Way, core: Option<Vec<Step>>) -> Vec<Step> {
        match way {
            Way::Between {
                src,
                dst,
                first,
                last,
            } => {
                let mut steps = Vec::new();
                if let Some(link) = *first {
                    steps.push((link, self.graph.other_end(link, *src), *src));
                }
                steps.extend(core.unwrap_or_default());
                if let Some(link) = *last {
                    steps.push((link, *dst, self.graph.other_end(link, *dst)));
                }
                steps
            }
            Way::Along { start, links } => {
                let mut here = *start;
                links
                    .iter()
                    .map(|&link| {
                        let there = self.graph.other_end(link, here);
                        let step = (link, here, there);
                        here = there;
                        step
                    })
                    .collect()
            }
        }
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
    use proptest::prelude::*;

    const TEN: LinkRate = LinkRate {
        capacity_mbps: 10,
        granularity_mbps: 1,
    };

    /// Whether `need` joins node 0 to node 4 throughout `[start, start + duration)`, by a
    /// plain search over the links.
    fn joined(net: &Network, need: i64, start: i64, duration: i64) -> bool {
        let mut reached = vec![0];
        let mut next = 0;
        while next < reached.len() {
            let node = reached[next];
            next += 1;
            for link in 0..net.graph().links() {
                let (a, b) = net.graph().ends(link);
                let other = if a == node {
                    b
                } else if b == node {
                    a
                } else {
                    continue;
                };
                let free = net.timeline(link).min_free(start, start + duration);
                if free >= need && !reached.contains(&other) {
                    reached.push(other);
                }
            }
        }
        reached.contains(&4)
    }

    proptest! {
        #[test]
        fn the_earliest_start_is_the_first_instant_a_path_has_room(
            ends in prop::collection::vec((0usize..5, 0usize..5), 1..9),
            bookings in prop::collection::vec((0usize..9, 0i64..60, 1i64..20, 1i64..8), 0..30),
            need in 1i64..12, d in 1i64..12, first in 0i64..50,
        ) {
            let ends: Vec<_> = ends.into_iter().filter(|(a, b)| a != b).collect();
            prop_assume!(!ends.is_empty());
            let links = ends.len();
            let mut net = Network::new(Graph::new(5, ends, vec![1.0; links]), vec![TEN; links]);
            let bookings: Vec<_> = bookings
                .into_iter()
                .map(|(link, start, length, mbps)| (link % links, start, start + length, mbps))
                .collect();
            net.add_bookings(&bookings, false);
            let expected = (first..200).find(|&t| joined(&net, need, t, d));
            prop_assert_eq!(net.earliest(&Way::between(0, 4), need, d, first), expected);
        }
    }

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
        let way = Way::between(0, 1);
        assert_eq!(net.fixed_slot(&way, 4800, 0, 10), Some(vec![(1, 0, 1)]));
        assert_eq!(net.fixed_slot(&way, 4801, 0, 10), None);
        assert_eq!(
            net.max_bandwidth(&way, 0, 10),
            (4800, Some(vec![(1, 0, 1)]))
        );
        assert_eq!(net.earliest(&way, 9600, 10, 0), Some(50));
        assert_eq!(net.slots(&way, 9600, 10, 0, 200), vec![50, 200]);
        assert_eq!(net.earliest(&way, 9601, 10, 0), None);
    }

    const GIGE: LinkRate = LinkRate {
        capacity_mbps: 1000,
        granularity_mbps: 1,
    };

    /// Host 2 on switch 0, host 3 on switch 1, two circuits between the switches.
    fn hosts() -> Network {
        let graph = Graph::new(
            4,
            vec![(0, 1), (0, 1), (2, 0), (3, 1)],
            vec![700.0, 700.0, 0.0, 0.0],
        );
        Network::new(graph, vec![OC192, OC192, GIGE, GIGE])
    }

    #[test]
    fn ports_with_links_put_those_links_on_the_path() {
        let mut net = hosts();
        let way = Way::Between {
            src: 0,
            dst: 1,
            first: Some(2),
            last: Some(3),
        };
        assert_eq!(
            net.fixed_slot(&way, 900, 0, 10),
            Some(vec![(2, 2, 0), (0, 0, 1), (3, 1, 3)])
        );
        assert_eq!(net.max_bandwidth(&way, 0, 10).0, 1000);
        net.add_bookings(&[(2, 0, 100, 600)], false);
        assert_eq!(net.fixed_slot(&way, 500, 0, 10), None);
        assert_eq!(net.max_bandwidth(&way, 0, 10).0, 400);
        assert_eq!(net.earliest(&way, 500, 10, 0), Some(100));
        assert_eq!(net.slots(&way, 500, 10, 0, 200), vec![100, 200]);
        assert_eq!(net.earliest(&way, 1001, 10, 0), None);
    }

    #[test]
    fn a_search_never_passes_through_the_node_beyond_a_port() {
        // A request enters switch 0 from node 2 over link 0. Switch 0 could reach switch 1
        // only by going back through node 2 (links 1 and 2), which would visit it twice.
        let graph = Graph::new(3, vec![(2, 0), (0, 2), (2, 1)], vec![1.0, 1.0, 1.0]);
        let net = Network::new(graph, vec![OC192, OC192, OC192]);
        let way = Way::Between {
            src: 0,
            dst: 1,
            first: Some(0),
            last: None,
        };
        assert_eq!(net.fixed_slot(&way, 150, 0, 10), None);
        assert_eq!(net.max_bandwidth(&way, 0, 10), (0, None));
        assert!(net.slots(&way, 150, 10, 0, 100).is_empty());
        assert_eq!(net.earliest(&way, 150, 10, 0), None);
        // Without the port, switch 0 reaches switch 1 through node 2.
        assert_eq!(
            net.fixed_slot(&Way::between(0, 1), 150, 0, 10),
            Some(vec![(0, 0, 2), (2, 2, 1)])
        );
    }

    #[test]
    fn a_loop_that_crosses_a_link_twice_takes_it_twice() {
        let mut net = pair();
        let twice = Way::Along {
            start: 0,
            links: vec![0, 1, 0, 1],
        };
        assert_eq!(
            net.fixed_slot(&twice, 4800, 0, 10),
            Some(vec![(0, 0, 1), (1, 1, 0), (0, 0, 1), (1, 1, 0)])
        );
        assert_eq!(net.max_bandwidth(&twice, 0, 10).0, 4800);
        net.add_bookings(&[(0, 0, 100, 150)], false);
        assert_eq!(net.fixed_slot(&twice, 4800, 0, 10), None);
        assert_eq!(net.max_bandwidth(&twice, 0, 10).0, 4650);
        assert_eq!(net.earliest(&twice, 4800, 10, 0), Some(100));
        assert_eq!(net.earliest(&twice, 4801, 10, 0), None);
    }

    #[test]
    fn requests_are_admitted_when_asked_or_at_their_earliest_start() {
        let mut net = pair();
        let way = Way::between(0, 1);
        let never = i64::MAX / 4;
        assert_eq!(
            net.admit(&way, 9600, 10, 0, never),
            Some((0, vec![(0, 0, 1)]))
        );
        assert_eq!(
            net.admit(&way, 4800, 10, 5, never),
            Some((5, vec![(1, 0, 1)]))
        );
        assert_eq!(
            net.admit(&way, 4800, 10, 5, never),
            Some((5, vec![(1, 0, 1)]))
        );
        // Both circuits are full until 10 (the first) and 15 (the second).
        assert_eq!(
            net.admit(&way, 9600, 10, 0, never),
            Some((10, vec![(0, 0, 1)]))
        );
        assert_eq!(net.admit(&way, 9600, 10, 0, 14), None);
        assert_eq!(
            net.admit(&way, 9600, 10, 0, 15),
            Some((15, vec![(1, 0, 1)]))
        );
        assert_eq!(net.admit(&way, 9601, 10, 0, never), None);
        assert_eq!(net.timeline(0).free_at(19), 0);
        assert_eq!(net.timeline(1).free_at(24), 0);
        assert_eq!(net.timeline(1).free_at(25), 9600);
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
