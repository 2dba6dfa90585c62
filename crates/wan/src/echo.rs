//! The jitter suite's echo tool: the round-trip time of each of a series of TCP exchanges.
//!
//! USN's jitter suite timed two kinds of exchange over a dedicated channel: the client
//! sends a message of N bytes and the server echoes it back (`echo`), or the client names
//! a size N and the server sends N bytes back (`size`). A request is an 8-byte header,
//! followed in `echo` by the message; the answer is the N bytes alone, which the client
//! knows to expect, so that what comes back is what the suite timed:
//!
//! ```text
//! request   "LH" | version 1 | mode (1 echo, 2 size) | N, u32 big-endian | echo: N bytes
//! answer    N bytes: the message (echo), or filler (size)
//! ```
//!
//! N is 1 byte to 16 MiB. The server reads a whole request before it answers: a client
//! writes all of its message before it reads, so a server that echoed as it read could
//! fill the client's receive window and block, with the client blocked writing to it.
//!
//! The pure parts (the header, a decoder that takes the stream in pieces of any size, the
//! schedule, the statistics) are tested here; `Server` and `Probe` are the socket shell.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use nix::sys::socket::{setsockopt, sockopt};
use nix::sys::time::TimeVal;
use serde::Serialize;

use crate::clock::{fine_timer_slack, now_ns, sleep_until, warn};

pub const HEADER_BYTES: usize = 8;
/// The largest message, and the largest answer a size request may ask for.
pub const MAX_SIZE_BYTES: usize = 16 << 20;
/// A stray client (a port scanner, an HTTP request) is told apart by this and dropped,
/// rather than answered with up to 16 MiB.
const MAGIC: [u8; 2] = *b"LH";
const VERSION: u8 = 1;
const MODE_ECHO: u8 = 1;
const MODE_SIZE: u8 = 2;

/// Which of the suite's two exchanges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The client sends N bytes, the server sends them back.
    Echo,
    /// The client names N, the server sends N bytes.
    Size,
}

impl FromStr for Mode {
    type Err = String;

    fn from_str(text: &str) -> Result<Mode, String> {
        match text {
            "echo" => Ok(Mode::Echo),
            "size" => Ok(Mode::Size),
            _ => Err(format!("{text:?} is not a mode: use echo or size")),
        }
    }
}

/// Why a header cannot be a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// Not this protocol: the first bytes are not "LH".
    Magic([u8; 2]),
    Version(u8),
    Mode(u8),
    /// N is 0 or above `MAX_SIZE_BYTES`.
    Size(u32),
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Magic(bytes) => write!(f, "not a tcp-echo request (begins {bytes:?})"),
            FrameError::Version(v) => write!(f, "tcp-echo version {v} is not {VERSION}"),
            FrameError::Mode(m) => write!(f, "mode {m} is neither echo nor size"),
            FrameError::Size(n) => write!(f, "size {n} is not within 1..={MAX_SIZE_BYTES}"),
        }
    }
}

impl std::error::Error for FrameError {}

/// The header of a request for `size_bytes` (1 to `MAX_SIZE_BYTES`).
pub fn encode_header(mode: Mode, size_bytes: usize) -> [u8; HEADER_BYTES] {
    assert!(
        (1..=MAX_SIZE_BYTES).contains(&size_bytes),
        "size {size_bytes} out of range"
    );
    let mode = match mode {
        Mode::Echo => MODE_ECHO,
        Mode::Size => MODE_SIZE,
    };
    let size = (size_bytes as u32).to_be_bytes();
    let mut header = [0; HEADER_BYTES];
    header[..2].copy_from_slice(&MAGIC);
    header[2] = VERSION;
    header[3] = mode;
    header[4..].copy_from_slice(&size);
    header
}

