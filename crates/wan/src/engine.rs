//! The loop that moves frames: one thread serves both directions. It reads what the
//! devices have into the link, releases what the link allows, and waits for the next
//! instant something is due or a device has something.
//!
//! The engine takes a `Device`, which gives it the clock, the two ends and the waiting:
//! `tun::TunDevice` runs it on real TUN devices in real time (at real-time priority, so
//! it is not kept waiting behind the senders and receivers it serves); tests run the same
//! loop on in-memory devices against a fake clock.
//!
//! The link never releases faster than its rate (see `longhaul_link::direction`), so a
//! release that comes late loses the line that time. The loop is ordered to come late as
//! seldom as it can: it releases first, the busier direction before the other; it reads
//! only while the next release is further off than a read takes (a frame left waiting in
//! its device a few microseconds more only arrives a little later, which a backlogged
//! line never notices); and it sleeps until a learned margin before the next release and
//! polls the rest (`wake`), so it leaves the core to the TCP endpoints as much as it can.
//!
//! Measured on two cores at 9.6 Gb/s and 163 ms: one thread per direction lost packets
//! when either was preempted, and a second thread for the writes into the devices (the
//! costliest step: the kernel's TCP work for the receiving end runs inside them, as it
//! would in a NIC's interrupts) gave less, not more: each hand-over cost a wake-up.

use std::io;

use longhaul_link::{Direction, DirectionConfig, Offer, Peaks, Shape, kept_runs};
use serde::Serialize;
use serde_json::{Value, json};

use crate::arena::{Arena, FrameRef};
use crate::control::{self, Then};
use crate::encryptor::{EncryptorConfig, LinkEncryptors, TRAILER_BYTES};
use crate::health::{self, HealthLog};
use crate::packet::{self, VNET_HDR_LEN};
use crate::steer::{Activity, Steering};
use crate::wake::WakeMargins;
use crate::wake::{BusyMark, Spinners};

/// The largest frame a TUN device hands over: the virtio header and a 64 KB packet.
pub const FRAME_CAPACITY: usize = VNET_HDR_LEN + 65_536;
/// Frames read from one device before the loop looks at the other and at what is due.
const READ_BATCH: usize = 8;
/// The longest wait without looking at the clock (a stop is seen within this).
pub const MAX_WAIT_NS: u64 = 100_000_000;
/// The most a sleep stops short of a frame's instant to poll the rest (see `wake`).
pub const DEFAULT_SPIN_NS: u64 = 200_000;
/// Waits shorter than this poll instead of sleeping.
const MIN_SLEEP_NS: u64 = 10_000;
/// After writing a frame, poll this long before sleeping: what a host answers (an echo
/// reply, an acknowledgement) comes within tens of microseconds, and an engine asleep by
/// then would add a wake-up to the round trip.
pub const DEFAULT_LINGER_NS: u64 = 100_000;
/// The most of the time the engine stays awake (working or polling) over `AWAKE_WINDOW_NS`.
/// A real-time thread that takes more than 95 % of a second is stopped for the rest of it
/// by the kernel (`sched_rt_runtime_us`): 50 ms in which nothing is released.
const MAX_AWAKE_SHARE: f64 = 0.88;
const AWAKE_WINDOW_NS: u64 = 50_000_000;
/// A write held up longer than this (beyond four times what writes take) is taken to have
/// reached the far end late.
const HELD_UP_NS: u64 = 50_000;
/// Frames a late release left behind its schedule wait at the far end of the line, beyond
/// the queue, until the line catches up: the arena has room for this long of the rate
/// besides (a longer stall on a full line drops what does not fit, counted, and the run is
/// marked degraded for its lateness anyway).
const STALL_ROOM_NS: u64 = 20_000_000;
/// A first guess at what one read or write costs, before any was timed.
const FIRST_COST_NS: u64 = 5_000;
/// The longest a device goes unread while the engine is behind on its releases. Frames
/// wait in the device meanwhile, outside the emulated queue and its counters, and a TUN
/// device drops what its ring cannot take (`tun_net_xmit`, 6.x: the frame is orphaned
/// from its socket, so TCP's small-queue limit does not hold the sender back, and the
/// drop comes back as `NET_XMIT_DROP`, which TCP takes for local congestion and answers
/// by cutting its window with nothing retransmitted, `tcp_enter_cwr`). Seen at 9.6 Gb/s
/// x 653 ms: 9,125 frames dropped by the sending device while releases kept the engine
/// busy, and the sender's window fell from 728,716 to 425,724 segments. Read at least
/// this often, frames wait in the emulated queue instead, where they are counted and
/// their delay is lateness.
const MAX_READ_GAP_NS: u64 = 1_000_000;

