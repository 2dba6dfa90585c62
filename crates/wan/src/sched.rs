//! Where and how the calling thread runs: its scheduling policy and the CPUs it may use.
//! The engine runs real-time on one CPU, its spinners idle-class on each, and the thread
//! that maps a larger arena ordinary on any; a thread starts with the policy and CPUs of
//! the one that started it.

use std::io;

/// CPUs online now.
pub fn online_cpus() -> usize {
    // SAFETY: sysconf reads a constant.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(online).unwrap_or(1).max(1)
}

/// Run the calling thread under `policy` (`libc::SCHED_*`) at `priority` (0 but for the
/// real-time policies).
pub fn set_policy(policy: libc::c_int, priority: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: sched_setscheduler reads the param struct, which lives across the call;
    // pid 0 is the calling thread.
    if unsafe { libc::sched_setscheduler(0, policy, &raw const param) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Let the calling thread run on `cpus` only.
pub fn set_cpus(cpus: impl IntoIterator<Item = usize>) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain old data, so all zeroes is an empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for cpu in cpus {
        // SAFETY: CPU_SET writes within the set (it ignores CPUs past CPU_SETSIZE).
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: sched_setaffinity reads the set, for the calling thread.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &raw const set) }
        != 0
    {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
