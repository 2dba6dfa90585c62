//! One direction of an emulated link, as a pure state machine: packets are offered at the
//! instant they arrive and released at the instant they reach the far end. No clock, no
//! I/O: time is an argument (nanoseconds), so tests run it in virtual time.
//!
//! A packet is serialized at the link's rate behind what is already queued (`departure =
//! max(now, previous departure) + wire bytes / rate`), dropped at the tail if the queue
//! (the bytes not yet sent) would overflow, possibly lost on the line (a lost segment has
//! still used the line), and due at the far end one propagation delay after its last bit
//! left. Release is paced too: a release that comes late (the emulator was busy) catches
//! up at most `CATCH_UP_NS` of the link's rate in one burst, so the far end never sees
//! more than the configured rate. Later than that, the link is taken to have stalled: all
//! in flight and all queued is delayed by the stall, as if the line had stopped for that
//! long. Nothing arrives faster than the rate, the spacing of packets is kept, the stall
//! is counted, and, if the link stays busy, the queue (not an ever-growing delay) absorbs
//! it: the senders see a queue that fills, not a path that grows longer.

use std::collections::VecDeque;

use serde::Serialize;

use crate::config::{CrossTraffic, DirectionConfig};
use crate::loss::{LossState, Lost};
use crate::packet::{self, Shape, VNET_HDR_LEN};

const PS_PER_NS: u128 = 1_000;
const PS_PER_S: u128 = 1_000_000_000_000;
/// Lateness histogram: bucket k counts releases less than 2^k µs late (the last: later).
const LATENESS_BUCKETS: usize = 22;
/// How much a late release may catch up in one go: a burst of this long at the link rate.
/// Later than this, the link stalls (see the module's notes). This virtual machine stops
/// even an idle real-time thread for 1-9 ms a few times a second (measured with a bare C
/// loop); a catch-up this long rides most of that out, and a stall, which delays every
/// packet in flight at once, ends TCP slow start early (by its delay test) on a long path. The far
/// end still never gets a packet before the real link would have delivered it.
const CATCH_UP_NS: u64 = 10_000_000;

struct InFlight {
    due_ns: u64,
    wire_bytes: u64,
    frame: Vec<u8>,
}

pub struct Direction {
    config: DirectionConfig,
    /// When the line finishes sending everything admitted so far (picoseconds).
    departure_ps: u128,
    last_due_ns: u64,
    loss: LossState,
    cross: Option<Cross>,
    line: VecDeque<InFlight>,
    line_bytes: u64,
    pacer: Pacer,
    stats: Counters,
}

/// Counters of one direction, as `stats` reports them.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Counters {
    pub rx_packets: u64,
    pub rx_segments: u64,
    /// Wire bytes offered (IP bytes of every segment, plus framing if configured).
    pub rx_bytes: u64,
    pub tx_packets: u64,
    pub tx_segments: u64,
    pub tx_bytes: u64,
    pub dropped_queue_segments: u64,
    pub dropped_queue_bytes: u64,
    pub lost_random_segments: u64,
    pub lost_burst_segments: u64,
    pub lost_bytes: u64,
    /// Super-packets cut into segments because a drop or loss fell inside them.
    pub split_packets: u64,
    pub cross_bytes: u64,
    pub cross_dropped_bytes: u64,
    pub queue_max_bytes: u64,
    /// Releases later than due, and by how much: `lateness_us[k]` counts those less than
    /// 2^k µs late (the last bucket, later still).
    pub late_releases: u64,
    /// Releases too late to catch up, after which everything was delayed (see `stall`).
    pub stalls: u64,
    pub stalled_ns: u64,
    pub lateness_max_ns: u64,
    pub lateness_sum_ns: u64,
    pub lateness_us: Vec<u64>,
}

