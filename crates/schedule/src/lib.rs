//! The bandwidth-scheduling core of longhaul: interval sets, per-link free bandwidth over
//! time, and the four path-computation queries of the `UltraScience` Net control plane
//! (a fixed slot, the earliest start, the highest bandwidth, all slots).
//!
//! Pure functions on values: no clock, no I/O. The Python package `longhaul.schedule`
//! wraps this crate (through `longhaul-schedule-py`) and keeps the user-facing API.

pub mod graph;
pub mod intervals;
pub mod network;
pub mod timeline;

pub use graph::{Graph, Step};
pub use network::{LinkRate, Network, Way};
pub use timeline::FreeTimeline;
