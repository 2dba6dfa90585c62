//! Real UDP cross-traffic: a paced sender and a counting sink, for the testbed's
//! cross-traffic host, which must hold 1-4 Gb/s through the emulator on two cores.
//!
//! One datagram per system call (what `iperf3 -u` does) costs a few µs of the sender's
//! core each, kernel work included, and 4 Gb/s of 1,500-byte datagrams is 330,000 of them
//! a second. So the sender hands the kernel up to 64 datagrams per call (UDP GSO: the
//! kernel or the device cuts the batch into datagrams), and the sink takes them back
//! coalesced (UDP GRO), one call per batch.
//!
//! The pure parts (the pacing schedule, the stamp each datagram carries, the counting of
//! losses, reorderings and per-second rates) take instants and bytes and are tested here;
//! `send` and `Sink` are the socket shell around them.

use std::io::{self, IoSliceMut};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::socket::{
    ControlMessageOwned, MsgFlags, SetSockOpt, SockaddrStorage, recvmsg, setsockopt, sockopt,
};
use nix::time::{ClockId, clock_gettime};
use serde::Serialize;

use crate::clock::{fine_timer_slack, now_ns, sleep_until, warn};

/// Every datagram begins with its sequence number and its send time (`CLOCK_REALTIME`
/// ns), both u64 big-endian: the sink counts losses and reorderings from the first.
pub const STAMP_BYTES: usize = 16;
/// The most datagrams one GSO send may carry (the kernel's `UDP_MAX_SEGMENTS` was 64
/// before Linux 6.10; asking no more works on both).
pub const MAX_SEGMENTS: usize = 64;
/// The most payload one send may carry: a 65,535-byte IPv4 packet less its headers.
pub const MAX_SEND_BYTES: usize = 65_507;
/// A batch is at most this much of the rate, so that the rate over any window longer
/// than that stays close to the one asked for (at 1 Gb/s, 12.5 KB: 8 datagrams).
pub const MAX_BATCH_NS: u64 = 100_000;
/// A sender that fell behind its schedule catches up at most this much of it at once;
/// what it missed before that is forgone, not burst out.
pub const MAX_CATCH_UP_NS: u64 = 1_000_000;

const UDP_HEADER_BYTES: u64 = 8;
const IPV4_HEADER_BYTES: u64 = 20;
const IPV6_HEADER_BYTES: u64 = 40;
const NS_PER_S: u64 = 1_000_000_000;

/// The IP bytes a datagram of `payload_bytes` takes on the wire, as the emulator counts.
pub fn datagram_ip_bytes(payload_bytes: usize, ipv6: bool) -> u64 {
    let ip_header = if ipv6 {
        IPV6_HEADER_BYTES
    } else {
        IPV4_HEADER_BYTES
    };
    payload_bytes as u64 + UDP_HEADER_BYTES + ip_header
}

/// Whether datagrams to or from `ip` travel as IPv6 (a v4-mapped address travels as IPv4).
pub fn travels_as_ipv6(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(_) => false,
        IpAddr::V6(v6) => v6.to_ipv4_mapped().is_none(),
    }
}

/// Write the stamp (sequence number, send time) into the head of `datagram`.
pub fn write_stamp(datagram: &mut [u8], seq: u64, sent_ns: u64) {
    datagram[..8].copy_from_slice(&seq.to_be_bytes());
    datagram[8..STAMP_BYTES].copy_from_slice(&sent_ns.to_be_bytes());
}

/// The stamp (sequence number, send time) at the head of `datagram`, if it is long enough.
pub fn read_stamp(datagram: &[u8]) -> Option<(u64, u64)> {
    let seq = datagram.get(..8)?.try_into().ok()?;
    let sent = datagram.get(8..STAMP_BYTES)?.try_into().ok()?;
    Some((u64::from_be_bytes(seq), u64::from_be_bytes(sent)))
}

/// The most datagrams of `payload_bytes` one send may carry.
pub fn max_segments(payload_bytes: usize) -> usize {
    (MAX_SEND_BYTES / payload_bytes.max(1)).clamp(1, MAX_SEGMENTS)
}

/// Sending for `on_ns`, silent for `off_ns`, repeating; `off_ns` = 0 is always on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OnOff {
    pub on_ns: u64,
    pub off_ns: u64,
}

impl OnOff {
    pub const ALWAYS: OnOff = OnOff {
        on_ns: u64::MAX,
        off_ns: 0,
    };

    /// Where `elapsed_ns` (since the start) falls.
    fn phase(self, elapsed_ns: u64) -> Phase {
        if self.off_ns == 0 {
            return Phase::On { since_ns: 0 };
        }
        let period = self.on_ns + self.off_ns;
        let begun = elapsed_ns - elapsed_ns % period;
        if elapsed_ns - begun < self.on_ns {
            Phase::On { since_ns: begun }
        } else {
            Phase::Off {
                until_ns: begun + period,
            }
        }
    }

    /// How long the pattern was on within its first `elapsed_ns`.
    pub fn on_ns_within(self, elapsed_ns: u64) -> u64 {
        if self.off_ns == 0 {
            return elapsed_ns;
        }
        let period = self.on_ns + self.off_ns;
        elapsed_ns / period * self.on_ns + (elapsed_ns % period).min(self.on_ns)
    }
}

