//! How early to stop sleeping before a frame is due, learned from how late this machine
//! wakes a sleeping thread.
//!
//! A thread that sleeps wakes late, and the longer it slept the later: on a two-core
//! virtual machine a 30 us sleep overshot by 7 us on average, 0.3-1 ms by 28 us, 10 ms
//! by 87 us (a real-time thread, `clock_nanosleep`). A late release is line time lost,
//! and polling instead of sleeping takes the core the TCP endpoints need. So the engine
//! sleeps until a margin before the instant and polls the rest, the margin a high
//! quantile of the overshoot it has seen for sleeps of about that length.

/// When to keep the machine's CPUs from halting (a spinning thread per CPU at the lowest
/// priority there is, `SCHED_IDLE`: it runs only when nothing else wants the CPU).
///
/// A virtual machine's idle CPU halts, and waking it (for a frame arriving at a TUN
/// device, or for the emulator's own timer) takes the host 50-150 us, which an idle round
/// trip pays: kept awake, idle pings through 0.28-163 ms loops measured 0.05-0.15 ms
/// closer to the configured round trip and spread a third to a tenth as much. A busy line
/// keeps the CPUs busy anyway, and there the spinners cost: a paced UDP sender beside
/// them fell 5-10 % short of its rate (the host took the spinning CPUs for busy ones).
/// Hence `Quiet`, the default: awake only while the line is quiet, and only while no
/// other emulator's line is busy (`BusyBoard`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KeepAwake {
    Never,
    Quiet,
    Always,
}

/// The spinning threads, and whether they spin now.
///
/// Several emulators run side by side (a campaign keeps every loop's circuit up): one
/// whose line is quiet must not spin while another's is busy. Measured on two cores, an
/// idle 1,400-mile circuit's spinners took 0.66 of a core beside a local loop carrying
/// TCP and cut it from 8.7 to 7.0 Gb/s (the same with the idle emulator stopped: 8.7).
/// So each emulator marks its line busy on a machine-wide `BusyBoard` (`BusyMark`, from
/// its line's activity, whether it keeps the CPUs awake or not), and spinners spin only
/// while no other emulator's line is busy.
pub struct Spinners {
    wanted: std::sync::Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<std::thread::Thread>,
}

/// How often a spinner looks whether another emulator's line has become busy.
const BOARD_CHECK: std::time::Duration = std::time::Duration::from_millis(5);

impl Spinners {
    /// A spinner on every CPU, spinning while `set(true)` and until `stop` is set, and
    /// only while no other emulator on `board` says its line is busy.
    pub fn start(
        stop: &std::sync::Arc<std::sync::atomic::AtomicBool>,
        spinning: bool,
        board: Option<&BusyBoard>,
    ) -> Self {
        use std::sync::atomic::{AtomicBool, Ordering};
        let wanted = std::sync::Arc::new(AtomicBool::new(spinning));
        let online = crate::sched::online_cpus();
        let mut threads = Vec::new();
        for cpu in 0..online {
            let stop = std::sync::Arc::clone(stop);
            let wanted = std::sync::Arc::clone(&wanted);
            let board = board.cloned();
            let spawned = std::thread::Builder::new()
                .name(format!("awake-{cpu}"))
                .spawn(move || {
                    run_idle_on(cpu);
                    let mut looked = std::time::Instant::now();
                    let mut others_busy = false;
                    while !stop.load(Ordering::Relaxed) {
                        if !wanted.load(Ordering::Relaxed) {
                            // Unparked by `set(true)`; the timeout only notices `stop`.
                            std::thread::park_timeout(std::time::Duration::from_millis(200));
                            continue;
                        }
                        if looked.elapsed() >= BOARD_CHECK {
                            others_busy = board.as_ref().is_some_and(BusyBoard::others_busy);
                            looked = std::time::Instant::now();
                        }
                        if others_busy {
                            std::thread::sleep(BOARD_CHECK);
                            continue;
                        }
                        for _ in 0..1_000 {
                            std::hint::spin_loop();
                        }
                    }
                });
            if let Ok(handle) = spawned {
                threads.push(handle.thread().clone());
            }
        }
        Self { wanted, threads }
    }

    /// Spin (the line is quiet) or not (it is busy).
    pub fn set(&self, spinning: bool) {
        let was = self
            .wanted
            .swap(spinning, std::sync::atomic::Ordering::Relaxed);
        if spinning && !was {
            for thread in &self.threads {
                thread.unpark();
            }
        }
    }

    pub fn is_spinning(&self) -> bool {
        self.wanted.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Which emulators on this machine have a busy line: a directory holding one empty file
/// per such emulator, named by its process id. A file whose process is gone (one killed
/// while busy) is ignored and removed by whoever finds it.
#[derive(Debug, Clone)]
pub struct BusyBoard {
    dir: std::path::PathBuf,
    own: u32,
}

impl BusyBoard {
    /// Where emulators meet by default: memory-backed, so no disk is touched.
    pub const DEFAULT_DIR: &str = "/dev/shm/longhaul-wan-busy";

    /// The board in `dir` (made if missing) for the process `own`; None if it cannot be
    /// made (the spinners then spin as if alone).
    pub fn open(dir: impl Into<std::path::PathBuf>, own: u32) -> Option<Self> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir).ok()?;
        Some(Self { dir, own })
    }

    fn own_file(&self) -> std::path::PathBuf {
        self.dir.join(self.own.to_string())
    }

    /// Say whether this emulator's line is busy.
    pub fn mark(&self, busy: bool) {
        if busy {
            let _ = std::fs::File::create(self.own_file());
        } else {
            let _ = std::fs::remove_file(self.own_file());
        }
    }

