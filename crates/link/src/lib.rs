//! longhaul-link: the one model of a wide-area link, shared by the emulator
//! (`longhaul-wan`, against real time) and the simulator (`longhaul-sim`, in virtual
//! time), so an emulated and a simulated circuit cannot disagree about what a link does.
//!
//! Sans-IO: a `Direction` takes frames and instants and gives back frames and instants.
//! What it models: serialization at the layer's rate with its framing (`layer`), the
//! propagation delay, a byte-bounded drop-tail queue, loss (`loss`), queueing jitter of a
//! packet-switched core (`jitter`), synthetic cross-traffic (`cross`), reordering and
//! duplication for fault tests, a release rate that is never exceeded, and the counters
//! that say how faithfully it was run (`health`).

pub mod config;
pub mod cross;
pub mod direction;
pub mod health;
pub mod jitter;
pub mod layer;
pub mod loss;

pub use config::{DirectionConfig, Faults, MAX_FRAME_WIRE_BYTES};
pub use cross::CrossTraffic;
pub use direction::{
    Counters, Direction, DirectionStats, Fate, Offer, PACING_TOLERANCE_NS, Peaks, RATE_WINDOW_NS,
    STALL_NS, Shape, Slot, kept_runs,
};
pub use health::{LATENESS_BUCKETS, Lateness, RateWindow};
pub use jitter::Jitter;
pub use layer::Layer;
pub use loss::{Cause, GilbertElliott, Invalid, Loss, LossState};

pub(crate) const PS_PER_NS: u64 = 1_000;
pub(crate) const PS_PER_S: u64 = 1_000_000_000_000;
