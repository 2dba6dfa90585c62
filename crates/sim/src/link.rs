//! One direction of a link: a FIFO queue served at a constant rate, then a constant
//! propagation delay, with random and burst (Gilbert-Elliott) loss on the line.
//!
//! Serialization is analytic: on arrival a packet's departure is
//! `max(arrival, line free) + wire bits / rate`, and the backlog it sees is what the line
//! has not yet sent, `(line free - arrival) * rate`. So the queue needs no per-packet events. Because the
//! link is FIFO with one delay, packets in flight are kept in arrival order in a
//! `VecDeque` and the link keeps a single event in the heap: its head's arrival at the
//! far end. Times inside are picoseconds so rounding never drifts the rate.

use std::any::Any;
use std::collections::VecDeque;

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::engine::{Ctx, Node};
use crate::event::NodeId;
use crate::packet::{Kind, Packet};

const PS_PER_NS: u64 = 1_000;
const PS_PER_S: u128 = 1_000_000_000_000;

/// Two-state Gilbert-Elliott burst loss: a Good and a Bad state with their own loss
/// probabilities, and per-packet probabilities of leaving each state.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BurstLoss {
    /// Per packet, Good -> Bad.
    pub p_good_to_bad: f64,
    /// Per packet, Bad -> Good (mean burst length 1 / this).
    pub p_bad_to_good: f64,
    #[serde(default)]
    pub loss_good: f64,
    #[serde(default = "one")]
    pub loss_bad: f64,
}

fn one() -> f64 {
    1.0
}

#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LossConfig {
    /// Independent per-packet loss probability.
    #[serde(default)]
    pub random: f64,
    #[serde(default)]
    pub burst: Option<BurstLoss>,
}

impl LossConfig {
    pub fn is_lossless(&self) -> bool {
        self.random == 0.0
            && self
                .burst
                .is_none_or(|b| b.loss_good == 0.0 && b.loss_bad == 0.0)
    }
}

/// Decides, packet by packet, which are lost on the line.
pub struct LossState {
    config: LossConfig,
    bad: bool,
    rng: Xoshiro256PlusPlus,
}

impl LossState {
    pub fn new(config: LossConfig, seed: u64) -> Self {
        Self {
            config,
            bad: false,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        }
    }

    pub fn is_lost(&mut self) -> bool {
        let mut lost = self.config.random > 0.0 && self.rng.random::<f64>() < self.config.random;
        if let Some(burst) = self.config.burst {
            let (loss, leave) = if self.bad {
                (burst.loss_bad, burst.p_bad_to_good)
            } else {
                (burst.loss_good, burst.p_good_to_bad)
            };
            lost |= loss > 0.0 && self.rng.random::<f64>() < loss;
            if self.rng.random::<f64>() < leave {
                self.bad = !self.bad;
            }
        }
        lost
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LinkConfig {
    pub rate_bps: u64,
    pub delay_ns: u64,
    pub queue_bytes: u64,
    pub loss: LossConfig,
}

/// What a link saw. `data_*` count TCP payload bytes, for the conservation check.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LinkCounters {
    pub packets_in: u64,
    pub wire_bytes_in: u64,
    pub packets_dropped_queue: u64,
    pub packets_dropped_line: u64,
    pub data_bytes_in: u64,
    pub data_bytes_dropped: u64,
    pub data_bytes_delivered: u64,
    pub max_queue_bytes: u64,
}

pub struct Link {
    config: LinkConfig,
    next: NodeId,
    /// When the line has sent everything admitted so far.
    free_ps: u64,
    line: VecDeque<(u64, Packet)>,
    line_data_bytes: u64,
    loss: Option<LossState>,
    counters: LinkCounters,
}

impl Link {
    pub fn new(config: LinkConfig, next: NodeId, seed: u64) -> Self {
        let loss = (!config.loss.is_lossless()).then(|| LossState::new(config.loss, seed));
        Self {
            config,
            next,
            free_ps: 0,
            line: VecDeque::new(),
            line_data_bytes: 0,
            loss,
            counters: LinkCounters::default(),
        }
    }