/// The mode and size a header asks for.
pub fn decode_header(header: &[u8; HEADER_BYTES]) -> Result<(Mode, usize), FrameError> {
    if header[..2] != MAGIC {
        return Err(FrameError::Magic([header[0], header[1]]));
    }
    if header[2] != VERSION {
        return Err(FrameError::Version(header[2]));
    }
    let mode = match header[3] {
        MODE_ECHO => Mode::Echo,
        MODE_SIZE => Mode::Size,
        other => return Err(FrameError::Mode(other)),
    };
    let size = u32::from_be_bytes([header[4], header[5], header[6], header[7]]);
    if size == 0 || size as usize > MAX_SIZE_BYTES {
        return Err(FrameError::Size(size));
    }
    Ok((mode, size as usize))
}

/// All of a request: the header, and in `echo` a message of `size_bytes`.
pub fn request_bytes(mode: Mode, size_bytes: usize) -> Vec<u8> {
    let mut request = encode_header(mode, size_bytes).to_vec();
    if mode == Mode::Echo {
        request.extend_from_slice(&filler(size_bytes));
    }
    request
}

/// `size_bytes` of a repeating pattern: not zeros, so that a server that answered zeros,
/// or with bytes out of place, fails the echo check.
pub fn filler(size_bytes: usize) -> Vec<u8> {
    (0..size_bytes).map(|i| (i % 251) as u8).collect()
}

/// A whole request as the decoder gathered it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    pub mode: Mode,
    pub size_bytes: usize,
}

/// What the decoder gathers next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gathering {
    Header { filled: usize },
    Message { filled: usize },
}

/// Gathers requests from a stream in pieces of any size. The socket reads straight into
/// `buffer()`, which never asks for more than the request still lacks: a message is
/// copied once, from the kernel into the buffer it is echoed from, and nothing of the next
/// request is taken early.
#[derive(Debug)]
pub struct Decoder {
    header: [u8; HEADER_BYTES],
    /// The message of the echo request being gathered, or of the last one gathered: kept,
    /// so that the next message of its size needs no allocation.
    message: Vec<u8>,
    gathering: Gathering,
}

impl Default for Decoder {
    fn default() -> Decoder {
        Decoder {
            header: [0; HEADER_BYTES],
            message: Vec::new(),
            gathering: Gathering::Header { filled: 0 },
        }
    }
}

impl Decoder {
    /// Where the next bytes of the stream go (never empty).
    pub fn buffer(&mut self) -> &mut [u8] {
        match self.gathering {
            Gathering::Header { filled } => &mut self.header[filled..],
            Gathering::Message { filled } => &mut self.message[filled..],
        }
    }

    /// `bytes` more of `buffer()` were filled: the request they complete, if they do.
    /// After an error the stream is out of step and must be dropped.
    pub fn filled(&mut self, bytes: usize) -> Result<Option<Request>, FrameError> {
        match &mut self.gathering {
            Gathering::Header { filled } => {
                assert!(*filled + bytes <= HEADER_BYTES, "filled past the header");
                *filled += bytes;
                if *filled < HEADER_BYTES {
                    return Ok(None);
                }
                let (mode, size_bytes) = decode_header(&self.header)?;
                if mode == Mode::Size {
                    self.gathering = Gathering::Header { filled: 0 };
                    return Ok(Some(Request { mode, size_bytes }));
                }
                self.message.resize(size_bytes, 0);
                self.gathering = Gathering::Message { filled: 0 };
                Ok(None)
            }
            Gathering::Message { filled } => {
                assert!(
                    *filled + bytes <= self.message.len(),
                    "filled past the message"
                );
                *filled += bytes;
                if *filled < self.message.len() {
                    return Ok(None);
                }
                self.gathering = Gathering::Header { filled: 0 };
                Ok(Some(Request {
                    mode: Mode::Echo,
                    size_bytes: self.message.len(),
                }))
            }
        }
    }

    /// The message of the last echo request, until the next one's header is complete.
    pub fn message(&self) -> &[u8] {
        &self.message
    }

    /// Whether nothing of a request has come since the last was complete: a stream that
    /// ends here ended cleanly.
    pub fn between_requests(&self) -> bool {
        self.gathering == Gathering::Header { filled: 0 }
    }
}

