//! The two ends of a measured transfer, as USN's hosts made one: a sender that writes a
//! file on each of its streams, and a sink whose window is pinned (a 64 KB window was
//! what a host without window scaling advertised). The sink times each connection from
//! its first byte to its last and hashes what arrived, so a transfer through the
//! accelerators is shown byte-exact, not assumed so.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;
use socket2::{Domain, Socket, Type};

use crate::sockopt;

#[derive(Debug, Serialize)]
pub struct Received {
    pub bytes: u64,
    /// Seconds since the sink started.
    /// When the connection was taken (its thread began reading), from the sink's start.
    pub accepted_s: f64,
    pub first_byte_s: f64,
    pub last_byte_s: f64,
    pub blake3: String,
}

#[derive(Debug, Serialize)]
pub struct SinkReport {
    pub connections: Vec<Received>,
    pub bytes: u64,
    /// From the first connection's first byte to the last one's last.
    pub seconds: f64,
    pub mbps: f64,
}

/// A listener whose accepted connections advertise at most `window_bytes`.
pub fn sink_listener(listen: SocketAddr, window_bytes: Option<u32>) -> io::Result<TcpListener> {
    let socket = Socket::new(Domain::for_address(listen), Type::STREAM, None)?;
    socket.set_reuse_address(true)?;
    if let Some(window) = window_bytes {
        // The buffer is left room (four windows) so the clamp, not the buffer's
        // accounting of overhead, is what bounds the window.
        sockopt::set_buffers(&socket, 4 * window as usize);
        sockopt::clamp_window(&socket, window)?;
    }
    socket.bind(&listen.into())?;
    socket.listen(128)?;
    Ok(socket.into())
}

/// Takes `connections` connections, reads each to its end, and reports.
pub fn sink(
    listener: &TcpListener,
    connections: usize,
    timeout: Duration,
) -> io::Result<SinkReport> {
    let started = Instant::now();
    let handles: Vec<_> = (0..connections)
        .map(|_| {
            let (conn, _) = listener.accept()?;
            conn.set_read_timeout(Some(timeout))?;
            Ok(std::thread::spawn(move || receive(conn, started)))
        })
        .collect::<io::Result<_>>()?;
    let mut received = Vec::new();
    for handle in handles {
        received.push(
            handle
                .join()
                .map_err(|_| io::Error::other("a receiving thread panicked"))??,
        );
    }
    let bytes = received.iter().map(|r| r.bytes).sum();
    let first = received
        .iter()
        .map(|r| r.first_byte_s)
        .fold(f64::INFINITY, f64::min);
    let last = received.iter().map(|r| r.last_byte_s).fold(0.0, f64::max);
    // From the first byte to the last; when every byte came in one read (a small transfer
    // on a fast path), from the first connection taken instead, or nothing could be timed.
    let accepted = received
        .iter()
        .map(|r| r.accepted_s)
        .fold(f64::INFINITY, f64::min);
    let seconds = if last > first {
        last - first
    } else if last > accepted {
        last - accepted
    } else {
        0.0
    };
    let mbps = if seconds > 0.0 {
        bytes as f64 * 8.0 / seconds / 1e6
    } else {
        0.0
    };
    Ok(SinkReport {
        connections: received,
        bytes,
        seconds,
        mbps,
    })
}

fn receive(mut conn: TcpStream, started: Instant) -> io::Result<Received> {
    let mut buf = vec![0u8; 1 << 20];
    let mut hasher = blake3::Hasher::new();
    let accepted = started.elapsed().as_secs_f64();
    let (mut bytes, mut first, mut last) = (0u64, None, 0.0);
    loop {
        let n = conn.read(&mut buf)?;
        if n == 0 {
            break;
        }
        let now = started.elapsed().as_secs_f64();
        first.get_or_insert(now);
        last = now;
        bytes += n as u64;
        hasher.update(&buf[..n]);
    }
    // Closing tells the sender every byte is in.
    drop(conn);
    Ok(Received {
        bytes,
        accepted_s: accepted,
        first_byte_s: first.unwrap_or(last),
        last_byte_s: last,
        blake3: hasher.finalize().to_hex().to_string(),
    })
}

#[derive(Debug, Serialize)]
pub struct SendReport {
    pub streams: usize,
    pub bytes: u64,
    pub seconds: f64,
    /// Of each stream's bytes, in stream order.
    pub blake3: Vec<String>,
}

/// Sends `bytes_per_stream` bytes of the file on each of `streams` connections at once,
/// stream i the i-th such slice (the whole file on each, if not given), and waits until
/// the sink has closed every one (it has every byte).
pub fn send(
    to: SocketAddr,
    file: &Path,
    streams: usize,
    bytes_per_stream: Option<u64>,
    timeout: Duration,
) -> io::Result<SendReport> {
    let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", file.display()));
    // Only what the streams send is read (a file may be larger than a run needs).
    let wanted = bytes_per_stream.map_or(u64::MAX, |n| n.saturating_mul(streams as u64));
    let mut data = Vec::new();
    std::fs::File::open(file)
        .map_err(named)?
        .take(wanted)
        .read_to_end(&mut data)
        .map_err(named)?;
    let slices: Vec<std::ops::Range<usize>> = match bytes_per_stream {
        None => vec![0..data.len(); streams],
        Some(n) => {
            let n = usize::try_from(n).map_err(|_| io::Error::other("--bytes is too large"))?;
            if n.checked_mul(streams).is_none_or(|all| all > data.len()) {
                return Err(io::Error::other(format!(
                    "{} holds {} bytes, fewer than {streams} streams x {n} bytes",
                    file.display(),
                    data.len()
                )));
            }
            (0..streams).map(|i| i * n..(i + 1) * n).collect()
        }
    };
    let data = std::sync::Arc::new(data);
    let started = Instant::now();
    let handles: Vec<_> = slices
        .iter()
        .cloned()
        .map(|slice| {
            let data = std::sync::Arc::clone(&data);
            std::thread::spawn(move || -> io::Result<()> {
                let mut conn = TcpStream::connect_timeout(&to, timeout)?;
                conn.set_write_timeout(Some(timeout))?;
                conn.set_read_timeout(Some(timeout))?;
                conn.write_all(&data[slice])?;
                conn.shutdown(std::net::Shutdown::Write)?;
                let mut rest = [0u8; 64];
                while conn.read(&mut rest)? > 0 {}
                Ok(())
            })
        })
        .collect();
    for handle in handles {
        handle
            .join()
            .map_err(|_| io::Error::other("a sending thread panicked"))??;
    }
    Ok(SendReport {
        streams,
        bytes: slices.iter().map(|s| s.len() as u64).sum(),
        seconds: started.elapsed().as_secs_f64(),
        blake3: slices
            .iter()
            .map(|s| blake3::hash(&data[s.clone()]).to_hex().to_string())
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_transfer_that_arrives_in_one_read_still_has_a_rate() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let sender = std::thread::spawn(move || {
            let mut conn = TcpStream::connect(address).unwrap();
            std::thread::sleep(Duration::from_millis(20)); // it all waits in the socket
            conn.write_all(&[7u8; 1000]).unwrap();
        });
        let report = sink(&listener, 1, Duration::from_secs(10)).unwrap();
        sender.join().unwrap();
        assert_eq!(report.bytes, 1000);
        // Timed from the connection taken: the 20 ms it waited, at most a few more.
        assert!(report.seconds > 0.015, "{}", report.seconds);
        assert!(report.mbps > 0.0);
    }
}