/// One end of the link: A (index 0) or B (index 1). Direction 0 runs from A to B.
pub type Side = usize;

/// What a wait found ready.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ready {
    pub sides: [bool; 2],
    pub control: bool,
    /// Stop: a signal, the parent process gone, or a test's end.
    pub stop: bool,
}

/// The clock, the two ends of the link and the waiting, as the engine sees them.
pub trait Device {
    fn now_ns(&mut self) -> u64;
    /// One frame (virtio header and packet) from end `side` into `buf`: its length, or
    /// None if none is waiting.
    fn read(&mut self, side: Side, buf: &mut [u8]) -> io::Result<Option<usize>>;
    /// Hand one frame to end `side`, as if it had arrived over the link.
    fn write(&mut self, side: Side, frame: &[u8]) -> io::Result<()>;
    /// Wait until `until_ns` at most (sleeping, or if `sleep` is false only looking);
    /// what is ready.
    fn wait(&mut self, until_ns: u64, sleep: bool) -> io::Result<Ready>;
    /// Answer what the control channel has; whether to stop.
    fn serve_control(&mut self, _answer: &mut dyn FnMut(&str) -> (Value, Then)) -> Then {
        Then::Continue
    }
}

/// What the engine counts besides the links.
#[derive(Debug, Default, Clone, Serialize)]
pub struct EngineCounters {
    pub wakeups: u64,
    pub read_errors: u64,
    pub write_errors: u64,
    /// Frames read while the arena was full (dropped, counted nowhere else).
    pub arena_full_frames: u64,
    pub longest_read_ns: u64,
    pub longest_write_ns: u64,
    /// Time spent writing into each end (the kernel's work for the receiving side runs
    /// inside these writes) and reading from each, and how many of each.
    pub write_ns: [u64; 2],
    pub writes: [u64; 2],
    pub read_ns: [u64; 2],
    pub reads: [u64; 2],
    /// Super-packets cut into segments (a drop or loss fell inside), and the time it took.
    pub cuts: u64,
    pub cut_ns: u64,
    /// TCP packets (a super-packet's segments each) written into each end: what steering
    /// follows.
    pub tcp_packets_written: [u64; 2],
    /// How long writes into each end took: bucket k, less than 2^k us.
    pub write_us: [[u64; 12]; 2],
    pub longest_wait_overshoot_ns: u64,
    pub sleeps: u64,
    /// Of the sleeps, those through a wait too short to stop a margin before its end,
    /// taken because the engine had been awake too much (`MAX_AWAKE_SHARE`): each wakes
    /// after the frame was due.
    pub sleeps_over_budget: u64,
    pub polls: u64,
    /// Lateness of each direction's releases, by what the engine did just before: where
    /// it comes from.
    pub late_after: [LateAfter; 2],
}

/// Nanoseconds of lateness by the step that came before the late release.
#[derive(Debug, Default, Clone, Serialize)]
pub struct LateAfter {
    pub sleep_ns: u64,
    /// After a sleep the awake budget forced through a short wait (`sleeps_over_budget`).
    pub sleep_over_budget_ns: u64,
    pub poll_ns: u64,
    pub read_ns: [u64; 2],
    pub write_ns: [u64; 2],
    pub other_ns: u64,
}

/// The step the engine took last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Sleep,
    SleepOverBudget,
    Poll,
    Read(Side),
    Write(usize),
    Other,
}