/// Times since the start of the pattern.
enum Phase {
    On { since_ns: u64 },
    Off { until_ns: u64 },
}

/// What a sender should do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Send this many datagrams now.
    Send(usize),
    /// Nothing is due before this instant.
    Wait(u64),
    /// The run is over.
    Done,
}

/// What the pacing schedule keeps to.
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    /// The rate while on, counting IP bytes.
    pub rate_bps: u64,
    pub datagram_ip_bytes: u64,
    /// The most datagrams one send may carry.
    pub max_batch: usize,
    pub on_off: OnOff,
    pub duration_ns: u64,
}

/// The sender's schedule: a batch may start when the previous batches' bytes have had
/// their time at the rate. A sender that woke late sends what fell due since, in bigger
/// batches, but never more than `MAX_CATCH_UP_NS` of it.
#[derive(Debug)]
pub struct Pacer {
    pace: Pace,
    /// Datagrams per batch when on time: `MAX_BATCH_NS` of the rate, 1 at least.
    batch: usize,
    start_ns: u64,
    end_ns: u64,
    /// When the next batch may start.
    next_ns: u64,
    /// What `next_ns` lost to rounding, in 1/`rate_bps` ns: the schedule does not drift.
    carry: u64,
    /// The latest a batch started after its time.
    pub late_max_ns: u64,
}

impl Pacer {
    pub fn new(pace: Pace, start_ns: u64) -> Pacer {
        let batch_bits = u128::from(pace.rate_bps) * u128::from(MAX_BATCH_NS);
        let batch_bytes = batch_bits / u128::from(8 * NS_PER_S);
        let batch = (batch_bytes / u128::from(pace.datagram_ip_bytes.max(1))) as usize;
        Pacer {
            pace,
            batch: batch.clamp(1, pace.max_batch.max(1)),
            start_ns,
            end_ns: start_ns.saturating_add(pace.duration_ns),
            next_ns: start_ns,
            carry: 0,
            late_max_ns: 0,
        }
    }

    /// Datagrams per batch when on time.
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// What to do at `now_ns`; after a `Send(n)`, call `sent(n)`.
    pub fn step(&mut self, now_ns: u64) -> Step {
        if now_ns >= self.end_ns {
            return Step::Done;
        }
        match self.pace.on_off.phase(now_ns - self.start_ns) {
            Phase::Off { until_ns } => {
                return Step::Wait((self.start_ns + until_ns).min(self.end_ns));
            }
            Phase::On { since_ns } => {
                // Silence is not owed: each on period starts a schedule of its own.
                let began = self.start_ns + since_ns;
                if self.next_ns < began {
                    self.next_ns = began;
                    self.carry = 0;
                }
            }
        }
        if self.next_ns > now_ns {
            return Step::Wait(self.next_ns.min(self.end_ns));
        }
        let behind = now_ns - self.next_ns;
        self.late_max_ns = self.late_max_ns.max(behind);
        if behind > MAX_CATCH_UP_NS {
            self.next_ns = now_ns - MAX_CATCH_UP_NS;
            self.carry = 0;
        }
        let due = 1 + self.datagrams_within(now_ns - self.next_ns);
        Step::Send(due.clamp(self.batch, self.pace.max_batch.max(self.batch)))
    }

    /// `datagrams` went (or had their turn): move the schedule on by their time.
    pub fn sent(&mut self, datagrams: usize) {
        let bits = datagrams as u128 * u128::from(self.pace.datagram_ip_bytes) * 8;
        let scaled = bits * u128::from(NS_PER_S) + u128::from(self.carry);
        let rate = u128::from(self.pace.rate_bps.max(1));
        self.next_ns += (scaled / rate) as u64;
        self.carry = (scaled % rate) as u64;
    }

    /// Whole datagrams the rate allows in `ns`.
    fn datagrams_within(&self, ns: u64) -> usize {
        let bits = u128::from(ns) * u128::from(self.pace.rate_bps);
        let per_datagram = u128::from(self.pace.datagram_ip_bytes.max(1)) * 8;
        (bits / u128::from(NS_PER_S) / per_datagram) as usize
    }
}

/// What the sender reports when it ends.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SendReport {
    pub datagrams: u64,
    /// Payload bytes.
    pub bytes: u64,
    /// Payload plus UDP and IP headers: what the emulator counts.
    pub ip_bytes: u64,
    /// From the start to the end of the run.
    pub duration_s: f64,
    /// The IP rate achieved over the time the sender was on.
    pub rate_bps: u64,
    /// Whether the kernel took GSO batches: `UDP_SEGMENT` was accepted and no batch was
    /// refused for it (false: one datagram per send).
    pub gso: bool,
    /// Datagrams the local socket refused (a full queue: ENOBUFS, EAGAIN; or others).
    pub send_errors: u64,
    pub late_max_ns: u64,
}

/// The sender's running counts.
#[derive(Debug, Default, Clone)]
pub struct SendCounts {
    pub datagrams: u64,
    pub bytes: u64,
    pub ip_bytes: u64,
    pub send_errors: u64,
}

