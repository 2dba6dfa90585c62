//! The socket options the accelerator and its test tools set (`socket(7)`, `tcp(7)`).

use std::io;
use std::os::fd::{AsRawFd, RawFd};

fn set(fd: RawFd, level: i32, name: i32, value: &[u8]) -> io::Result<()> {
    // SAFETY: a descriptor the caller owns, and a buffer of the length given.
    let result = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            value.as_ptr().cast(),
            value.len() as libc::socklen_t,
        )
    };
    if result < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn set_int(fd: RawFd, level: i32, name: i32, value: i32) -> io::Result<()> {
    set(fd, level, name, &value.to_ne_bytes())
}

/// Kernel buffers of `bytes` each way. Root may pass `net.core.[rw]mem_max`
/// (`SO_*BUFFORCE`); anyone else gets what those limits allow. A buffer set this way
/// turns the kernel's receive auto-tuning off, so it must hold the bandwidth-delay product.
pub fn set_buffers(socket: &impl AsRawFd, bytes: usize) {
    let bytes = i32::try_from(bytes).unwrap_or(i32::MAX);
    for (forced, plain) in [
        (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF),
        (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF),
    ] {
        if set_int(socket.as_raw_fd(), libc::SOL_SOCKET, forced, bytes).is_err() {
            let _ = set_int(socket.as_raw_fd(), libc::SOL_SOCKET, plain, bytes);
        }
    }
}

/// The congestion control of one socket (`TCP_CONGESTION`); the error names it.
pub fn set_congestion(socket: &impl AsRawFd, name: &str) -> io::Result<()> {
    set(socket.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_CONGESTION, name.as_bytes()).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("congestion control {name:?} is not available here ({e}); see /proc/sys/net/ipv4/tcp_available_congestion_control"),
        )
    })
}

/// The largest window this end advertises (`TCP_WINDOW_CLAMP`): a host whose window is
/// pinned, as a 64 KB window without window scaling was. Set on a listening socket it
/// holds for the connections it accepts (`tcp_openreq_init_rwin` takes the listener's).
pub fn clamp_window(socket: &impl AsRawFd, bytes: u32) -> io::Result<()> {
    let bytes = i32::try_from(bytes).unwrap_or(i32::MAX);
    set_int(
        socket.as_raw_fd(),
        libc::IPPROTO_TCP,
        libc::TCP_WINDOW_CLAMP,
        bytes,
    )
}

/// Close with a reset rather than a FIN (`SO_LINGER` of zero): how a stream the
/// accelerator could not carry ends for its application.
pub fn reset_on_close(socket: &impl AsRawFd) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a plain struct viewed as its bytes for the duration of the call.
    let bytes = unsafe {
        std::slice::from_raw_parts((&raw const linger).cast::<u8>(), size_of::<libc::linger>())
    };
    let _ = set(socket.as_raw_fd(), libc::SOL_SOCKET, libc::SO_LINGER, bytes);
}
