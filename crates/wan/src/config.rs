//! What the emulator is told to impose, as JSON and as command-line values. The link's
//! own configuration is `longhaul_link::DirectionConfig`, shared with the simulator.

pub use longhaul_link::{CrossTraffic, DirectionConfig, GilbertElliott, Jitter, Layer, Loss};
use serde::{Deserialize, Serialize};

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
}
