//! Deciding, segment by segment, which are lost on the line.

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

use crate::config::Loss;

/// Why a segment was lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lost {
    Random,
    Burst,
}

pub struct LossState {
    model: Loss,
    bad: bool,
    rng: Xoshiro256PlusPlus,
}

impl LossState {
    pub fn new(model: Loss, seed: u64) -> Self {
        Self {
            model,
            bad: false,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        }
    }

    /// Whether the next segment is lost, and why.
    pub fn decide(&mut self) -> Option<Lost> {
        match self.model {
            Loss::None => None,
            Loss::Random { probability } => (probability > 0.0
                && self.rng.random::<f64>() < probability)
                .then_some(Lost::Random),
            Loss::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
            } => {
                let (loss, leave) = if self.bad {
                    (loss_bad, r)
                } else {
                    (loss_good, p)
                };
                let lost = self.rng.random::<f64>() < loss;
                if self.rng.random::<f64>() < leave {
                    self.bad = !self.bad;
                }
                lost.then_some(Lost::Burst)
            }
        }
    }

    /// Whether the model can lose anything (so segments need looking at).
    pub fn is_lossless(&self) -> bool {
        match self.model {
            Loss::None => true,
            Loss::Random { probability } => probability == 0.0,
            Loss::GilbertElliott {
                loss_good,
                loss_bad,
                ..
            } => loss_good == 0.0 && loss_bad == 0.0,
        }
    }

    pub fn set_model(&mut self, model: Loss) {
        self.model = model;
        self.bad = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(model: Loss, n: usize, seed: u64) -> (f64, Vec<usize>) {
        let mut state = LossState::new(model, seed);
        let mut lost = 0usize;
        let mut bursts = Vec::new();
        let mut run = 0usize;
        for _ in 0..n {
            if state.decide().is_some() {
                lost += 1;
                run += 1;
            } else if run > 0 {
                bursts.push(run);
                run = 0;
            }
        }
        (lost as f64 / n as f64, bursts)
    }

    #[test]
    fn random_loss_holds_its_rate() {
        let n = 2_000_000;
        let p = 1e-3;
        let (measured, _) = rate(Loss::Random { probability: p }, n, 7);
        // Binomial: 5 standard deviations.
        let sigma = (p * (1.0 - p) / n as f64).sqrt();
        assert!((measured - p).abs() < 5.0 * sigma, "{measured}");
    }

    #[test]
    fn gilbert_elliott_has_its_stationary_rate_and_burst_length() {
        let (p, r) = (0.001, 0.25);
        let model = Loss::GilbertElliott {
            p,
            r,
            loss_good: 0.0,
            loss_bad: 1.0,
        };
        let (measured, bursts) = rate(model, 4_000_000, 11);
        let expected = p / (p + r); // time in Bad
        assert!(
            (measured - expected).abs() / expected < 0.05,
            "{measured} vs {expected}"
        );
        let mean_burst = bursts.iter().sum::<usize>() as f64 / bursts.len() as f64;
        assert!((mean_burst - 1.0 / r).abs() < 0.2, "{mean_burst}");
    }

    #[test]
    fn no_model_loses_nothing_and_a_seed_repeats() {
        assert!(rate(Loss::None, 1000, 1).1.is_empty());
        let model = Loss::Random { probability: 0.1 };
        assert_eq!(rate(model.clone(), 1000, 3), rate(model, 1000, 3));
    }
}