/// What `stats` reports: the counters and the state now.
#[derive(Debug, Clone, Serialize)]
pub struct DirectionStats {
    #[serde(flatten)]
    pub counters: Counters,
    pub queue_bytes: u64,
    pub queue_limit_bytes: u64,
    pub in_flight_packets: usize,
    pub in_flight_bytes: u64,
    pub config: DirectionConfig,
}

impl Direction {
    /// A direction that starts (its cross-traffic, say) at `now_ns`.
    pub fn new(config: DirectionConfig, seed: u64, now_ns: u64) -> Self {
        let pacer = Pacer::new(config.rate_bps);
        Self {
            loss: LossState::new(config.loss.clone(), seed),
            cross: config.cross.clone().map(|c| Cross::new(c, now_ns)),
            config,
            departure_ps: 0,
            last_due_ns: 0,
            line: VecDeque::new(),
            line_bytes: 0,
            pacer,
            stats: Counters {
                lateness_us: vec![0; LATENESS_BUCKETS],
                ..Counters::default()
            },
        }
    }

    pub fn config(&self) -> &DirectionConfig {
        &self.config
    }

    /// Take a packet that arrived at `now_ns`. Gives the frame back when it is not kept
    /// (dropped, lost, or cut into segments), so its buffer can be used again.
    pub fn offer(&mut self, now_ns: u64, frame: Vec<u8>) -> Option<Vec<u8>> {
        self.advance_cross(now_ns);
        let now_ps = u128::from(now_ns) * PS_PER_NS;
        let shape = packet::shape(&frame);
        let overhead = u64::from(self.config.frame_overhead_bytes);
        let wire_bytes = shape.ip_bytes + u64::from(shape.segments) * overhead;
        self.stats.rx_packets += 1;
        self.stats.rx_segments += u64::from(shape.segments);
        self.stats.rx_bytes += wire_bytes;

        if self.backlog_bytes(now_ps) + wire_bytes > self.config.queue_limit_bytes() {
            // Tail drop, segment by segment: those of a super-packet that fit go on.
            match packet::split(&frame) {
                Some(segments) => {
                    self.stats.split_packets += 1;
                    for segment in segments {
                        self.offer_segment(now_ps, segment, overhead);
                    }
                }
                None => self.count_dropped(shape, wire_bytes),
            }
            return Some(frame);
        }
        let start_ps = self.serialize(now_ps, wire_bytes);
        let lost: Vec<Option<Lost>> = if self.loss.is_lossless() {
            Vec::new()
        } else {
            (0..shape.segments).map(|_| self.loss.decide()).collect()
        };
        if lost.iter().all(Option::is_none) {
            self.send(start_ps, wire_bytes, frame);
            return None;
        }
        if let Some(segments) = packet::split(&frame).filter(|s| s.len() == lost.len()) {
            self.stats.split_packets += 1;
            let mut at_ps = start_ps;
            for (segment, cause) in segments.into_iter().zip(lost) {
                let bytes = (segment.len() - VNET_HDR_LEN) as u64 + overhead;
                match cause {
                    Some(cause) => self.count_lost(cause, bytes),
                    None => self.send(at_ps, bytes, segment),
                }
                at_ps += self.transmission_ps(bytes);
            }
        } else {
            // Not one this can cut: the loss of one segment loses the packet.
            let cause = lost.into_iter().flatten().next().unwrap_or(Lost::Random);
            for _ in 0..shape.segments {
                self.count_lost(cause, 0);
            }
            self.stats.lost_bytes += wire_bytes;
        }
        Some(frame)
    }

    fn offer_segment(&mut self, now_ps: u128, segment: Vec<u8>, overhead: u64) {
        let wire_bytes = (segment.len() - VNET_HDR_LEN) as u64 + overhead;
        if self.backlog_bytes(now_ps) + wire_bytes > self.config.queue_limit_bytes() {
            self.stats.dropped_queue_segments += 1;
            self.stats.dropped_queue_bytes += wire_bytes;
            return;
        }
        let start_ps = self.serialize(now_ps, wire_bytes);
        match self.loss.decide() {
            Some(cause) => self.count_lost(cause, wire_bytes),
            None => self.send(start_ps, wire_bytes, segment),
        }
    }

