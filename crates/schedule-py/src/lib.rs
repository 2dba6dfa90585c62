//! `longhaul._schedule`: the scheduling core for Python.
//!
//! Thin wrappers: they check indices (a bad one is a `ValueError`, never a panic) and
//! release the GIL while a query runs, so the control plane's threads can answer other
//! requests meanwhile. Names, datetimes and validation live in `longhaul.schedule`.

// PyO3 extracts Python lists into owned vectors; borrowing them is not an option.
#![allow(clippy::needless_pass_by_value)]
// The query methods mirror the Python signatures, py token included.
#![allow(clippy::too_many_arguments)]

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use longhaul_schedule::{FreeTimeline, Graph, LinkRate, Network, Step, Way, intervals};

type Booking = (usize, i64, i64, i64);
/// What admitting a request booked: its start and path, or None if it never fits.
type Admitted = Option<(i64, Vec<Step>)>;

create_exception!(
    _schedule,
    RangeError,
    PyValueError,
    "A number the scheduling core does not hold: an instant outside [NEG_INF, POS_INF], \
     a duration outside (0, POS_INF], a bandwidth outside (0, MAX_MBPS]. Checked before \
     any arithmetic, so a number near 2**63 is refused instead of wrapping."
);

/// The largest bandwidth the core takes (an exabit per second, in Mb/s): sums of a
/// million such bookings, and rounding up to a granularity, stay far inside `i64`.
const MAX_MBPS: i64 = 1 << 40;

#[pymodule]
mod _schedule {
    use super::intervals;
    #[pymodule_export]
    use super::{PyFreeTimeline, PyNetwork, PyWay};
    use pyo3::prelude::*;

    use super::{flat, instant};

    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        m.add("NEG_INF", intervals::NEG_INF)?;
        m.add("POS_INF", intervals::POS_INF)?;
        m.add("MAX_MBPS", super::MAX_MBPS)?;
        m.add("RangeError", m.py().get_type::<super::RangeError>())?;
        Ok(())
    }

    /// a ⊕ b of two flat interval sets.
    #[pyfunction]
    fn union(a: Vec<i64>, b: Vec<i64>) -> PyResult<Vec<i64>> {
        Ok(intervals::union(flat(&a)?, flat(&b)?))
    }

    /// a ⊗ b of two flat interval sets.
    #[pyfunction]
    fn intersect(a: Vec<i64>, b: Vec<i64>) -> PyResult<Vec<i64>> {
        Ok(intervals::intersect(flat(&a)?, flat(&b)?))
    }

    #[pyfunction]
    fn complement(a: Vec<i64>) -> PyResult<Vec<i64>> {
        Ok(intervals::complement(flat(&a)?))
    }

    #[pyfunction]
    fn difference(a: Vec<i64>, b: Vec<i64>) -> PyResult<Vec<i64>> {
        Ok(intervals::difference(flat(&a)?, flat(&b)?))
    }

    /// The starts t with [t, t + duration) inside a.
    #[pyfunction]
    fn erode(a: Vec<i64>, duration: i64) -> PyResult<Vec<i64>> {
        super::length(duration)?;
        Ok(intervals::erode(flat(&a)?, duration))
    }

    #[pyfunction]
    fn contains(a: Vec<i64>, t: i64) -> PyResult<bool> {
        instant(t, "t")?;
        Ok(intervals::contains(flat(&a)?, t))
    }

    /// The flat set covering (lo, hi) pairs given in any order.
    #[pyfunction]
    fn normalize(pairs: Vec<(i64, i64)>) -> PyResult<Vec<i64>> {
        for &(lo, hi) in &pairs {
            instant(lo, "lo")?;
            instant(hi, "hi")?;
        }
        Ok(intervals::normalize(pairs))
    }
}

/// The free bandwidth of one link over time.
#[pyclass(name = "FreeTimeline", module = "longhaul._schedule", frozen)]
struct PyFreeTimeline(FreeTimeline);