/// The links, where their frames wait, and the record of how it went: everything but
/// the device.
pub struct Core {
    pub link: [Direction<FrameRef>; 2],
    arenas: [Arena; 2],
    pub counters: EngineCounters,
    health: HealthLog,
    /// What one read from each side, and one write of each direction, costs (smoothed).
    read_cost_ns: [u64; 2],
    write_cost_ns: [u64; 2],
    scratch: Vec<u8>,
    started_ns: u64,
    last_step: Step,
    last_write_ns: u64,
    /// When each side was last read (or looked at and found empty).
    last_read_ns: [u64; 2],
    /// Where the hosts' receive work goes while TCP comes fast (set by `steer`).
    pub steering: Option<Steering>,
    /// Spinners that keep the CPUs awake while the line is quiet (`KeepAwake::Quiet`).
    pub spinners: Option<Spinners>,
    /// This emulator's mark on the machine's board of busy lines, which other emulators'
    /// spinners read.
    pub busy_mark: Option<BusyMark>,
    activity: Activity,
    /// The link encryptors at both ends, if the line is encrypted.
    pub encryptors: Option<LinkEncryptors>,
}

/// How much of the recent time the engine slept.
#[derive(Debug, Default)]
struct Awake {
    window_start_ns: u64,
    slept_ns: u64,
    /// The share of the last full window spent awake.
    last_share: f64,
}

impl Awake {
    fn slept(&mut self, ns: u64) {
        self.slept_ns += ns;
    }

    /// Whether the engine has been awake too much to poll now.
    fn must_sleep(&mut self, now_ns: u64) -> bool {
        let elapsed = now_ns.saturating_sub(self.window_start_ns);
        if elapsed >= AWAKE_WINDOW_NS {
            self.last_share = 1.0 - self.slept_ns as f64 / elapsed as f64;
            self.window_start_ns = now_ns;
            self.slept_ns = 0;
            return self.last_share > MAX_AWAKE_SHARE;
        }
        let so_far = 1.0 - self.slept_ns as f64 / elapsed.max(1) as f64;
        self.last_share > MAX_AWAKE_SHARE
            || (elapsed > AWAKE_WINDOW_NS / 4 && so_far > MAX_AWAKE_SHARE)
    }
}

pub struct Engine<D> {
    pub device: D,
    pub core: Core,
    awake: Awake,
    /// How long before a frame is due to stop sleeping and poll instead.
    pub margins: WakeMargins,
    /// How long to poll after a write before sleeping (`DEFAULT_LINGER_NS`).
    pub linger_ns: u64,
}

impl Core {
    /// The links of `configs` (A to B, B to A), starting at `now_ns`.
    pub fn new(configs: [DirectionConfig; 2], seed: u64, now_ns: u64) -> io::Result<Core> {
        let [ab, ba] = configs;
        let arenas = [Self::arena_for(&ab)?, Self::arena_for(&ba)?];
        let link = [
            Direction::new(ab, seed, now_ns),
            Direction::new(ba, seed.wrapping_add(1), now_ns),
        ];
        let counters = [link[0].counters().clone(), link[1].counters().clone()];
        Ok(Core {
            link,
            arenas,
            counters: EngineCounters::default(),
            health: HealthLog::new(now_ns, counters, health::cpu_ns()),
            read_cost_ns: [FIRST_COST_NS; 2],
            write_cost_ns: [FIRST_COST_NS; 2],
            scratch: vec![0; FRAME_CAPACITY],
            started_ns: now_ns,
            last_step: Step::Other,
            last_write_ns: 0,
            last_read_ns: [now_ns; 2],
            steering: None,
            spinners: None,
            busy_mark: None,
            activity: Activity::default(),
            encryptors: None,
        })
    }

    /// Bytes of arena a link needs: every frame it may hold, stored with its virtio header
    /// (a quarter more than its wire bytes covers the smallest frames), what a late
    /// release leaves waiting at the far end of the line (`STALL_ROOM_NS` of the rate),
    /// and room to read the largest frame twice over.
    fn arena_bytes(config: &DirectionConfig) -> usize {
        let bound = config.in_flight_bound_bytes() as usize;
        let stalled =
            u128::from(config.line_rate_bps()) * u128::from(STALL_ROOM_NS) / 8_000_000_000;
        bound + bound / 4 + stalled as usize + 2 * FRAME_CAPACITY
    }