    /// Put `wire_bytes` on the line behind what is there; when its first bit leaves.
    fn serialize(&mut self, now_ps: u128, wire_bytes: u64) -> u128 {
        let start = self.departure_ps.max(now_ps);
        self.departure_ps = start + self.transmission_ps(wire_bytes);
        let queued = self.backlog_bytes(now_ps);
        self.stats.queue_max_bytes = self.stats.queue_max_bytes.max(queued);
        start
    }

    fn send(&mut self, start_ps: u128, wire_bytes: u64, frame: Vec<u8>) {
        let end_ns = (start_ps + self.transmission_ps(wire_bytes)).div_ceil(PS_PER_NS) as u64;
        // A link does not reorder: a shorter delay set meanwhile waits for what is ahead.
        let due_ns = (end_ns + self.config.delay_ns).max(self.last_due_ns);
        self.last_due_ns = due_ns;
        self.line_bytes += wire_bytes;
        self.line.push_back(InFlight {
            due_ns,
            wire_bytes,
            frame,
        });
    }

    fn transmission_ps(&self, wire_bytes: u64) -> u128 {
        u128::from(wire_bytes) * 8 * PS_PER_S / u128::from(self.config.rate_bps)
    }

    /// Bytes admitted but not yet sent at `now_ps`.
    fn backlog_bytes(&self, now_ps: u128) -> u64 {
        let ahead = self.departure_ps.saturating_sub(now_ps);
        (ahead * u128::from(self.config.rate_bps) / 8 / PS_PER_S) as u64
    }

    fn count_lost(&mut self, cause: Lost, wire_bytes: u64) {
        match cause {
            Lost::Random => self.stats.lost_random_segments += 1,
            Lost::Burst => self.stats.lost_burst_segments += 1,
        }
        self.stats.lost_bytes += wire_bytes;
    }

    fn count_dropped(&mut self, shape: Shape, wire_bytes: u64) {
        self.stats.dropped_queue_segments += u64::from(shape.segments);
        self.stats.dropped_queue_bytes += wire_bytes;
    }

    /// When the next packet may be released (None: nothing in flight).
    pub fn next_release_ns(&self) -> Option<u64> {
        let front = self.line.front()?;
        Some(self.pacer.ready_at(front.due_ns, front.wire_bytes))
    }

    /// The next packet, if it may be released at `now_ns`.
    pub fn release(&mut self, now_ns: u64) -> Option<Vec<u8>> {
        let front = self.line.front()?;
        if now_ns < self.pacer.ready_at(front.due_ns, front.wire_bytes) {
            return None;
        }
        let late_ns = now_ns - front.due_ns.min(now_ns);
        if late_ns > CATCH_UP_NS {
            self.stall(now_ns, late_ns);
        }
        let sent = self.line.pop_front()?;
        self.pacer.take(now_ns, sent.wire_bytes);
        self.line_bytes -= sent.wire_bytes;
        self.stats.tx_packets += 1;
        self.stats.tx_segments += u64::from(packet::shape(&sent.frame).segments);
        self.stats.tx_bytes += sent.wire_bytes;
        self.count_lateness(late_ns);
        Some(sent.frame)
    }

    /// The line stopped for `stall_ns` up to `now_ns`: delay all in flight and queued.
    fn stall(&mut self, now_ns: u64, stall_ns: u64) {
        for packet in &mut self.line {
            packet.due_ns += stall_ns;
        }
        self.last_due_ns += stall_ns;
        let now_ps = u128::from(now_ns) * PS_PER_NS;
        if self.departure_ps > now_ps {
            self.departure_ps += u128::from(stall_ns) * PS_PER_NS;
        }
        self.pacer.restart(now_ns);
        self.stats.stalls += 1;
        self.stats.stalled_ns += stall_ns;
    }

