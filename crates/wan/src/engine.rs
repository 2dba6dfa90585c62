//! The loop that moves packets: one thread serves both directions, waiting in `ppoll`
//! with nanosecond timeouts for a device to have a packet, the control socket to have a
//! request, or the next packet to be due. It runs at real-time priority, so it is not kept
//! waiting behind the senders and receivers it serves.
//!
//! Measured on two cores at 9.6 Gb/s and 163 ms: one thread per direction lost packets
//! when either was preempted (the prototype's finding), and a second thread for the writes
//! into the devices (the costliest step) gave less, not more (7.5 against 8.9 Gb/s): each
//! hand-over cost a wake-up, which a virtual machine makes dear, and the two threads took
//! the CPU the TCP endpoints needed. The kernel's TCP work for both ends runs in this
//! thread's writes anyway, as it would in a NIC's interrupts.
//!
//! A virtual machine wakes a sleeping thread late, the more so the longer it slept
//! (measured here: 40-120 µs typical, up to 0.5 ms). So a sleep ends `spin_ns` early,
//! and the rest is spent polling without sleeping: a few µs late instead. Polling is paid
//! from a budget of a tenth of the time, so on a busy link the engine sleeps.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use nix::poll::{PollFd, PollFlags, PollTimeout, ppoll};
use nix::sys::time::TimeSpec;
use serde::Serialize;
use serde_json::Value;

pub use crate::clock::now_ns;
use crate::control::{ControlServer, Then, handle};
use crate::link::Direction;
use crate::packet::VNET_HDR_LEN;
use crate::tun::Tun;

/// The largest frame a TUN device hands over: the virtio header and a 64 KB packet.
const FRAME_CAPACITY: usize = VNET_HDR_LEN + 65_536;
/// Frames at most this long are copied out of the big read buffer into one their size,
/// so that acknowledgements in flight do not each hold 64 KB.
const SMALL_FRAME: usize = 2_048;
/// Frames read from one device before looking at the other and at what is due: reading a
/// 64 KB frame takes 10-20 µs here, and a release must not wait long for a batch.
const READ_BATCH: usize = 4;
/// The longest wait without looking at the clock (a stop flag is seen within this).
const MAX_WAIT_NS: u64 = 100_000_000;
/// Stop sleeping this long before a packet is due (see the module's notes).
pub const DEFAULT_SPIN_NS: u64 = 150_000;
/// The share of the time the engine may spend polling instead of sleeping (see `wait_ns`).
const POLL_SHARE: f64 = 0.1;
/// The most polling time that can be saved up.
const POLL_BUDGET_CAP_NS: f64 = 10_000_000.0;

/// Polling time earned at `POLL_SHARE` of the time, up to a cap.
struct PollBudget {
    saved_ns: f64,
    at_ns: u64,
}

impl PollBudget {
    fn refill(&mut self, now_ns: u64) {
        let earned = now_ns.saturating_sub(self.at_ns) as f64 * POLL_SHARE;
        self.saved_ns = (self.saved_ns + earned).min(POLL_BUDGET_CAP_NS);
        self.at_ns = now_ns;
    }

    /// Take `ns` of polling from the budget, if there is that much.
    fn spend(&mut self, ns: u64) -> bool {
        let ns = ns as f64;
        if self.saved_ns < ns {
            return false;
        }
        self.saved_ns -= ns;
        true
    }
}
/// Waits shorter than this look and go on instead of sleeping.
const MIN_SLEEP_NS: u64 = 20_000;

/// What a wait found ready to read.
struct Ready {
    sides: [bool; 2],
    control: bool,
}

/// What the engine counts besides the links.
#[derive(Debug, Default, Clone, Serialize)]
pub struct EngineCounters {
    pub wakeups: u64,
    pub read_errors: u64,
    pub write_errors: u64,
    pub pooled_buffers: usize,
    /// The longest the engine spent releasing, reading, or waking up after it should
    /// have (what makes releases late).
    pub longest_release_ns: u64,
    pub longest_read_ns: u64,
    pub longest_wait_overshoot_ns: u64,
    pub waits_over_1ms_late: u64,
}

pub struct Engine {
    /// A, then B.
    pub ends: [Tun; 2],
    /// From A to B, then from B to A.
    pub link: [Direction; 2],
    pub control: Option<ControlServer>,
    pub counters: EngineCounters,
    /// How long before a packet is due to stop sleeping and poll instead.
    pub spin_ns: u64,
    pool: Vec<Vec<u8>>,
    /// The due instant whose wait is being polled away (and was paid for).
    polling_for: Option<u64>,
    poll_budget: PollBudget,
}