    fn arena_for(config: &DirectionConfig) -> io::Result<Arena> {
        Arena::new(Self::arena_bytes(config))
    }

    /// Change direction `index` from `now_ns` on.
    pub fn reconfigure(&mut self, index: usize, now_ns: u64, config: DirectionConfig) {
        // The larger ring is mapped off this thread; frames that find the old one full
        // meanwhile (or for good, if no larger one could be mapped) are counted as
        // `arena_full_frames`.
        self.arenas[index].grow_to(Self::arena_bytes(&config));
        self.link[index].reconfigure(now_ns, config);
    }

    /// Encrypt the line from `now_ns` with `config` (new associations at random SPIs), or
    /// no longer (None). Frames on the line are dropped: sealed or not, they were sealed
    /// for the other setting.
    pub fn set_encryptors(&mut self, config: Option<EncryptorConfig>, now_ns: u64) {
        self.drain();
        self.encryptors = config.map(|config| {
            let mut random = [0u8; 16];
            aws_lc_rs::rand::fill(&mut random).expect("the system's random source");
            let spis =
                [0, 4].map(|at| u32::from_be_bytes(random[at..at + 4].try_into().expect("4")));
            let seed = u64::from_be_bytes(random[8..].try_into().expect("8"));
            LinkEncryptors::new(config, spis, seed, now_ns)
        });
    }

    /// Offer the frame just read into arena `side` at `offset` (`len` bytes, with room
    /// for `TRAILER_BYTES` more) to the link: sealed first if the link is encrypted.
    fn offer<D: Device>(
        &mut self,
        device: &mut D,
        side: Side,
        now_ns: u64,
        offset: usize,
        len: usize,
    ) {
        let arena = &mut self.arenas[side];
        let link = &mut self.link[side];
        let mut shape = wire_shape(arena.written(offset, len));
        if let Some(encryptors) = &mut self.encryptors {
            let framing = link.config().overhead_bytes();
            match encryptors.shape(side, shape, framing) {
                Some(sealed) => shape = sealed,
                None => return, // too long for the line sealed: dropped before it
            }
        }
        match link.offer(now_ns, shape) {
            Offer::Whole(slot) => {
                let room = arena.written(offset, len + TRAILER_BYTES);
                let len = seal(self.encryptors.as_mut(), device, side, now_ns, room, len);
                let frame = arena.keep(offset, len);
                let copies = link.push(slot, frame);
                arena.add_releases(frame, copies as u32 - 1);
            }
            Offer::Refused(_) => {} // the room is left unkept
            Offer::Cut(parts) => {
                let began = device.now_ns();
                self.counters.cuts += 1;
                let bytes = arena.written(offset, len);
                // Segments that stay neighbours on the line go on as one frame.
                let runs = kept_runs(&parts);
                let bounds: Vec<(usize, usize)> = runs
                    .iter()
                    .map(|(first, slot)| (*first as usize, slot.segments() as usize))
                    .collect();
                // The pieces take the whole frame's place.
                let Some(pieces) = packet::split_runs(bytes, &bounds) else {
                    // Not one this can cut: the loss of one segment loses the frame.
                    link.abandon(&parts);
                    return;
                };
                for (piece, (_, slot)) in pieces.iter().zip(runs) {
                    let Some((offset, room)) = arena.room(piece.len() + TRAILER_BYTES) else {
                        self.counters.arena_full_frames += 1;
                        continue;
                    };
                    room[..piece.len()].copy_from_slice(piece);
                    let len = seal(
                        self.encryptors.as_mut(),
                        device,
                        side,
                        now_ns,
                        room,
                        piece.len(),
                    );
                    let kept = arena.keep(offset, len);
                    let copies = link.push(slot, kept);
                    arena.add_releases(kept, copies as u32 - 1);
                }
                self.counters.cut_ns += device.now_ns() - began;
            }
        }
    }