    fn count_lateness(&mut self, late_ns: u64) {
        if late_ns == 0 {
            return;
        }
        let s = &mut self.stats;
        s.late_releases += 1;
        s.lateness_sum_ns += late_ns;
        s.lateness_max_ns = s.lateness_max_ns.max(late_ns);
        let micros = late_ns / 1_000;
        let bucket = (u64::BITS - micros.leading_zeros()) as usize; // < 2^bucket µs
        s.lateness_us[bucket.min(LATENESS_BUCKETS - 1)] += 1;
    }

    /// Change what the link imposes from `now_ns` on. Packets in flight keep the times
    /// they were given; later ones get the new rate, delay, queue and loss.
    pub fn reconfigure(&mut self, now_ns: u64, config: DirectionConfig) {
        self.advance_cross(now_ns);
        if config.loss != self.config.loss {
            self.loss.set_model(config.loss.clone());
        }
        if config.cross != self.config.cross {
            self.cross = config.cross.clone().map(|c| Cross::new(c, now_ns));
        }
        self.pacer.set_rate(config.rate_bps);
        self.config = config;
    }

    pub fn stats(&self, now_ns: u64) -> DirectionStats {
        DirectionStats {
            counters: self.stats.clone(),
            queue_bytes: self.backlog_bytes(u128::from(now_ns) * PS_PER_NS),
            queue_limit_bytes: self.config.queue_limit_bytes(),
            in_flight_packets: self.line.len(),
            in_flight_bytes: self.line_bytes,
            config: self.config.clone(),
        }
    }

    /// Frames still in flight, oldest first (for shutting down).
    pub fn drain(&mut self) -> impl Iterator<Item = Vec<u8>> + '_ {
        self.line_bytes = 0;
        self.line.drain(..).map(|f| f.frame)
    }

    /// Put every synthetic cross-traffic packet that arrived up to `now_ns` on the line.
    fn advance_cross(&mut self, now_ns: u64) {
        let Some(mut cross) = self.cross.take() else {
            return;
        };
        let now_ps = u128::from(now_ns) * PS_PER_NS;
        let bytes = u64::from(cross.config.packet_bytes);
        let limit = self.config.queue_limit_bytes();
        while let Some(at_ps) = cross.next_arrival_before(now_ps) {
            if self.departure_ps <= at_ps {
                // The line is idle: the cross-traffic alone never fills it (its rate is
                // below the link's), so jump to its last arrival of this on-period.
                let (last_ps, count) = cross.skip_to_last_arrival_before(now_ps);
                self.departure_ps = last_ps + self.transmission_ps(bytes);
                self.stats.cross_bytes += count * bytes;
                continue;
            }
            if self.backlog_bytes(at_ps) + bytes > limit {
                self.stats.cross_dropped_bytes += bytes;
            } else {
                self.departure_ps += self.transmission_ps(bytes);
                self.stats.cross_bytes += bytes;
            }
            cross.advance();
        }
        self.cross = Some(cross);
    }
}

/// The schedule of synthetic cross-traffic arrivals (picoseconds).
struct Cross {
    config: CrossTraffic,
    started_ps: u128,
    gap_ps: u128,
    next_ps: u128,
}

impl Cross {
    fn new(config: CrossTraffic, now_ns: u64) -> Self {
        let gap_ps = u128::from(config.packet_bytes) * 8 * PS_PER_S / u128::from(config.rate_bps);
        let started_ps = u128::from(now_ns) * PS_PER_NS;
        Self {
            config,
            started_ps,
            gap_ps: gap_ps.max(1),
            next_ps: started_ps,
        }
    }

    fn period_ps(&self) -> Option<(u128, u128)> {
        (self.config.off_ns > 0).then(|| {
            let on = u128::from(self.config.on_ns) * PS_PER_NS;
            (on, on + u128::from(self.config.off_ns) * PS_PER_NS)
        })
    }

