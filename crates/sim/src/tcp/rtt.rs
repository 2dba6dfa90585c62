//! The retransmission timer's estimator (RFC 6298), with Linux's floor: the variance term
//! is at least `min_rto_ns`, so RTO = SRTT + max(4 RTTVAR, min RTO) (`tcp_set_rto`,
//! `tcp_rto_min`; 2.6.18 `tcp_rtt_estimator` keeps the same floor on `mdev_max`). ns-3
//! floors the whole timeout instead, RTO = max(SRTT + max(1 ms, 4 RTTVAR), min RTO)
//! (`TcpSocketBase::EstimateRtt`, RFC 6298 clause 2.4), 60 s at most: on a 26.8 ms path
//! 200 ms where Linux waits 227 ms.

use crate::cc::Kernel;
use crate::cc::ns3::timestamp_rtt_ns;

pub const INITIAL_RTO_NS: u64 = 1_000_000_000;
pub const MAX_RTO_NS: u64 = 120_000_000_000;
/// ns-3's cap on the doubled timeout (`TcpSocketBase::OnRetransmitTimeout`).
pub const NS3_MAX_RTO_NS: u64 = 60_000_000_000;
/// ns-3's `ClockGranularity` default.
const NS3_CLOCK_GRANULARITY_NS: u64 = 1_000_000;

// Every field is a duration; the `_ns` suffix is the house style for units.
#[allow(clippy::struct_field_names)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RttEstimator {
    srtt_ns: Option<u64>,
    rttvar_ns: u64,
    min_rto_ns: u64,
    kernel: Kernel,
}

impl RttEstimator {
    pub fn new(min_rto_ns: u64, kernel: Kernel) -> Self {
        Self {
            srtt_ns: None,
            rttvar_ns: 0,
            min_rto_ns,
            kernel,
        }
    }

    pub fn srtt_ns(&self) -> Option<u64> {
        self.srtt_ns
    }

    /// Take the RTT of a segment acknowledged at `now_ns`. ns-3 measures it with
    /// millisecond timestamps, and its timer's estimator smooths those
    /// (`TcpSocketBase::EstimateRtt` feeds `m_rtt->Measurement`).
    pub fn sample(&mut self, now_ns: u64, rtt_ns: u64) {
        let rtt_ns = if self.kernel == Kernel::Ns3 {
            timestamp_rtt_ns(now_ns, rtt_ns)
        } else {
            rtt_ns
        };
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
        let ns3 = self.kernel == Kernel::Ns3;
        let (base, max) = match self.srtt_ns {
            None if ns3 => (INITIAL_RTO_NS, NS3_MAX_RTO_NS),
            None => (INITIAL_RTO_NS, MAX_RTO_NS),
            Some(srtt) if ns3 => {
                let variance = (4 * self.rttvar_ns).max(NS3_CLOCK_GRANULARITY_NS);
                ((srtt + variance).max(self.min_rto_ns), NS3_MAX_RTO_NS)
            }
            Some(srtt) => (srtt + (4 * self.rttvar_ns).max(self.min_rto_ns), MAX_RTO_NS),
        };
        base.saturating_mul(1u64 << backoff.min(20)).min(max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_rfc_6298_with_the_linux_floor() {
        let mut e = RttEstimator::new(200_000_000, Kernel::Linux6);
        assert_eq!(e.rto_ns(0), INITIAL_RTO_NS);
        e.sample(1_000_000_000, 100_000_000);
        // SRTT 100 ms, RTTVAR 50 ms: 100 + max(200, 200).
        assert_eq!(e.rto_ns(0), 300_000_000);
        e.sample(1_100_300_000, 100_000_000);
        assert_eq!(
            e.srtt_ns(),
            Some(100_000_000),
            "Linux takes the sample as it is"
        );
        assert_eq!(e.rto_ns(0), 300_000_000, "floor holds");
        assert_eq!(e.rto_ns(2), 1_200_000_000, "backoff doubles");
        assert_eq!(e.rto_ns(30), MAX_RTO_NS);
    }

    #[test]
    fn ns3_floors_the_whole_timeout() {
        let mut e = RttEstimator::new(200_000_000, Kernel::Ns3);
        e.sample(26_800_000, 26_800_000);
        e.sample(53_600_000, 26_800_000);
        assert_eq!(e.rto_ns(0), 200_000_000);
        assert_eq!(e.rto_ns(30), NS3_MAX_RTO_NS);
    }

    #[test]
    fn ns3_smooths_millisecond_timestamps() {
        let mut e = RttEstimator::new(200_000_000, Kernel::Ns3);
        // 163.6 ms, sent at 0.9 ms and back at 164.5 ms: timestamps 0 and 164.
        e.sample(164_500_000, 163_600_000);
        assert_eq!(e.srtt_ns(), Some(164_000_000));
        // Sent at 1.1 ms, back at 164.7: 163 ms; RTTVAR 82 then (3 * 82 + 1) / 4 ms.
        e.sample(164_700_000, 163_600_000);
        assert_eq!(e.srtt_ns(), Some(164_000_000 - 125_000));
        assert_eq!(e.rto_ns(0), 163_875_000 + 4 * 61_750_000);
    }
}
