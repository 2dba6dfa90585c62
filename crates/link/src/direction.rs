//! One direction of a link as a pure state machine: frames are offered at the instant they
//! arrive and released at the instant they reach the far end. No clock, no I/O: time is an
//! argument (nanoseconds), so the emulator runs it against real time and the simulator
//! against virtual time, and tests against both.
//!
//! **Ingress.** A frame is serialized at the line rate behind what is already queued
//! (`end = max(now, line free) + wire bytes / rate`, wire bytes counting the layer's
//! framing per segment), dropped at the tail if the queue (the bytes not yet sent) would
//! overflow, perhaps lost on the line (a lost segment has still used the line), and due
//! at the far end one propagation delay (plus any jitter) after its last bit left, never
//! before the frame ahead of it.
//!
//! **Egress, at a strict rate.** A frame leaves when it is due and when the line has had
//! time to carry it since the last one left: `V + tx - tolerance`, `V` the instant the last
//! frame's last bit arrived. So no window of any length carries more than the rate allows
//! plus `PACING_TOLERANCE_NS` of it: a late release (the emulator was busy) delays what
//! follows and never hurries it. Frames left behind their due (a late release, or frames
//! bunched by a cut in delay or rate, or by jitter) leave back to back at the rate until
//! the line is back on its schedule, and frames still on their way keep their times: the
//! least delay a late release can cost, where holding the whole line back by the lateness
//! (an earlier design) delayed every frame in flight by all of it for good. On a 163 ms
//! loop in slow start that turned a few tens of microseconds of lateness per round into
//! tens of milliseconds on every round trip after, and cubic's `HyStart`, which ends slow
//! start when a round's least RTT grows by 16 ms, left it at a few percent of the line.
//! How far behind its schedule the line fell, and why, is counted: lateness of the
//! releaser (`late_held_ns`), bunching (`paced_held_ns`), falls of 1 ms or more (`stalls`).
//!
//! Times inside are picoseconds so rounding never drifts the rate, counted in a u64 from
//! an origin near the present (`origin_ns`), which moves up every `REBASE_AFTER_NS` so
//! an emulator that runs for years never overflows it. Counted in u128 from boot, as
//! they were, the simulator ran 4.6-5.9 % more instructions (callgrind, for identical
//! runs).

use std::collections::VecDeque;

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use serde::Serialize;

use crate::config::DirectionConfig;
use crate::cross::Arrivals;
use crate::health::{Lateness, RateWindow};
use crate::jitter::JitterState;
use crate::loss::{Cause, LossState};
use crate::{PS_PER_NS, PS_PER_S};

/// How far a release may run ahead of strict spacing, to make up for one that came late:
/// 5 us of the line. A window of 1 ms then carries at most 0.5 % above the rate, and a
/// window of a frame's own length at most the rate plus that frame.
pub const PACING_TOLERANCE_NS: u64 = 5_000;
/// A hold of the line this long or longer is counted as a stall.
pub const STALL_NS: u64 = 1_000_000;
/// The window over which the largest delivered rate is tracked.
pub const RATE_WINDOW_NS: u64 = 1_000_000;
/// How far the line's clock runs from its origin before the origin moves up: 2^53 ns
/// (104 days) is 9.0e18 ps, half of a u64's range, so an instant a frame is due (its
/// delay and queue ahead of now) always fits.
const REBASE_AFTER_NS: u64 = 1 << 53;
/// How much of the past a moved origin keeps exact: 2^40 ns (18 minutes). An instant
/// older than that (the line free, the last frame due or paced) reads as the new origin,
/// which changes nothing where it is compared with the present; only a burst-loss chain
/// idle since then counts fewer idle slots, about 10^9 at 1,500 bytes and 10 Gb/s,
/// which leave it at its stationary share all the same.
const REBASE_KEEP_NS: u64 = 1 << 40;

/// How a frame appears on the wire: a plain packet is one segment, a GSO super-packet
/// several, all of one size but the last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub segments: u32,
    /// IP bytes of all its segments, each with its own headers.
    pub ip_bytes: u64,
    pub last_segment_ip_bytes: u64,
}

impl Shape {
    pub fn single(ip_bytes: u64) -> Self {
        Self {
            segments: 1,
            ip_bytes,
            last_segment_ip_bytes: ip_bytes,
        }
    }