    /// The next arrival if it comes before `now_ps`, moved out of any off-period.
    fn next_arrival_before(&mut self, now_ps: u128) -> Option<u128> {
        if let Some((on, period)) = self.period_ps() {
            let into = (self.next_ps - self.started_ps) % period;
            if into >= on {
                self.next_ps += period - into; // the next on-period starts
            }
        }
        (self.next_ps < now_ps).then_some(self.next_ps)
    }

    fn advance(&mut self) {
        self.next_ps += self.gap_ps;
    }

    /// Skip to the last arrival before `now_ps` within the current on-period; its time
    /// and how many arrivals were skipped, it included.
    fn skip_to_last_arrival_before(&mut self, now_ps: u128) -> (u128, u64) {
        let mut end = now_ps;
        if let Some((on, period)) = self.period_ps() {
            let period_start = self.next_ps - (self.next_ps - self.started_ps) % period;
            end = end.min(period_start + on);
        }
        let count = (end - self.next_ps).div_ceil(self.gap_ps).max(1);
        let last = self.next_ps + (count - 1) * self.gap_ps;
        self.next_ps = last + self.gap_ps;
        (last, count as u64)
    }
}

/// A token bucket at the link rate, holding at most `CATCH_UP_NS` of it (and never less
/// than the largest packet): what limits a late release.
struct Pacer {
    rate_bps: u64,
    depth_bytes: f64,
    tokens: f64,
    at_ns: u64,
}

impl Pacer {
    fn new(rate_bps: u64) -> Self {
        let depth_bytes = Self::depth(rate_bps);
        Self {
            rate_bps,
            depth_bytes,
            tokens: depth_bytes,
            at_ns: 0,
        }
    }

    fn depth(rate_bps: u64) -> f64 {
        let burst = rate_bps as f64 * CATCH_UP_NS as f64 / 8e9;
        burst.max(crate::config::MAX_PACKET_WIRE_BYTES as f64)
    }

    fn set_rate(&mut self, rate_bps: u64) {
        self.rate_bps = rate_bps;
        self.depth_bytes = Self::depth(rate_bps);
        self.tokens = self.tokens.min(self.depth_bytes);
    }

    fn tokens_at(&self, now_ns: u64) -> f64 {
        let elapsed = now_ns.saturating_sub(self.at_ns) as f64;
        (self.tokens + elapsed * self.rate_bps as f64 / 8e9).min(self.depth_bytes)
    }

    /// The earliest instant, not before `due_ns`, at which `bytes` may go.
    fn ready_at(&self, due_ns: u64, bytes: u64) -> u64 {
        // Tokens are known from the last release on; a packet due before it waits for
        // what has come in since.
        let from = due_ns.max(self.at_ns);
        let short = bytes as f64 - self.tokens_at(from);
        if short <= 0.0 {
            return due_ns;
        }
        from + (short * 8e9 / self.rate_bps as f64).ceil() as u64
    }

    /// Start again full at `now_ns` (after a stall, the schedule itself moved).
    fn restart(&mut self, now_ns: u64) {
        self.tokens = self.depth_bytes;
        self.at_ns = now_ns;
    }

