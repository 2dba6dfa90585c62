//! Opening a TUN device inside a network namespace, with the virtio header and the
//! segmentation offloads that let 64 KB super-packets cross unchanged; and the engine's
//! `Device` on two of them: the monotonic clock, waiting in `ppoll` for either device, the
//! control socket, a signal or the parent's end.
//!
//! The engine looks without sleeping a few hundred thousand times a second while it
//! polls towards a release. A `poll` over every descriptor took a quarter of its time at
//! 9.6 Gb/s (each call visits every file); a look asks an epoll set of the two devices
//! instead (one call that reads a ready list) and visits the control socket and the parent
//! only once per `FULL_LOOK_NS`.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use nix::poll::{PollFd, PollFlags, PollTimeout, ppoll};
use nix::sched::{CloneFlags, setns};
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use nix::sys::time::TimeSpec;
use serde_json::Value;

use crate::clock::now_ns;
use crate::control::{ControlServer, Then};
use crate::engine::{Device, Ready, Side};

/// TCP and ECN segmentation, and checksum offload: the kernel hands over super-packets.
const TCP_OFFLOADS: libc::c_uint =
    libc::TUN_F_CSUM | libc::TUN_F_TSO4 | libc::TUN_F_TSO6 | libc::TUN_F_TSO_ECN;
/// UDP segmentation (Linux 6.2 and later): UDP GSO senders cross as super-packets too.
const UDP_OFFLOADS: libc::c_uint = libc::TUN_F_USO4 | libc::TUN_F_USO6;

/// An open TUN device; it disappears when this is dropped (it is not persistent).
pub struct Tun {
    fd: OwnedFd,
    pub name: String,
    /// Whether the kernel accepted the UDP segmentation offloads.
    pub udp_offload: bool,
}