/// A message size such as `64`, `64k` (64,000, as rates), `64ki` or `64KiB` (65,536),
/// `1mi`: whole bytes, 1 to 16 MiB.
pub fn parse_size_bytes(text: &str) -> Result<usize, String> {
    let t = text.trim().to_ascii_lowercase();
    let t = t.strip_suffix('b').unwrap_or(&t);
    let (number, scale) = [
        ("ki", 1 << 10),
        ("mi", 1 << 20),
        ("k", 1_000),
        ("m", 1_000_000),
    ]
    .into_iter()
    .find_map(|(suffix, scale)| t.strip_suffix(suffix).map(|n| (n, scale)))
    .unwrap_or((t, 1));
    let bytes = number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(|| format!("{text:?} is not a size: use e.g. 64, 64ki, 1mi"))?;
    if !(1..=MAX_SIZE_BYTES as u64).contains(&bytes) {
        return Err(format!("{text:?} is not within 1 B..16 MiB"));
    }
    Ok(bytes as usize)
}

/// When the exchange after one that started at `previous_start_ns` starts, at `now_ns`:
/// `interval_ns` after it, or at once if that is past. Each start counts from the one
/// before, so a slow exchange delays the rest rather than being followed by a burst.
pub fn next_start_ns(previous_start_ns: u64, interval_ns: u64, now_ns: u64) -> u64 {
    previous_start_ns.saturating_add(interval_ns).max(now_ns)
}

/// The spread of a set of samples (population standard deviation: the samples are all
/// there is, not a draw to estimate a wider one from).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    pub samples: usize,
    pub mean_ns: f64,
    pub min_ns: u64,
    pub max_ns: u64,
    pub std_ns: f64,
}

impl Stats {
    /// None for no samples.
    pub fn of(samples_ns: &[u64]) -> Option<Stats> {
        let min_ns = *samples_ns.iter().min()?;
        let max_ns = *samples_ns.iter().max()?;
        let n = samples_ns.len() as f64;
        let mean_ns = samples_ns.iter().map(|&s| s as f64).sum::<f64>() / n;
        let variance = samples_ns
            .iter()
            .map(|&s| (s as f64 - mean_ns).powi(2))
            .sum::<f64>()
            / n;
        Some(Stats {
            samples: samples_ns.len(),
            mean_ns,
            min_ns,
            max_ns,
            std_ns: variance.sqrt(),
        })
    }

    /// (max - min) / mean, in percent.
    pub fn range_pct(&self) -> f64 {
        percent((self.max_ns - self.min_ns) as f64, self.mean_ns)
    }

    /// std / mean, in percent.
    pub fn std_pct(&self) -> f64 {
        percent(self.std_ns, self.mean_ns)
    }
}

fn percent(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        part / whole * 100.0
    } else {
        0.0
    }
}

/// What the probe prints: the samples and their spread, in ms to the ns (percentages to
/// a thousandth). The statistics are null when no exchange succeeded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProbeReport {
    pub mode: Mode,
    pub size_bytes: usize,
    /// Samples recorded (warm-up exchanges and failed ones are not).
    pub count: usize,
    pub samples_ms: Vec<f64>,
    pub mean_ms: Option<f64>,
    pub min_ms: Option<f64>,
    pub max_ms: Option<f64>,
    pub std_ms: Option<f64>,
    pub range_pct: Option<f64>,
    pub std_pct: Option<f64>,
    /// Exchanges that failed (warm-up ones included): each cost a new connection.
    pub errors: u64,
}

impl ProbeReport {
    pub fn new(mode: Mode, size_bytes: usize, samples_ns: &[u64], errors: u64) -> ProbeReport {
        let stats = Stats::of(samples_ns);
        ProbeReport {
            mode,
            size_bytes,
            count: samples_ns.len(),
            samples_ms: samples_ns.iter().map(|&s| ms(s as f64)).collect(),
            mean_ms: stats.map(|s| ms(s.mean_ns)),
            min_ms: stats.map(|s| ms(s.min_ns as f64)),
            max_ms: stats.map(|s| ms(s.max_ns as f64)),
            std_ms: stats.map(|s| ms(s.std_ns)),
            range_pct: stats.map(|s| thousandths(s.range_pct())),
            std_pct: stats.map(|s| thousandths(s.std_pct())),
            errors,
        }
    }
}