    pub fn segment_ip_bytes(&self, index: u32) -> u64 {
        if index + 1 >= self.segments {
            self.last_segment_ip_bytes
        } else {
            (self.ip_bytes - self.last_segment_ip_bytes) / u64::from(self.segments - 1)
        }
    }
}

/// A frame's place on the line, given by `offer` and handed back with `push` before the
/// direction is next told the time (its instants count from the clock's origin then).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    start_ps: u64,
    due_ps: u64,
    /// Its transmission time at the rate in force (what the release pacing spaces by).
    tx_ps: u64,
    jitter_ps: u64,
    wire_bytes: u64,
    segments: u32,
}

impl Slot {
    /// How many wire segments the slot carries.
    pub fn segments(&self) -> u32 {
        self.segments
    }

    /// This slot and `next` as one, if `next` follows it on the line back to back and
    /// neither drew jitter: released when its last segment is due, as a whole
    /// super-packet is.
    fn joined(&self, next: &Slot) -> Option<Slot> {
        let back_to_back = next.start_ps == self.start_ps + self.tx_ps;
        (back_to_back && self.jitter_ps == 0 && next.jitter_ps == 0).then(|| Slot {
            start_ps: self.start_ps,
            due_ps: next.due_ps.max(self.due_ps),
            tx_ps: self.tx_ps + next.tx_ps,
            jitter_ps: 0,
            wire_bytes: self.wire_bytes + next.wire_bytes,
            segments: self.segments + next.segments,
        })
    }
}

/// The kept segments of a cut frame as runs of neighbours on the line, each with the
/// index of its first segment and one slot for the run.
///
/// When a full queue takes only the first part of each super-packet (as it does all
/// through a slow start's overshoot), cutting into single segments turned every 64 KB
/// frame into 45, and the emulator, which pays for every frame it hands over, fell
/// behind the line it emulates (at 9.6 Gb/s, 1,500-byte frames leave every 1.25 us). A
/// run goes on as one frame, as the receiving host's GRO would have merged it anyway.
pub fn kept_runs(parts: &[Result<Slot, Fate>]) -> Vec<(u32, Slot)> {
    let mut runs: Vec<(u32, Slot)> = Vec::new();
    let mut extends_last = false;
    for (index, part) in parts.iter().enumerate() {
        let Ok(slot) = part else {
            extends_last = false;
            continue;
        };
        let joined = match runs.last() {
            Some((_, last)) if extends_last => last.joined(slot),
            _ => None,
        };
        match (joined, runs.last_mut()) {
            (Some(joined), Some(last)) => last.1 = joined,
            _ => runs.push((index as u32, *slot)),
        }
        extends_last = true;
    }
    runs
}

/// What became of a frame, or of a segment of one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// The queue was full.
    Dropped,
    Lost(Cause),
}

/// The answer to `offer`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Offer {
    /// Kept whole: `push` it with this slot.
    Whole(Slot),
    /// Not kept at all.
    Refused(Fate),
    /// Some of its segments are kept: cut it into its segments and `push` each kept one
    /// with its slot, in order; if it cannot be cut, `abandon` this.
    Cut(Vec<Result<Slot, Fate>>),
}

/// Counters of one direction.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Counters {
    pub rx_frames: u64,
    pub rx_segments: u64,
    /// Wire bytes offered (IP bytes of every segment plus its framing).
    pub rx_bytes: u64,
    pub tx_frames: u64,
    pub tx_segments: u64,
    pub tx_bytes: u64,
    pub dropped_queue_segments: u64,
    pub dropped_queue_bytes: u64,
    pub lost_random_segments: u64,
    pub lost_burst_segments: u64,
    pub lost_bytes: u64,
    /// Super-packets cut into segments because a drop or loss fell inside them.
    pub split_frames: u64,
    pub cross_bytes: u64,
    pub cross_dropped_bytes: u64,
    pub reordered: u64,
    pub duplicated: u64,
    pub queue_max_bytes: u64,
    /// How late releases came against the earliest instant each was allowed.
    pub lateness: Lateness,
    /// Line time lost to late releases: how far they put the line behind its schedule,
    /// in all.
    pub late_held_ns: u64,
    /// How far frames that arrived bunched (a cut in delay or rate, jitter) put the line
    /// behind its schedule, in all: the time they were held to keep to the rate.
    pub paced_held_ns: u64,
    /// Falls behind the schedule of `STALL_NS` or more at once.
    pub stalls: u64,
}

