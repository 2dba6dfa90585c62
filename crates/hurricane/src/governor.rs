//! The loss governor: Hurricane has no congestion control (the channel is reserved), but
//! the far host, or whatever carries the channel, can fall below the reserved rate. Then
//! a sender at the full rate fills the queue in front of the bottleneck, loses whole
//! runs of datagrams, and the NACKs for them, arriving late behind that queue, bring
//! back blocks already on their way: duplicates on an overloaded receiver, which drops
//! more (measured: a 9.6 Gb/s transfer through an emulator that kept up with 8 Gb/s fell
//! to 3.4 Gb/s with half its datagrams resent). The governor watches the share of
//! datagrams the NACKs report lost, a round trip at a time: past 5 % it takes the rate
//! down by 10 % (at most once in two round trips: the NACKs of the old rate are still
//! coming), below 1 % it gives back 5 % of the ceiling a round trip. Random loss on a
//! healthy channel (1e-4) never moves it; the rate never goes above the reservation,
//! nor below half of it. (A first version, 1 % / 15 % down, 2 % up, a fifth at least,
//! held a 9.6 Gb/s transfer at 1.2-1.6 Gb/s for 20 s after a burst of loss.)
//!
//! Loss comes late, though: a queue deep enough (a router's buffer of a bandwidth-delay
//! product, a receiver's 256 MB socket buffer, an emulator's arena) fills for seconds
//! before it overflows, and then loses runs of datagrams. So the governor also watches
//! the queue, in the round trips the receiver's NACKs echo (one at least every 5-20 ms
//! while blocks come in): each round trip's least queueing above the least round trip
//! of the transfer. A queue that grew in each of three round trips in a row, to over
//! `queue_limit_ns`, shows a path that lets out less than it is given: by the median
//! growth g over a round trip r, r / (r + g) of it. The rate comes down to that (and a
//! little under, to drain a queue over twice the limit), comes back quickly up to it once
//! the queue is short, and only slowly beyond. A host that stalls now and then grows the
//! queue of a sender at the full rate in steps, not round trip after round trip: at
//! exactly the line's rate such a queue stands for the rest of the transfer, harmless,
//! and only the drift between the steps moves the rate. Measured through an emulator
//! that carried about 8.8 of 9.6 Gb/s on a busy two-core machine: a 9.6 Gb/s sender
//! filled its 400 MB arena in three seconds; the arena refused 1,547-4,662 frames a
//! transfer and the receiver's socket dropped 3,480-8,406 coalesced datagrams, and up to a
//! third of the blocks went again, where ceilings of 8.0 and 8.8 Gb/s lost none.

use crate::sender::LEAD_MAX_NS;

const DECREASE_ABOVE: f64 = 0.05;
const INCREASE_BELOW: f64 = 0.01;
const DECREASE_FACTOR: f64 = 0.9;
const INCREASE_STEP: f64 = 0.05;
/// The step beyond what the path last let out.
const PROBE_STEP: f64 = 0.01;
const FLOOR: f64 = 0.5;
/// Below what a growing queue shows the path lets out, when the queue is over twice the
/// limit: it drains at a twentieth of the rate (60 ms in about 1.2 s).
const DRAIN: f64 = 0.95;
/// The most one decrease takes off.
const LARGEST_CUT: f64 = 0.8;
/// Round trips in a row the queue must grow in to show a path slower than the rate.
const GROWING_ROUNDS: usize = 3;
/// The fewest datagrams a round trip must send for its loss share to count.
const MIN_SAMPLE: u64 = 64;

/// Queueing a round trip may show before its growth counts: the sender's own lead (a
/// queue it stands in the channel on purpose, `sender::lead_ns`), and
/// an eighth of the round trip (at least 10 ms) for a host's scheduling and the jitter
/// of whatever carries the channel: 30 ms over 163 ms, 91 ms over 650 ms.
pub fn queue_limit_ns(rtt_ns: u64) -> u64 {
    LEAD_MAX_NS + (rtt_ns / 8).max(10_000_000)
}

