//! How faithfully a link was run: how late its releases came, and the most it delivered
//! in any short window.
//!
//! In the simulator releases are never late and the rate is exact by construction. In
//! the emulator both depend on a real machine keeping up, and a measurement taken while
//! it did not is not one to publish: these are the figures that say so.

use std::collections::VecDeque;

use serde::Serialize;

/// Lateness histogram buckets: bucket k counts releases less than 2^k µs late (bucket 0,
/// under 1 µs), the last one everything later.
pub const LATENESS_BUCKETS: usize = 24;

/// How late releases came, against the earliest instant each was allowed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Lateness {
    /// Releases that came late at all.
    pub late: u64,
    pub max_ns: u64,
    pub sum_ns: u64,
    /// Bucket k: late releases less than 2^k µs late.
    pub histogram_us: Vec<u64>,
}

impl Default for Lateness {
    fn default() -> Self {
        Self {
            late: 0,
            max_ns: 0,
            sum_ns: 0,
            histogram_us: vec![0; LATENESS_BUCKETS],
        }
    }
}

impl Lateness {
    pub fn record(&mut self, late_ns: u64) {
        if late_ns == 0 {
            return;
        }
        self.late += 1;
        self.sum_ns += late_ns;
        self.max_ns = self.max_ns.max(late_ns);
        let micros = late_ns / 1_000;
        let bucket = (u64::BITS - micros.leading_zeros()) as usize;
        self.histogram_us[bucket.min(LATENESS_BUCKETS - 1)] += 1;
    }

    /// An upper bound on the `q` quantile of lateness over `releases` releases (those not
    /// late count as 0): the top of the histogram bucket it falls in.
    pub fn quantile_ns(&self, q: f64, releases: u64) -> u64 {
        let on_time = releases.saturating_sub(self.late);
        let rank = (q * releases as f64).ceil() as u64;
        if rank <= on_time {
            return 0;
        }
        let mut seen = on_time;
        for (bucket, count) in self.histogram_us.iter().enumerate() {
            seen += count;
            if seen >= rank {
                let top_ns = (1u64 << bucket) * 1_000;
                return top_ns.min(self.max_ns);
            }
        }
        self.max_ns
    }
}

/// The most delivered within any window of `window_ns` after a frame's delivery (that
/// frame not counted: its bits crossed the line before it arrived), as a share of what
/// the rate carries in the window. On a line that never exceeds its rate this is at most 1.
#[derive(Debug, Clone)]
pub struct RateWindow {
    window_ns: u64,
    rate_bps: u64,
    recent: VecDeque<(u64, u64)>,
    sum_bytes: u64,
    /// The largest share since the window was made.
    pub max_ratio: f64,
    /// The largest since `take_peak` was last called.
    peak_ratio: f64,
}

impl RateWindow {
    pub fn new(window_ns: u64, rate_bps: u64) -> Self {
        Self {
            window_ns,
            rate_bps,
            recent: VecDeque::new(),
            sum_bytes: 0,
            max_ratio: 0.0,
            peak_ratio: 0.0,
        }
    }

    pub fn window_ns(&self) -> u64 {
        self.window_ns
    }

    /// `bytes` delivered at `now_ns` (instants never decrease).
    pub fn record(&mut self, now_ns: u64, bytes: u64) {
        self.recent.push_back((now_ns, bytes));
        self.sum_bytes += bytes;
        let from = now_ns.saturating_sub(self.window_ns);
        while let Some(&(at, b)) = self.recent.front() {
            if at >= from {
                break;
            }
            self.recent.pop_front();
            self.sum_bytes -= b;
        }
        let first = self.recent.front().map_or(0, |&(_, b)| b);
        let ratio = (self.sum_bytes - first) as f64 * 8.0
            / (self.rate_bps as f64 * self.window_ns as f64 / 1e9);
        self.max_ratio = self.max_ratio.max(ratio);
        self.peak_ratio = self.peak_ratio.max(ratio);
    }

    /// Measure against `rate_bps` from now on, forgetting what came before.
    pub fn set_rate(&mut self, rate_bps: u64) {
        self.rate_bps = rate_bps;
        self.recent.clear();
        self.sum_bytes = 0;
    }

    /// The largest share since the last call, and start again.
    pub fn take_peak(&mut self) -> f64 {
        std::mem::take(&mut self.peak_ratio)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_come_from_the_histogram() {
        let mut late = Lateness::default();
        for _ in 0..5 {
            late.record(3_000); // 3 us: bucket 2 (< 4 us)
        }
        late.record(900_000);
        assert_eq!(late.quantile_ns(0.5, 100), 0, "95 releases were on time");
        assert_eq!(late.quantile_ns(0.99, 100), 4_000);
        assert_eq!(late.quantile_ns(1.0, 100), 900_000);
    }

    #[test]
    fn a_paced_stream_fills_a_window_at_most_once() {
        let mut window = RateWindow::new(1_000_000, 1_000_000_000);
        // 1,250 bytes every 10 us: exactly 1 Gb/s.
        for k in 0..1_000 {
            window.record(k * 10_000, 1_250);
        }
        assert!((window.max_ratio - 1.0).abs() < 1e-9);
        // A burst of 20 frames at one instant shows.
        for _ in 0..20 {
            window.record(10_000_000, 1_250);
        }
        assert!(window.take_peak() > 1.1);
        assert!(window.take_peak() < f64::EPSILON);
        // Measured against a lower rate from now on, the past does not count.
        window.set_rate(100_000_000);
        window.record(10_010_000, 1_250);
        assert!(window.take_peak() < f64::EPSILON);
    }
}
