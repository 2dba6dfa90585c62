//! Queueing jitter of a channel carried over a packet-switched core (a VLAN across Ethernet
//! switches, an MPLS tunnel across IP routers), which a SONET circuit does not have: its
//! time slots are reserved, so a frame waits for nothing but its own serialization.
//!
//! Each hop adds a queueing delay drawn from an exponential distribution, the sojourn
//! time of a first-come first-served M/M/1 queue (L. Kleinrock, Queueing Systems vol. 1,
//! 1975, ch. 3 and 5), hops taken as independent (Kleinrock's independence approximation,
//! Queueing Systems vol. 2, 1976, ch. 5). A link
//! keeps its order, so a frame never overtakes the one before it.

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Jitter {
    /// Queueing hops along the way, one way.
    pub hops: u32,
    /// Mean queueing delay at each hop.
    pub mean_ns_per_hop: u64,
}

impl Jitter {
    pub fn check(&self) -> Result<(), String> {
        if self.hops == 0 || self.hops > 64 {
            return Err(format!("jitter.hops = {} is not within 1..64", self.hops));
        }
        if self.mean_ns_per_hop > 1_000_000_000 {
            return Err("jitter.mean_ns_per_hop is above 1 s".into());
        }
        Ok(())
    }

    /// The mean extra one-way delay.
    pub fn mean_ns(&self) -> u64 {
        u64::from(self.hops) * self.mean_ns_per_hop
    }
}

/// Draws each frame's queueing delay.
pub struct JitterState {
    rng: Xoshiro256PlusPlus,
}

impl JitterState {
    pub fn new(seed: u64) -> Self {
        Self {
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        }
    }

    /// One frame's queueing delay over all hops, in picoseconds.
    pub fn draw_ps(&mut self, jitter: &Jitter) -> u64 {
        let mean_ps = jitter.mean_ns_per_hop as f64 * 1e3;
        let mut total = 0.0;
        for _ in 0..jitter.hops {
            // 1 - U is in (0, 1]: the logarithm is finite.
            let u: f64 = 1.0 - self.rng.random::<f64>();
            total -= mean_ps * u.ln();
        }
        total as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sum_over_hops_has_the_erlang_mean_and_spread() {
        let jitter = Jitter {
            hops: 4,
            mean_ns_per_hop: 100_000,
        };
        let mut state = JitterState::new(5);
        let n = 200_000u32;
        let draws: Vec<f64> = (0..n)
            .map(|_| state.draw_ps(&jitter) as f64 / 1e3)
            .collect();
        let mean = draws.iter().sum::<f64>() / f64::from(n);
        let var = draws.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / f64::from(n);
        // Erlang(4, 100 us): mean 400 us, standard deviation 200 us.
        assert!((mean - 400_000.0).abs() < 2_000.0, "{mean}");
        assert!((var.sqrt() - 200_000.0).abs() < 2_000.0, "{}", var.sqrt());
        assert_eq!(jitter.mean_ns(), 400_000);
    }

    #[test]
    fn hops_are_bounded() {
        let bad = Jitter {
            hops: 0,
            mean_ns_per_hop: 1,
        };
        assert!(bad.check().unwrap_err().contains("hops"));
    }
}