/// What `stats` reports: the counters and the state now.
#[derive(Debug, Clone, Serialize)]
pub struct DirectionStats {
    #[serde(flatten)]
    pub counters: Counters,
    pub queue_bytes: u64,
    pub queue_limit_bytes: u64,
    pub in_flight_frames: usize,
    pub in_flight_bytes: u64,
    pub line_rate_bps: u64,
    pub frame_overhead_bytes: u64,
    /// The most delivered in any 1 ms window over what the rate in force allowed in it.
    pub max_1ms_rate_ratio: f64,
    pub config: DirectionConfig,
}

/// The worst since the last `take_peaks`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Peaks {
    pub lateness_max_ns: u64,
    pub max_1ms_rate_ratio: f64,
}

struct InFlight<F> {
    slot: Slot,
    frame: F,
}

pub struct Direction<F> {
    config: DirectionConfig,
    rate_bps: u64,
    overhead_bytes: u64,
    queue_limit_bytes: u64,
    /// The instant (nanoseconds) the line's picoseconds count from.
    origin_ns: u64,
    /// How far from the origin the clock may run before it moves (`REBASE_AFTER_NS`;
    /// less in tests).
    rebase_after_ns: u64,
    /// How far behind its schedule the line has fallen, as last counted (picoseconds):
    /// what a release leaves behind beyond this and the tolerance is newly counted.
    counted_behind_ps: u64,
    /// When the line finishes serializing everything admitted (picoseconds).
    line_free_ps: u64,
    last_due_ps: u64,
    /// When the last released frame's last bit arrived, at the strict rate (picoseconds).
    pace_ps: u64,
    loss: LossState,
    jitter: JitterState,
    faults: Xoshiro256PlusPlus,
    hold_back_next: bool,
    cross: Option<Arrivals>,
    line: VecDeque<InFlight<F>>,
    line_wire_bytes: u64,
    counters: Counters,
    /// None in virtual time, where releases are never late and the rate is exact.
    window: Option<RateWindow>,
    peak_late_ns: u64,
}

impl<F: Clone> Direction<F> {
    /// A direction that starts (its cross-traffic, say) at `now_ns`.
    pub fn new(config: DirectionConfig, seed: u64, now_ns: u64) -> Self {
        let rate_bps = config.line_rate_bps();
        Self {
            rate_bps,
            overhead_bytes: config.overhead_bytes(),
            queue_limit_bytes: config.queue_limit_bytes(),
            loss: LossState::new(config.loss, seed),
            jitter: JitterState::new(seed ^ 0x6a09_e667_f3bc_c908),
            faults: Xoshiro256PlusPlus::seed_from_u64(seed ^ 0xbb67_ae85_84ca_a73b),
            hold_back_next: false,
            cross: config.cross.clone().map(|c| Arrivals::new(c, 0)),
            config,
            origin_ns: now_ns,
            rebase_after_ns: REBASE_AFTER_NS,
            counted_behind_ps: 0,
            line_free_ps: 0,
            last_due_ps: 0,
            pace_ps: 0,
            line: VecDeque::new(),
            line_wire_bytes: 0,
            counters: Counters::default(),
            window: Some(RateWindow::new(RATE_WINDOW_NS, rate_bps)),
            peak_late_ns: 0,
        }
    }

    /// A direction for a simulator: released in virtual time, exactly when allowed, so it
    /// keeps no record of lateness or of the rate it delivered (those would be zero and
    /// exact), which saves a simulator a tenth of its time.
    pub fn in_virtual_time(config: DirectionConfig, seed: u64) -> Self {
        let mut direction = Self::new(config, seed, 0);
        direction.window = None;
        direction
    }

    /// The same direction, its clock's origin moved up whenever it has run `after_ns`
    /// (in place of `REBASE_AFTER_NS`, and keeping at most `after_ns` of the past): for
    /// tests of the move, which must change nothing.
    #[doc(hidden)]
    #[must_use]
    pub fn with_rebase_after_ns(mut self, after_ns: u64) -> Self {
        self.rebase_after_ns = after_ns.clamp(1, REBASE_AFTER_NS);
        self
    }