    pub fn config(&self) -> &LinkConfig {
        &self.config
    }

    pub fn counters(&self) -> &LinkCounters {
        &self.counters
    }

    /// TCP payload bytes admitted but not yet at the far end.
    pub fn data_bytes_in_flight(&self) -> u64 {
        self.line_data_bytes
    }

    fn serialization_ps(&self, wire_bytes: u32) -> u64 {
        (u128::from(wire_bytes) * 8 * PS_PER_S / u128::from(self.config.rate_bps)) as u64
    }

    /// Bytes the line has still to send at `at_ps`.
    fn backlog_bytes(&self, at_ps: u64) -> u64 {
        let ahead_ps = self.free_ps.saturating_sub(at_ps);
        (u128::from(ahead_ps) * u128::from(self.config.rate_bps) / (8 * PS_PER_S)) as u64
    }

    /// Admit a packet arriving at `arrive_ns`; returns when it reaches the far end, or
    /// `None` if it is dropped (at the tail or on the line).
    pub fn admit(&mut self, pkt: &Packet, arrive_ns: u64) -> Option<u64> {
        let data = if pkt.kind == Kind::Data {
            u64::from(pkt.len)
        } else {
            0
        };
        self.counters.packets_in += 1;
        self.counters.wire_bytes_in += u64::from(pkt.wire_bytes);
        self.counters.data_bytes_in += data;
        let arrive_ps = arrive_ns * PS_PER_NS;
        let backlog = self.backlog_bytes(arrive_ps);
        if backlog + u64::from(pkt.wire_bytes) > self.config.queue_bytes {
            self.counters.packets_dropped_queue += 1;
            self.counters.data_bytes_dropped += data;
            return None;
        }
        self.counters.max_queue_bytes = self.counters.max_queue_bytes.max(backlog);
        // A packet lost on the line has still used it.
        self.free_ps = self.free_ps.max(arrive_ps) + self.serialization_ps(pkt.wire_bytes);
        if self.loss.as_mut().is_some_and(LossState::is_lost) {
            self.counters.packets_dropped_line += 1;
            self.counters.data_bytes_dropped += data;
            return None;
        }
        Some(self.free_ps.div_ceil(PS_PER_NS) + self.config.delay_ns)
    }
}

impl Node for Link {
    fn on_packet(&mut self, pkt: Packet, arrive_ns: u64, ctx: &mut Ctx<'_>) {
        if let Some(due_ns) = self.admit(&pkt, arrive_ns) {
            if self.line.is_empty() {
                ctx.schedule(due_ns, 0);
            }
            if pkt.kind == Kind::Data {
                self.line_data_bytes += u64::from(pkt.len);
            }
            self.line.push_back((due_ns, pkt));
        }
    }

