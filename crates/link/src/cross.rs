//! Synthetic cross-traffic: packets that occupy the line and its queue but come from
//! nowhere and go nowhere, at a constant rate while on, so a circuit can be shared
//! without a third host. (The testbed's real cross-traffic is UDP from a host of its own.)

use serde::{Deserialize, Serialize};

use crate::{PS_PER_NS, PS_PER_S};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrossTraffic {
    /// Wire bytes a second while on.
    pub rate_bps: u64,
    #[serde(default = "default_packet_bytes")]
    pub packet_bytes: u32,
    /// On for `on_ns`, then off for `off_ns`, repeating; `off_ns` = 0 is always on.
    #[serde(default)]
    pub on_ns: u64,
    #[serde(default)]
    pub off_ns: u64,
}

fn default_packet_bytes() -> u32 {
    1_500
}

impl CrossTraffic {
    pub fn check(&self, line_rate_bps: u64) -> Result<(), String> {
        if self.rate_bps == 0 || self.rate_bps >= line_rate_bps {
            return Err(format!(
                "cross.rate_bps {} must be above 0 and below the line's {}",
                self.rate_bps, line_rate_bps
            ));
        }
        if !(64..=65_535).contains(&self.packet_bytes) {
            return Err("cross.packet_bytes must be within 64..65535".into());
        }
        if self.off_ns > 0 && self.on_ns == 0 {
            return Err("cross.on_ns must be above 0 when off_ns is".into());
        }
        Ok(())
    }
}

/// The arrivals of one source, in picoseconds of the line's clock.
pub(crate) struct Arrivals {
    pub config: CrossTraffic,
    started_ps: u64,
    gap_ps: u64,
    next_ps: u64,
}

impl Arrivals {
    pub fn new(config: CrossTraffic, now_ps: u64) -> Self {
        let gap_ps = u64::from(config.packet_bytes) * 8 * PS_PER_S / config.rate_bps;
        Self {
            config,
            started_ps: now_ps,
            gap_ps: gap_ps.max(1),
            next_ps: now_ps,
        }
    }

    fn period_ps(&self) -> Option<(u64, u64)> {
        (self.config.off_ns > 0).then(|| {
            let on = self.config.on_ns * PS_PER_NS;
            (on, on + self.config.off_ns * PS_PER_NS)
        })
    }

    /// The earliest instant the arrivals still count from: the start of the current
    /// on-off period, or the next arrival if always on.
    pub fn anchor_ps(&self) -> u64 {
        match self.period_ps() {
            Some((_, period)) => self.next_ps - (self.next_ps - self.started_ps) % period,
            None => self.next_ps,
        }
    }

    /// The line's clock moved its origin `shift_ps` later (at most `anchor_ps`): the
    /// same arrivals, in the new clock.
    pub fn rebase(&mut self, shift_ps: u64) {
        self.started_ps = self.anchor_ps() - shift_ps;
        self.next_ps -= shift_ps;
    }

    /// The next arrival if it comes before `now_ps`, moved out of any off-period.
    pub fn next_before(&mut self, now_ps: u64) -> Option<u64> {
        if let Some((on, period)) = self.period_ps() {
            let into = (self.next_ps - self.started_ps) % period;
            if into >= on {
                self.next_ps += period - into;
            }
        }
        (self.next_ps < now_ps).then_some(self.next_ps)
    }

    pub fn advance(&mut self) {
        self.next_ps += self.gap_ps;
    }

    /// Skip to the last arrival before `now_ps` within the current on-period; its time
    /// and how many arrivals were skipped, it included.
    pub fn skip_to_last_before(&mut self, now_ps: u64) -> (u64, u64) {
        let mut end = now_ps;
        if let Some((on, period)) = self.period_ps() {
            let period_start = self.next_ps - (self.next_ps - self.started_ps) % period;
            end = end.min(period_start + on);
        }
        let count = (end - self.next_ps).div_ceil(self.gap_ps).max(1);
        let last = self.next_ps + (count - 1) * self.gap_ps;
        self.next_ps = last + self.gap_ps;
        (last, count)
    }
}