    pub fn config(&self) -> &DirectionConfig {
        &self.config
    }

    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The rate in force (the configured one, capped by the layer).
    pub fn line_rate_bps(&self) -> u64 {
        self.rate_bps
    }

    /// Wire bytes in flight: admitted, not yet released.
    pub fn in_flight_bytes(&self) -> u64 {
        self.line_wire_bytes
    }

    pub fn in_flight_frames(&self) -> usize {
        self.line.len()
    }

    /// The oldest frame still held, if any.
    pub fn front(&self) -> Option<&F> {
        self.line.front().map(|f| &f.frame)
    }

    fn transmission_ps(&self, wire_bytes: u64) -> u64 {
        // In u128 only when the product does not fit (over 2 MB, a queue's backlog at a
        // change of rate): a u128 division is a library call, and this runs for every
        // frame.
        match wire_bytes.checked_mul(8 * PS_PER_S) {
            Some(bits_ps) => bits_ps / self.rate_bps,
            None => {
                (u128::from(wire_bytes) * 8 * u128::from(PS_PER_S) / u128::from(self.rate_bps))
                    as u64
            }
        }
    }

    fn wire_bytes(&self, ip_bytes: u64, segments: u32) -> u64 {
        ip_bytes + u64::from(segments) * self.overhead_bytes
    }

    /// Bytes admitted but not yet sent at `now_ps` (picoseconds).
    fn backlog_bytes(&self, now_ps: u64) -> u64 {
        let ahead = self.line_free_ps.saturating_sub(now_ps);
        if ahead == 0 {
            return 0;
        }
        match ahead.checked_mul(self.rate_bps) {
            Some(bits_ps) => bits_ps / 8 / PS_PER_S,
            None => {
                (u128::from(ahead) * u128::from(self.rate_bps) / 8 / u128::from(PS_PER_S)) as u64
            }
        }
    }

    /// An instant in nanoseconds as the line's picoseconds, for a look that changes
    /// nothing (an instant past the clock's range reads as its end).
    fn line_ps(&self, now_ns: u64) -> u64 {
        now_ns
            .saturating_sub(self.origin_ns)
            .saturating_mul(PS_PER_NS)
    }

    /// `now_ns` as the line's picoseconds, the clock's origin first moved up if it has
    /// run `rebase_after_ns` from it: every call that changes the line comes through
    /// here, so the product never overflows.
    fn clock_ps(&mut self, now_ns: u64) -> u64 {
        let since_ns = now_ns.wrapping_sub(self.origin_ns);
        if since_ns >= self.rebase_after_ns {
            // Or before the origin (an instant read before the direction was made),
            // which reads as the origin.
            if now_ns > self.origin_ns {
                self.rebase(now_ns);
            }
            return self.line_ps(now_ns);
        }
        since_ns * PS_PER_NS
    }

    /// The line's picoseconds as nanoseconds, rounded up (never early).
    fn real_ns(&self, ps: u64) -> u64 {
        self.origin_ns + ps.div_ceil(PS_PER_NS)
    }

    /// Move the origin up to `REBASE_KEEP_NS` before `now_ns`, or less, so that no frame
    /// in flight nor the cross-traffic's period begins before it: each moves by the same
    /// whole nanoseconds, and every difference between them stays what it was.
    #[cold]
    fn rebase(&mut self, now_ns: u64) {
        let mut shift_ns =
            (now_ns - self.origin_ns).saturating_sub(REBASE_KEEP_NS.min(self.rebase_after_ns));
        for in_flight in &self.line {
            shift_ns = shift_ns.min(in_flight.slot.start_ps / PS_PER_NS);
        }
        if let Some(cross) = &mut self.cross {
            shift_ns = shift_ns.min(cross.anchor_ps() / PS_PER_NS);
        }
        let shift_ps = shift_ns * PS_PER_NS;
        self.origin_ns += shift_ns;
        self.line_free_ps = self.line_free_ps.saturating_sub(shift_ps);
        self.last_due_ps = self.last_due_ps.saturating_sub(shift_ps);
        self.pace_ps = self.pace_ps.saturating_sub(shift_ps);
        for in_flight in &mut self.line {
            in_flight.slot.start_ps -= shift_ps;
            in_flight.slot.due_ps -= shift_ps;
        }
        if let Some(cross) = &mut self.cross {
            cross.rebase(shift_ps);
        }
    }