/// ns as ms, rounded to the ns: 0.123456, not 0.12345600000000001.
fn ms(ns: f64) -> f64 {
    ns.round() / 1e6
}

fn thousandths(value: f64) -> f64 {
    (value * 1e3).round() / 1e3
}

// The shell: sockets and clocks.

/// The longest a socket waits before looking at the clock and the stop flag.
const LOOK_INTERVAL_NS: u64 = 50_000_000;

/// What `tcp-echo serve` is asked to do.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub listen: SocketAddr,
    /// The longest to run; None: until stopped.
    pub duration_ns: Option<u64>,
    /// A connection silent this long, between requests or within one, is dropped: one
    /// connection is served at a time, and a client gone quiet must not hold the rest off.
    pub idle_timeout_ns: u64,
}

/// What the server reports when it ends.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct ServeReport {
    pub connections: u64,
    /// Requests answered.
    pub exchanges: u64,
    /// Connections that ended other than by the client closing between requests.
    pub errors: u64,
}

/// A listening socket that answers one connection at a time.
pub struct Server {
    listener: TcpListener,
    options: ServeOptions,
    /// What size requests are answered from, grown to the largest asked.
    filler: Vec<u8>,
}

impl Server {
    pub fn bind(options: &ServeOptions) -> io::Result<Server> {
        let listener = TcpListener::bind(options.listen)
            .map_err(|e| io::Error::new(e.kind(), format!("bind {}: {e}", options.listen)))?;
        // Linux ends a blocked accept after the receive timeout: the loop looks at the
        // stop flag that often.
        setsockopt(&listener, sockopt::ReceiveTimeout, &look_interval())?;
        Ok(Server {
            listener,
            options: options.clone(),
            filler: Vec::new(),
        })
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serve connections until the run's time is over or `stop` is set.
    pub fn run(&mut self, stop: &AtomicBool) -> io::Result<ServeReport> {
        let end_ns = self
            .options
            .duration_ns
            .map_or(u64::MAX, |d| now_ns().saturating_add(d));
        let mut report = ServeReport::default();
        while !stop.load(Ordering::Relaxed) && now_ns() < end_ns {
            let (stream, peer) = match self.listener.accept() {
                Ok(accepted) => accepted,
                Err(e) if waits(&e) || e.kind() == io::ErrorKind::ConnectionAborted => continue,
                Err(e) => return Err(e),
            };
            report.connections += 1;
            if let Err(e) = self.serve(stream, stop, end_ns, &mut report) {
                report.errors += 1;
                warn(&format!("tcp-echo serve: {peer}: {e}; closed"));
            }
        }
        Ok(report)
    }

    /// Answer one connection's requests until it closes, goes silent, or the server stops.
    fn serve(
        &mut self,
        mut stream: TcpStream,
        stop: &AtomicBool,
        end_ns: u64,
        report: &mut ServeReport,
    ) -> io::Result<()> {
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(look_duration()))?;
        stream.set_write_timeout(Some(look_duration()))?;
        let idle_ns = self.options.idle_timeout_ns;
        let mut decoder = Decoder::default();
        let mut heard_ns = now_ns();
        loop {
            if stop.load(Ordering::Relaxed) || now_ns() >= end_ns {
                return Ok(());
            }
            let bytes = match stream.read(decoder.buffer()) {
                Ok(0) if decoder.between_requests() => return Ok(()),
                Ok(0) => return Err(io::Error::other("closed within a request")),
                Ok(bytes) => bytes,
                Err(e) if waits(&e) => {
                    if now_ns().saturating_sub(heard_ns) >= idle_ns {
                        return Err(silent(idle_ns));
                    }
                    continue;
                }
                Err(e) => return Err(e),
            };
            heard_ns = now_ns();
            let Some(request) = decoder.filled(bytes).map_err(io::Error::other)? else {
                continue;
            };
            let answer = match request.mode {
                Mode::Echo => decoder.message(),
                Mode::Size => self.filler(request.size_bytes),
            };
            send_all(&mut stream, answer, stop, idle_ns)?;
            report.exchanges += 1;
        }
    }

