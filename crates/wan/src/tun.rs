//! Opening a TUN device inside a network namespace, with the virtio header and the
//! segmentation offloads that let 64 KB super-packets cross unchanged.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

use nix::sched::{CloneFlags, setns};

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

    /// One frame (virtio header and packet) into `buf`, replacing what it held, up to its
    /// capacity; the frame's length, or None if none is waiting. The buffer is not zeroed
    /// first: at 10 Gb/s that alone cost a tenth of the emulator's time.
    pub fn read(&self, buf: &mut Vec<u8>) -> io::Result<Option<usize>> {
        buf.clear();
        let spare = buf.spare_capacity_mut();
        // SAFETY: spare is valid for writes of spare.len() bytes; read writes at most that.
        let n = unsafe { libc::read(self.fd.as_raw_fd(), spare.as_mut_ptr().cast(), spare.len()) };
        if n < 0 {
            return would_block(io::Error::last_os_error());
        }
        let n = n as usize;
        // SAFETY: the kernel wrote the first n bytes.
        unsafe { buf.set_len(n) };
        Ok(Some(n))
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