    /// Every frame the links allow at `now`, written to the far end. The direction
    /// carrying more goes first, and the other only when its write would be done before
    /// the busier one's next frame is due: on a full line a late release is line time
    /// lost, on the quiet one (acknowledgements) only a little delay.
    fn release_due<D: Device>(&mut self, device: &mut D, now_ns: u64) {
        let busy = usize::from(self.link[1].in_flight_bytes() > self.link[0].in_flight_bytes());
        let quiet = 1 - busy;
        let mut now = now_ns;
        let mut released = 0;
        let packets_before = self.packets_sent();
        let tcp_before = self.counters.tcp_packets_written;
        loop {
            // Behind on releases: stop for a read now and then. A frame due after a quiet
            // spell (an idle ping) still goes first, as it always did.
            if released > 0 && self.reads_overdue(now) {
                break;
            }
            if self.release_one(device, busy, now) {
                now = device.now_ns();
                released += 1;
                continue;
            }
            let busy_due = self.link[busy].next_release_ns().unwrap_or(u64::MAX);
            if busy_due < now + self.write_cost_ns[quiet] || !self.release_one(device, quiet, now) {
                break;
            }
            now = device.now_ns();
            released += 1;
        }
        let busy = self
            .activity
            .released(now, self.packets_sent() - packets_before);
        if let Some(steering) = &mut self.steering {
            let written = self.counters.tcp_packets_written;
            for (side, before) in tcp_before.into_iter().enumerate() {
                steering.written(side, now, written[side] - before);
            }
        }
        if let Some(spinners) = &self.spinners
            && spinners.is_spinning() == busy
        {
            spinners.set(!busy);
        }
        if let Some(mark) = &mut self.busy_mark {
            mark.set(busy);
        }
    }

    /// Packets both directions have put on the line (a super-packet's segments each).
    fn packets_sent(&self) -> u64 {
        self.link.iter().map(|l| l.counters().tx_segments).sum()
    }

    /// Whether a device has gone unread for `MAX_READ_GAP_NS`: releases wait for a read.
    fn reads_overdue(&self, now_ns: u64) -> bool {
        (0..2).any(|side| self.read_overdue(side, now_ns))
    }

    fn read_overdue(&self, side: Side, now_ns: u64) -> bool {
        now_ns.saturating_sub(self.last_read_ns[side]) > MAX_READ_GAP_NS
    }

    /// Release one frame of `direction` if it may leave at `now_ns`; whether one did.
    fn release_one<D: Device>(&mut self, device: &mut D, direction: usize, now_ns: u64) -> bool {
        let late_before = self.link[direction].counters().lateness.sum_ns;
        let segments_before = self.link[direction].counters().tx_segments;
        let Some(frame) = self.link[direction].release(now_ns) else {
            return false;
        };
        let segments = self.link[direction].counters().tx_segments - segments_before;
        let late = self.link[direction].counters().lateness.sum_ns - late_before;
        let blame = &mut self.counters.late_after[direction];
        match self.last_step {
            Step::Sleep => blame.sleep_ns += late,
            Step::SleepOverBudget => blame.sleep_over_budget_ns += late,
            Step::Poll => blame.poll_ns += late,
            Step::Read(side) => blame.read_ns[side] += late,
            Step::Write(d) => blame.write_ns[d] += late,
            Step::Other => blame.other_ns += late,
        }
        let far = 1 - direction;
        let Some(len) = self.open(device, direction, frame) else {
            // Refused by the far encryptor: the line carried it, nobody gets it.
            self.arenas[direction].release(frame);
            return true;
        };
        let bytes = &self.arenas[direction].bytes(frame)[..len];
        if packet::carries_tcp(bytes) {
            self.counters.tcp_packets_written[far] += segments;
        }
        let began = device.now_ns();
        if device.write(far, bytes).is_err() {
            // The device is down or gone: like a cable pulled out, count and go on.
            self.counters.write_errors += 1;
        }
        let took = device.now_ns() - began;
        let c = &mut self.counters;
        c.longest_write_ns = c.longest_write_ns.max(took);
        c.write_ns[far] += took;
        c.writes[far] += 1;
        let bucket = (u64::BITS - (took / 1_000).leading_zeros()) as usize;
        c.write_us[far][bucket.min(11)] += 1;
        // A write that took far longer than writes take was held up (the machine stopped
        // this thread, as it does for tens to hundreds of microseconds): the far end may
        // have got the frame that much later. Ordinary spread (the receiving host's work
        // after it took the frame varies) is not taken for it.
        let held_up = took.saturating_sub(4 * self.write_cost_ns[direction]);
        if held_up > HELD_UP_NS {
            self.link[direction].landed(began + held_up);
        }
        self.write_cost_ns[direction] = smooth(self.write_cost_ns[direction], took);
        self.arenas[direction].release(frame);
        self.last_step = Step::Write(direction);
        self.last_write_ns = began;
        true
    }