    fn on_timer(&mut self, _token: u64, ctx: &mut Ctx<'_>) {
        while let Some(&(due_ns, pkt)) = self.line.front() {
            if due_ns > ctx.now_ns {
                ctx.schedule(due_ns, 0);
                break;
            }
            self.line.pop_front();
            if pkt.kind == Kind::Data {
                self.line_data_bytes -= u64::from(pkt.len);
                self.counters.data_bytes_delivered += u64::from(pkt.len);
            }
            ctx.send(self.next, pkt, ctx.now_ns);
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Constant-bit-rate cross traffic into a link (the UDP cross-traffic of the USN
/// cross-traffic profiles). It wakes once per `BATCH_NS` and hands the link the packets
/// of that batch with their exact arrival times: cheap, and a TCP packet arriving inside
/// the batch queues behind at most one batch of filler.
pub struct CbrSource {
    link: NodeId,
    packet_bytes: u32,
    gap_ps: u64,
    next_ps: u64,
    sent_packets: u64,
}

const BATCH_NS: u64 = 20_000;

impl CbrSource {
    pub fn new(link: NodeId, rate_bps: u64, packet_bytes: u32) -> Self {
        let gap_ps = (u128::from(packet_bytes) * 8 * PS_PER_S / u128::from(rate_bps)) as u64;
        Self {
            link,
            packet_bytes,
            gap_ps: gap_ps.max(1),
            next_ps: 0,
            sent_packets: 0,
        }
    }

    pub fn sent_packets(&self) -> u64 {
        self.sent_packets
    }
}

impl Node for CbrSource {
    fn on_packet(&mut self, _pkt: Packet, _arrive_ns: u64, _ctx: &mut Ctx<'_>) {}

    fn on_timer(&mut self, _token: u64, ctx: &mut Ctx<'_>) {
        let until_ps = (ctx.now_ns + BATCH_NS) * PS_PER_NS;
        while self.next_ps < until_ps {
            let pkt = Packet::new(Kind::Filler, u32::MAX, self.packet_bytes);
            ctx.send(self.link, pkt, self.next_ps / PS_PER_NS);
            self.sent_packets += 1;
            self.next_ps += self.gap_ps;
        }
        ctx.schedule(self.next_ps / PS_PER_NS, 0);
    }

    fn start(&mut self, ctx: &mut Ctx<'_>) {
        ctx.schedule(0, 0);
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(rate_bps: u64, queue_bytes: u64) -> Link {
        let config = LinkConfig {
            rate_bps,
            delay_ns: 1_000,
            queue_bytes,
            loss: LossConfig::default(),
        };
        Link::new(config, 0, 1)
    }

    #[test]
    fn packets_are_serialized_back_to_back_then_delayed() {
        // 1000 bytes at 8 Gb/s = 1 us each.
        let mut l = link(8_000_000_000, 1_000_000);
        let pkt = Packet::new(Kind::Filler, 0, 1000);
        assert_eq!(l.admit(&pkt, 0), Some(2_000));
        assert_eq!(l.admit(&pkt, 0), Some(3_000));
        assert_eq!(l.admit(&pkt, 10_000), Some(12_000));
    }

    #[test]
    fn the_tail_drops_when_the_backlog_would_overflow() {
        let mut l = link(8_000_000_000, 2_500);
        let pkt = Packet::new(Kind::Filler, 0, 1000);
        assert!(l.admit(&pkt, 0).is_some());
        assert!(l.admit(&pkt, 0).is_some());
        assert!(l.admit(&pkt, 0).is_none(), "2000 queued + 1000 > 2500");
        // Half a microsecond later 1500 bytes remain: room again.
        assert!(l.admit(&pkt, 500).is_some());
        assert_eq!(l.counters().packets_dropped_queue, 1);
    }

    #[test]
    fn random_loss_holds_its_rate_and_a_seed_repeats() {
        let config = LossConfig {
            random: 0.01,
            burst: None,
        };
        let count = |seed| {
            let mut s = LossState::new(config, seed);
            (0..200_000).filter(|_| s.is_lost()).count()
        };
        let n = count(3);
        assert_eq!(n, count(3));
        assert!((1_700..2_300).contains(&n), "{n}");
    }

    #[test]
    fn gilbert_elliott_loses_in_bursts_at_its_stationary_rate() {
        let config = LossConfig {
            random: 0.0,
            burst: Some(BurstLoss {
                p_good_to_bad: 0.001,
                p_bad_to_good: 0.25,
                loss_good: 0.0,
                loss_bad: 1.0,
            }),
        };
        let mut s = LossState::new(config, 5);
        let lost: Vec<bool> = (0..1_000_000).map(|_| s.is_lost()).collect();
        let rate = lost.iter().filter(|&&x| x).count() as f64 / lost.len() as f64;
        let expected = 0.001 / 0.251;
        assert!((rate - expected).abs() / expected < 0.1, "{rate}");
        let bursts = lost.windows(2).filter(|w| !w[0] && w[1]).count() as f64;
        let mean_burst = rate * lost.len() as f64 / bursts;
        assert!((mean_burst - 4.0).abs() < 0.5, "{mean_burst}");
    }
}
