//! Loss on the line, decided segment by segment after the segment was sent (a lost segment
//! has still used the line): independent random loss, two-state Gilbert-Elliott burst
//! loss, or both.

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};

/// Loss on the line. `{"random": 1e-5}`, `{"burst": {"p_good_to_bad": 1e-4,
/// "p_bad_to_good": 0.3}}`, or both.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Loss {
    /// Each segment is lost with this probability, independently.
    #[serde(default)]
    pub random: f64,
    #[serde(default)]
    pub burst: Option<GilbertElliott>,
}

/// Two states, Good and Bad, each with its own loss probability; after each segment the
/// state changes with `p_good_to_bad` or `p_bad_to_good` (E. N. Gilbert, "Capacity of a
/// burst-noise channel", Bell Syst. Tech. J. 39, 1960; E. O. Elliott, 1963). The mean run
/// of the Bad state is 1 / `p_bad_to_good` segments; the state holds `p_good_to_bad` /
/// (`p_good_to_bad` + `p_bad_to_good`) of the time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GilbertElliott {
    pub p_good_to_bad: f64,
    pub p_bad_to_good: f64,
    #[serde(default)]
    pub loss_good: f64,
    #[serde(default = "one")]
    pub loss_bad: f64,
}

fn one() -> f64 {
    1.0
}

impl Loss {
    pub const NONE: Loss = Loss {
        random: 0.0,
        burst: None,
    };

    pub fn random(probability: f64) -> Loss {
        Loss {
            random: probability,
            burst: None,
        }
    }

    pub fn is_lossless(&self) -> bool {
        self.random == 0.0
            && self
                .burst
                .is_none_or(|b| b.loss_good == 0.0 && b.loss_bad == 0.0)
    }

    /// The model as given, or what is wrong with it (naming the field).
    pub fn check(&self) -> Result<(), Invalid> {
        probability("loss.random", self.random)?;
        if self.random >= 1.0 {
            return Err(Invalid::new("loss.random", "must be below 1"));
        }
        if let Some(b) = self.burst {
            probability("loss.burst.p_good_to_bad", b.p_good_to_bad)?;
            probability("loss.burst.p_bad_to_good", b.p_bad_to_good)?;
            probability("loss.burst.loss_good", b.loss_good)?;
            probability("loss.burst.loss_bad", b.loss_bad)?;
            if b.p_bad_to_good == 0.0 && b.p_good_to_bad > 0.0 && b.loss_bad >= 1.0 {
                return Err(Invalid::new(
                    "loss.burst.p_bad_to_good",
                    "must be above 0, or the line stays in the Bad state for good",
                ));
            }
        }
        Ok(())
    }
}

/// A value that does not make sense, and the field it is in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    pub field: String,
    pub message: String,
}