    fn take(&mut self, now_ns: u64, bytes: u64) {
        self.tokens = self.tokens_at(now_ns) - bytes as f64;
        self.at_ns = now_ns.max(self.at_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{CrossTraffic, Loss};
    use crate::packet::tests::tcp4_super;

    const GBPS: u64 = 1_000_000_000;
    const MS: u64 = 1_000_000;

    fn plain(ip_bytes: usize) -> Vec<u8> {
        let mut frame = vec![0u8; VNET_HDR_LEN + ip_bytes];
        frame[VNET_HDR_LEN] = 0x45;
        frame
    }

    /// Release everything in flight at the earliest instants allowed; (instant, frame).
    fn run_out(link: &mut Direction) -> Vec<(u64, Vec<u8>)> {
        let mut out = Vec::new();
        while let Some(at) = link.next_release_ns() {
            out.push((at, link.release(at).expect("releasable when it says")));
        }
        out
    }

    #[test]
    fn a_lone_packet_takes_serialization_plus_delay() {
        let mut link = Direction::new(DirectionConfig::new(GBPS, 10 * MS), 1, 0);
        assert!(link.offer(5 * MS, plain(1250)).is_none());
        // 1,250 bytes at 1 Gb/s: 10 µs on the line.
        assert_eq!(link.next_release_ns(), Some(5 * MS + 10_000 + 10 * MS));
        assert!(link.release(15 * MS).is_none(), "not before it is due");
        assert_eq!(run_out(&mut link).len(), 1);
    }

    #[test]
    fn packets_leave_at_the_link_rate_behind_each_other() {
        let mut link = Direction::new(DirectionConfig::new(GBPS, MS), 1, 0);
        for _ in 0..100 {
            link.offer(0, plain(1250));
        }
        let out = run_out(&mut link);
        let times: Vec<u64> = out.iter().map(|(t, _)| *t).collect();
        for (k, t) in times.iter().enumerate() {
            assert_eq!(*t, MS + 10_000 * (k as u64 + 1));
        }
        let s = link.stats(0).counters;
        assert_eq!(
            (s.tx_packets, s.tx_bytes, s.late_releases),
            (100, 125_000, 0)
        );
    }

    #[test]
    fn a_super_packet_is_sent_as_its_segments_with_their_headers() {
        let mut link = Direction::new(DirectionConfig::new(GBPS, 0), 1, 0);
        let frame = tcp4_super(1448, 45, 1448, 0);
        link.offer(0, frame);
        let wire = 45 * (1448 + 52);
        assert_eq!(link.next_release_ns(), Some(wire * 8)); // 8 ns per byte at 1 Gb/s
        let s = link.stats(0).counters;
        assert_eq!((s.rx_segments, s.rx_bytes), (45, wire));
    }

    #[test]
    fn the_queue_drops_at_the_tail_and_drains_at_the_rate() {
        let mut config = DirectionConfig::new(GBPS, MS);
        config.queue_bytes = Some(100_000);
        let mut link = Direction::new(config, 1, 0);
        let mut kept = 0;
        for _ in 0..200 {
            if link.offer(0, plain(1000)).is_none() {
                kept += 1;
            }
        }
        assert_eq!(kept, 100);
        let s = link.stats(0);
        assert_eq!(s.counters.dropped_queue_segments, 100);
        assert_eq!(s.queue_bytes, 100_000);
        // Half sent after 400 µs: room for 50 more.
        let now = 400_000;
        assert_eq!(link.stats(now).queue_bytes, 50_000);
        let more = (0..60)
            .filter(|_| link.offer(now, plain(1000)).is_none())
            .count();
        assert_eq!(more, 50);
    }

    #[test]
    fn a_full_queue_keeps_the_segments_of_a_super_packet_that_fit() {
        let mut config = DirectionConfig::new(GBPS, MS);
        config.queue_bytes = Some(72_500);
        let mut link = Direction::new(config, 1, 0);
        link.offer(0, plain(44_000));
        link.offer(0, tcp4_super(1448, 20, 1448, 0)); // 30,000 bytes: 20 segments of 1,500
        let s = link.stats(0).counters;
        assert_eq!(s.split_packets, 1);
        assert_eq!(s.dropped_queue_segments, 1);
        let out = run_out(&mut link);
        assert_eq!(out.len(), 1 + 19);
    }

    #[test]
    fn losses_fall_on_segments_and_still_use_the_line() {
        let mut config = DirectionConfig::new(10 * GBPS, MS);
        config.loss = Loss::Random { probability: 0.01 };
        config.queue_bytes = Some(1_000_000_000);
        let mut link = Direction::new(config, 3, 0);
        let n_packets = 4_000;
        for _ in 0..n_packets {
            link.offer(0, tcp4_super(1448, 44, 1448, 0));
        }
        let s = link.stats(0).counters;
        let segments = 44 * n_packets as u64;
        let lost = s.lost_random_segments;
        let sigma = (segments as f64 * 0.01 * 0.99).sqrt();
        assert!(
            (lost as f64 - segments as f64 * 0.01).abs() < 5.0 * sigma,
            "{lost}"
        );
        let out = run_out(&mut link);
        let delivered: u64 = out
            .iter()
            .map(|(_, f)| u64::from(packet::shape(f).segments))
            .sum();
        assert_eq!(delivered + lost, segments);
        // Every segment was on the line: the last leaves when all of them would have.
        let wire = segments * 1500;
        let last = out.last().unwrap().0;
        assert!(last >= MS + wire * 8 / 10, "{last}");
    }

    #[test]
    fn a_late_release_catches_up_no_faster_than_the_rate() {
        let mut link = Direction::new(DirectionConfig::new(GBPS, MS), 1, 0);
        for k in 0..1000 {
            link.offer(k * 10_000, plain(1250)); // at the line rate: no queue
        }
        // The emulator wakes 0.8 ms late and releases whatever it may, as fast as allowed.
        let woke = link.next_release_ns().unwrap() + 800_000;
        let released = release_all_from(&mut link, woke);
        // 0.8 ms of packets at once (less than the catch-up allowed), then 10 µs apart.
        let burst = released.iter().filter(|(t, _)| *t == woke).count() as u64;
        assert!(burst * 1250 <= 100_000 + 1250, "{burst}");
        assert_paced(&released, 10_000);
        let (last, due) = *released.last().unwrap();
        assert_eq!(last, due, "caught up");
        let s = link.stats(last).counters;
        assert_eq!(s.stalls, 0);
        assert!(s.late_releases > 50 && s.lateness_max_ns == 800_000);
        assert_eq!(s.lateness_us.iter().sum::<u64>(), s.late_releases);
    }

    #[test]
    fn a_release_too_late_to_catch_up_stalls_the_link() {
        let mut link = Direction::new(DirectionConfig::new(GBPS, MS), 1, 0);
        for k in 0..1000 {
            link.offer(k * 10_000, plain(1250));
        }
        let woke = link.next_release_ns().unwrap() + 20 * MS; // more than a burst makes up
        let released = release_all_from(&mut link, woke);
        assert_paced(&released, 10_000);
        // Everything after was delayed by the stall, and none of it is late any more.
        let s = link.stats(woke).counters;
        assert_eq!((s.stalls, s.stalled_ns, s.late_releases), (1, 20 * MS, 1));
        assert_eq!(released[1].0, woke + 10_000);
    }

    #[test]
    fn a_stall_on_a_busy_link_shows_as_queue() {
        let mut link = Direction::new(DirectionConfig::new(GBPS, 50 * MS), 1, 0);
        let mut t = 0;
        while t <= 80 * MS {
            link.offer(t, plain(1250)); // at the line rate, nothing released yet
            t += 10_000;
        }
        assert!(link.stats(80 * MS).queue_bytes <= 1250);
        link.release(80 * MS).unwrap(); // 30 ms late: a stall
        let s = link.stats(80 * MS);
        assert_eq!(s.counters.stalls, 1);
        // The line is now busy 30 ms further ahead: 3.75 MB queued at 1 Gb/s.
        assert!(
            (s.queue_bytes as i64 - 3_750_000).abs() <= 2_500,
            "{}",
            s.queue_bytes
        );
    }

    /// Release everything from `woke` on, each as early as allowed; (when, when due).
    fn release_all_from(link: &mut Direction, woke: u64) -> Vec<(u64, u64)> {
        let mut now = woke;
        let mut released = Vec::new();
        while let Some(ready) = link.next_release_ns() {
            now = now.max(ready);
            let due = link.line.front().unwrap().due_ns;
            link.release(now).unwrap();
            released.push((now, due));
        }
        released
    }

    /// Never faster than one packet per `gap_ns` beyond the first catch-up burst.
    fn assert_paced(released: &[(u64, u64)], gap_ns: u64) {
        let first = released[0].0;
        let burst = released.iter().take_while(|(t, _)| *t == first).count();
        for window in released[burst.max(1) - 1..].windows(2) {
            assert!(window[1].0 - window[0].0 >= gap_ns - 1, "{window:?}");
        }
    }

    #[test]
    fn reconfiguring_keeps_what_is_in_flight_and_never_reorders() {
        let mut link = Direction::new(DirectionConfig::new(GBPS, 50 * MS), 1, 0);
        link.offer(0, plain(100));
        let mut faster = DirectionConfig::new(2 * GBPS, 10 * MS);
        faster.queue_bytes = Some(1_000_000);
        link.reconfigure(MS, faster);
        link.offer(MS, plain(200));
        let out = run_out(&mut link);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].1.len(), VNET_HDR_LEN + 100);
        assert!(out[0].0 >= 50 * MS);
        assert!(
            out[1].0 >= out[0].0,
            "the later packet waits for the earlier one"
        );
        assert_eq!(link.config().rate_bps, 2 * GBPS);
    }