impl Engine {
    pub fn new(ends: [Tun; 2], link: [Direction; 2], control: Option<ControlServer>) -> Self {
        Self {
            ends,
            link,
            control,
            counters: EngineCounters::default(),
            spin_ns: DEFAULT_SPIN_NS,
            pool: Vec::new(),
            polling_for: None,
            poll_budget: PollBudget {
                saved_ns: POLL_BUDGET_CAP_NS,
                at_ns: 0,
            },
        }
    }

    /// Run until `stop` is set or a control client asks to stop.
    pub fn run(&mut self, stop: &Arc<AtomicBool>) -> io::Result<()> {
        // What the last wait found ready: both devices and the control socket at first.
        let mut ready = Ready {
            sides: [true, true],
            control: true,
        };
        while !stop.load(Ordering::Relaxed) {
            let started = now_ns();
            self.release_due(started);
            let released = now_ns();
            let has_more = [0, 1].map(|side| ready.sides[side] && self.read_side(side));
            let read = now_ns();
            if ready.control && self.serve_control() == Then::Stop {
                break;
            }
            self.release_due(read);
            let before_wait = now_ns();
            let wait_ns = if has_more[0] || has_more[1] {
                0
            } else {
                self.wait_ns(before_wait)
            };
            ready = if wait_ns == 0 && (has_more[0] || has_more[1]) {
                // Read on without asking: the devices said nothing yet about the rest.
                Ready {
                    sides: has_more,
                    control: false,
                }
            } else {
                self.wait(wait_ns)?
            };
            self.count_round(started, released, read, before_wait, wait_ns);
        }
        Ok(())
    }

    fn count_round(&mut self, started: u64, released: u64, read: u64, waited: u64, wait_ns: u64) {
        let woke = now_ns();
        let c = &mut self.counters;
        c.wakeups += 1;
        c.longest_release_ns = c.longest_release_ns.max(released - started);
        c.longest_read_ns = c.longest_read_ns.max(read - released);
        let overshoot = (woke - waited).saturating_sub(wait_ns);
        c.longest_wait_overshoot_ns = c.longest_wait_overshoot_ns.max(overshoot);
        if overshoot > 1_000_000 {
            c.waits_over_1ms_late += 1;
        }
    }

    /// Write every packet that may be released now to the far device.
    fn release_due(&mut self, now: u64) {
        for (direction, far) in [(0, 1), (1, 0)] {
            while let Some(frame) = self.link[direction].release(now) {
                if self.ends[far].write(&frame).is_err() {
                    // The device is down or gone: like a cable pulled out, count and go on.
                    self.counters.write_errors += 1;
                }
                self.recycle(frame);
            }
        }
    }

    /// Read up to a batch from device `side` into its link; whether more may be waiting.
    fn read_side(&mut self, side: usize) -> bool {
        for _ in 0..READ_BATCH {
            let mut buf = self
                .pool
                .pop()
                .unwrap_or_else(|| Vec::with_capacity(FRAME_CAPACITY));
            match self.ends[side].read(&mut buf) {
                Ok(Some(n)) if n > VNET_HDR_LEN => {
                    let now = now_ns();
                    let frame = if n <= SMALL_FRAME {
                        let small = buf[..n].to_vec();
                        self.pool.push(buf);
                        small
                    } else {
                        buf
                    };
                    if let Some(back) = self.link[side].offer(now, frame) {
                        self.recycle(back);
                    }
                }
                Ok(Some(_)) => self.pool.push(buf),
                Ok(None) => {
                    self.pool.push(buf);
                    return false;
                }
                Err(_) => {
                    self.counters.read_errors += 1;
                    self.pool.push(buf);
                    return false;
                }
            }
        }
        true
    }

    fn recycle(&mut self, frame: Vec<u8>) {
        if frame.capacity() >= FRAME_CAPACITY {
            self.pool.push(frame);
        }
    }

    fn serve_control(&mut self) -> Then {
        let Some(control) = self.control.as_mut() else {
            return Then::Continue;
        };
        self.counters.pooled_buffers = self.pool.len();
        let counters = &self.counters;
        let link = &mut self.link;
        control.serve(|line| {
            handle(line, link, now_ns(), &|| {
                serde_json::to_value(counters).unwrap_or(Value::Null)
            })
        })
    }