    /// Take a frame of `shape` that arrived at `now_ns`: where it goes on the line, or why
    /// it does not.
    pub fn offer(&mut self, now_ns: u64, shape: Shape) -> Offer {
        let now = self.clock_ps(now_ns);
        self.advance_cross(now);
        let wire = self.wire_bytes(shape.ip_bytes, shape.segments);
        if now > self.line_free_ps && self.loss.model().burst.is_some() {
            // Burst loss runs in line time: the slots the line sat idle are steps of the
            // chain too, or a sender backing off after a timeout would find the line as
            // bad as it left it.
            let slot_ps = self.transmission_ps(wire / u64::from(shape.segments.max(1)));
            self.loss.idle((now - self.line_free_ps) / slot_ps.max(1));
        }
        self.counters.rx_frames += 1;
        self.counters.rx_segments += u64::from(shape.segments);
        self.counters.rx_bytes += wire;
        let backlog = self.backlog_bytes(now);
        if backlog + wire > self.queue_limit_bytes {
            if shape.segments == 1 {
                self.count(Fate::Dropped, 1, wire);
                return Offer::Refused(Fate::Dropped);
            }
            // Tail drop, segment by segment: those of a super-packet that fit go on.
            self.counters.split_frames += 1;
            let parts = (0..shape.segments)
                .map(|k| self.offer_segment(now, shape.segment_ip_bytes(k)))
                .collect();
            return Offer::Cut(parts);
        }
        let (start, tx) = self.serialize(now, backlog, wire);
        if self.loss.model().is_lossless() {
            return Offer::Whole(self.slot(start, tx, wire, shape.segments));
        }
        if shape.segments == 1 {
            // No list of one fate: a simulator offers every frame this way.
            return match self.loss.decide() {
                None => Offer::Whole(self.slot(start, tx, wire, 1)),
                Some(cause) => {
                    self.count(Fate::Lost(cause), 1, wire);
                    Offer::Refused(Fate::Lost(cause))
                }
            };
        }
        let fates: Vec<Option<Cause>> = (0..shape.segments).map(|_| self.loss.decide()).collect();
        if fates.iter().all(Option::is_none) {
            return Offer::Whole(self.slot(start, tx, wire, shape.segments));
        }
        self.counters.split_frames += 1;
        let mut at = start;
        let mut parts = Vec::with_capacity(fates.len());
        for (k, cause) in fates.into_iter().enumerate() {
            let bytes = self.wire_bytes(shape.segment_ip_bytes(k as u32), 1);
            let tx = self.transmission_ps(bytes);
            parts.push(match cause {
                Some(cause) => {
                    self.count(Fate::Lost(cause), 1, bytes);
                    Err(Fate::Lost(cause))
                }
                None => Ok(self.slot(at, tx, bytes, 1)),
            });
            at += tx;
        }
        Offer::Cut(parts)
    }

    fn offer_segment(&mut self, now: u64, ip_bytes: u64) -> Result<Slot, Fate> {
        let wire = self.wire_bytes(ip_bytes, 1);
        let backlog = self.backlog_bytes(now);
        if backlog + wire > self.queue_limit_bytes {
            self.count(Fate::Dropped, 1, wire);
            return Err(Fate::Dropped);
        }
        let (start, tx) = self.serialize(now, backlog, wire);
        match self.loss.decide() {
            Some(cause) => {
                self.count(Fate::Lost(cause), 1, wire);
                Err(Fate::Lost(cause))
            }
            None => Ok(self.slot(start, tx, wire, 1)),
        }
    }

    /// Give up a cut frame that could not be cut after all: its kept segments are lost.
    pub fn abandon(&mut self, parts: &[Result<Slot, Fate>]) {
        for slot in parts.iter().flatten() {
            self.count(Fate::Lost(Cause::Random), slot.segments, slot.wire_bytes);
        }
    }

    fn count(&mut self, fate: Fate, segments: u32, wire_bytes: u64) {
        let c = &mut self.counters;
        match fate {
            Fate::Dropped => {
                c.dropped_queue_segments += u64::from(segments);
                c.dropped_queue_bytes += wire_bytes;
            }
            Fate::Lost(cause) => {
                match cause {
                    Cause::Random => c.lost_random_segments += u64::from(segments),
                    Cause::Burst => c.lost_burst_segments += u64::from(segments),
                }
                c.lost_bytes += wire_bytes;
            }
        }
    }