    /// The frame's bytes to hand on (opened in place if the link is encrypted), or None
    /// if the far encryptor refuses it.
    fn open<D: Device>(
        &mut self,
        device: &mut D,
        direction: usize,
        frame: FrameRef,
    ) -> Option<usize> {
        let Some(encryptors) = &mut self.encryptors else {
            return Some(frame.len());
        };
        let began = device.now_ns();
        let opened = encryptors.open(
            direction,
            self.arenas[direction].bytes_mut(frame),
            VNET_HDR_LEN,
        );
        encryptors.counters[direction].open_ns += device.now_ns() - began;
        opened
    }

    /// When the next frame of either direction may leave.
    fn next_release_ns(&self) -> Option<u64> {
        [
            self.link[0].next_release_ns(),
            self.link[1].next_release_ns(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Read up to a batch from end `side` into its link, stopping early if a release
    /// is due before another read would be done; whether more may be waiting.
    fn read_side<D: Device>(&mut self, device: &mut D, side: Side) -> bool {
        // Unread for too long: empty the device whatever is due (`MAX_READ_GAP_NS`), for
        // at most that long again (a device filling faster than it can be read).
        let began = device.now_ns();
        let drain = self.read_overdue(side, began);
        let batch = if drain { usize::MAX } else { READ_BATCH };
        for _ in 0..batch {
            let now = device.now_ns();
            if drain && now - began > MAX_READ_GAP_NS {
                return true;
            }
            if let Some(due) = self.next_release_ns()
                && due < now + self.read_cost_ns[side]
                && !drain
            {
                return true; // release first; the frame waits in its device meanwhile
            }
            self.last_read_ns[side] = now;
            let (read, offset) = match self.arenas[side].room(FRAME_CAPACITY + TRAILER_BYTES) {
                Some((offset, room)) => (device.read(side, room), Some(offset)),
                None => (device.read(side, &mut self.scratch), None),
            };
            let done = device.now_ns();
            let took = done - now;
            let c = &mut self.counters;
            c.longest_read_ns = c.longest_read_ns.max(took);
            c.read_ns[side] += took;
            c.reads[side] += 1;
            self.last_step = Step::Read(side);
            match read {
                Ok(Some(n)) if n > VNET_HDR_LEN => {
                    self.read_cost_ns[side] = smooth(self.read_cost_ns[side], took);
                    // The frame was in the device before the read began: its arrival.
                    match offset {
                        Some(offset) => self.offer(device, side, now, offset, n),
                        None => self.counters.arena_full_frames += 1,
                    }
                }
                Ok(Some(_)) => {}
                Ok(None) => return false,
                Err(_) => {
                    self.counters.read_errors += 1;
                    return false;
                }
            }
        }
        true
    }

    /// Note the interval's counters if one has ended.
    fn note_health(&mut self, now_ns: u64) {
        if self.health.due(now_ns) {
            self.note_now(now_ns);
        }
    }

    fn note_now(&mut self, now_ns: u64) {
        let peaks: [Peaks; 2] = [self.link[0].take_peaks(), self.link[1].take_peaks()];
        let counters = [
            self.link[0].counters().clone(),
            self.link[1].counters().clone(),
        ];
        self.health.note(now_ns, counters, peaks, health::cpu_ns());
    }

    /// Answer one control request.
    pub fn answer(&mut self, line: &str, now_ns: u64) -> (Value, Then) {
        control::handle(line, self, now_ns)
    }

    /// Counters of both directions and of the engine, as JSON.
    pub fn stats(&self, now_ns: u64) -> Value {
        json!({
            "now_ns": now_ns,
            "a_to_b": self.link[0].stats(now_ns),
            "b_to_a": self.link[1].stats(now_ns),
            "engine": self.counters,
            "memory": self.memory(),
            "steering": self.steering.as_ref().map(|s| json!({"on": s.is_on(), "switches": s.switches})),
            "keeping_awake": self.spinners.as_ref().map(Spinners::is_spinning),
            "encryptor": self.encryptors.as_ref().map(|e| json!({
                "mtu_bytes": e.config.mtu_bytes,
                "oversize": e.config.oversize,
                "a_to_b": e.counters[0],
                "b_to_a": e.counters[1],
            })),
        })
    }

    /// What the emulator holds in memory, against what it may hold at most.
    pub fn memory(&self) -> Value {
        json!({
            "rss_bytes": health::rss_bytes(),
            "arena_bytes": [self.arenas[0].mapped_bytes(), self.arenas[1].mapped_bytes()],
            "held_frames": [self.arenas[0].held_frames(), self.arenas[1].held_frames()],
            "arena_growing": [self.arenas[0].is_growing(), self.arenas[1].is_growing()],
            "arena_failed_grows": [self.arenas[0].failed_grows, self.arenas[1].failed_grows],
        })
    }

    /// How faithfully the link ran from `since_ns` to `now_ns`.
    pub fn health_since(&mut self, since_ns: u64, now_ns: u64) -> Value {
        self.note_now(now_ns);
        let mut answer = serde_json::to_value(self.health.since(since_ns)).unwrap_or(Value::Null);
        answer["rss_bytes"] = json!(health::rss_bytes());
        answer["running_since_ns"] = json!(self.started_ns);
        answer
    }

    /// Frames still in flight are dropped (shutting down).
    pub fn drain(&mut self) {
        for (link, arena) in self.link.iter_mut().zip(&mut self.arenas) {
            for frame in link.drain() {
                arena.release(frame);
            }
        }
    }
}

/// Seal the frame of `len` bytes at the start of `room` entering the line at `side`, if
/// the link is encrypted; its length on the line.
fn seal<D: Device>(
    encryptors: Option<&mut LinkEncryptors>,
    device: &mut D,
    side: Side,
    now_ns: u64,
    room: &mut [u8],
    len: usize,
) -> usize {
    let Some(encryptors) = encryptors else {
        return len;
    };
    let began = device.now_ns();
    let sealed = encryptors.seal(side, now_ns, room, VNET_HDR_LEN, len);
    encryptors.counters[side].seal_ns += device.now_ns() - began;
    sealed
}

/// A cost estimate moved an eighth of the way to the latest sample.
fn smooth(estimate: u64, sample: u64) -> u64 {
    (estimate * 7 + sample) / 8
}

/// How a frame appears on the wire, for the link.
pub fn wire_shape(frame: &[u8]) -> Shape {
    let s = packet::shape(frame);
    Shape {
        segments: s.segments,
        ip_bytes: s.ip_bytes,
        last_segment_ip_bytes: s.last_segment_ip_bytes,
    }
}

impl<D: Device> Engine<D> {
    pub fn new(device: D, core: Core) -> Self {
        Self {
            device,
            core,
            awake: Awake::default(),
            margins: WakeMargins::new(DEFAULT_SPIN_NS),
            linger_ns: DEFAULT_LINGER_NS,
        }
    }

    /// Run until the device says stop or a control client asks to.
    pub fn run(&mut self) -> io::Result<()> {
        let mut ready = Ready {
            sides: [true, true],
            control: true,
            stop: false,
        };
        while !ready.stop {
            let now = self.device.now_ns();
            self.core.release_due(&mut self.device, now);
            self.core.note_health(now);
            // A side unread for too long is read whether or not the last wait saw it ready:
            // the engine may not have waited since.
            let now = self.device.now_ns();
            let more = [0, 1].map(|side| {
                (ready.sides[side] || self.core.read_overdue(side, now))
                    && self.core.read_side(&mut self.device, side)
            });
            if ready.control {
                let core = &mut self.core;
                let device_now = self.device.now_ns();
                let then = self
                    .device
                    .serve_control(&mut |line| core.answer(line, device_now));
                if then == Then::Stop {
                    break;
                }
            }
            let now = self.device.now_ns();
            self.core.release_due(&mut self.device, now);
            ready = self.wait(more)?;
        }
        Ok(())
    }

    /// Wait for what comes next: a release, or a device with more to read.
    fn wait(&mut self, more: [bool; 2]) -> io::Result<Ready> {
        let now = self.device.now_ns();
        let next = self.core.next_release_ns();
        let c = &mut self.core.counters;
        c.wakeups += 1;
        if more[0] || more[1] {
            // Read on (or release first) without sleeping: look at everything once more.
            self.core.last_step = Step::Poll;
            let mut ready = self.device.wait(now, false)?;
            ready.sides = [ready.sides[0] || more[0], ready.sides[1] || more[1]];
            return Ok(ready);
        }
        let must_sleep = self.awake.must_sleep(now);
        // Linger after a write for an answer, unless a frame is due meanwhile anyway.
        let lingering = !must_sleep
            && now < self.core.last_write_ns + self.linger_ns
            && next.is_none_or(|due| due > now + self.linger_ns);
        let Some(due) = next else {
            if lingering {
                c.polls += 1;
                self.core.last_step = Step::Poll;
                return self.device.wait(now, false);
            }
            c.sleeps += 1;
            self.core.last_step = Step::Sleep;
            let ready = self.device.wait(now + MAX_WAIT_NS, true)?;
            self.awake.slept(self.device.now_ns() - now);
            return Ok(ready);
        };
        let gap = due.saturating_sub(now).min(MAX_WAIT_NS);
        let margin = self.margins.margin_ns(gap);
        let short = gap < margin + MIN_SLEEP_NS;
        if lingering || (short && !must_sleep) || gap == 0 {
            c.polls += 1;
            self.core.last_step = Step::Poll;
            return self.device.wait(due, false);
        }
        c.sleeps += 1;
        // Awake too much: sleep even a short wait (coming late rather than being stopped
        // for the rest of the second by the kernel).
        let sleep = if short {
            c.sleeps_over_budget += 1;
            self.core.last_step = Step::SleepOverBudget;
            gap
        } else {
            self.core.last_step = Step::Sleep;
            gap - margin
        };
        let wake_at = now + sleep;
        let ready = self.device.wait(wake_at, true)?;
        let woke = self.device.now_ns();
        self.awake.slept(woke - now);
        if !ready.sides.contains(&true) && !ready.control {
            // Woken by the clock: how late it was is what the margins learn from.
            let overshoot = woke.saturating_sub(wake_at);
            self.margins.learn(sleep, overshoot);
            let c = &mut self.core.counters;
            c.longest_wait_overshoot_ns = c.longest_wait_overshoot_ns.max(overshoot);
        }
        Ok(ready)
    }
}

/// Run the calling thread under `SCHED_FIFO` at `priority` (1-99), so that it runs as soon
/// as it is ready instead of waiting for a time slice behind the senders and receivers
/// (on two cores, the fair scheduler kept the engine waiting 1-30 ms, 15 times a second).
/// The kernel keeps 5 % of each second for other tasks (`sched_rt_runtime_us`), so it
/// cannot lock the machine up.
pub fn run_in_real_time(priority: i32) -> io::Result<()> {
    crate::sched::set_policy(libc::SCHED_FIFO, priority)
}

/// Ask the kernel to keep idle CPUs out of deep sleep while the returned file is open
/// (a power-management latency request of 0 us on `/dev/cpu_dma_latency`; closing it,
/// also by the process dying, withdraws the request), so a frame arriving while the
/// emulator sleeps is seen sooner.
pub fn hold_cpu_latency_qos() -> io::Result<std::fs::File> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/cpu_dma_latency")?;
    file.write_all(&0i32.to_ne_bytes())?;
    Ok(file)
}
