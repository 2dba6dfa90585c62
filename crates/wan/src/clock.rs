//! Time as the shell keeps it: the monotonic clock in nanoseconds, sleeping to an
//! instant, and the timer slack every thread of longhaul-wan runs with.

use std::time::Duration;

use nix::sys::time::TimeSpec;
use nix::time::{ClockId, ClockNanosleepFlags, clock_gettime, clock_nanosleep};

/// `CLOCK_MONOTONIC` in nanoseconds.
pub fn now_ns() -> u64 {
    let t = clock_gettime(ClockId::CLOCK_MONOTONIC).expect("CLOCK_MONOTONIC is always there");
    t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
}

/// Sleep until `deadline_ns` on the monotonic clock (a signal may end it early).
pub fn sleep_until(deadline_ns: u64) {
    let deadline = TimeSpec::from_duration(Duration::from_nanos(deadline_ns));
    let _ = clock_nanosleep(
        ClockId::CLOCK_MONOTONIC,
        ClockNanosleepFlags::TIMER_ABSTIME,
        &deadline,
    );
}

/// 1 ns of timer slack for the calling thread: the default 50 µs would be most of a short
/// link's error budget, half a traffic batch, or an echo exchange's start shifted as much.
pub fn fine_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes a value and touches no memory.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// A warning on stderr, named as the tool's.
pub fn warn(message: &str) {
    eprintln!("longhaul-wan: {message}");
}