impl SendCounts {
    /// The report of a run that lasted `elapsed_ns`, `on_ns` of it on.
    pub fn report(&self, elapsed_ns: u64, on_ns: u64, gso: bool, late_max_ns: u64) -> SendReport {
        SendReport {
            datagrams: self.datagrams,
            bytes: self.bytes,
            ip_bytes: self.ip_bytes,
            duration_s: seconds(elapsed_ns),
            rate_bps: rate_bps(self.ip_bytes, on_ns),
            gso,
            send_errors: self.send_errors,
            late_max_ns,
        }
    }
}

fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// `bytes` over `ns` in bits per second; 0 over no time.
fn rate_bps(bytes: u64, ns: u64) -> u64 {
    if ns == 0 {
        return 0;
    }
    (u128::from(bytes) * 8 * u128::from(NS_PER_S) / u128::from(ns)) as u64
}

/// A last interval shorter than this joins the one before: a few datagrams just past a
/// whole second would show as a rate of nothing much.
const MIN_LAST_INTERVAL_NS: u64 = 100_000_000;

/// What the sink counted.
#[derive(Debug, Default, Clone)]
pub struct Tally {
    pub datagrams: u64,
    pub bytes: u64,
    pub ip_bytes: u64,
    /// One past the highest sequence number seen: how many the sender had sent.
    expected: u64,
    /// Datagrams that carried a stamp.
    stamped: u64,
    /// Datagrams that came after one with a higher sequence number.
    pub reordered: u64,
    first_ns: Option<u64>,
    last_ns: u64,
    /// IP bytes that arrived in each second since the first arrival.
    per_second: Vec<u64>,
}

impl Tally {
    /// One datagram arrived at `at_ns`.
    pub fn record(&mut self, at_ns: u64, payload: &[u8], ipv6: bool) {
        let first = *self.first_ns.get_or_insert(at_ns);
        self.last_ns = self.last_ns.max(at_ns);
        let ip_bytes = datagram_ip_bytes(payload.len(), ipv6);
        self.datagrams += 1;
        self.bytes += payload.len() as u64;
        self.ip_bytes += ip_bytes;
        let second = (at_ns.saturating_sub(first) / NS_PER_S) as usize;
        if self.per_second.len() <= second {
            self.per_second.resize(second + 1, 0);
        }
        self.per_second[second] += ip_bytes;
        if let Some((seq, _)) = read_stamp(payload) {
            self.stamped += 1;
            if seq < self.expected {
                self.reordered += 1;
            } else {
                self.expected = seq + 1;
            }
        }
    }

    /// Datagrams coalesced by GRO arrived at `at_ns`: all `segment_bytes` long but the
    /// last, which may be shorter (0: `buf` is one datagram).
    pub fn record_coalesced(&mut self, at_ns: u64, buf: &[u8], segment_bytes: usize, ipv6: bool) {
        if segment_bytes == 0 || buf.is_empty() {
            self.record(at_ns, buf, ipv6);
            return;
        }
        for datagram in buf.chunks(segment_bytes) {
            self.record(at_ns, datagram, ipv6);
        }
    }

    /// Sequence numbers that never came (among those below the highest that did).
    pub fn lost(&self) -> u64 {
        self.expected.saturating_sub(self.stamped)
    }

    pub fn last_arrival_ns(&self) -> Option<u64> {
        self.first_ns.map(|_| self.last_ns)
    }

    fn duration_ns(&self) -> u64 {
        self.first_ns.map_or(0, |first| self.last_ns - first)
    }

    /// The IP rate of each second from the first arrival to the last.
    pub fn intervals(&self) -> Vec<Interval> {
        let duration = self.duration_ns();
        let mut spans: Vec<(u64, u64, u64)> = self
            .per_second
            .iter()
            .enumerate()
            .map(|(i, &bytes)| {
                let start = i as u64 * NS_PER_S;
                (start, (start + NS_PER_S).min(duration), bytes)
            })
            .collect();
        if spans.len() >= 2
            && let Some(&(start, end, bytes)) = spans.last()
            && end - start < MIN_LAST_INTERVAL_NS
        {
            spans.pop();
            let before = spans.last_mut().expect("two spans were there");
            before.1 = end;
            before.2 += bytes;
        }
        spans
            .into_iter()
            .map(|(start, end, bytes)| Interval {
                start_s: seconds(start),
                end_s: seconds(end),
                rate_bps: rate_bps(bytes, end - start),
            })
            .collect()
    }

    pub fn report(&self, gro: bool, socket_drops: u64) -> SinkReport {
        let duration = self.duration_ns();
        SinkReport {
            datagrams: self.datagrams,
            bytes: self.bytes,
            ip_bytes: self.ip_bytes,
            lost: self.lost(),
            reordered: self.reordered,
            duration_s: seconds(duration),
            rate_bps: rate_bps(self.ip_bytes, duration),
            intervals: self.intervals(),
            gro,
            socket_drops,
        }
    }
}

/// The IP rate over part of the sink's run, in seconds since the first arrival.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Interval {
    pub start_s: f64,
    pub end_s: f64,
    pub rate_bps: u64,
}

