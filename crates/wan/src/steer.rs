//! Steering the hosts' receive work off the emulator's CPU, only for TCP and only while
//! it comes fast.
//!
//! Every frame the emulator writes into a TUN device is processed by the receiving host's
//! kernel inside that write, on the emulator's CPU. For TCP that work is heavy and
//! uneven (an acknowledgement's arrival sends the sender's next segments, a data
//! segment's queues it and answers it), and at 9.6 Gb/s it is most of a core: the
//! emulator, doing it, fell behind, and steering it to the other CPUs (receive packet
//! steering, `rps_cpus`) doubled what a circuit carried. For UDP it is a socket's enqueue,
//! and steering costs more than it saves: a frame handed to another CPU costs a virtual
//! machine an inter-processor interrupt, which the hypervisor traps, on both CPUs. A
//! Hurricane transfer at 9.6 Gb/s x 163 ms (64 KB super-packets) took 26-35 us a write
//! with every busy device steered and 10-20 us with TCP's alone, and its utilization went
//! from 0.846 to 0.939 (median of nine runs each, the two builds alternated in rounds of
//! three on one circuit). And it costs an idle round trip the wake-up of that CPU,
//! 0.05-0.1 ms. So the emulator steers each device on its own, only while TCP packets
//! come into it fast, and stops when they stop.
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

/// Whether packets come fast: what keeping the CPUs awake (on while quiet) follows, and,
/// counting TCP packets into one device, steering that device (on while busy). Two
/// thresholds, so that a rate between them changes nothing.
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

/// One device's `rps_cpus` file, the CPUs to steer to, and how fast TCP comes into it.
struct SteeredDevice {
    file: File,
    mask: String,
    on: bool,
    tcp: Activity,
}

impl SteeredDevice {
    fn set(&mut self, on: bool) -> io::Result<()> {
        let value = if on { self.mask.as_str() } else { "0" };
        self.file.write_at(format!("{value}\n").as_bytes(), 0)?;
        self.on = on;
        Ok(())
    }
}

/// The `rps_cpus` file of each end's device (`[A, B]`, either may be missing), each
/// steered while TCP comes into it fast.
pub struct Steering {
    devices: [Option<SteeredDevice>; 2],
    /// Times steering was turned on or off, on each device.
    pub switches: [u64; 2],
}

impl Steering {
    /// Take copies of process `pid`'s descriptors `fds`, each of the device at one end
    /// (0 is A, 1 is B) with the CPU mask (hex, as `rps_cpus` takes it) to steer its
    /// receive work to. Both start off.
    pub fn take(pid: i32, fds: &[(usize, RawFd, String)]) -> io::Result<Steering> {
        // SAFETY: pidfd_open takes a pid and flags, and returns a new descriptor or -1.
        let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if pidfd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a descriptor just returned to us.
        let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd as RawFd) };
        let mut devices = [None, None];
        for (side, fd, mask) in fds {
            if !mask.chars().all(|c| c.is_ascii_hexdigit()) || mask.is_empty() {
                return Err(io::Error::other(format!(
                    "mask {mask:?} is not hexadecimal"
                )));
            }
            let Some(slot) = devices.get_mut(*side) else {
                return Err(io::Error::other(format!(
                    "end {side} is not 0 (A) or 1 (B)"
                )));
            };
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
            let mut device = SteeredDevice {
                // SAFETY: a descriptor just made for us.
                file: unsafe { File::from_raw_fd(copy as RawFd) },
                mask: mask.clone(),
                on: true,
                tcp: Activity::default(),
            };
            device.set(false)?;
            *slot = Some(device);
        }
        Ok(Steering {
            devices,
            switches: [0, 0],
        })
    }

    /// `tcp_packets` more TCP packets were written into the device at end `side` by
    /// `now_ns`: steer it if they come fast, stop if they stopped. A failed write of the
    /// mask leaves that device as it was.
    ///
    /// A TCP flow in slow start over a long loop comes in bursts a round trip apart, so
    /// its devices switch off and on each round trip then (one BBR stream at 9.6 Gb/s x
    /// 163 ms: 8-18 switches a device in a 12 s run). Each costs a write of the mask.
    /// Reasoned, not measured: none reorders a flow, since steering stops only after a
    /// window with under `OFF_PACKETS`, when what the other CPU was handed is long done.
    pub fn written(&mut self, side: usize, now_ns: u64, tcp_packets: u64) {
        let Some(device) = self.devices.get_mut(side).and_then(Option::as_mut) else {
            return;
        };
        let busy = device.tcp.released(now_ns, tcp_packets);
        if busy != device.on && device.set(busy).is_ok() {
            self.switches[side] += 1;
        }
    }

    /// Whether the device at each end is steered now (false where there is none).
    pub fn is_on(&self) -> [bool; 2] {
        self.devices
            .each_ref()
            .map(|device| device.as_ref().is_some_and(|d| d.on))
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
    fn each_device_is_steered_while_tcp_comes_into_it_fast_and_only_then() {
        let dir = std::env::temp_dir().join(format!("longhaul-steer-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let open = |name: &str| {
            std::fs::OpenOptions::new()
                .create(true)
                .truncate(true)
                .read(true)
                .write(true)
                .open(dir.join(name))
                .unwrap()
        };
        let (mut a, mut b) = (open("a"), open("b"));
        let pid = std::process::id() as i32;
        let fds = [
            (0, a.as_raw_fd(), "1".into()),
            (1, b.as_raw_fd(), "3".into()),
        ];
        let mut steering = Steering::take(pid, &fds).unwrap();
        assert_eq!(
            (contents(&mut a), contents(&mut b)),
            ("0\n".into(), "0\n".into())
        );
        assert_eq!(steering.is_on(), [false, false], "off to begin with");
        steering.written(1, 1_000, ON_PACKETS);
        steering.written(0, 1_000, ON_PACKETS - 1);
        assert_eq!(steering.is_on(), [false, true]);
        assert_eq!(
            (contents(&mut a), contents(&mut b)),
            ("0\n".into(), "3\n".into())
        );
        // A window with fewer than OFF_PACKETS ends it.
        steering.written(1, WINDOW_NS + 1_000, 0);
        steering.written(1, 2 * WINDOW_NS + 1_000, OFF_PACKETS - 1);
        assert_eq!(steering.is_on(), [false, false]);
        assert_eq!(contents(&mut b), "0\n");
        assert_eq!(steering.switches, [0, 2]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_device_that_is_not_there_is_never_steered() {
        let dir = std::env::temp_dir().join(format!("longhaul-steer-one-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("rps_cpus");
        let mut b = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let pid = std::process::id() as i32;
        let mut steering = Steering::take(pid, &[(1, b.as_raw_fd(), "1".into())]).unwrap();
        steering.written(0, 1_000, 10 * ON_PACKETS);
        steering.written(1, 1_000, 10 * ON_PACKETS);
        assert_eq!(steering.is_on(), [false, true]);
        assert_eq!(contents(&mut b), "1\n");
        assert!(Steering::take(pid, &[(1, b.as_raw_fd(), "zz".into())]).is_err());
        assert!(Steering::take(pid, &[(2, b.as_raw_fd(), "1".into())]).is_err());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