    #[test]
    fn cross_traffic_takes_its_share_of_the_line() {
        let mut config = DirectionConfig::new(GBPS, MS);
        config.cross = Some(CrossTraffic {
            rate_bps: GBPS / 2,
            packet_bytes: 1250,
            on_ns: 0,
            off_ns: 0,
        });
        let mut link = Direction::new(config, 1, 0);
        // A quarter of the rate beside half of it for cross-traffic: all of it fits, and
        // the line is three-quarters busy.
        let mut t = 0;
        while t < 1_000 * MS {
            link.offer(t, plain(1250));
            t += 40_000;
        }
        let s = link.stats(t).counters;
        assert_eq!(s.dropped_queue_segments + s.cross_dropped_bytes, 0);
        assert!(
            (s.cross_bytes as i64 - 62_500_000).abs() <= 2 * 1250,
            "{}",
            s.cross_bytes
        );
        // Offered together above the rate, the two share a tail-drop queue: every byte
        // of the line is used.
        let mut busy = Direction::new(link.config().clone(), 1, 0);
        let mut t = 0;
        while t < 1_000 * MS {
            busy.offer(t, plain(1250));
            t += 8_000; // 1.25 Gb/s
        }
        let stats = busy.stats(t);
        let s = stats.counters;
        let offered_cross = 62_500_000;
        assert!((s.cross_bytes + s.cross_dropped_bytes) as i64 - offered_cross <= 1250);
        let sent = s.rx_bytes - s.dropped_queue_bytes + s.cross_bytes - stats.queue_bytes;
        assert!((sent as f64 - 125e6).abs() < 0.001 * 125e6, "{sent}");
        assert!(s.dropped_queue_segments > 0 && s.cross_dropped_bytes > 0);
    }

    #[test]
    fn on_off_cross_traffic_is_off_half_the_time() {
        let mut config = DirectionConfig::new(GBPS, MS);
        config.cross = Some(CrossTraffic {
            rate_bps: GBPS / 4,
            packet_bytes: 1250,
            on_ns: 10 * MS,
            off_ns: 10 * MS,
        });
        let mut link = Direction::new(config, 1, 0);
        link.offer(1_000 * MS, plain(100)); // the line was idle: all cross-traffic got through
        let cross = link.stats(1_000 * MS).counters.cross_bytes;
        assert!((cross as i64 - 15_625_000).abs() <= 1_250, "{cross}");
    }
}