impl Tun {
    /// Create the TUN device `name` in the network namespace `netns` (a name under
    /// /run/netns, a path, or None for this process's own), non-blocking.
    pub fn open(netns: Option<&str>, name: &str) -> io::Result<Tun> {
        if name.is_empty() || name.len() >= libc::IFNAMSIZ {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("device name {name:?} must have 1 to 15 characters"),
            ));
        }
        match netns {
            None => Self::open_here(name),
            Some(netns) => {
                let path = netns_path(netns);
                let target = File::open(&path).map_err(|e| {
                    io::Error::new(
                        e.kind(),
                        format!("network namespace {} cannot be opened: {e}", path.display()),
                    )
                })?;
                let name = name.to_owned();
                // setns changes only the calling thread's namespace: a thread of its own
                // enters it, creates the device there, and ends. The descriptor stays good.
                std::thread::spawn(move || {
                    setns(target.as_fd(), CloneFlags::CLONE_NEWNET).map_err(|e| {
                        io::Error::other(format!(
                            "cannot enter network namespace {} ({e}): longhaul-wan needs root",
                            path.display()
                        ))
                    })?;
                    Self::open_here(&name)
                })
                .join()
                .map_err(|_| io::Error::other("the thread opening the TUN device panicked"))?
            }
        }
    }

    fn open_here(name: &str) -> io::Result<Tun> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open("/dev/net/tun")
            .map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("cannot open /dev/net/tun ({e}): is TUN available and are you root?"),
                )
            })?;
        let fd = OwnedFd::from(file);
        // SAFETY: ifreq is plain old data; zeroed is a valid value.
        let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
        for (dst, src) in ifr.ifr_name.iter_mut().zip(name.bytes()) {
            *dst = src as libc::c_char;
        }
        ifr.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI | libc::IFF_VNET_HDR) as i16;
        // SAFETY: TUNSETIFF takes a pointer to an ifreq, which lives across the call.
        check(unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &raw mut ifr) })
            .map_err(|e| io::Error::new(e.kind(), format!("TUNSETIFF {name}: {e}")))?;
        let hdr_len = crate::packet::VNET_HDR_LEN as libc::c_int;
        // SAFETY: TUNSETVNETHDRSZ takes a pointer to an int.
        check(unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETVNETHDRSZ, &raw const hdr_len) })?;
        let set_offload = |flags: libc::c_uint| {
            // SAFETY: TUNSETOFFLOAD takes the flags as its argument.
            check(unsafe {
                libc::ioctl(
                    fd.as_raw_fd(),
                    libc::TUNSETOFFLOAD,
                    libc::c_ulong::from(flags),
                )
            })
        };
        let udp_offload = set_offload(TCP_OFFLOADS | UDP_OFFLOADS).is_ok();
        if !udp_offload {
            set_offload(TCP_OFFLOADS)
                .map_err(|e| io::Error::new(e.kind(), format!("TUNSETOFFLOAD {name}: {e}")))?;
        }
        Ok(Tun {
            fd,
            name: name.to_owned(),
            udp_offload,
        })
    }

    /// One frame (virtio header and packet) into `buf`; the frame's length, or None if
    /// none is waiting.
    pub fn read(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        // SAFETY: buf is valid for writes of buf.len() bytes; read writes at most that.
        let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            return would_block(io::Error::last_os_error());
        }
        Ok(Some(n as usize))
    }

    /// Hand one frame to the kernel, as if it had arrived on this device.
    pub fn write(&self, frame: &[u8]) -> io::Result<()> {
        // SAFETY: frame is valid for reads of frame.len() bytes.
        let n = unsafe { libc::write(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len()) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

fn netns_path(netns: &str) -> PathBuf {
    if netns.contains('/') {
        PathBuf::from(netns)
    } else {
        PathBuf::from("/run/netns").join(netns)
    }
}

fn check(result: libc::c_int) -> io::Result<()> {
    if result < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn would_block(error: io::Error) -> io::Result<Option<usize>> {
    if error.kind() == io::ErrorKind::WouldBlock {
        Ok(None)
    } else {
        Err(error)
    }
}

/// The engine's device on two TUN devices, in real time.
pub struct TunDevice {
    /// A, then B.
    pub ends: [Tun; 2],
    pub control: Option<ControlServer>,
    /// Readable when the process that started the emulator has ended.
    parent: Option<OwnedFd>,
    stop: Arc<AtomicBool>,
    /// The two devices, for looks (event data: the side).
    devices: Epoll,
    last_full_look_ns: u64,
}

/// Looks between two that also visit the control socket and the parent: a request or the
/// parent's end is seen within this even while the engine never sleeps.
const FULL_LOOK_NS: u64 = 1_000_000;

impl TunDevice {
    pub fn new(
        ends: [Tun; 2],
        control: Option<ControlServer>,
        stop: Arc<AtomicBool>,
    ) -> io::Result<Self> {
        let devices = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?;
        for (side, end) in ends.iter().enumerate() {
            devices.add(end.fd(), EpollEvent::new(EpollFlags::EPOLLIN, side as u64))?;
        }
        Ok(Self {
            ends,
            control,
            parent: None,
            stop,
            devices,
            last_full_look_ns: 0,
        })
    }

    /// Which devices have a frame, asking nothing else.
    fn look_at_devices(&self) -> io::Result<Ready> {
        let mut events = [EpollEvent::empty(); 2];
        let found = match self.devices.wait(&mut events, EpollTimeout::ZERO) {
            Ok(found) => found,
            Err(nix::errno::Errno::EINTR) => 0,
            Err(e) => return Err(io::Error::from(e)),
        };
        let mut ready = Ready {
            stop: self.stop.load(Ordering::Relaxed),
            ..Ready::default()
        };
        for event in &events[..found] {
            ready.sides[event.data() as usize & 1] = true;
        }
        Ok(ready)
    }

    /// Stop when process `pid` ends. It must be this process's parent now, so that an end
    /// that came before this call is not missed.
    ///
    /// A pidfd rather than `PR_SET_PDEATHSIG`: the death signal is sent when the parent
    /// *thread* that forked ends, and a server forks its emulators from worker threads
    /// that may end while the server runs on; a pidfd becomes readable when the process
    /// itself has ended.
    pub fn die_with(&mut self, pid: i32) -> io::Result<()> {
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a descriptor just returned to us, owned by nothing else.
        self.parent = Some(unsafe { OwnedFd::from_raw_fd(fd as i32) });
        // SAFETY: getppid has no arguments and cannot fail.
        let parent = unsafe { libc::getppid() };
        if parent != pid {
            return Err(io::Error::other(format!(
                "process {pid} is not this one's parent (it is {parent}): it has ended already"
            )));
        }
        Ok(())
    }
}

impl Device for TunDevice {
    fn now_ns(&mut self) -> u64 {
        now_ns()
    }

    fn read(&mut self, side: Side, buf: &mut [u8]) -> io::Result<Option<usize>> {
        self.ends[side].read(buf)
    }

    fn write(&mut self, side: Side, frame: &[u8]) -> io::Result<()> {
        self.ends[side].write(frame)
    }

    /// Wait in `ppoll` on both devices, the control socket and the parent; a wait shorter
    /// than `MIN_SLEEP_NS`, or not `sleep`, only looks.
    fn wait(&mut self, until_ns: u64, sleep: bool) -> io::Result<Ready> {
        let now = now_ns();
        let wait_ns = until_ns.saturating_sub(now);
        let looking = !sleep || wait_ns == 0;
        if looking && now < self.last_full_look_ns + FULL_LOOK_NS {
            return self.look_at_devices();
        }
        self.last_full_look_ns = now;
        let mut fds = vec![
            PollFd::new(self.ends[0].fd(), PollFlags::POLLIN),
            PollFd::new(self.ends[1].fd(), PollFlags::POLLIN),
        ];
        if let Some(parent) = &self.parent {
            fds.push(PollFd::new(parent.as_fd(), PollFlags::POLLIN));
        }
        let first_control = fds.len();
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
        let outcome = if looking {
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
        let parent_gone = self.parent.is_some() && has(&fds[2]);
        Ok(Ready {
            sides: [has(&fds[0]), has(&fds[1])],
            control: fds[first_control..].iter().any(has),
            stop: parent_gone || self.stop.load(Ordering::Relaxed),
        })
    }

    fn serve_control(&mut self, answer: &mut dyn FnMut(&str) -> (Value, Then)) -> Then {
        match self.control.as_mut() {
            Some(control) => control.serve(answer),
            None => Then::Continue,
        }
    }
}