    fn filler(&mut self, size_bytes: usize) -> &[u8] {
        if self.filler.len() < size_bytes {
            self.filler = filler(size_bytes);
        }
        &self.filler[..size_bytes]
    }
}

/// Write all of `bytes`, giving up if the peer takes nothing for `idle_ns` or `stop` is set.
fn send_all(
    stream: &mut TcpStream,
    mut bytes: &[u8],
    stop: &AtomicBool,
    idle_ns: u64,
) -> io::Result<()> {
    let mut progress_ns = now_ns();
    while !bytes.is_empty() {
        match stream.write(bytes) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                bytes = &bytes[n..];
                progress_ns = now_ns();
            }
            Err(e) if waits(&e) => {
                if stop.load(Ordering::Relaxed) {
                    return Err(io::Error::other("stopped within an answer"));
                }
                if now_ns().saturating_sub(progress_ns) >= idle_ns {
                    return Err(silent(idle_ns));
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn silent(idle_ns: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        format!("no progress for {} s", seconds(idle_ns)),
    )
}

/// What `tcp-echo probe` is asked to do.
#[derive(Debug, Clone)]
pub struct ProbeOptions {
    pub to: SocketAddr,
    pub mode: Mode,
    pub size_bytes: usize,
    /// Exchanges recorded.
    pub count: usize,
    /// From the start of one exchange to the start of the next.
    pub interval_ns: u64,
    /// Exchanges first, not recorded: the first ones pay for page faults, and for TCP's
    /// window to open.
    pub warmup: usize,
    /// The longest to connect, and the longest one exchange may take.
    pub timeout_ns: u64,
}

/// One connection to a server, and the request it repeats.
pub struct Probe {
    options: ProbeOptions,
    stream: TcpStream,
    /// The header and, in echo, the message: the same every exchange.
    request: Vec<u8>,
    /// Room for the answer.
    answer: Vec<u8>,
}

impl Probe {
    /// Connect: an unreachable server is an error here, before any exchange.
    pub fn connect(options: &ProbeOptions) -> io::Result<Probe> {
        Ok(Probe {
            stream: open(options.to, options.timeout_ns)?,
            request: request_bytes(options.mode, options.size_bytes),
            answer: vec![0; options.size_bytes],
            options: options.clone(),
        })
    }

    /// The warm-up exchanges, then `count` recorded ones, until done or `stop` is set. A
    /// failed exchange leaves the stream out of step: it is counted and the probe connects
    /// again. Second in the answer: why the run ended early, when the server went away.
    pub fn run(&mut self, stop: &AtomicBool) -> (ProbeReport, Option<io::Error>) {
        fine_timer_slack();
        let o = self.options.clone();
        let mut samples_ns = Vec::with_capacity(o.count);
        let mut errors = 0;
        let mut cut_short = None;
        let mut start_ns = 0;
        for i in 0..o.warmup + o.count {
            if i > 0 {
                wait_until(next_start_ns(start_ns, o.interval_ns, now_ns()), stop);
            }
            if stop.load(Ordering::Relaxed) {
                break;
            }
            start_ns = now_ns();
            match self.exchange() {
                Ok(rtt_ns) if i >= o.warmup => samples_ns.push(rtt_ns),
                Ok(_) => {}
                Err(e) => {
                    errors += 1;
                    warn(&format!("tcp-echo probe: exchange {}: {e}", i + 1));
                    if let Err(e) = self.reconnect() {
                        cut_short = Some(e);
                        break;
                    }
                }
            }
        }
        let report = ProbeReport::new(o.mode, o.size_bytes, &samples_ns, errors);
        (report, cut_short)
    }

    /// One exchange: from the first byte of the request written to the last byte of the
    /// answer read.
    fn exchange(&mut self) -> io::Result<u64> {
        let start_ns = now_ns();
        let deadline_ns = start_ns.saturating_add(self.options.timeout_ns);
        write_full(&mut self.stream, &self.request, deadline_ns)?;
        read_full(&mut self.stream, &mut self.answer, deadline_ns)?;
        let rtt_ns = now_ns() - start_ns;
        if self.options.mode == Mode::Echo && self.answer[..] != self.request[HEADER_BYTES..] {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the echo differs from the message",
            ));
        }
        Ok(rtt_ns)
    }

    fn reconnect(&mut self) -> io::Result<()> {
        self.stream = open(self.options.to, self.options.timeout_ns)?;
        Ok(())
    }
}

