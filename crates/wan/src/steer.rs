//! Steering the hosts' receive work off the emulator's CPU, only while the link is busy.
//!
//! Every frame the emulator writes into a TUN device is processed by the receiving host's
//! kernel (TCP, the echo reply) inside that write, on the emulator's CPU. At 9.6 Gb/s that
//! is most of a core, and the emulator, doing it, fell behind: steering it to the other
//! CPUs (receive packet steering, `rps_cpus`) doubled what a circuit carried. But a frame
//! handed to another CPU costs a virtual machine a wake-up of that CPU, 0.05-0.1 ms of
//! every idle round trip. So the emulator steers only while frames come fast, and stops
//! when the link goes quiet.
//!
//! The emulator cannot open a device's `rps_cpus` itself (only a sysfs mounted inside the
//! device's network namespace shows it); the testbed opens the files and the emulator
//! takes copies of the descriptors (`pidfd_getfd`).

use std::fs::File;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::FileExt;

/// The link is busy once this many packets went on the line in a `WINDOW_NS`...
const ON_PACKETS: u64 = 200;
/// ... and quiet again when fewer than this did, over a whole window.
const OFF_PACKETS: u64 = 20;
const WINDOW_NS: u64 = 50_000_000;

/// Whether packets come fast: what steering (on while busy) and keeping the CPUs awake
/// (on while quiet) follow. Two thresholds, so that a rate between them changes nothing.
///
/// Packets, not frames: a TUN device hands the emulator super-packets of up to 64 KB,
/// 44 packets of 1,500 bytes, and a full 1 Gb/s line carries only about 95 of those in a
/// window. Counted as frames, a full line was quiet and the spinners ran through it:
/// twelve Hurricane transfers of 1 GiB over 1 Gb/s x 163 ms used the line 0.99967
/// (median) with the spinners off and 0.99911 with them on, and the two ends took 0.068
/// against 0.092 cores.
#[derive(Debug, Default, Clone)]
pub struct Activity {
    busy: bool,
    window_start_ns: u64,
    packets: u64,
}

impl Activity {
    /// `packets` went on the line by `now_ns`; whether the link is busy now.
    pub fn released(&mut self, now_ns: u64, packets: u64) -> bool {
        self.packets += packets;
        if !self.busy && self.packets >= ON_PACKETS {
            self.busy = true;
        }
        if now_ns >= self.window_start_ns + WINDOW_NS {
            if self.busy && self.packets < OFF_PACKETS {
                self.busy = false;
            }
            self.window_start_ns = now_ns;
            self.packets = 0;
        }
        self.busy
    }
}

/// The `rps_cpus` file of each device, and the CPUs to steer to.
pub struct Steering {
    files: Vec<(File, String)>,
    on: bool,
    /// Times steering was turned on and off.
    pub switches: u64,
}

impl Steering {
    /// Take copies of process `pid`'s descriptors `fds`, each with the CPU mask (hex, as
    /// `rps_cpus` takes it) to steer its device's receive work to.
    pub fn take(pid: i32, fds: &[(RawFd, String)]) -> io::Result<Steering> {
        // SAFETY: pidfd_open takes a pid and flags, and returns a new descriptor or -1.
        let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if pidfd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a descriptor just returned to us.
        let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd as RawFd) };
        let mut files = Vec::new();
        for (fd, mask) in fds {
            if !mask.chars().all(|c| c.is_ascii_hexdigit()) || mask.is_empty() {
                return Err(io::Error::other(format!(
                    "mask {mask:?} is not hexadecimal"
                )));
            }
            // SAFETY: pidfd_getfd takes a pidfd, a descriptor number in that process and
            // flags; it returns a new descriptor of ours, or -1.
            let copy = unsafe {
                libc::syscall(
                    libc::SYS_pidfd_getfd,
                    std::os::fd::AsRawFd::as_raw_fd(&pidfd),
                    *fd,
                    0,
                )
            };
            if copy < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: a descriptor just made for us.
            files.push((unsafe { File::from_raw_fd(copy as RawFd) }, mask.clone()));
        }
        let mut steering = Steering {
            files,
            on: true,
            switches: 0,
        };
        steering.set(false)?;
        steering.switches = 0;
        Ok(steering)
    }

    /// Steer (`on`) or let each frame's receiving work run where it was written. A failed
    /// write leaves steering as it was.
    pub fn set(&mut self, on: bool) -> io::Result<()> {
        if on == self.on {
            return Ok(());
        }
        for (file, mask) in &self.files {
            let value = if on { mask.as_str() } else { "0" };
            file.write_at(format!("{value}\n").as_bytes(), 0)?;
        }
        self.on = on;
        self.switches += 1;
        Ok(())
    }

    pub fn is_on(&self) -> bool {
        self.on
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek};
    use std::os::fd::AsRawFd;

    fn contents(file: &mut std::fs::File) -> String {
        let mut text = String::new();
        file.rewind().unwrap();
        file.read_to_string(&mut text).unwrap();
        text
    }

    #[test]
    fn a_link_is_busy_while_packets_come_fast_and_quiet_after_a_quiet_window() {
        let mut activity = Activity::default();
        assert!(!activity.released(1_000, 199));
        assert!(activity.released(2_000, 1), "200 packets in a window");
        assert!(
            activity.released(WINDOW_NS + 2_000, 1),
            "the busy window ends"
        );
        assert!(activity.released(WINDOW_NS + 3_000, 20));
        assert!(
            activity.released(2 * WINDOW_NS + 3_000, 0),
            "20 packets are not quiet"
        );
        assert!(!activity.released(3 * WINDOW_NS + 4_000, 19), "19 are");
    }

    #[test]
    fn it_writes_the_mask_and_zero() {
        let dir = std::env::temp_dir().join(format!("longhaul-steer-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("rps_cpus");
        let mut ours = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let pid = std::process::id() as i32;
        let mut steering = Steering::take(pid, &[(ours.as_raw_fd(), "1".into())]).unwrap();
        assert_eq!(contents(&mut ours), "0\n", "quiet to begin with");
        steering.set(true).unwrap();
        assert!(steering.is_on());
        assert_eq!(contents(&mut ours), "1\n");
        steering.set(false).unwrap();
        assert!(!steering.is_on());
        assert_eq!(contents(&mut ours), "0\n");
        assert_eq!(steering.switches, 2);
        assert!(Steering::take(pid, &[(ours.as_raw_fd(), "zz".into())]).is_err());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