#[derive(Debug, Clone)]
pub struct Governor {
    rtt_ns: u64,
    /// The share of the ceiling the sender uses now.
    scale: f64,
    round_start_ns: Option<u64>,
    sent: u64,
    lost: u64,
    /// No decrease before this: the NACKs of the rate before the last are still coming
    /// (two round trips, and the queue they wait in).
    calm_from_ns: u64,
    /// What the path let out when a growing queue last brought the rate down, as a
    /// share of the ceiling.
    delivered_scale: Option<f64>,
    /// The least round trip seen (the handshake's to begin with): the path unqueued.
    base_rtt_ns: u64,
    /// The least queueing of this round trip's echoes so far.
    round_queue_ns: Option<u64>,
    /// The least queueing of the last `GROWING_ROUNDS` + 1 round trips, oldest first
    /// (None: a round trip with no echo, or one before the last decrease could show).
    queues_ns: [Option<u64>; GROWING_ROUNDS + 1],
    /// (time, scale) at each change: what the governor did.
    pub history: Vec<(u64, f64)>,
}

impl Governor {
    pub fn new(rtt_ns: u64) -> Self {
        Self {
            rtt_ns: rtt_ns.max(1_000_000),
            scale: 1.0,
            round_start_ns: None,
            sent: 0,
            lost: 0,
            calm_from_ns: 0,
            delivered_scale: None,
            base_rtt_ns: rtt_ns,
            round_queue_ns: None,
            queues_ns: [None; GROWING_ROUNDS + 1],
            history: Vec::new(),
        }
    }

    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// The least share of the ceiling it has held the sender to.
    pub fn lowest_scale(&self) -> f64 {
        self.history.iter().map(|&(_, s)| s).fold(1.0, f64::min)
    }

    pub fn on_sent(&mut self, now_ns: u64) {
        self.round_start_ns.get_or_insert(now_ns);
        self.sent += 1;
        self.end_round_if_due(now_ns);
    }

    /// `blocks` newly reported missing by a NACK.
    pub fn on_nacked(&mut self, now_ns: u64, blocks: u64) {
        self.lost += blocks;
        self.end_round_if_due(now_ns);
    }

    /// A round trip sample, from the NACK that echoed it.
    pub fn on_rtt(&mut self, now_ns: u64, rtt_ns: u64) {
        self.base_rtt_ns = self.base_rtt_ns.min(rtt_ns);
        let queue_ns = rtt_ns - self.base_rtt_ns;
        self.round_queue_ns = Some(self.round_queue_ns.map_or(queue_ns, |q| q.min(queue_ns)));
        self.end_round_if_due(now_ns);
    }

    /// The median growth of a queue that grew in each of the last `GROWING_ROUNDS`
    /// round trips to over the limit; None otherwise.
    fn steady_growth_ns(&self) -> Option<u64> {
        let queues: Option<Vec<u64>> = self.queues_ns.iter().copied().collect();
        let queues = queues?;
        if *queues.last()? <= queue_limit_ns(self.rtt_ns) {
            return None;
        }
        let mut growths: Vec<u64> = queues
            .windows(2)
            .map(|pair| pair[1].checked_sub(pair[0]).filter(|&g| g > 0))
            .collect::<Option<_>>()?;
        growths.sort_unstable();
        Some(growths[growths.len() / 2])
    }