    /// Put `wire_bytes` on the line behind the `backlog` there; when its first bit leaves,
    /// and how long it takes to send.
    fn serialize(&mut self, now: u64, backlog: u64, wire_bytes: u64) -> (u64, u64) {
        let start = self.line_free_ps.max(now);
        let tx = self.transmission_ps(wire_bytes);
        self.line_free_ps = start + tx;
        let queued = backlog + wire_bytes;
        self.counters.queue_max_bytes = self.counters.queue_max_bytes.max(queued);
        (start, tx)
    }

    fn slot(&mut self, start_ps: u64, tx_ps: u64, wire_bytes: u64, segments: u32) -> Slot {
        let jitter_ps = match &self.config.jitter {
            Some(j) => self.jitter.draw_ps(j),
            None => 0,
        };
        let delay_ps = self.config.delay_ns * PS_PER_NS;
        // A link does not reorder: a frame is never due before the one ahead of it.
        let due_ps = (start_ps + tx_ps + delay_ps + jitter_ps).max(self.last_due_ps);
        self.last_due_ps = due_ps;
        Slot {
            start_ps,
            due_ps,
            tx_ps,
            jitter_ps,
            wire_bytes,
            segments,
        }
    }

    /// Put a kept frame (or segment) on the line at the slot `offer` gave it; how many
    /// times it will be released (twice if the duplication fault picked it).
    pub fn push(&mut self, slot: Slot, frame: F) -> usize {
        let faults = self.config.faults;
        if faults.is_none() {
            self.enqueue(slot, frame);
            return 1;
        }
        if self.hold_back_next && !self.line.is_empty() {
            // The frame held back goes behind this one.
            self.hold_back_next = false;
            self.counters.reordered += 1;
            let held = self.line.pop_back().expect("not empty");
            self.line_wire_bytes -= held.slot.wire_bytes;
            self.enqueue(slot, frame);
            self.enqueue(held.slot, held.frame);
            return 1;
        }
        self.hold_back_next = faults.reorder > 0.0 && self.faults.random::<f64>() < faults.reorder;
        let copies = if faults.duplicate > 0.0 && self.faults.random::<f64>() < faults.duplicate {
            self.counters.duplicated += 1;
            self.enqueue(slot, frame.clone());
            2
        } else {
            1
        };
        self.enqueue(slot, frame);
        copies
    }

    fn enqueue(&mut self, slot: Slot, frame: F) {
        self.line_wire_bytes += slot.wire_bytes;
        self.line.push_back(InFlight { slot, frame });
    }

    /// The earliest instant (picoseconds) the front frame may leave: when it is due, and
    /// when the line has carried the one before it.
    fn allowed_ps(&self, front: &InFlight<F>) -> u64 {
        let tolerance = PACING_TOLERANCE_NS * PS_PER_NS;
        let paced = (self.pace_ps + front.slot.tx_ps).saturating_sub(tolerance);
        front.slot.due_ps.max(paced)
    }

    /// When the next frame may be released (None: nothing in flight).
    pub fn next_release_ns(&self) -> Option<u64> {
        let front = self.line.front()?;
        Some(self.real_ns(self.allowed_ps(front)))
    }

    /// The next frame, if it may be released at `now_ns`.
    pub fn release(&mut self, now_ns: u64) -> Option<F> {
        self.release_or_next(now_ns).ok()
    }

    /// The next frame if it may be released at `now_ns`; if not, when it may be (None:
    /// nothing in flight). One look at the front where `release` then `next_release_ns`
    /// take three, for a simulator that releases each frame at its instant.
    pub fn release_or_next(&mut self, now_ns: u64) -> Result<F, Option<u64>> {
        let now = self.clock_ps(now_ns);
        let Some(front) = self.line.front() else {
            return Err(None);
        };
        let allowed = self.allowed_ps(front);
        if now < allowed {
            return Err(Some(self.real_ns(allowed)));
        }
        let late_ps = now - allowed;
        let wire = front.slot.wire_bytes;
        let due = front.slot.due_ps;
        let finish = now.max(self.pace_ps + front.slot.tx_ps);
        self.fell_behind(finish - due.min(finish), late_ps);
        self.pace_ps = finish;
        let sent = self.line.pop_front().expect("looked at above");
        self.line_wire_bytes -= wire;
        let c = &mut self.counters;
        c.tx_frames += 1;
        c.tx_segments += u64::from(sent.slot.segments);
        c.tx_bytes += wire;
        if let Some(window) = &mut self.window {
            let late_ns = late_ps / PS_PER_NS;
            c.lateness.record(late_ns);
            self.peak_late_ns = self.peak_late_ns.max(late_ns);
            window.record(now_ns, wire);
        }
        Ok(sent.frame)
    }