/// A connection with Nagle's algorithm off (a small request must go at once, not wait for
/// the last one's ACK) and every operation bounded.
fn open(to: SocketAddr, timeout_ns: u64) -> io::Result<TcpStream> {
    let timeout = Duration::from_nanos(timeout_ns);
    let stream = TcpStream::connect_timeout(&to, timeout)
        .map_err(|e| io::Error::new(e.kind(), format!("connect {to}: {e}")))?;
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(look_duration()))?;
    stream.set_write_timeout(Some(look_duration()))?;
    Ok(stream)
}

/// Write all of `bytes` by `deadline_ns`.
fn write_full(stream: &mut TcpStream, mut bytes: &[u8], deadline_ns: u64) -> io::Result<()> {
    while !bytes.is_empty() {
        match stream.write(bytes) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if waits(&e) => {}
            Err(e) => return Err(e),
        }
        if !bytes.is_empty() && now_ns() >= deadline_ns {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the server took no request in time",
            ));
        }
    }
    Ok(())
}

/// Fill `buf` from `stream` by `deadline_ns`.
fn read_full(stream: &mut TcpStream, buf: &mut [u8], deadline_ns: u64) -> io::Result<()> {
    let mut filled = 0;
    while filled < buf.len() {
        match stream.read(&mut buf[filled..]) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server closed the connection",
                ));
            }
            Ok(n) => filled += n,
            Err(e) if waits(&e) => {}
            Err(e) => return Err(e),
        }
        if filled < buf.len() && now_ns() >= deadline_ns {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("{filled} of {} bytes answered in time", buf.len()),
            ));
        }
    }
    Ok(())
}