#[pymethods]
impl PyFreeTimeline {
    /// From (start, end, mbps) loads, each taking mbps during [start, end).
    #[staticmethod]
    fn build(capacity_mbps: i64, loads: Vec<(i64, i64, i64)>) -> PyResult<Self> {
        bandwidth(capacity_mbps, "capacity_mbps")?;
        for &(start, end, mbps) in &loads {
            ordered(start, end)?;
            bandwidth(mbps, "mbps")?;
        }
        Ok(Self(FreeTimeline::build(capacity_mbps, &loads)))
    }

    /// A new timeline with mbps more taken during [start, end) (less, if negative).
    fn with_load(&self, start: i64, end: i64, mbps: i64) -> PyResult<Self> {
        ordered(start, end)?;
        bandwidth(mbps.saturating_abs(), "mbps")?;
        let mut timeline = self.0.clone();
        timeline.add_load(start, end, mbps);
        Ok(Self(timeline))
    }

    #[getter]
    fn capacity_mbps(&self) -> i64 {
        self.0.capacity_mbps()
    }

    #[getter]
    fn times(&self) -> Vec<i64> {
        self.0.times()
    }

    #[getter]
    fn free(&self) -> Vec<i64> {
        self.0.free()
    }

    fn free_at(&self, t: i64) -> PyResult<i64> {
        instant(t, "t")?;
        Ok(self.0.free_at(t))
    }

    fn min_free(&self, start: i64, end: i64) -> PyResult<i64> {
        ordered(start, end)?;
        Ok(self.0.min_free(start, end))
    }

    fn free_starts(&self, need_mbps: i64, lo: i64, hi: i64, duration: i64) -> PyResult<Vec<i64>> {
        ordered(lo, hi)?;
        length(duration)?;
        within(need_mbps, 0, MAX_MBPS, "need_mbps")?;
        Ok(self.0.free_starts(need_mbps, lo, hi, duration))
    }

    fn steps(&self, start: i64, end: i64) -> PyResult<Vec<(i64, i64)>> {
        ordered(start, end)?;
        Ok(self.0.steps(start, end))
    }
}

/// Where a request may travel: `Way.between(src, dst, first, last)` or `Way.along(start, links)`.
#[pyclass(name = "Way", module = "longhaul._schedule", frozen, eq)]
#[derive(PartialEq)]
struct PyWay(Way);

#[pymethods]
impl PyWay {
    /// Any path from node `src` to node `dst`, entering over link `first` and leaving over
    /// link `last` when given (src and dst are then the nodes those links lead into).
    #[staticmethod]
    #[pyo3(signature = (src, dst, first = None, last = None))]
    fn between(src: usize, dst: usize, first: Option<usize>, last: Option<usize>) -> Self {
        Self(Way::Between {
            src,
            dst,
            first,
            last,
        })
    }

    /// Exactly `links`, walked in order from node `start`.
    #[staticmethod]
    fn along(start: usize, links: Vec<usize>) -> Self {
        Self(Way::Along { start, links })
    }

    fn __repr__(&self) -> String {
        format!("{:?}", self.0)
    }
}

/// Links with rates and free-bandwidth timelines; answers the four queries in microseconds.
#[pyclass(name = "Network", module = "longhaul._schedule", frozen)]
struct PyNetwork(Network);