    /// How long to sleep before the next packet is due; 0 polls instead of sleeping.
    ///
    /// A thread that sleeps wakes late, so the last `spin_ns` before a packet is due are
    /// polled away. Polling takes a core while it lasts, which on a busy link the TCP
    /// endpoints need; so it is paid from a budget of `POLL_SHARE` of the time, and when
    /// that is spent the engine sleeps and counts on the release's catch-up burst.
    fn wait_ns(&mut self, now: u64) -> u64 {
        let next = [
            self.link[0].next_release_ns(),
            self.link[1].next_release_ns(),
        ]
        .into_iter()
        .flatten()
        .min();
        self.poll_budget.refill(now);
        let Some(due) = next else {
            self.polling_for = None;
            return MAX_WAIT_NS;
        };
        let until_due = due.saturating_sub(now);
        if self.polling_for.is_some_and(|paid| due <= paid) && until_due <= self.spin_ns {
            return 0; // paid for when the polling began
        }
        let to_poll = until_due.min(self.spin_ns);
        let polling = to_poll > 0 && self.poll_budget.spend(to_poll);
        self.polling_for = polling.then_some(due);
        if polling {
            (until_due - to_poll).min(MAX_WAIT_NS)
        } else {
            until_due.min(MAX_WAIT_NS)
        }
    }

    /// Wait up to `wait_ns` for a device or the control socket; what became ready. A wait
    /// shorter than `MIN_SLEEP_NS` only looks: sleeping and being woken costs a virtual
    /// machine more than that.
    fn wait(&self, wait_ns: u64) -> io::Result<Ready> {
        let mut fds = vec![
            PollFd::new(self.ends[0].fd(), PollFlags::POLLIN),
            PollFd::new(self.ends[1].fd(), PollFlags::POLLIN),
        ];
        if let Some(control) = &self.control {
            for (fd, writing) in control.fds() {
                let flags = if writing {
                    PollFlags::POLLIN | PollFlags::POLLOUT
                } else {
                    PollFlags::POLLIN
                };
                fds.push(PollFd::new(fd, flags));
            }
        }
        let outcome = if wait_ns < MIN_SLEEP_NS {
            nix::poll::poll(&mut fds, PollTimeout::ZERO)
        } else {
            let timeout = TimeSpec::from_duration(std::time::Duration::from_nanos(wait_ns));
            ppoll(&mut fds, Some(timeout), None)
        };
        match outcome {
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(io::Error::from(e)),
        }
        let has = |fd: &PollFd| fd.revents().is_some_and(|r| !r.is_empty());
        Ok(Ready {
            sides: [has(&fds[0]), has(&fds[1])],
            control: fds[2..].iter().any(has),
        })
    }

    /// Counters of both directions and of the engine, as JSON.
    pub fn stats(&self) -> Value {
        let now = now_ns();
        serde_json::json!({
            "now_ns": now,
            "a_to_b": self.link[0].stats(now),
            "b_to_a": self.link[1].stats(now),
            "engine": self.counters,
        })
    }
}

/// Run the calling thread under `SCHED_FIFO` at `priority` (1-99), so that it runs as soon
/// as it is ready instead of waiting for a time slice behind the senders and receivers
/// (on two cores, the fair scheduler kept the engine waiting 1-30 ms, 15 times a second).
/// It sleeps whenever nothing is due, and the kernel keeps 5 % of each second for other
/// tasks, so it cannot lock the machine up.
pub fn run_in_real_time(priority: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: sched_setscheduler reads the param struct, which lives across the call;
    // pid 0 is the calling thread.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &raw const param) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Ask the kernel to keep idle CPUs out of deep sleep while the returned file is open
/// (a power-management latency request of 0 µs on `/dev/cpu_dma_latency`; closing it, also by the process
/// dying, withdraws the request). A packet that arrives while the emulator sleeps is seen
/// only when the CPU wakes: here that took 100 µs by default and 27 µs with the request,
/// and an idle 26.8 ms loop measured +0.22 ms instead of +0.04 ms. Idle CPUs then poll,
/// which costs the host, not this machine's work.
pub fn hold_cpu_latency_qos() -> io::Result<std::fs::File> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/cpu_dma_latency")?;
    file.write_all(&0i32.to_ne_bytes())?;
    Ok(file)
}