/// Whether an operation only ran out of time (or met a signal), and may be tried again.
fn waits(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

fn look_duration() -> Duration {
    Duration::from_nanos(LOOK_INTERVAL_NS)
}

fn look_interval() -> TimeVal {
    TimeVal::new(0, (LOOK_INTERVAL_NS / 1_000) as libc::suseconds_t)
}

/// Sleep until `deadline_ns` on the monotonic clock, or until `stop` is set.
fn wait_until(deadline_ns: u64, stop: &AtomicBool) {
    loop {
        let now = now_ns();
        if now >= deadline_ns || stop.load(Ordering::Relaxed) {
            return;
        }
        // A signal may end the sleep early: the loop looks again.
        sleep_until(deadline_ns.min(now + LOOK_INTERVAL_NS));
    }
}

fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Feed `stream` to a decoder `piece` bytes at a time (less where a request ends):
    /// each request it completes, with its message.
    fn decode_in_pieces(stream: &[u8], piece: usize) -> Vec<(Request, Vec<u8>)> {
        let mut decoder = Decoder::default();
        let mut rest = stream;
        let mut got = Vec::new();
        while !rest.is_empty() {
            let buffer = decoder.buffer();
            assert!(!buffer.is_empty());
            let n = buffer.len().min(piece).min(rest.len());
            buffer[..n].copy_from_slice(&rest[..n]);
            rest = &rest[n..];
            if let Some(request) = decoder.filled(n).unwrap() {
                let message = match request.mode {
                    Mode::Echo => decoder.message().to_vec(),
                    Mode::Size => Vec::new(),
                };
                got.push((request, message));
            }
        }
        assert!(decoder.between_requests());
        got
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn a_header_reads_back_at_both_ends_of_the_sizes() {
        for mode in [Mode::Echo, Mode::Size] {
            for size in [1, 64, 65_536, MAX_SIZE_BYTES] {
                assert_eq!(decode_header(&encode_header(mode, size)), Ok((mode, size)));
            }
        }
        assert_eq!(
            encode_header(Mode::Size, 0x00AB_CDEF),
            [b'L', b'H', 1, 2, 0, 0xAB, 0xCD, 0xEF]
        );
    }

    #[test]
    fn a_header_that_is_not_a_request_is_refused() {
        let good = encode_header(Mode::Echo, 100);
        let with = |i: usize, byte: u8| {
            let mut h = good;
            h[i] = byte;
            h
        };
        assert_eq!(decode_header(b"GET / HT"), Err(FrameError::Magic(*b"GE")));
        assert_eq!(decode_header(&with(2, 2)), Err(FrameError::Version(2)));
        assert_eq!(decode_header(&with(3, 0)), Err(FrameError::Mode(0)));
        let mut zero = good;
        zero[4..].copy_from_slice(&0u32.to_be_bytes());
        assert_eq!(decode_header(&zero), Err(FrameError::Size(0)));
        let mut huge = good;
        huge[4..].copy_from_slice(&(MAX_SIZE_BYTES as u32 + 1).to_be_bytes());
        assert!(
            decode_header(&huge)
                .unwrap_err()
                .to_string()
                .contains("16777217")
        );
    }

    #[test]
    fn requests_fed_byte_by_byte_come_out_whole() {
        let mut stream = request_bytes(Mode::Echo, 1);
        stream.extend(request_bytes(Mode::Size, MAX_SIZE_BYTES));
        stream.extend(request_bytes(Mode::Echo, 70_000));
        stream.extend(request_bytes(Mode::Echo, 3));
        let got = decode_in_pieces(&stream, 1);
        let requests: Vec<(Mode, usize)> =
            got.iter().map(|(r, _)| (r.mode, r.size_bytes)).collect();
        assert_eq!(
            requests,
            [
                (Mode::Echo, 1),
                (Mode::Size, MAX_SIZE_BYTES),
                (Mode::Echo, 70_000),
                (Mode::Echo, 3)
            ]
        );
        assert_eq!(got[0].1, filler(1));
        assert_eq!(got[2].1, filler(70_000));
        assert_eq!(got[3].1, filler(3));
    }

    #[test]
    fn the_decoder_never_asks_past_the_request_it_gathers() {
        let mut decoder = Decoder::default();
        assert_eq!(decoder.buffer().len(), HEADER_BYTES);
        let request = request_bytes(Mode::Echo, 10);
        decoder.buffer()[..5].copy_from_slice(&request[..5]);
        assert_eq!(decoder.filled(5), Ok(None));
        assert!(!decoder.between_requests());
        assert_eq!(decoder.buffer().len(), 3);
        decoder.buffer().copy_from_slice(&request[5..8]);
        assert_eq!(decoder.filled(3), Ok(None));
        assert_eq!(decoder.buffer().len(), 10);
        decoder.buffer().copy_from_slice(&request[8..]);
        let done = decoder.filled(10).unwrap().unwrap();
        assert_eq!((done.mode, done.size_bytes), (Mode::Echo, 10));
        assert_eq!(decoder.buffer().len(), HEADER_BYTES);
        assert!(decoder.between_requests());
    }

    #[test]
    fn a_stray_client_is_refused_at_its_eighth_byte() {
        let mut decoder = Decoder::default();
        for (i, &byte) in b"GET / HTTP/1.1\r\n".iter().enumerate().take(HEADER_BYTES) {
            decoder.buffer()[0] = byte;
            let result = decoder.filled(1);
            if i + 1 < HEADER_BYTES {
                assert_eq!(result, Ok(None));
            } else {
                assert_eq!(result, Err(FrameError::Magic(*b"GE")));
            }
        }
    }

    proptest! {
        #[test]
        fn any_requests_in_any_pieces_decode_as_sent(
            sent in prop::collection::vec((any::<bool>(), 1usize..3_000), 1..20),
            piece in 1usize..5_000,
        ) {
            let sent: Vec<(Mode, usize)> = sent
                .into_iter()
                .map(|(echo, size)| (if echo { Mode::Echo } else { Mode::Size }, size))
                .collect();
            let stream: Vec<u8> = sent.iter().flat_map(|&(m, n)| request_bytes(m, n)).collect();
            let got = decode_in_pieces(&stream, piece);
            prop_assert_eq!(got.len(), sent.len());
            for ((request, message), &(mode, size)) in got.iter().zip(&sent) {
                prop_assert_eq!((request.mode, request.size_bytes), (mode, size));
                if mode == Mode::Echo {
                    prop_assert_eq!(message, &filler(size));
                }
            }
        }
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(parse_size_bytes("64"), Ok(64));
        assert_eq!(parse_size_bytes("64k"), Ok(64_000));
        assert_eq!(parse_size_bytes("64ki"), Ok(65_536));
        assert_eq!(parse_size_bytes("64KiB"), Ok(65_536));
        assert_eq!(parse_size_bytes("1mi"), Ok(1 << 20));
        assert_eq!(parse_size_bytes("16MiB"), Ok(MAX_SIZE_BYTES));
        assert_eq!(parse_size_bytes("1b"), Ok(1));
        for bad in ["0", "16777217", "17mi", "1.5k", "big", "-1", ""] {
            assert!(parse_size_bytes(bad).is_err(), "{bad}");
        }
        assert_eq!("echo".parse(), Ok(Mode::Echo));
        assert_eq!("size".parse(), Ok(Mode::Size));
        assert!("Echo".parse::<Mode>().is_err());
    }

    #[test]
    fn exchanges_start_an_interval_apart_or_at_once_after_a_slow_one() {
        assert_eq!(next_start_ns(1_000, 10_000, 1_500), 11_000);
        assert_eq!(next_start_ns(1_000, 10_000, 11_000), 11_000);
        assert_eq!(next_start_ns(1_000, 10_000, 25_000), 25_000);
        assert_eq!(next_start_ns(1_000, 0, 1_200), 1_200);
    }

    #[test]
    fn the_spread_is_the_population_std_and_the_range_over_the_mean() {
        let ms = 1_000_000;
        let stats = Stats::of(&[ms, 2 * ms, 3 * ms, 4 * ms]).unwrap();
        assert!(close(stats.mean_ns, 2.5e6));
        assert_eq!((stats.min_ns, stats.max_ns, stats.samples), (ms, 4 * ms, 4));
        assert!(close(stats.std_ns, 1.25f64.sqrt() * 1e6));
        assert!(close(stats.range_pct(), 120.0));
        assert!(close(stats.std_pct(), 1.25f64.sqrt() / 2.5 * 100.0));
        let one = Stats::of(&[7]).unwrap();
        assert!(close(one.std_ns, 0.0) && close(one.range_pct(), 0.0));
        assert_eq!(Stats::of(&[]), None);
    }

    #[test]
    fn the_report_is_in_ms_to_the_ns_and_null_without_samples() {
        let report = ProbeReport::new(Mode::Size, 64, &[123_456, 200_000, 150_001], 1);
        assert_eq!(report.samples_ms, [0.123_456, 0.2, 0.150_001]);
        assert_eq!((report.count, report.errors), (3, 1));
        assert_eq!(report.min_ms, Some(0.123_456));
        assert_eq!(report.max_ms, Some(0.2));
        // mean 157819 ns; range 76544 / 157819 = 48.501 %.
        assert_eq!(report.mean_ms, Some(0.157_819));
        assert_eq!(report.range_pct, Some(48.501));
        let json = serde_json::to_string(&report).unwrap();
        assert!(json.starts_with(r#"{"mode":"size","size_bytes":64,"count":3,"samples_ms":[0.123456,0.2,0.150001],"mean_ms":0.157819,"min_ms":0.123456,"max_ms":0.2,"std_ms":"#), "{json}");
        let keys: Vec<String> =
            serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&json)
                .unwrap()
                .keys()
                .cloned()
                .collect();
        for key in ["std_ms", "range_pct", "std_pct", "errors"] {
            assert!(keys.iter().any(|k| k == key), "{key}");
        }
        let empty = serde_json::to_value(ProbeReport::new(Mode::Echo, 1, &[], 5)).unwrap();
        assert_eq!(empty["count"], 0);
        assert!(empty["mean_ms"].is_null() && empty["std_pct"].is_null());
    }
}