#[pymethods]
impl PyNetwork {
    #[new]
    fn new(
        nodes: usize,
        ends: Vec<(usize, usize)>,
        lengths_miles: Vec<f64>,
        capacities_mbps: Vec<i64>,
        granularities_mbps: Vec<i64>,
    ) -> PyResult<Self> {
        let links = ends.len();
        if [
            lengths_miles.len(),
            capacities_mbps.len(),
            granularities_mbps.len(),
        ] != [links; 3]
        {
            return Err(PyValueError::new_err(
                "one length, capacity and granularity per link",
            ));
        }
        if let Some(link) = ends.iter().position(|&(a, b)| a >= nodes || b >= nodes) {
            return Err(PyValueError::new_err(format!(
                "link {link} names a node out of range"
            )));
        }
        for &granularity in &granularities_mbps {
            bandwidth(granularity, "granularity_mbps")?;
        }
        for &capacity in &capacities_mbps {
            bandwidth(capacity, "capacity_mbps")?;
        }
        let rates = capacities_mbps
            .into_iter()
            .zip(granularities_mbps)
            .map(|(capacity_mbps, granularity_mbps)| LinkRate {
                capacity_mbps,
                granularity_mbps,
            })
            .collect();
        Ok(Self(Network::new(
            Graph::new(nodes, ends, lengths_miles),
            rates,
        )))
    }

    /// A new network with (link, start, end, mbps) bookings added (released, with release=True).
    #[pyo3(signature = (bookings, release = false))]
    fn with_bookings(
        &self,
        py: Python<'_>,
        bookings: Vec<Booking>,
        release: bool,
    ) -> PyResult<Self> {
        for &(link, start, end, mbps) in &bookings {
            self.link(link)?;
            ordered(start, end)?;
            bandwidth(mbps, "mbps")?;
        }
        let mut network = self.0.clone();
        py.detach(|| network.add_bookings(&bookings, release));
        Ok(Self(network))
    }

    /// A new network with each (way, need, duration, start, latest) request booked in turn
    /// as the control plane admits one: from its start if a path has room then, else from
    /// its earliest start after it if that is no later than latest. Per request, (start,
    /// steps) booked, or None when there is no such start.
    fn with_admitted(
        &self,
        py: Python<'_>,
        requests: Vec<(PyRef<'_, PyWay>, i64, i64, i64, i64)>,
    ) -> PyResult<(Self, Vec<Admitted>)> {
        let mut asked = Vec::with_capacity(requests.len());
        for (way, need, duration, start, latest) in &requests {
            self.check(way)?;
            bandwidth(*need, "need")?;
            length(*duration)?;
            instant(*start, "start")?;
            instant(*latest, "latest")?;
            instant(start.saturating_add(*duration), "start + duration")?;
            asked.push((way.0.clone(), *need, *duration, *start, *latest));
        }
        let mut network = self.0.clone();
        let admitted = py.detach(|| {
            asked
                .iter()
                .map(|(way, need, duration, start, latest)| {
                    network.admit(way, *need, *duration, *start, *latest)
                })
                .collect()
        });
        Ok((Self(network), admitted))
    }

    fn fixed_slot(
        &self,
        py: Python<'_>,
        way: &PyWay,
        need: i64,
        lo: i64,
        hi: i64,
    ) -> PyResult<Option<Vec<Step>>> {
        self.check(way)?;
        bandwidth(need, "need")?;
        ordered(lo, hi)?;
        Ok(py.detach(|| self.0.fixed_slot(&way.0, need, lo, hi)))
    }

    fn max_bandwidth(
        &self,
        py: Python<'_>,
        way: &PyWay,
        lo: i64,
        hi: i64,
    ) -> PyResult<(i64, Option<Vec<Step>>)> {
        self.check(way)?;
        ordered(lo, hi)?;
        Ok(py.detach(|| self.0.max_bandwidth(&way.0, lo, hi)))
    }

    fn slots(
        &self,
        py: Python<'_>,
        way: &PyWay,
        need: i64,
        duration: i64,
        first: i64,
        stop: i64,
    ) -> PyResult<Vec<i64>> {
        self.check(way)?;
        bandwidth(need, "need")?;
        length(duration)?;
        instant(first, "first")?;
        instant(stop, "stop")?;
        Ok(py.detach(|| self.0.slots(&way.0, need, duration, first, stop)))
    }

    fn earliest(
        &self,
        py: Python<'_>,
        way: &PyWay,
        need: i64,
        duration: i64,
        first: i64,
    ) -> PyResult<Option<i64>> {
        self.check(way)?;
        bandwidth(need, "need")?;
        length(duration)?;
        instant(first, "first")?;
        Ok(py.detach(|| self.0.earliest(&way.0, need, duration, first)))
    }

    fn timeline(&self, link: usize) -> PyResult<PyFreeTimeline> {
        self.link(link)?;
        Ok(PyFreeTimeline(self.0.timeline(link).clone()))
    }

    fn min_free(&self, link: usize, lo: i64, hi: i64) -> PyResult<i64> {
        self.link(link)?;
        ordered(lo, hi)?;
        Ok(self.0.timeline(link).min_free(lo, hi))
    }

    fn steps(&self, link: usize, lo: i64, hi: i64) -> PyResult<Vec<(i64, i64)>> {
        self.link(link)?;
        ordered(lo, hi)?;
        Ok(self.0.timeline(link).steps(lo, hi))
    }

    fn last_change(&self) -> i64 {
        self.0.last_change()
    }
}

impl PyNetwork {
    fn link(&self, link: usize) -> PyResult<()> {
        if link < self.0.graph().links() {
            Ok(())
        } else {
            Err(PyValueError::new_err(format!("no link {link}")))
        }
    }