    /// The frame last released reached the far end only at `at_ns` (the machine held up
    /// its delivery after `release` said it could go): taken as that much later a
    /// release, so the next frame is spaced from when this one really went. No window
    /// then carries more than the rate, as the far end sees it too.
    pub fn landed(&mut self, at_ns: u64) {
        let at = self.clock_ps(at_ns);
        if at <= self.pace_ps {
            return;
        }
        let extra = at - self.pace_ps;
        self.pace_ps = at;
        self.counted_behind_ps += extra;
        self.count_fall(extra, extra);
        if self.window.is_some() {
            self.peak_late_ns = self.peak_late_ns.max(extra / PS_PER_NS);
        }
    }

    /// A frame left `behind_ps` after it was due, `late_ps` of it the releaser's
    /// lateness: count how much further behind its schedule the line fell, beyond the
    /// tolerance, since it was last counted, and follow it back as the line catches up.
    fn fell_behind(&mut self, behind_ps: u64, late_ps: u64) {
        let tolerance = PACING_TOLERANCE_NS * PS_PER_NS;
        if behind_ps <= self.counted_behind_ps + tolerance {
            self.counted_behind_ps = self.counted_behind_ps.min(behind_ps);
            return;
        }
        let fell = behind_ps - tolerance - self.counted_behind_ps;
        self.counted_behind_ps = behind_ps - tolerance;
        self.count_fall(fell, late_ps);
    }

    /// The line fell `fell_ps` further behind its schedule, at most `late_ps` of it for a
    /// late releaser (line time lost) and the rest held to keep to the rate.
    fn count_fall(&mut self, fell_ps: u64, late_ps: u64) {
        let late = fell_ps.min(late_ps);
        self.counters.late_held_ns += late / PS_PER_NS;
        self.counters.paced_held_ns += (fell_ps - late) / PS_PER_NS;
        if fell_ps >= STALL_NS * PS_PER_NS {
            self.counters.stalls += 1;
        }
    }

    /// Change what the link imposes from `now_ns` on. Frames already on their way keep
    /// their times; queued ones (not yet begun) are serialized again at the new rate and
    /// framing and take the new delay; releases keep to the new rate at once.
    pub fn reconfigure(&mut self, now_ns: u64, config: DirectionConfig) {
        let now = self.clock_ps(now_ns);
        self.advance_cross(now);
        if config.loss != self.config.loss {
            self.loss.set_model(config.loss);
        }
        if config.cross != self.config.cross {
            self.cross = config.cross.clone().map(|c| Arrivals::new(c, now));
        }
        let rate = config.line_rate_bps();
        let overhead = config.overhead_bytes();
        let timing_changed = rate != self.rate_bps
            || overhead != self.overhead_bytes
            || config.delay_ns != self.config.delay_ns
            || config.jitter != self.config.jitter;
        let old_backlog = self.backlog_bytes(now);
        let old_overhead = self.overhead_bytes;
        if rate != self.rate_bps
            && let Some(window) = &mut self.window
        {
            window.set_rate(rate);
        }
        self.rate_bps = rate;
        self.overhead_bytes = overhead;
        self.queue_limit_bytes = config.queue_limit_bytes();
        self.config = config;
        if timing_changed {
            self.reserialize(now, old_backlog, old_overhead);
        }
    }

