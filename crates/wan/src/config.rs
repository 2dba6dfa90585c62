//! What one direction of an emulated link imposes, as JSON and as command-line values.

use serde::{Deserialize, Serialize};

/// One direction of a link. Times are nanoseconds, rates bits per second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirectionConfig {
    /// The rate packets are serialized at (IP bytes, plus `frame_overhead_bytes` per segment).
    pub rate_bps: u64,
    /// One-way propagation delay.
    pub delay_ns: u64,
    /// The most bytes the queue holds (including the packet being sent); what would not
    /// fit is dropped at the tail. None: one bandwidth-delay product, the rate times the
    /// round-trip time of a path with this delay both ways.
    #[serde(default)]
    pub queue_bytes: Option<u64>,
    /// Bytes each wire segment takes beyond its IP packet (framing); 0 counts IP bytes.
    #[serde(default)]
    pub frame_overhead_bytes: u32,
    #[serde(default)]
    pub loss: Loss,
    #[serde(default)]
    pub cross: Option<CrossTraffic>,
}

/// The most wire bytes one packet can stand for: a 64 KB super-packet whose every segment
/// repeats its headers. The queue is never smaller, so that such a packet always fits.
pub const MAX_PACKET_WIRE_BYTES: u64 = 72_000;

impl DirectionConfig {
    pub fn new(rate_bps: u64, delay_ns: u64) -> Self {
        Self {
            rate_bps,
            delay_ns,
            queue_bytes: None,
            frame_overhead_bytes: 0,
            loss: Loss::None,
            cross: None,
        }
    }

    /// The queue limit in force: as configured, else one bandwidth-delay product.
    pub fn queue_limit_bytes(&self) -> u64 {
        let rtt_ns = 2 * u128::from(self.delay_ns);
        let bdp = u128::from(self.rate_bps) * rtt_ns / 8 / 1_000_000_000;
        self.queue_bytes
            .unwrap_or(bdp as u64)
            .max(MAX_PACKET_WIRE_BYTES)
    }

    /// A configuration the emulator can run, or what is wrong with it.
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
        if self.frame_overhead_bytes > 1_000 {
            return Err("frame_overhead_bytes is above 1000".into());
        }
        self.loss.check()?;
        if let Some(cross) = &self.cross {
            cross.check(self.rate_bps)?;
        }
        Ok(())
    }
}

/// Loss on the line, decided per wire segment after it was sent.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "snake_case", deny_unknown_fields)]
pub enum Loss {
    #[default]
    None,
    /// Each segment is lost with `probability`, independently.
    Random { probability: f64 },
    /// Two states: Good and Bad, each with its own loss probability; after each segment
    /// the state changes with `p` (Good → Bad) or `r` (Bad → Good). Mean burst length of
    /// the Bad state is 1/r segments.
    GilbertElliott {
        p: f64,
        r: f64,
        #[serde(default)]
        loss_good: f64,
        #[serde(default = "one")]
        loss_bad: f64,
    },
}

fn one() -> f64 {
    1.0
}

impl Loss {
    fn check(&self) -> Result<(), String> {
        let probabilities: &[(&str, f64)] = match self {
            Loss::None => &[],
            Loss::Random { probability } => &[("probability", *probability)],
            Loss::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
            } => &[
                ("p", *p),
                ("r", *r),
                ("loss_good", *loss_good),
                ("loss_bad", *loss_bad),
            ],
        };
        for (name, value) in probabilities {
            if !(0.0..=1.0).contains(value) {
                return Err(format!("loss {name} = {value} is not a probability"));
            }
        }
        if let Loss::GilbertElliott { r, .. } = self
            && *r == 0.0
        {
            return Err("loss r = 0 would never leave the Bad state".into());
        }
        Ok(())
    }
}

/// Synthetic cross-traffic: packets that occupy the link (and its queue) but come from
/// nowhere and go nowhere, at `rate_bps` while on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrossTraffic {
    pub rate_bps: u64,
    #[serde(default = "default_cross_packet")]
    pub packet_bytes: u32,
    /// On for `on_ns`, then off for `off_ns`, repeating; `off_ns` = 0 is always on.
    #[serde(default)]
    pub on_ns: u64,
    #[serde(default)]
    pub off_ns: u64,
}

fn default_cross_packet() -> u32 {
    1_500
}

impl CrossTraffic {
    fn check(&self, link_rate_bps: u64) -> Result<(), String> {
        if self.rate_bps == 0 || self.rate_bps >= link_rate_bps {
            return Err(format!(
                "cross rate_bps {} must be above 0 and below the link's {}",
                self.rate_bps, link_rate_bps
            ));
        }
        if !(64..=65_535).contains(&self.packet_bytes) {
            return Err("cross packet_bytes must be within 64..65535".into());
        }
        if self.off_ns > 0 && self.on_ns == 0 {
            return Err("cross on_ns must be above 0 when off_ns is".into());
        }
        Ok(())
    }
}