    /// Whether another live emulator says its line is busy.
    pub fn others_busy(&self) -> bool {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return false;
        };
        let mut busy = false;
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if pid == self.own {
                continue;
            }
            if std::path::Path::new(&format!("/proc/{pid}")).exists() {
                busy = true;
            } else {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        busy
    }
}

/// This emulator's mark on the board: there while its line is busy, taken off when the
/// line goes quiet and when the emulator ends.
pub struct BusyMark {
    board: BusyBoard,
    busy: bool,
}

impl BusyMark {
    /// Quiet to begin with (a mark left by an earlier process of the same id is taken off).
    pub fn new(board: BusyBoard) -> Self {
        board.mark(false);
        Self { board, busy: false }
    }

    /// Say whether the line is busy now; the board is written only when that changes.
    pub fn set(&mut self, busy: bool) {
        if busy != self.busy {
            self.board.mark(busy);
            self.busy = busy;
        }
    }
}

impl Drop for BusyMark {
    fn drop(&mut self) {
        self.set(false);
    }
}

/// Pin the calling thread to `cpu` at `SCHED_IDLE`; a failure leaves it where it was.
fn run_idle_on(cpu: usize) {
    let _ = crate::sched::set_cpus([cpu]);
    let _ = crate::sched::set_policy(libc::SCHED_IDLE, 0);
}

/// Sleeps are grouped by length: bucket k holds those of 2^k to 2^(k+1) us.
const BUCKETS: usize = 18;
/// Never less margin than this (the poll that follows a wake-up takes about a microsecond).
const MIN_MARGIN_NS: u64 = 4_000;

#[derive(Debug, Clone, Copy)]
struct Estimate {
    mean_ns: f64,
    deviation_ns: f64,
}

/// Margins by sleep length.
#[derive(Debug, Clone)]
pub struct WakeMargins {
    estimates: [Estimate; BUCKETS],
    cap_ns: u64,
}

fn bucket(sleep_ns: u64) -> usize {
    let micros = sleep_ns / 1_000;
    ((u64::BITS - micros.leading_zeros()) as usize).min(BUCKETS - 1)
}

impl WakeMargins {
    /// Margins that start from the overshoots measured above and never exceed `cap_ns`.
    pub fn new(cap_ns: u64) -> Self {
        let estimates = std::array::from_fn(|k| {
            let sleep_us = (1u64 << k) as f64;
            // 7 us at 30 us, about 28 us from 0.3 to 1 ms, 87 us at 10 ms.
            let mean_us = (5.0 + 0.1 * sleep_us).min(30.0 + 0.006 * sleep_us);
            Estimate {
                mean_ns: mean_us * 1e3,
                deviation_ns: mean_us * 1e3 / 2.0,
            }
        });
        Self { estimates, cap_ns }
    }

    /// How long before an instant `sleep_ns` away to stop sleeping.
    pub fn margin_ns(&self, sleep_ns: u64) -> u64 {
        let e = self.estimates[bucket(sleep_ns)];
        let margin = (e.mean_ns + 3.0 * e.deviation_ns) as u64;
        margin.clamp(MIN_MARGIN_NS, self.cap_ns.max(MIN_MARGIN_NS))
    }

    /// A sleep of `sleep_ns` woke `overshoot_ns` late.
    pub fn learn(&mut self, sleep_ns: u64, overshoot_ns: u64) {
        let e = &mut self.estimates[bucket(sleep_ns)];
        let sample = overshoot_ns as f64;
        let error = sample - e.mean_ns;
        e.mean_ns += error / 16.0;
        e.deviation_ns += (error.abs() - e.deviation_ns) / 16.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn margins_start_from_what_was_measured_and_grow_with_the_sleep() {
        let m = WakeMargins::new(300_000);
        assert!(m.margin_ns(30_000) >= 15_000 && m.margin_ns(30_000) <= 30_000);
        assert!(m.margin_ns(1_000_000) > m.margin_ns(30_000));
        assert_eq!(m.margin_ns(5_000_000_000), 300_000, "capped");
    }

    #[test]
    fn a_machine_that_wakes_on_time_earns_small_margins() {
        let mut m = WakeMargins::new(300_000);
        for _ in 0..500 {
            m.learn(40_000, 1_000);
        }
        assert_eq!(m.margin_ns(40_000), MIN_MARGIN_NS);
        for _ in 0..500 {
            m.learn(40_000, 60_000);
        }
        assert!(m.margin_ns(40_000) >= 60_000);
    }
}

#[cfg(test)]
mod board_tests {
    use super::BusyBoard;

    #[test]
    fn an_emulator_sees_the_others_busy_lines_not_its_own_nor_the_dead_ones() {
        let dir = std::env::temp_dir().join(format!("longhaul-board-{}", std::process::id()));
        let me = BusyBoard::open(&dir, std::process::id()).unwrap();
        assert!(!me.others_busy());
        me.mark(true);
        assert!(!me.others_busy(), "its own mark is not another's");
        // Another live process (this test's parent is alive) marks its line busy.
        let parent = std::os::unix::process::parent_id();
        let other = BusyBoard::open(&dir, parent).unwrap();
        other.mark(true);
        assert!(me.others_busy());
        other.mark(false);
        assert!(!me.others_busy());
        // A mark left by a process that is gone is ignored and cleared.
        let dead = BusyBoard::open(&dir, 0x7fff_fff0).unwrap();
        dead.mark(true);
        assert!(!me.others_busy());
        assert!(!dir.join("2147483632").exists());
        me.mark(false);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
