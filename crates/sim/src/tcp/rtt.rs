//! The retransmission timer's estimator (RFC 6298), with Linux's floor: the variance term
//! is at least `min_rto_ns`, so RTO = SRTT + max(4 RTTVAR, min RTO).

pub const INITIAL_RTO_NS: u64 = 1_000_000_000;
pub const MAX_RTO_NS: u64 = 120_000_000_000;

// Every field is a duration; the `_ns` suffix is the house style for units.
#[allow(clippy::struct_field_names)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RttEstimator {
    srtt_ns: Option<u64>,
    rttvar_ns: u64,
    min_rto_ns: u64,
}

impl RttEstimator {
    pub fn new(min_rto_ns: u64) -> Self {
        Self {
            srtt_ns: None,
            rttvar_ns: 0,
            min_rto_ns,
        }
    }

    pub fn srtt_ns(&self) -> Option<u64> {
        self.srtt_ns
    }

    pub fn sample(&mut self, rtt_ns: u64) {
        match self.srtt_ns {
            None => {
                self.srtt_ns = Some(rtt_ns);
                self.rttvar_ns = rtt_ns / 2;
            }
            Some(srtt) => {
                self.rttvar_ns = (3 * self.rttvar_ns + srtt.abs_diff(rtt_ns)) / 4;
                self.srtt_ns = Some((7 * srtt + rtt_ns) / 8);
            }
        }
    }

    /// The timeout after `backoff` consecutive expiries.
    pub fn rto_ns(&self, backoff: u32) -> u64 {
        let base = match self.srtt_ns {
            None => INITIAL_RTO_NS,
            Some(srtt) => srtt + (4 * self.rttvar_ns).max(self.min_rto_ns),
        };
        base.saturating_mul(1u64 << backoff.min(20)).min(MAX_RTO_NS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_rfc_6298_with_the_linux_floor() {
        let mut e = RttEstimator::new(200_000_000);
        assert_eq!(e.rto_ns(0), INITIAL_RTO_NS);
        e.sample(100_000_000);
        // SRTT 100 ms, RTTVAR 50 ms: 100 + max(200, 200).
        assert_eq!(e.rto_ns(0), 300_000_000);
        e.sample(100_000_000);
        assert_eq!(e.srtt_ns(), Some(100_000_000));
        assert_eq!(e.rto_ns(0), 300_000_000, "floor holds");
        assert_eq!(e.rto_ns(2), 1_200_000_000, "backoff doubles");
        assert_eq!(e.rto_ns(30), MAX_RTO_NS);
    }
}