    fn end_round_if_due(&mut self, now_ns: u64) {
        let Some(start) = self.round_start_ns else {
            return;
        };
        if now_ns < start + self.rtt_ns || self.sent < MIN_SAMPLE {
            return;
        }
        let share = self.lost as f64 / self.sent as f64;
        let queue_ns = self.round_queue_ns.take();
        let calm = now_ns >= self.calm_from_ns;
        // Round trips before the last decrease shows are not counted toward the next:
        // their queue still grows at the old rate.
        self.queues_ns.rotate_left(1);
        self.queues_ns[GROWING_ROUNDS] = queue_ns.filter(|_| calm);
        let limit_ns = queue_limit_ns(self.rtt_ns);
        let growth_ns = self.steady_growth_ns();
        let before = self.scale;
        if (share > DECREASE_ABOVE || growth_ns.is_some()) && calm {
            let by_loss = if share > DECREASE_ABOVE {
                DECREASE_FACTOR
            } else {
                1.0
            };
            // A queue that grew by g over a round trip of r took in (r + g) / r of what
            // it let out.
            let span_ns = (now_ns - start) as f64;
            let let_out = growth_ns.map(|g| span_ns / (span_ns + g as f64));
            if let Some(let_out) = let_out {
                self.delivered_scale = Some(self.scale * let_out);
            }
            let drain = if queue_ns.unwrap_or(0) > 2 * limit_ns {
                DRAIN
            } else {
                1.0
            };
            let by_queue = let_out.map_or(1.0, |share| drain * share);
            let factor = by_loss.min(by_queue).max(LARGEST_CUT);
            self.scale = (self.scale * factor).max(FLOOR);
            self.calm_from_ns = now_ns + 2 * self.rtt_ns + queue_ns.unwrap_or(0);
        } else if share < INCREASE_BELOW && queue_ns.is_none_or(|q| q < limit_ns / 2) {
            let probing = self.delivered_scale.is_some_and(|d| self.scale >= d);
            let step = if probing { PROBE_STEP } else { INCREASE_STEP };
            self.scale = (self.scale + step).min(1.0);
        }
        if (self.scale - before).abs() > f64::EPSILON {
            self.history.push((now_ns, self.scale));
        }
        self.round_start_ns = Some(now_ns);
        self.sent = 0;
        self.lost = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(g: &mut Governor, at_ns: u64, sent: u64, lost: u64) {
        for _ in 0..sent {
            g.on_sent(at_ns);
        }
        g.on_nacked(at_ns, lost);
    }

    #[test]
    fn heavy_loss_takes_the_rate_down_and_calm_gives_it_back() {
        let mut g = Governor::new(10_000_000);
        round(&mut g, 0, 1000, 0);
        // Each round trip: 1,000 sent, 100 lost (10 %).
        for i in 1..=6 {
            round(&mut g, i * 10_000_000, 1000, 100);
        }
        let low = g.scale();
        assert!((FLOOR..0.85).contains(&low), "{low}");
        for i in 7..=40 {
            round(&mut g, i * 10_000_000, 1000, 0);
        }
        assert!((g.scale() - 1.0).abs() < 1e-9, "{}", g.scale());
    }

    const RTT_NS: u64 = 100_000_000;

    /// Round trip `i`: one echo showing `queue_ns` of queueing, then 1,000 datagrams.
    fn queued_round(g: &mut Governor, i: u64, queue_ns: u64) {
        g.on_rtt(i * RTT_NS + 1, RTT_NS + queue_ns);
        for _ in 0..1000 {
            g.on_sent(i * RTT_NS + 2);
        }
    }

    #[test]
    fn a_queue_growing_round_trip_after_round_trip_brings_the_rate_to_what_the_path_lets_out() {
        let mut g = Governor::new(RTT_NS);
        // 20 ms more every 100 ms: the path lets out 100 / 120 of the rate.
        for i in 0..4 {
            queued_round(&mut g, i, i * 20_000_000);
        }
        assert!(g.history.is_empty(), "three growths are needed first");
        queued_round(&mut g, 4, 80_000_000);
        // 5/6, and a twentieth under it to drain a queue over twice the limit (45 ms).
        let expected = 0.95 * 100.0 / 120.0;
        assert!((g.scale() - expected).abs() < 0.01, "{}", g.scale());
        assert!((g.delivered_scale.unwrap() - 100.0 / 120.0).abs() < 0.01);
        // Back quickly to what the path let out once the queue has drained, then slowly.
        let mut i = 5;
        while g.scale() < g.delivered_scale.unwrap() {
            queued_round(&mut g, i, 0);
            i += 1;
        }
        assert!(i <= 7, "{i}");
        let at = g.scale();
        queued_round(&mut g, i, 0);
        assert!((g.scale() - at - PROBE_STEP).abs() < 1e-9);
    }

    #[test]
    fn a_queue_that_grows_in_steps_and_then_stands_moves_the_rate_only_by_its_drift() {
        // A host that stalls now and then: its queue grows in one round trip, then
        // stands (a sender at exactly the line's rate never drains it), drifting by a
        // millisecond here and there. The steps are not a slower path; the drift is.
        let mut g = Governor::new(RTT_NS);
        let queues_ms = [
            1, 1, 1, 40, 41, 41, 41, 75, 75, 76, 76, 76, 120, 120, 121, 122,
        ];
        for (i, q) in queues_ms.into_iter().enumerate() {
            queued_round(&mut g, i as u64, q * 1_000_000);
        }
        assert!(g.lowest_scale() > 0.98, "{:?}", g.history);
    }

    #[test]
    fn a_queue_under_the_limit_never_moves_it() {
        let mut g = Governor::new(RTT_NS);
        for i in 0..20 {
            queued_round(&mut g, i, i * 1_000_000);
        }
        assert!(g.history.is_empty(), "{:?}", g.history);
    }

    #[test]
    fn random_loss_of_a_healthy_channel_never_moves_it() {
        let mut g = Governor::new(10_000_000);
        for i in 0..100 {
            // 1e-4: one block in 10,000.
            round(&mut g, i * 10_000_000, 10_000, 1);
        }
        assert!((g.scale() - 1.0).abs() < 1e-9);
        assert!(g.history.is_empty());
    }
}