/// What the sink reports when it ends.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SinkReport {
    pub datagrams: u64,
    pub bytes: u64,
    pub ip_bytes: u64,
    pub lost: u64,
    pub reordered: u64,
    /// From the first arrival to the last.
    pub duration_s: f64,
    /// The IP rate from the first arrival to the last.
    pub rate_bps: u64,
    pub intervals: Vec<Interval>,
    /// Whether the socket took datagrams coalesced (UDP GRO).
    pub gro: bool,
    /// Datagrams the sink's own socket dropped for want of buffer (`SO_RXQ_OVFL`): these
    /// count in `lost` too, but were lost here, not on the way.
    pub socket_drops: u64,
}

// The shell: sockets and clocks.

/// The sender's socket buffer: with GSO one send takes 64 KB, and a device queue that
/// holds the sender's buffers back must not make the next sends fail at once.
const SEND_BUFFER_BYTES: usize = 4 << 20;
/// The sink's socket buffer: tens of ms at 4 Gb/s, for when the sink is not scheduled.
const RECEIVE_BUFFER_BYTES: usize = 32 << 20;
/// A GRO read holds up to 64 KB; more, so that nothing is ever cut off.
const READ_BYTES: usize = 128 << 10;
/// The longest the sink waits for a datagram before looking at the clock and the stop
/// flag, and the longest the sender sleeps before looking at the stop flag.
const LOOK_INTERVAL_NS: u64 = 50_000_000;

/// What `udp-send` is asked to do.
#[derive(Debug, Clone)]
pub struct SendOptions {
    pub to: SocketAddr,
    /// The local address (and port) to send from; None: any, of the family of `to`.
    pub bind: Option<SocketAddr>,
    pub rate_bps: u64,
    pub duration_ns: u64,
    pub payload_bytes: usize,
    pub on_off: OnOff,
    /// Try UDP GSO (false: one datagram per send from the start).
    pub gso: bool,
}

/// Send paced datagrams until the run's time is over or `stop` is set.
pub fn send(options: &SendOptions, stop: &AtomicBool) -> io::Result<SendReport> {
    let mut sender = Sender::open(options)?;
    let pace = Pace {
        rate_bps: options.rate_bps,
        datagram_ip_bytes: sender.datagram_ip_bytes,
        max_batch: max_segments(options.payload_bytes),
        on_off: options.on_off,
        duration_ns: options.duration_ns,
    };
    fine_timer_slack();
    let start = now_ns();
    let mut pacer = Pacer::new(pace, start);
    while !stop.load(Ordering::Relaxed) {
        let now = now_ns();
        match pacer.step(now) {
            Step::Done => break,
            Step::Wait(until_ns) => sleep_until(until_ns.min(now + LOOK_INTERVAL_NS)),
            Step::Send(datagrams) => {
                sender.send_batch(datagrams);
                // A batch the socket refused had its turn all the same: trying again at
                // once would spin on a full queue.
                pacer.sent(datagrams);
            }
        }
    }
    let elapsed = (now_ns() - start).min(options.duration_ns);
    let on = options.on_off.on_ns_within(elapsed);
    Ok(sender
        .counts
        .report(elapsed, on, sender.gso, pacer.late_max_ns))
}

/// A connected, non-blocking UDP socket and the datagrams it sends.
struct Sender {
    socket: UdpSocket,
    gso: bool,
    payload_bytes: usize,
    datagram_ip_bytes: u64,
    /// Room for the largest batch, datagram after datagram.
    buf: Vec<u8>,
    next_seq: u64,
    counts: SendCounts,
    told_error: bool,
}

impl Sender {
    fn open(options: &SendOptions) -> io::Result<Sender> {
        let local = options.bind.unwrap_or_else(|| {
            let any = if options.to.is_ipv4() {
                IpAddr::V4(Ipv4Addr::UNSPECIFIED)
            } else {
                IpAddr::V6(Ipv6Addr::UNSPECIFIED)
            };
            SocketAddr::new(any, 0)
        });
        let socket = UdpSocket::bind(local)
            .map_err(|e| io::Error::new(e.kind(), format!("bind {local}: {e}")))?;
        socket
            .connect(options.to)
            .map_err(|e| io::Error::new(e.kind(), format!("connect {}: {e}", options.to)))?;
        socket.set_nonblocking(true)?;
        grow_buffer(
            &socket,
            sockopt::SndBufForce,
            sockopt::SndBuf,
            SEND_BUFFER_BYTES,
        );
        let size = options.payload_bytes;
        let gso = options.gso
            && match setsockopt(&socket, sockopt::UdpGsoSegment, &(size as libc::c_int)) {
                Ok(()) => true,
                Err(e) => {
                    warn(&format!("UDP_SEGMENT refused ({e}): one datagram per send"));
                    false
                }
            };
        Ok(Sender {
            socket,
            gso,
            payload_bytes: size,
            datagram_ip_bytes: datagram_ip_bytes(size, travels_as_ipv6(options.to.ip())),
            buf: vec![0; size * max_segments(size)],
            next_seq: 0,
            counts: SendCounts::default(),
            told_error: false,
        })
    }