    fn node(&self, node: usize) -> PyResult<()> {
        if node < self.0.graph().nodes() {
            Ok(())
        } else {
            Err(PyValueError::new_err(format!("no node {node}")))
        }
    }

    /// A way names nodes and links that exist, and a walk continues from link to link.
    fn check(&self, way: &PyWay) -> PyResult<()> {
        match &way.0 {
            Way::Between {
                src,
                dst,
                first,
                last,
            } => {
                self.node(*src)?;
                self.node(*dst)?;
                for (link, node) in [(first, src), (last, dst)] {
                    if let Some(link) = *link {
                        self.link(link)?;
                        let (a, b) = self.0.graph().ends(link);
                        if *node != a && *node != b {
                            return Err(PyValueError::new_err(format!(
                                "link {link} does not touch node {node}"
                            )));
                        }
                    }
                }
                if first.is_some() && first == last {
                    return Err(PyValueError::new_err("first and last are the same link"));
                }
                if src == dst && first.is_none() && last.is_none() {
                    return Err(PyValueError::new_err("src and dst are the same node"));
                }
            }
            Way::Along { start, links } => {
                self.node(*start)?;
                if links.is_empty() {
                    return Err(PyValueError::new_err("a walk needs at least one link"));
                }
                let mut here = *start;
                for &link in links {
                    self.link(link)?;
                    let (a, b) = self.0.graph().ends(link);
                    if here != a && here != b {
                        return Err(PyValueError::new_err(format!(
                            "link {link} does not continue from node {here}"
                        )));
                    }
                    here = if here == a { b } else { a };
                }
            }
        }
        Ok(())
    }
}

fn ordered(start: i64, end: i64) -> PyResult<()> {
    instant(start, "start")?;
    instant(end, "end")?;
    if start < end {
        Ok(())
    } else {
        Err(PyValueError::new_err(format!(
            "empty span [{start}, {end})"
        )))
    }
}

fn instant(t: i64, name: &str) -> PyResult<()> {
    within(t, intervals::NEG_INF, intervals::POS_INF, name)
}

/// A flat interval set whose every bound is an instant the core holds.
fn flat(bounds: &[i64]) -> PyResult<&[i64]> {
    for &t in bounds {
        instant(t, "a bound")?;
    }
    Ok(bounds)
}

fn length(us: i64) -> PyResult<()> {
    within(us, 1, intervals::POS_INF, "duration")
}

fn bandwidth(mbps: i64, name: &str) -> PyResult<()> {
    within(mbps, 1, MAX_MBPS, name)
}

fn within(value: i64, least: i64, most: i64, name: &str) -> PyResult<()> {
    if (least..=most).contains(&value) {
        Ok(())
    } else {
        Err(RangeError::new_err(format!(
            "{name} must lie in [{least}, {most}], got {value}"
        )))
    }
}