    /// Serialize again what has not begun to leave, from `now` on.
    fn reserialize(&mut self, now: u64, old_backlog: u64, old_overhead: u64) {
        let first = self
            .line
            .iter()
            .position(|f| f.slot.start_ps >= now)
            .unwrap_or(self.line.len());
        // Frames on their way keep their times, but the far end takes them at the new rate.
        for index in 0..first {
            let wire = self.line[index].slot.wire_bytes;
            self.line[index].slot.tx_ps = self.transmission_ps(wire);
        }
        let mut queued_frames = 0u64;
        for f in self.line.range(first..) {
            queued_frames += f.slot.wire_bytes;
        }
        // What the old backlog held beyond these frames: the rest of the frame in
        // service and synthetic cross-traffic. It keeps its place ahead of them.
        let ahead_bytes = old_backlog.saturating_sub(queued_frames);
        let mut line_free = now + self.transmission_ps(ahead_bytes);
        self.last_due_ps = first
            .checked_sub(1)
            .map_or(0, |before| self.line[before].slot.due_ps);
        let delay_ps = self.config.delay_ns * PS_PER_NS;
        for index in first..self.line.len() {
            let slot = self.line[index].slot;
            let segments = u64::from(slot.segments);
            let ip_bytes = slot.wire_bytes - segments * old_overhead;
            let wire = ip_bytes + segments * self.overhead_bytes;
            let start = line_free;
            let tx = self.transmission_ps(wire);
            let end = start + tx;
            let due = (end + delay_ps + slot.jitter_ps).max(self.last_due_ps);
            self.last_due_ps = due;
            line_free = end;
            self.line_wire_bytes = self.line_wire_bytes - slot.wire_bytes + wire;
            self.line[index].slot = Slot {
                start_ps: start,
                tx_ps: tx,
                due_ps: due,
                jitter_ps: slot.jitter_ps,
                wire_bytes: wire,
                segments: slot.segments,
            };
        }
        self.line_free_ps = line_free;
    }

    pub fn stats(&self, now_ns: u64) -> DirectionStats {
        DirectionStats {
            counters: self.counters.clone(),
            queue_bytes: self.backlog_bytes(self.line_ps(now_ns)),
            queue_limit_bytes: self.queue_limit_bytes,
            in_flight_frames: self.line.len(),
            in_flight_bytes: self.line_wire_bytes,
            line_rate_bps: self.rate_bps,
            frame_overhead_bytes: self.overhead_bytes,
            max_1ms_rate_ratio: self.window.as_ref().map_or(0.0, |w| w.max_ratio),
            config: self.config.clone(),
        }
    }

    /// The worst lateness and the largest 1 ms rate since the last call.
    pub fn take_peaks(&mut self) -> Peaks {
        Peaks {
            lateness_max_ns: std::mem::take(&mut self.peak_late_ns),
            max_1ms_rate_ratio: self.window.as_mut().map_or(0.0, RateWindow::take_peak),
        }
    }

    /// Frames still in flight, oldest first (for shutting down).
    pub fn drain(&mut self) -> impl Iterator<Item = F> + '_ {
        self.line_wire_bytes = 0;
        self.line.drain(..).map(|f| f.frame)
    }

    /// Put every synthetic cross-traffic packet that arrived up to `now` on the line.
    fn advance_cross(&mut self, now: u64) {
        let Some(mut cross) = self.cross.take() else {
            return;
        };
        let bytes = u64::from(cross.config.packet_bytes);
        let limit = self.queue_limit_bytes;
        while let Some(at) = cross.next_before(now) {
            if self.line_free_ps <= at {
                // The line is idle: the cross-traffic alone never fills it (its rate is
                // below the line's), so jump to its last arrival of this on-period.
                let (last, count) = cross.skip_to_last_before(now);
                self.line_free_ps = last + self.transmission_ps(bytes);
                self.counters.cross_bytes += count * bytes;
                continue;
            }
            if self.backlog_bytes(at) + bytes > limit {
                self.counters.cross_dropped_bytes += bytes;
            } else {
                self.line_free_ps += self.transmission_ps(bytes);
                self.counters.cross_bytes += bytes;
            }
            cross.advance();
        }
        self.cross = Some(cross);
    }
}

impl<F: Clone> Direction<F> {
    /// Offer a frame that is one segment and keep it if it is kept (the simulator's
    /// frames are all one segment); its fate if not.
    pub fn offer_frame(&mut self, now_ns: u64, ip_bytes: u64, frame: F) -> Result<(), Fate> {
        match self.offer(now_ns, Shape::single(ip_bytes)) {
            Offer::Whole(slot) => {
                self.push(slot, frame);
                Ok(())
            }
            Offer::Refused(fate) => Err(fate),
            Offer::Cut(_) => unreachable!("a single segment is never cut"),
        }
    }
}