impl Invalid {
    pub fn new(field: &str, message: impl Into<String>) -> Self {
        Self {
            field: field.to_owned(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

fn probability(name: &str, value: f64) -> Result<(), Invalid> {
    if (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(Invalid::new(name, format!("{value} is not a probability")))
    }
}

/// Why a segment was lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    Random,
    Burst,
}

/// Decides, segment by segment, which are lost.
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

    pub fn model(&self) -> &Loss {
        &self.model
    }

    /// Whether the next segment is lost, and why.
    pub fn decide(&mut self) -> Option<Cause> {
        let random = self.model.random > 0.0 && self.rng.random::<f64>() < self.model.random;
        let mut burst = false;
        if let Some(b) = self.model.burst {
            let (loss, leave) = if self.bad {
                (b.loss_bad, b.p_bad_to_good)
            } else {
                (b.loss_good, b.p_good_to_bad)
            };
            burst = loss > 0.0 && self.rng.random::<f64>() < loss;
            if self.rng.random::<f64>() < leave {
                self.bad = !self.bad;
            }
        }
        if random {
            Some(Cause::Random)
        } else if burst {
            Some(Cause::Burst)
        } else {
            None
        }
    }

    /// The line sat idle for `slots` segment times: advance the Gilbert-Elliott chain
    /// that many steps at once. After k steps from Bad the chain is Bad with probability
    /// π + (1 - π) λ^k, from Good with π (1 - λ^k), where π = p / (p + r) is its share of
    /// Bad and λ = 1 - p - r (the two-state chain's second eigenvalue).
    pub fn idle(&mut self, slots: u64) {
        let Some(b) = self.model.burst else {
            return;
        };
        let (p, r) = (b.p_good_to_bad, b.p_bad_to_good);
        if slots == 0 || p + r == 0.0 {
            return;
        }
        let share_bad = p / (p + r);
        let fade = (1.0 - p - r).powf(slots.min(i32::MAX as u64) as f64);
        let bad = if self.bad {
            share_bad + (1.0 - share_bad) * fade
        } else {
            share_bad * (1.0 - fade)
        };
        self.bad = self.rng.random::<f64>() < bad;
    }

    pub fn set_model(&mut self, model: Loss) {
        self.model = model;
        self.bad = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(model: Loss, n: usize, seed: u64) -> (f64, Vec<usize>) {
        let mut state = LossState::new(model, seed);
        let mut lost = 0usize;
        let mut bursts = Vec::new();
        let mut length = 0usize;
        for _ in 0..n {
            if state.decide().is_some() {
                lost += 1;
                length += 1;
            } else if length > 0 {
                bursts.push(length);
                length = 0;
            }
        }
        (lost as f64 / n as f64, bursts)
    }

    #[test]
    fn random_loss_holds_its_rate_and_a_seed_repeats() {
        let n = 2_000_000;
        let p = 1e-3;
        let (measured, _) = run(Loss::random(p), n, 7);
        let sigma = (p * (1.0 - p) / n as f64).sqrt();
        assert!((measured - p).abs() < 5.0 * sigma, "{measured}");
        assert_eq!(
            run(Loss::random(0.1), 1000, 3),
            run(Loss::random(0.1), 1000, 3)
        );
    }

    #[test]
    fn gilbert_elliott_has_its_stationary_rate_and_burst_length() {
        let model = Loss {
            random: 0.0,
            burst: Some(GilbertElliott {
                p_good_to_bad: 0.001,
                p_bad_to_good: 0.25,
                loss_good: 0.0,
                loss_bad: 1.0,
            }),
        };
        let (measured, bursts) = run(model, 4_000_000, 11);
        let expected = 0.001 / 0.251;
        assert!((measured - expected).abs() / expected < 0.05, "{measured}");
        let mean_burst = bursts.iter().sum::<usize>() as f64 / bursts.len() as f64;
        assert!((mean_burst - 4.0).abs() < 0.2, "{mean_burst}");
    }

    #[test]
    fn idle_line_time_moves_the_burst_chain_towards_its_stationary_share() {
        let model = Loss {
            random: 0.0,
            burst: Some(GilbertElliott {
                p_good_to_bad: 0.001,
                p_bad_to_good: 0.01,
                loss_good: 0.0,
                loss_bad: 1.0,
            }),
        };
        let share_bad = 0.001 / 0.011;
        let trials = 20_000;
        let mut still_bad = 0;
        for seed in 0..trials {
            let mut state = LossState::new(model, seed);
            state.bad = true;
            // A long pause (10,000 slots, e.g. an RTO on a busy line) from the Bad state.
            state.idle(10_000);
            still_bad += usize::from(state.bad);
        }
        let measured = still_bad as f64 / f64::from(trials as u32);
        assert!((measured - share_bad).abs() < 0.01, "{measured}");
        // No time, no step.
        let mut state = LossState::new(model, 1);
        state.bad = true;
        state.idle(0);
        assert!(state.bad);
    }

    #[test]
    fn errors_name_the_field() {
        assert_eq!(Loss::random(1.5).check().unwrap_err().field, "loss.random");
        assert!(
            Loss::random(1.0)
                .check()
                .unwrap_err()
                .message
                .contains("below 1")
        );
        let stuck = Loss {
            random: 0.0,
            burst: Some(GilbertElliott {
                p_good_to_bad: 0.1,
                p_bad_to_good: 0.0,
                loss_good: 0.0,
                loss_bad: 1.0,
            }),
        };
        assert_eq!(stuck.check().unwrap_err().field, "loss.burst.p_bad_to_good");
        let parsed: Loss =
            serde_json::from_str(r#"{"burst": {"p_good_to_bad": 0.01, "p_bad_to_good": 0.5}}"#)
                .unwrap();
        assert!((parsed.burst.unwrap().loss_bad - 1.0).abs() < f64::EPSILON);
        let typo = serde_json::from_str::<Loss>(r#"{"randm": 0.1}"#).unwrap_err();
        assert!(typo.to_string().contains("randm"));
        assert!(Loss::NONE.is_lossless() && !Loss::random(0.1).is_lossless());
    }
}
