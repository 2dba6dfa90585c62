//! The only fitted constants of the RDMA models, derived in one place: each adapter's own
//! time per message (`Interconnect::adapter_ns`) from the study's short-message
//! latency at the user level, and each MPI library's own time per message
//! (`MpiLibrary::overhead_ns`) from its short-message MPI latency (Rashti and Afsahi,
//! CAC 2007, §5 and Fig. 1; §6.1 and Fig. 3). Every other figure the validation compares
//! is then a prediction. Both enter a ping-pong additively, so one run of the model with
//! the constant at zero gives the value: published − modelled, rounded to 10 ns.

use serde::Serialize;

use super::interconnect::{ALL, Interconnect, MpiLibrary};
use super::micro::{Setup, pingpong};

/// The size of the "short message" of the study's latency figures (not stated there):
/// one byte.
pub const SHORT_MESSAGE_BYTES: u64 = 1;

/// Published short-message latencies, µs: (interconnect, user level, MPI).
pub const PUBLISHED_LATENCY_US: [(&str, f64, f64); 4] = [
    ("iwarp", 9.78, 11.7),
    ("ib", 4.53, 4.8),
    ("mxom", 3.15, 3.3),
    ("mxoe", 3.45, 3.6),
];

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Fitted {
    pub interconnect: &'static str,
    pub published_user_us: f64,
    pub published_mpi_us: f64,
    pub adapter_ns: u64,
    pub mpi_overhead_ns: u64,
}

/// A fitted time, which must come out positive: a negative one means the rest of the
/// model already takes longer than the study measured.
fn round_10(ns: f64, what: &str) -> u64 {
    assert!(
        ns > 0.0,
        "{what}: the model without it is already {:.0} ns too slow",
        -ns
    );
    ((ns / 10.0).round() * 10.0) as u64
}

fn latency_ns(setup: &Setup) -> f64 {
    pingpong(setup, SHORT_MESSAGE_BYTES).latency_us * 1e3
}

/// Fit one interconnect and its library, starting from its preset.
pub fn fit(ic: Interconnect) -> Fitted {
    let (_, user_us, mpi_us) = PUBLISHED_LATENCY_US
        .into_iter()
        .find(|(name, _, _)| *name == ic.name)
        .expect("every interconnect has published latencies");
    let bare = Interconnect {
        adapter_ns: 0,
        ..ic
    };
    let adapter_ns = round_10(user_us * 1e3 - latency_ns(&Setup::user(bare)), "adapter_ns");
    let without = Setup {
        mpi: Some(MpiLibrary {
            overhead_ns: 0,
            ..ic.mpi()
        }),
        ..Setup::user(Interconnect { adapter_ns, ..ic })
    };
    let mpi_overhead_ns = round_10(mpi_us * 1e3 - latency_ns(&without), "MPI overhead_ns");
    Fitted {
        interconnect: ic.name,
        published_user_us: user_us,
        published_mpi_us: mpi_us,
        adapter_ns,
        mpi_overhead_ns,
    }
}

pub fn fit_all() -> Vec<Fitted> {
    ALL.into_iter().map(fit).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The presets hold the fitted values: change a model constant and this says which
    /// fitted constants to update (from `longhaul-sim rdma fit`).
    #[test]
    fn presets_hold_the_fitted_values() {
        for f in fit_all() {
            let ic = Interconnect::by_name(f.interconnect).unwrap();
            assert_eq!(
                ic.adapter_ns, f.adapter_ns,
                "{}: adapter_ns",
                f.interconnect
            );
            assert_eq!(
                ic.mpi().overhead_ns,
                f.mpi_overhead_ns,
                "{}: MPI overhead_ns",
                f.interconnect
            );
        }
    }
}