    /// Stamp and send `datagrams` (at most `max_segments`); what the socket refuses is
    /// counted, not retried, and keeps its sequence numbers for the next batch.
    fn send_batch(&mut self, datagrams: usize) {
        let size = self.payload_bytes;
        let datagrams = datagrams.min(self.buf.len() / size);
        let sent_ns = realtime_ns();
        for (i, datagram) in self.buf.chunks_mut(size).take(datagrams).enumerate() {
            write_stamp(datagram, self.next_seq + i as u64, sent_ns);
        }
        if !(self.gso && datagrams > 1) {
            self.send_each(datagrams);
            return;
        }
        match self.socket.send(&self.buf[..datagrams * size]) {
            Ok(_) => self.count_sent(datagrams),
            // The route's device cannot segment (EIO) or its MTU is below the size
            // (EINVAL): the kernel takes the datagrams one by one only.
            Err(e) if matches!(e.raw_os_error(), Some(libc::EIO | libc::EINVAL)) => {
                warn(&format!(
                    "UDP GSO send refused ({e}): one datagram per send"
                ));
                self.gso = false;
                let _ = setsockopt(&self.socket, sockopt::UdpGsoSegment, &0);
                self.send_each(datagrams);
            }
            Err(e) => self.count_refused(datagrams, &e),
        }
    }

    /// One send per datagram; the rest of the batch is forgone at the first refusal.
    fn send_each(&mut self, datagrams: usize) {
        let size = self.payload_bytes;
        for i in 0..datagrams {
            match self.socket.send(&self.buf[i * size..(i + 1) * size]) {
                Ok(_) => self.count_sent(1),
                Err(e) => {
                    self.count_refused(datagrams - i, &e);
                    return;
                }
            }
        }
    }

    fn count_sent(&mut self, datagrams: usize) {
        let n = datagrams as u64;
        self.next_seq += n;
        self.counts.datagrams += n;
        self.counts.bytes += n * self.payload_bytes as u64;
        self.counts.ip_bytes += n * self.datagram_ip_bytes;
    }

    fn count_refused(&mut self, datagrams: usize, error: &io::Error) {
        self.counts.send_errors += datagrams as u64;
        if !self.told_error {
            self.told_error = true;
            warn(&format!(
                "send refused ({error}); counting such as send_errors"
            ));
        }
    }
}

/// What `udp-sink` is asked to do.
#[derive(Debug, Clone)]
pub struct SinkOptions {
    pub listen: SocketAddr,
    pub duration_ns: u64,
    /// Stop this long after the last datagram, once one came.
    pub idle_timeout_ns: u64,
    /// Ask for UDP GRO (false: one datagram per read).
    pub gro: bool,
}

/// A bound UDP socket that counts what arrives.
pub struct Sink {
    socket: UdpSocket,
    options: SinkOptions,
    gro: bool,
}

