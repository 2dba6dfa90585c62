//! What one direction of a link imposes.

use serde::{Deserialize, Serialize};

use crate::cross::CrossTraffic;
use crate::jitter::Jitter;
use crate::layer::Layer;
use crate::loss::Loss;

/// The most wire bytes one frame stands for: a 64 KB super-packet of ordinary segment
/// sizes, every segment with its own headers and framing. The default queue is never
/// smaller, so such a frame always fits an empty one whole.
pub const MAX_FRAME_WIRE_BYTES: u64 = 80_000;

/// One direction of a link. Times are nanoseconds, rates bits per second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirectionConfig {
    /// The rate framed bytes are serialized at; never more than the layer's line rate.
    pub rate_bps: u64,
    /// One-way propagation delay.
    pub delay_ns: u64,
    /// The most bytes the queue holds, the frame being sent included; what would not fit
    /// is dropped at the tail. None: one bandwidth-delay product (the rate times the
    /// round trip of a path with this delay both ways).
    #[serde(default)]
    pub queue_bytes: Option<u64>,
    /// The line's layer: its rate ceiling and its framing.
    #[serde(default)]
    pub layer: Layer,
    /// Bytes each wire segment costs beyond its IP packet; None: the layer's framing.
    #[serde(default)]
    pub frame_overhead_bytes: Option<u32>,
    #[serde(default)]
    pub loss: Loss,
    /// Queueing jitter of a packet-switched core (None: a circuit, as SONET).
    #[serde(default)]
    pub jitter: Option<Jitter>,
    #[serde(default)]
    pub cross: Option<CrossTraffic>,
    #[serde(default)]
    pub faults: Faults,
}

/// Faults for testing what runs over the link: frames delivered out of order or twice.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Faults {
    /// The probability that a frame is held back behind the next one.
    #[serde(default)]
    pub reorder: f64,
    /// The probability that a frame is delivered twice (both copies use the line).
    #[serde(default)]
    pub duplicate: f64,
}

impl Faults {
    pub fn is_none(&self) -> bool {
        self.reorder == 0.0 && self.duplicate == 0.0
    }
}

impl DirectionConfig {
    pub fn new(rate_bps: u64, delay_ns: u64) -> Self {
        Self {
            rate_bps,
            delay_ns,
            queue_bytes: None,
            layer: Layer::Ip,
            frame_overhead_bytes: None,
            loss: Loss::NONE,
            jitter: None,
            cross: None,
            faults: Faults::default(),
        }
    }

    /// The rate in force: as configured, and never above the layer's line rate.
    pub fn line_rate_bps(&self) -> u64 {
        self.layer
            .line_rate_bps()
            .map_or(self.rate_bps, |ceiling| self.rate_bps.min(ceiling))
    }

    /// Wire bytes each segment costs beyond its IP bytes.
    pub fn overhead_bytes(&self) -> u64 {
        u64::from(
            self.frame_overhead_bytes
                .unwrap_or(self.layer.frame_overhead_bytes()),
        )
    }

    /// The queue limit in force: as configured, else one bandwidth-delay product (and
    /// at least one largest frame).
    pub fn queue_limit_bytes(&self) -> u64 {
        self.queue_bytes.unwrap_or_else(|| {
            let rtt_ns = 2 * u128::from(self.delay_ns);
            let bdp = u128::from(self.line_rate_bps()) * rtt_ns / 8 / 1_000_000_000;
            (bdp as u64).max(MAX_FRAME_WIRE_BYTES)
        })
    }

    /// The most wire bytes admitted and not yet delivered: the queue, and what the line
    /// holds over its delay (and its jitter's long tail, at five means).
    pub fn in_flight_bound_bytes(&self) -> u64 {
        let jitter_ns = self.jitter.map_or(0, |j| 5 * j.mean_ns());
        let on_line = u128::from(self.line_rate_bps()) * u128::from(self.delay_ns + jitter_ns)
            / 8
            / 1_000_000_000;
        self.queue_limit_bytes() + on_line as u64 + MAX_FRAME_WIRE_BYTES
    }

    /// A configuration the link can run, or what is wrong with it (naming the field).
    pub fn check(&self) -> Result<(), String> {
        if self.rate_bps < 1_000 {
            return Err(format!("rate_bps {} is below 1 kb/s", self.rate_bps));
        }
        if self.rate_bps > 1_000_000_000_000 {
            return Err(format!("rate_bps {} is above 1 Tb/s", self.rate_bps));
        }
        if self.delay_ns > 10_000_000_000 {
            return Err(format!("delay_ns {} is above 10 s", self.delay_ns));
        }
        if self.frame_overhead_bytes.is_some_and(|o| o > 1_000) {
            return Err("frame_overhead_bytes is above 1000".into());
        }
        self.loss.check().map_err(|e| e.to_string())?;
        if let Some(jitter) = &self.jitter {
            jitter.check()?;
        }
        if let Some(cross) = &self.cross {
            cross.check(self.line_rate_bps())?;
        }
        for (name, p) in [
            ("faults.reorder", self.faults.reorder),
            ("faults.duplicate", self.faults.duplicate),
        ] {
            if !(0.0..1.0).contains(&p) {
                return Err(format!("{name} = {p} is not a probability below 1"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_queue_is_one_bandwidth_delay_product() {
        let c = DirectionConfig::new(9_600_000_000, 81_500_000);
        assert_eq!(c.queue_limit_bytes(), 195_600_000);
        let tiny = DirectionConfig::new(1_000_000, 1_000);
        assert_eq!(tiny.queue_limit_bytes(), MAX_FRAME_WIRE_BYTES);
    }

    #[test]
    fn a_layer_caps_the_rate_and_sets_the_framing() {
        let mut c = DirectionConfig::new(9_600_000_000, 0);
        c.layer = Layer::Oc192;
        assert_eq!(c.line_rate_bps(), 9_584_640_000);
        assert_eq!(c.overhead_bytes(), 26);
        c.frame_overhead_bytes = Some(0);
        assert_eq!(c.overhead_bytes(), 0);
        c.layer = Layer::Gige;
        c.rate_bps = 500_000_000;
        assert_eq!(
            c.line_rate_bps(),
            500_000_000,
            "a slower circuit on the layer"
        );
    }

    #[test]
    fn json_names_the_bad_field() {
        let bad: Result<DirectionConfig, _> =
            serde_json::from_str(r#"{"rate_bps": 1000000, "delay_ns": 5, "dealy": 3}"#);
        assert!(bad.unwrap_err().to_string().contains("dealy"));
        let mut c = DirectionConfig::new(1_000_000_000, 1_000_000);
        c.loss = Loss::random(1.5);
        assert!(c.check().unwrap_err().contains("loss.random"));
        c.loss = Loss::NONE;
        c.cross = Some(CrossTraffic {
            rate_bps: 2_000_000_000,
            packet_bytes: 1500,
            on_ns: 0,
            off_ns: 0,
        });
        assert!(c.check().unwrap_err().contains("below the line"));
        c.cross = None;
        c.faults.reorder = 1.0;
        assert!(c.check().unwrap_err().contains("faults.reorder"));
        let layered: DirectionConfig =
            serde_json::from_str(r#"{"rate_bps": 9600000000, "delay_ns": 0, "layer": "wanphy"}"#)
                .unwrap();
        assert_eq!(layered.layer, Layer::Wanphy);
    }
}
