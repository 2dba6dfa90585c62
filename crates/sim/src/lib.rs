//! longhaul-sim: the packet-level discrete-event simulator of longhaul.
//!
//! The core (`event`, `engine`) is a heap of (time, sequence) events and a table of nodes
//! addressed by id; it knows nothing of what nodes are. The models are nodes: `link`
//! (FIFO, rate, delay, queue, loss, cross traffic), `credit` (lossless, credit-based flow
//! control with back-pressure) and `host` (an interface with a rate
//! and bus ceiling, and transport endpoints behind the `transport` trait). TCP itself
//! (`tcp`) and its congestion controllers (`cc`) are sans-IO state machines that take
//! (now, packet) and return packets and deadlines. `scenario` and `presets` turn JSON into a resolved
//! configuration; `run` builds the testbed, runs it and reports like iperf3; `bench`
//! measures the simulator's own speed. Time is integer nanoseconds throughout, and a run
//! is a function of its scenario and seed alone.

pub mod bench;
pub mod cc;
pub mod credit;
pub mod engine;
pub mod event;
pub mod host;
pub mod hurricane;
pub mod ib;
pub mod link;
pub mod network;
pub mod packet;
pub mod presets;
pub mod rdma;
pub mod run;
pub mod scenario;
pub mod tcp;
pub mod transport;