impl Sink {
    /// Bind: datagrams that arrive from now on are queued for `run`.
    pub fn bind(options: &SinkOptions) -> io::Result<Sink> {
        let socket = UdpSocket::bind(options.listen)
            .map_err(|e| io::Error::new(e.kind(), format!("bind {}: {e}", options.listen)))?;
        grow_buffer(
            &socket,
            sockopt::RcvBufForce,
            sockopt::RcvBuf,
            RECEIVE_BUFFER_BYTES,
        );
        let gro = options.gro
            && match setsockopt(&socket, sockopt::UdpGroSegment, &true) {
                Ok(()) => true,
                Err(e) => {
                    warn(&format!("UDP_GRO refused ({e}): one datagram per read"));
                    false
                }
            };
        // The socket's own drops then come with each datagram: worth telling apart.
        let _ = setsockopt(&socket, sockopt::RxqOvfl, &1);
        socket.set_read_timeout(Some(Duration::from_nanos(LOOK_INTERVAL_NS)))?;
        Ok(Sink {
            socket,
            options: options.clone(),
            gro,
        })
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// Count arrivals until the run's time is over, traffic went idle, or `stop` is set.
    pub fn run(&self, stop: &AtomicBool) -> io::Result<SinkReport> {
        let mut buf = vec![0u8; READ_BYTES];
        let mut cmsg = nix::cmsg_space!(libc::c_int, u32);
        let mut tally = Tally::default();
        let mut socket_drops = 0;
        let start = now_ns();
        while !stop.load(Ordering::Relaxed) {
            let now = now_ns();
            let idle = tally
                .last_arrival_ns()
                .is_some_and(|last| now.saturating_sub(last) >= self.options.idle_timeout_ns);
            if now - start >= self.options.duration_ns || idle {
                break;
            }
            if let Some(arrival) = receive(self.socket.as_raw_fd(), &mut buf, &mut cmsg)? {
                let data = &buf[..arrival.bytes];
                tally.record_coalesced(now_ns(), data, arrival.segment_bytes, arrival.ipv6);
                socket_drops = socket_drops.max(arrival.socket_drops);
            }
        }
        Ok(tally.report(self.gro, socket_drops))
    }
}

/// What one read took: `bytes` of datagrams `segment_bytes` long (0: one datagram).
struct Arrival {
    bytes: usize,
    segment_bytes: usize,
    ipv6: bool,
    socket_drops: u64,
}

/// Read what is queued, or None when nothing came within the read timeout.
fn receive(fd: libc::c_int, buf: &mut [u8], cmsg: &mut [u8]) -> io::Result<Option<Arrival>> {
    let mut iov = [IoSliceMut::new(buf)];
    let msg = match recvmsg::<SockaddrStorage>(fd, &mut iov, Some(cmsg), MsgFlags::empty()) {
        Ok(msg) => msg,
        Err(Errno::EAGAIN | Errno::EINTR) => return Ok(None),
        Err(e) => return Err(io::Error::from(e)),
    };
    let ipv6 = msg
        .address
        .as_ref()
        .and_then(SockaddrStorage::as_sockaddr_in6)
        .is_some_and(|from| travels_as_ipv6(IpAddr::V6(from.ip())));
    let mut arrival = Arrival {
        bytes: msg.bytes,
        segment_bytes: 0,
        ipv6,
        socket_drops: 0,
    };
    for message in msg.cmsgs().into_iter().flatten() {
        match message {
            ControlMessageOwned::UdpGroSegments(size) => arrival.segment_bytes = size as usize,
            ControlMessageOwned::RxqOvfl(drops) => arrival.socket_drops = u64::from(drops),
            _ => {}
        }
    }
    Ok(Some(arrival))
}

/// Make a socket buffer `bytes` large: past the system's limit if root (`forced`), else
/// up to it (`plain`).
fn grow_buffer<F, P>(socket: &UdpSocket, forced: F, plain: P, bytes: usize)
where
    F: SetSockOpt<Val = usize>,
    P: SetSockOpt<Val = usize>,
{
    if setsockopt(socket, forced, &bytes).is_err() {
        let _ = setsockopt(socket, plain, &bytes);
    }
}

/// `CLOCK_REALTIME` in nanoseconds: comparable with the sink's clock across hosts.
fn realtime_ns() -> u64 {
    let t = clock_gettime(ClockId::CLOCK_REALTIME).expect("CLOCK_REALTIME is always there");
    t.tv_sec() as u64 * NS_PER_S + t.tv_nsec() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: u64 = 1_000_000;
    const GBPS: u64 = 1_000_000_000;

    fn pace(rate_bps: u64, payload_bytes: usize, duration_ns: u64) -> Pace {
        Pace {
            rate_bps,
            datagram_ip_bytes: datagram_ip_bytes(payload_bytes, false),
            max_batch: max_segments(payload_bytes),
            on_off: OnOff::ALWAYS,
            duration_ns,
        }
    }

    /// Run a pacer from 0 to its end, waking `late()` ns after each wait ends and
    /// sending at once; (instant, IP bytes) of each batch, and the pacer.
    fn simulate(pace: Pace, mut late: impl FnMut() -> u64) -> (Vec<(u64, u64)>, Pacer) {
        let mut pacer = Pacer::new(pace, 0);
        let mut now = 0;
        let mut sends = Vec::new();
        loop {
            match pacer.step(now) {
                Step::Done => break,
                Step::Wait(until) => {
                    assert!(until > now, "a wait must end later than it starts");
                    now = until + late();
                }
                Step::Send(n) => {
                    assert!(n >= 1 && n <= pace.max_batch.max(1));
                    sends.push((now, n as u64 * pace.datagram_ip_bytes));
                    pacer.sent(n);
                }
            }
        }
        (sends, pacer)
    }

    /// The most bytes sent in a window beyond what the rate allows over its length.
    fn worst_excess_bytes(sends: &[(u64, u64)], rate_bps: u64) -> f64 {
        let mut worst = f64::MIN;
        for (i, &(from, _)) in sends.iter().enumerate() {
            let mut bytes = 0;
            for &(at, sent) in &sends[i..] {
                bytes += sent;
                let allowed = rate_bps as f64 * (at - from) as f64 / 8e9;
                worst = worst.max(bytes as f64 - allowed);
            }
        }
        worst
    }

    #[test]
    fn ip_bytes_count_the_udp_and_ip_headers() {
        assert_eq!(datagram_ip_bytes(1472, false), 1500);
        assert_eq!(datagram_ip_bytes(1452, true), 1500);
        assert!(!travels_as_ipv6("127.0.0.1".parse().unwrap()));
        assert!(travels_as_ipv6("::1".parse().unwrap()));
        assert!(!travels_as_ipv6("::ffff:10.0.0.1".parse().unwrap()));
        let mut tally = Tally::default();
        tally.record(0, &[0; 1472], false);
        tally.record(1, &[0; 1472], true);
        assert_eq!((tally.bytes, tally.ip_bytes), (2 * 1472, 1500 + 1520));
    }

    #[test]
    fn the_stamp_reads_back_and_short_datagrams_have_none() {
        let mut datagram = [0u8; 20];
        write_stamp(&mut datagram, 0x0102_0304_0506_0708, 42);
        assert_eq!(&datagram[..8], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(read_stamp(&datagram), Some((0x0102_0304_0506_0708, 42)));
        assert_eq!(read_stamp(&datagram[..15]), None);
    }

    #[test]
    fn a_gso_send_stays_within_64_segments_and_65507_bytes() {
        assert_eq!(max_segments(1472), 44);
        assert_eq!(max_segments(1000), 64);
        assert_eq!(max_segments(16), 64);
        assert_eq!(max_segments(65_507), 1);
        for size in [16, 100, 1000, 1472, 9000, 65_507] {
            assert!(max_segments(size) * size <= MAX_SEND_BYTES);
        }
    }

    #[test]
    fn a_batch_is_at_most_100us_of_the_rate() {
        let at = |rate| Pacer::new(pace(rate, 1472, MS), 0).batch();
        assert_eq!(at(GBPS), 8); // 12.5 KB
        assert_eq!(at(4 * GBPS), 33);
        assert_eq!(at(200_000_000), 1);
        assert_eq!(at(100 * GBPS), 44); // no more than one send carries
    }

    #[test]
    fn on_time_batches_never_exceed_the_rate_by_more_than_a_batch() {
        for rate in [10_000_000, 200_000_000, GBPS, 4 * GBPS] {
            let p = pace(rate, 1472, 20 * MS);
            let (sends, pacer) = simulate(p, || 0);
            let batch_bytes = pacer.batch() as u64 * p.datagram_ip_bytes;
            assert!(sends.iter().all(|&(_, bytes)| bytes == batch_bytes));
            assert!(worst_excess_bytes(&sends, rate) <= batch_bytes as f64);
            let total: u64 = sends.iter().map(|s| s.1).sum();
            let expected = rate as f64 * 0.020 / 8.0;
            assert!((total as f64 - expected).abs() <= batch_bytes as f64);
            assert_eq!(pacer.late_max_ns, 0);
        }
    }

    #[test]
    fn a_late_sender_catches_up_at_most_1ms_of_the_schedule() {
        let p = pace(GBPS, 1472, 30 * MS);
        let mut wakes = 0;
        let (sends, pacer) = simulate(p, || {
            wakes += 1;
            if wakes == 50 { 10 * MS } else { 0 }
        });
        assert_eq!(pacer.late_max_ns, 10 * MS);
        // What went at the instant it woke: 1 ms of the rate (125 KB) and the batch due then.
        let (woke, _) = sends.windows(2).find(|w| w[1].0 - w[0].0 > 5 * MS).unwrap()[1];
        let burst: u64 = sends.iter().filter(|s| s.0 == woke).map(|s| s.1).sum();
        let batch_bytes = pacer.batch() as u64 * p.datagram_ip_bytes;
        assert!(
            burst >= 125_000 && burst <= 125_000 + batch_bytes,
            "burst {burst}"
        );
        // The 9 ms beyond that are forgone, not owed.
        let total: u64 = sends.iter().map(|s| s.1).sum();
        let on_schedule = GBPS as f64 * 0.030 / 8.0;
        let forgone = GBPS as f64 * 0.009 / 8.0;
        assert!((total as f64 - (on_schedule - forgone)).abs() < 2.0 * batch_bytes as f64);
    }

    #[test]
    fn catching_up_uses_bigger_sends_not_more_of_them() {
        let p = pace(4 * GBPS, 1472, 2 * MS);
        let mut pacer = Pacer::new(p, 0);
        assert_eq!(pacer.step(0), Step::Send(33));
        pacer.sent(33);
        // 500 µs late: 5 batches' worth are due, and one send carries the most it may.
        assert_eq!(pacer.step(600_000), Step::Send(44));
    }

    #[test]
    fn on_off_sends_only_while_on_and_at_the_rate_then() {
        let mut p = pace(GBPS, 1472, 100 * MS);
        p.on_off = OnOff {
            on_ns: 10 * MS,
            off_ns: 15 * MS,
        };
        let (sends, pacer) = simulate(p, || 0);
        assert!(sends.iter().all(|&(at, _)| at % (25 * MS) < 10 * MS));
        let batch_bytes = pacer.batch() as u64 * p.datagram_ip_bytes;
        for period in 0..4 {
            let from = period * 25 * MS;
            let bytes: u64 = sends
                .iter()
                .filter(|s| (from..from + 25 * MS).contains(&s.0))
                .map(|s| s.1)
                .sum();
            assert!(
                (bytes as f64 - 1_250_000.0).abs() <= batch_bytes as f64,
                "{bytes}"
            );
            assert!(
                sends.iter().any(|s| s.0 == from),
                "each on period starts on time"
            );
        }
        assert_eq!(p.on_off.on_ns_within(100 * MS), 40 * MS);
        assert_eq!(p.on_off.on_ns_within(60 * MS), 30 * MS);
        assert_eq!(OnOff::ALWAYS.on_ns_within(7), 7);
    }

    #[test]
    fn a_silence_is_not_made_up_for() {
        let mut p = pace(GBPS, 1472, 100 * MS);
        p.on_off = OnOff {
            on_ns: MS,
            off_ns: MS,
        };
        let mut pacer = Pacer::new(p, 0);
        assert_eq!(pacer.step(0), Step::Send(8));
        pacer.sent(8);
        assert_eq!(pacer.step(1_500_000), Step::Wait(2 * MS));
        assert_eq!(pacer.step(2 * MS), Step::Send(8));
        assert_eq!(pacer.step(100 * MS), Step::Done);
    }

    proptest! {
        #[test]
        fn late_or_not_no_window_carries_more_than_the_rate_1ms_and_a_send(
            rate in 1_000_000u64..10_000_000_000,
            size in 16usize..9000,
            lateness in prop::collection::vec(0u64..2_000_000, 1..50),
        ) {
            let p = pace(rate, size, 10 * MS);
            let mut i = 0;
            let (sends, pacer) = simulate(p, || {
                i += 1;
                lateness[i % lateness.len()]
            });
            let catch_up = rate as f64 * MAX_CATCH_UP_NS as f64 / 8e9;
            let send_bytes = (pacer.batch().max(p.max_batch) as u64 * p.datagram_ip_bytes) as f64;
            // 2 bytes: the schedule's instants are whole ns, rounded down.
            prop_assert!(worst_excess_bytes(&sends, rate) <= catch_up + send_bytes + 2.0);
        }
    }

    #[test]
    fn losses_are_gaps_and_late_arrivals_are_reorderings() {
        let mut tally = Tally::default();
        let stamped = |seq: u64| {
            let mut d = vec![0u8; 100];
            write_stamp(&mut d, seq, 0);
            d
        };
        for seq in [0, 1, 2, 5, 3, 6, 9] {
            tally.record(0, &stamped(seq), false);
        }
        // 10 were sent up to the highest seen; 4 and 7, 8 never came; 3 came after 5.
        assert_eq!((tally.datagrams, tally.lost(), tally.reordered), (7, 3, 1));
        tally.record(0, &stamped(4), false);
        assert_eq!((tally.lost(), tally.reordered), (2, 2));
        tally.record(0, &[1, 2, 3], false); // no stamp: counted, not sequenced
        assert_eq!((tally.datagrams, tally.lost()), (9, 2));
    }

    #[test]
    fn coalesced_datagrams_are_split_at_the_segment_size() {
        let mut buf = vec![0u8; 3 * 1000 + 400];
        for (seq, d) in buf.chunks_mut(1000).enumerate() {
            write_stamp(d, seq as u64, 0);
        }
        let mut tally = Tally::default();
        tally.record_coalesced(0, &buf, 1000, false);
        assert_eq!((tally.datagrams, tally.bytes, tally.lost()), (4, 3400, 0));
        assert_eq!(tally.ip_bytes, 3400 + 4 * 28);
        tally.record_coalesced(0, &buf[..1000], 0, false);
        assert_eq!((tally.datagrams, tally.reordered), (5, 1));
    }

    #[test]
    fn arrivals_are_binned_by_the_second_since_the_first() {
        let mut tally = Tally::default();
        let start = 7 * NS_PER_S;
        // 1250 IP bytes each ms for 2.5 s: 10 Mb/s.
        for ms in 0..2_500 {
            tally.record(start + ms * MS, &[0; 1222], false);
        }
        let report = tally.report(true, 0);
        let spans: Vec<(f64, f64)> = report
            .intervals
            .iter()
            .map(|i| (i.start_s, i.end_s))
            .collect();
        assert_eq!(spans, [(0.0, 1.0), (1.0, 2.0), (2.0, 2.499)]);
        assert_eq!(report.intervals[0].rate_bps, 10_000_000);
        assert_eq!(report.intervals[1].rate_bps, 10_000_000);
        // 500 arrivals over 0.499 s: the last interval ends at the last arrival.
        assert_eq!(report.intervals[2].rate_bps, 10_020_040);
        assert!((report.duration_s - 2.499).abs() < 1e-9);
        // 2500 arrivals over 2.499 s: the first came at the start of it.
        assert_eq!(report.rate_bps, 10_004_001);
        // A sliver past the last whole second joins it.
        tally.record(start + 3 * NS_PER_S + MS, &[0; 1222], false);
        let last = tally.intervals().pop().unwrap();
        assert_eq!((last.start_s, last.end_s), (2.0, 3.001));
    }

    #[test]
    fn nothing_received_reports_zeros() {
        let report = Tally::default().report(false, 0);
        assert_eq!(
            (report.datagrams, report.rate_bps, report.duration_s),
            (0, 0, 0.0)
        );
        assert!(report.intervals.is_empty());
    }

    #[test]
    fn the_sender_rate_is_over_the_time_it_was_on() {
        let counts = SendCounts {
            datagrams: 1000,
            bytes: 1_472_000,
            ip_bytes: 1_500_000,
            send_errors: 3,
        };
        let report = counts.report(2 * NS_PER_S, NS_PER_S / 2, true, 5);
        assert_eq!(report.rate_bps, 24_000_000);
        assert!((report.duration_s - 2.0).abs() < 1e-12);
        let json = serde_json::to_value(&report).unwrap();
        for key in [
            "datagrams",
            "bytes",
            "ip_bytes",
            "duration_s",
            "rate_bps",
            "gso",
            "send_errors",
            "late_max_ns",
        ] {
            assert!(json.get(key).is_some(), "{key}");
        }
    }
}