/// Both directions of a link: from the A device to the B device, and back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    pub a_to_b: DirectionConfig,
    pub b_to_a: DirectionConfig,
}

/// A rate such as `9.6g`, `9600m`, `1G`, `250k` or `9600000000` (bits per second).
pub fn parse_rate(text: &str) -> Result<u64, String> {
    let t = text.trim().to_ascii_lowercase();
    let t = t
        .strip_suffix("bps")
        .or_else(|| t.strip_suffix("b/s"))
        .unwrap_or(&t);
    let (number, scale) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1e3),
        Some('m') => (&t[..t.len() - 1], 1e6),
        Some('g') => (&t[..t.len() - 1], 1e9),
        Some('t') => (&t[..t.len() - 1], 1e12),
        _ => (t, 1.0),
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a rate: use e.g. 9.6g, 1000m, 250k"))?;
    if !(value.is_finite() && value > 0.0) {
        return Err(format!("{text:?} is not a positive rate"));
    }
    Ok((value * scale).round() as u64)
}

/// A duration such as `81.5ms`, `163ms`, `2s`, `500us`, `10ns` (a bare number is ms).
pub fn parse_duration_ns(text: &str) -> Result<u64, String> {
    let t = text.trim().to_ascii_lowercase();
    let (number, scale) = if let Some(n) = t.strip_suffix("ns") {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix("us").or_else(|| t.strip_suffix("µs")) {
        (n, 1e3)
    } else if let Some(n) = t.strip_suffix("ms") {
        (n, 1e6)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1e9)
    } else {
        (t.as_str(), 1e6)
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration: use e.g. 81.5ms, 2s, 500us"))?;
    if !(value.is_finite() && value >= 0.0) {
        return Err(format!("{text:?} is not a duration of zero or more"));
    }
    Ok((value * scale).round() as u64)
}

/// A byte count such as `64k`, `196m`, `1g` (powers of 1000, as rates), or a number.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim().to_ascii_lowercase();
    let t = t.strip_suffix('b').unwrap_or(&t);
    parse_rate(t).map_err(|_| format!("{text:?} is not a size: use e.g. 196m, 64k, 100000"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_durations_and_sizes_read_as_people_write_them() {
        assert_eq!(parse_rate("9.6g"), Ok(9_600_000_000));
        assert_eq!(parse_rate("9600M"), Ok(9_600_000_000));
        assert_eq!(parse_rate("1Gbps"), Ok(1_000_000_000));
        assert_eq!(parse_rate("250k"), Ok(250_000));
        assert!(parse_rate("fast").is_err() && parse_rate("-1g").is_err());
        assert_eq!(parse_duration_ns("81.5ms"), Ok(81_500_000));
        assert_eq!(parse_duration_ns("2s"), Ok(2_000_000_000));
        assert_eq!(parse_duration_ns("500us"), Ok(500_000));
        assert_eq!(parse_duration_ns("13.4"), Ok(13_400_000));
        assert!(parse_duration_ns("soon").is_err());
        assert_eq!(parse_bytes("196m"), Ok(196_000_000));
    }

    #[test]
    fn the_default_queue_is_one_bandwidth_delay_product() {
        let c = DirectionConfig::new(9_600_000_000, 81_500_000);
        assert_eq!(c.queue_limit_bytes(), 195_600_000);
        let tiny = DirectionConfig::new(1_000_000, 1_000);
        assert_eq!(tiny.queue_limit_bytes(), MAX_PACKET_WIRE_BYTES);
    }

    #[test]
    fn json_names_the_bad_field() {
        let bad: Result<DirectionConfig, _> =
            serde_json::from_str(r#"{"rate_bps": 1000000, "delay_ns": 5, "dealy": 3}"#);
        assert!(bad.unwrap_err().to_string().contains("dealy"));
        let mut c = DirectionConfig::new(1_000_000_000, 1_000_000);
        c.loss = Loss::Random { probability: 1.5 };
        assert!(c.check().unwrap_err().contains("probability"));
        c.loss = Loss::None;
        c.cross = Some(CrossTraffic {
            rate_bps: 2_000_000_000,
            packet_bytes: 1500,
            on_ns: 0,
            off_ns: 0,
        });
        assert!(c.check().unwrap_err().contains("below the link"));
        let ge: Loss =
            serde_json::from_str(r#"{"model": "gilbert_elliott", "p": 0.01, "r": 0.5}"#).unwrap();
        assert_eq!(
            ge,
            Loss::GilbertElliott {
                p: 0.01,
                r: 0.5,
                loss_good: 0.0,
                loss_bad: 1.0
            }
        );
    }
}
