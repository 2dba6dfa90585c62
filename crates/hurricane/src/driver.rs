//! The thin shell around the sans-IO core: a control exchange over TCP, then UDP
//! datagrams, sent in GSO batches and received GRO-coalesced (`udp`), the core's
//! deadlines kept with the monotonic clock (sleeping when the next one is far, yielding
//! when it is near). Blocks come from and go to anything that reads or writes them by
//! number: memory, or files (`files`).

use std::io::{self, IoSlice};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use crate::control::{self, ControlError, FileOffer, Offer};
use crate::governor::Governor;
use crate::range_set::RangeSet;
use crate::receiver::{BlockSink, Receiver, ReceiverStats};
use crate::sender::{BlockSource, Pacing, Sender, SenderStats, lead_ns};
use crate::tuner::Tuner;
use crate::udp::{MAX_SEGMENTS, MAX_SEND_BYTES, Udp};
use crate::wire::{DATA_HEADER_BYTES, DATA_OVERHEAD_BYTES, Key};
use crate::{IP_UDP_BYTES, Transfer};

#[derive(Debug)]
pub enum DriverError {
    /// No receiver answers on the control port.
    Unreachable {
        to: SocketAddr,
        error: io::Error,
    },
    Control(ControlError),
    Io(io::Error),
    /// The transfer did not finish in the time allowed.
    TimedOut {
        done_bytes: u64,
    },
    /// The other side closed the control connection before the transfer was whole: it
    /// stopped or was killed.
    PeerGone {
        peer: Side,
        done_bytes: u64,
    },
    /// The receiver would not take this transfer into its sink (a file it cannot
    /// write, a name outside its directory), or took it and found it wrong.
    Sink(String),
}

impl std::fmt::Display for DriverError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DriverError::Unreachable { to, error } => write!(
                f,
                "cannot reach a receiver at {to} ({error}): is `hurricane recv` listening there?"
            ),
            DriverError::Control(e) => write!(f, "{e}"),
            DriverError::Io(e) => write!(f, "socket: {e}"),
            DriverError::TimedOut { done_bytes } => {
                write!(
                    f,
                    "the transfer did not finish in time ({done_bytes} bytes done): \
                     run it again to take it up where it stopped, or allow more time"
                )
            }
            DriverError::PeerGone {
                peer: Side::Receiver,
                done_bytes,
            } => write!(
                f,
                "the receiver closed the control connection before the transfer was whole \
                 ({done_bytes} bytes in): it stopped or was killed; start it again and run \
                 this send again to take the transfer up where it stopped"
            ),
            DriverError::PeerGone {
                peer: Side::Sender,
                done_bytes,
            } => write!(
                f,
                "the sender closed the control connection before the transfer was whole \
                 ({done_bytes} bytes in, kept): it stopped or was killed; a send of the same \
                 file takes the transfer up where it stopped"
            ),
            DriverError::Sink(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for DriverError {}

/// One end of a transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Sender,
    Receiver,
}

/// What the other side's end of the control connection says, looked at without waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Peer {
    /// Nothing new.
    There,
    /// The receiver said the transfer is whole.
    Whole,
    /// The connection is closed or broken.
    Gone,
}

/// How often each side looks at the control connection: a peer that stopped is noticed
/// within this, at the cost of one non-blocking read.
const CONTROL_LOOK: Duration = Duration::from_millis(200);

/// The control connection after the exchange, watched for the whole record (the
/// sender) or for the peer going away (both sides). A link that is down does not close
/// it: TCP only retransmits, so only an end that stopped does.
struct ControlWatch {
    stream: TcpStream,
    got: Vec<u8>,
    next_look: Instant,
}

impl ControlWatch {
    fn new(stream: TcpStream) -> io::Result<Self> {
        stream.set_nonblocking(true)?;
        Ok(ControlWatch {
            stream,
            got: Vec::new(),
            next_look: Instant::now() + CONTROL_LOOK,
        })
    }

    /// What the peer says, if it is time to look (`There` otherwise).
    fn look_if_due(&mut self) -> Result<Peer, ControlError> {
        if Instant::now() < self.next_look {
            return Ok(Peer::There);
        }
        self.next_look = Instant::now() + CONTROL_LOOK;
        self.look()
    }

    fn look(&mut self) -> Result<Peer, ControlError> {
        use std::io::Read;
        let mut buf = [0u8; control::WHOLE_BYTES + 1];
        loop {
            match self.stream.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => self.got.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    return Ok(if control::is_whole(&self.got)? {
                        Peer::Whole
                    } else {
                        Peer::There
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
            control::is_whole(&self.got)?;
        }
        Ok(if control::is_whole(&self.got)? {
            Peer::Whole
        } else {
            Peer::Gone
        })
    }

    /// Tell the sender the transfer is whole. It may be gone already (its own DONE came),
    /// which is no error.
    fn say_whole(&mut self) {
        use std::io::Write;
        let mut record = Vec::new();
        control::write_whole(&mut record).expect("into memory");
        let _ = self.stream.write(&record);
    }
}

impl From<io::Error> for DriverError {
    fn from(e: io::Error) -> Self {
        DriverError::Io(e)
    }
}

impl From<ControlError> for DriverError {
    fn from(e: ControlError) -> Self {
        DriverError::Control(e)
    }
}

/// W_c when not told: `hurricane send --burst`'s default.
pub const DEFAULT_BURST_DATAGRAMS: u32 = 64;
/// k when not told: `hurricane send --nack-group`'s default. Every gap is reported at
/// once: a gap that finds fewer than k others waits a quarter of a round trip for its
/// NACK, so in virtual time (`longhaul-sim hurricane --nack-group k`, seeds 1-30)
/// goodput never rose with k; what k = 1 costs is one NACK per loss event.
pub const DEFAULT_NACK_GROUP: u32 = 1;

/// How to send.
#[derive(Debug, Clone, Copy)]
pub struct SendOptions {
    /// Payload per datagram; 0 fills the path MTU (1,500 bytes: 1,427).
    pub block_bytes: u32,
    pub rate_ceiling_bps: u64,
    pub pacing: Pacing,
    pub nack_group: u32,
    /// Search T_s while sending (`tuner`), from `pacing.idle_ns`'s range.
    pub tune: bool,
    /// Encrypt payloads (AES-256-GCM); they are authenticated either way.
    pub encrypt: bool,
    /// Lower the rate while the far end loses more than 5 %, or while the queue in front
    /// of it keeps growing (`governor`).
    pub govern: bool,
    pub deadline: Duration,
}

#[derive(Debug, Clone, Copy)]
pub struct Finished<S> {
    /// Bytes moved by this run (a resumed transfer's held blocks not counted).
    pub bytes: u64,
    /// Of `bytes`, those that came in within `seconds`: the receiver's clock starts when
    /// its first receive returns, by which time that receive's datagrams (a coalesced
    /// batch of up to 64 KB) had already crossed the line, so they are left out, as a
    /// window's first fence post is. The sender's: all of `bytes`.
    pub timed_bytes: u64,
    /// The sender: from its first datagram to DONE. The receiver: from the first
    /// datagram in to the last block in and checked (the transfer as the far end saw it:
    /// neither the control exchange nor DONE's way back).
    pub seconds: f64,
    pub rtt_ns: u64,
    /// The idle time the sender ended with (the tuner's choice when tuning).
    pub idle_ns: u64,
    pub block_bytes: u32,
    /// CPU time this thread used over the transfer, in cores (user + system).
    pub cpu_cores: f64,
    /// The sender: GSO batches its socket could not take at once (sent later).
    pub deferred_sends: u64,
    /// The sender: the least share of the ceiling its governor held it to (1 without a
    /// governor, or when it never acted).
    pub lowest_rate_scale: f64,
    pub stats: S,
}

/// What a progress display is told, about every 200 ms.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub seconds: f64,
    /// Blocks sent at least once, of `total_blocks`.
    pub sent_blocks: u64,
    pub total_blocks: u64,
    pub block_bytes: u32,
    pub resent_blocks: u64,
}

/// Random bytes from the kernel (the transfer's key and id).
fn random<const N: usize>() -> io::Result<[u8; N]> {
    use std::io::Read;
    let mut bytes = [0u8; N];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// This thread's CPU time so far.
pub(crate) fn thread_cpu_s() -> f64 {
    // SAFETY: clock_gettime writes one timespec.
    unsafe {
        let mut t: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &raw mut t);
        t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
    }
}

/// Wake-ups within a microsecond of the deadline rather than the default 50 µs slack
/// (`prctl(2)` `PR_SET_TIMERSLACK`): the pacing sleeps between GSO batches 55 µs apart
/// at 9.6 Gb/s.
fn tighten_timer_slack() {
    // SAFETY: prctl with an integer argument.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1_000 as libc::c_ulong, 0, 0, 0);
    }
}

/// Wait until `deadline_ns` on `clock`: sleep while it is far, yield when near.
fn wait_until(clock: Instant, deadline_ns: u64) {
    let now_ns = clock.elapsed().as_nanos() as u64;
    if deadline_ns <= now_ns {
        return;
    }
    let left = deadline_ns - now_ns;
    if left > 20_000 {
        std::thread::sleep(Duration::from_nanos(left));
    } else {
        std::thread::yield_now();
    }
}

/// The payload that fills one datagram on a path of `mtu` bytes, at most a jumbo
/// frame's (9,000: loopback's 65,536 would leave one datagram per GSO batch).
pub fn block_bytes_for_mtu(mtu: usize) -> u32 {
    (mtu.min(9000)
        .saturating_sub(IP_UDP_BYTES + DATA_OVERHEAD_BYTES))
    .max(1) as u32
}

/// The payload that fills one datagram on the route to `to` (its MTU as the kernel
/// knows it; 1,500 bytes if it cannot say).
pub fn block_bytes_toward(to: SocketAddr) -> u32 {
    let mtu = UdpSocket::bind(SocketAddr::new(unspecified(to), 0))
        .and_then(|socket| {
            socket.connect(to)?;
            Udp::new(socket).path_mtu()
        })
        .unwrap_or(1500);
    block_bytes_for_mtu(mtu)
}

/// Send `total_bytes` from `source` (a file if `file` says so) to the receiver whose
/// control port is `to`.
pub fn send(
    to: SocketAddr,
    total_bytes: u64,
    source: &mut impl BlockSource,
    file: Option<FileOffer>,
    options: SendOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<Finished<SenderStats>, DriverError> {
    let started = Instant::now();
    let mut control_stream = TcpStream::connect_timeout(&to, Duration::from_secs(10))
        .map_err(|error| DriverError::Unreachable { to, error })?;
    control_stream.set_nodelay(true)?;
    let rtt_ns = started.elapsed().as_nanos() as u64;
    let socket = UdpSocket::bind(SocketAddr::new(unspecified(to), 0))?;
    // Connected first to the control address, only to learn the route's MTU.
    socket.connect(to)?;
    let mut udp = Udp::new(socket);
    let block_bytes = match options.block_bytes {
        0 => block_bytes_for_mtu(udp.path_mtu().unwrap_or(1500)),
        chosen => chosen,
    };
    let offer = Offer {
        id: u64::from_be_bytes(random()?),
        block_bytes,
        total_bytes,
        rate_ceiling_bps: options.rate_ceiling_bps,
        nack_group: options.nack_group,
        rtt_ns,
        key: Key::new(random()?, options.encrypt),
        file,
    };
    control::write_offer(&mut control_stream, &offer)?;
    let (port, held) = control::read_answer(&mut control_stream)?;
    let mut control_watch = ControlWatch::new(control_stream)?;
    udp.socket.connect(SocketAddr::new(to.ip(), port))?;
    udp.socket.set_nonblocking(true)?;
    udp.set_buffers(8 << 20);
    let held_bytes = held_bytes(&held, &offer);
    let (mut sender, batch_ns) = sender_for(offer.transfer(), held, &options);
    tighten_timer_slack();
    let segment_bytes = block_bytes as usize + DATA_OVERHEAD_BYTES;
    let (clock, cpu_at_start) = (Instant::now(), thread_cpu_s());
    let (mut batch, mut incoming) = (Batch::default(), vec![0u8; 65_536]);
    let mut next_progress = Duration::ZERO;
    let mut deferred_sends = 0;
    while !sender.is_done() {
        let elapsed = clock.elapsed();
        if elapsed > options.deadline {
            return Err(DriverError::TimedOut {
                done_bytes: sender.received_below() * u64::from(block_bytes),
            });
        }
        if elapsed >= next_progress {
            next_progress = elapsed + Duration::from_millis(200);
            progress(Progress {
                seconds: elapsed.as_secs_f64(),
                sent_blocks: sender.new_blocks_sent(),
                total_blocks: offer.transfer().total_blocks(),
                block_bytes,
                resent_blocks: sender.stats.blocks_resent,
            });
        }
        match control_watch.look_if_due()? {
            Peer::There => {}
            Peer::Whole => break,
            Peer::Gone => {
                return Err(DriverError::PeerGone {
                    peer: Side::Receiver,
                    done_bytes: sender.received_below() * u64::from(block_bytes),
                });
            }
        }
        let now_ns = elapsed.as_nanos() as u64;
        take_nacks(&udp, &mut sender, now_ns, &mut incoming)?;
        sender.handle_timeout(now_ns);
        if send_due(
            &mut udp,
            &mut sender,
            now_ns,
            source,
            &mut batch,
            segment_bytes,
            &mut deferred_sends,
        )? {
            continue;
        }
        wait_until(clock, next_wake_ns(&sender, &batch, now_ns, batch_ns));
    }
    let seconds = clock.elapsed().as_secs_f64();
    Ok(Finished {
        bytes: total_bytes - held_bytes,
        timed_bytes: total_bytes - held_bytes,
        seconds,
        rtt_ns,
        idle_ns: sender
            .tuner
            .as_ref()
            .map_or(options.pacing.idle_ns, Tuner::idle_ns),
        block_bytes,
        cpu_cores: (thread_cpu_s() - cpu_at_start) / seconds,
        deferred_sends,
        lowest_rate_scale: sender.governor.as_ref().map_or(1.0, Governor::lowest_scale),
        stats: sender.stats,
    })
}

/// The sender of `transfer` as `options` have it (its tuner and governor if asked), and
/// the time one GSO batch takes at the ceiling. It runs ahead of its schedule by
/// `lead_ns`, so that it can hand over a batch at once: this driver wakes when two
/// batches are due (104 µs apart at 9.6 Gb/s, 1 ms at 1 Gb/s: each wake-up costs a
/// context switch, a fifth of the sender's time when it woke for every batch). The
/// simulator builds its Hurricane senders with this too.
pub fn sender_for(transfer: Transfer, held: RangeSet, options: &SendOptions) -> (Sender, u64) {
    let (rtt_ns, rate_bps) = (transfer.rtt_ns, options.rate_ceiling_bps);
    let datagram_bytes = transfer.datagram_ip_bytes();
    let segment_bytes = datagram_bytes - IP_UDP_BYTES;
    let mut sender = Sender::resume(transfer, options.pacing, held);
    if options.tune {
        // Up to twice a burst's time at the ceiling: down to a third of the rate.
        let burst_bits = u64::from(options.pacing.burst_datagrams) * datagram_bytes as u64 * 8;
        let burst_ns = burst_bits * 1_000_000_000 / rate_bps;
        sender.tuner = Some(Tuner::new(2 * burst_ns, rtt_ns));
    }
    if options.govern {
        sender.governor = Some(Governor::new(rtt_ns));
    }
    let batch_segments = (MAX_SEND_BYTES / segment_bytes).clamp(1, MAX_SEGMENTS);
    let batch_ns = (batch_segments * datagram_bytes * 8) as u64 * 1_000_000_000 / rate_bps;
    let lead_ns = lead_ns(rtt_ns, batch_ns);
    sender.allow_early(lead_ns, lead_ns);
    (sender, batch_ns)
}

/// When the sender's loop wakes next: when two batches are due (at most 1 ms on), or
/// a batch's time on when the socket deferred one (it drains about a batch in that time).
fn next_wake_ns(sender: &Sender, deferred_batch: &Batch, now_ns: u64, batch_ns: u64) -> u64 {
    if deferred_batch.is_empty() {
        sender
            .poll_timeout()
            .unwrap_or(now_ns)
            .saturating_add(2 * batch_ns)
            .min(now_ns + 1_000_000)
    } else {
        now_ns + batch_ns
    }
}

/// One GSO batch of datagrams: their bytes, but for the payloads that stay in their
/// source (a mapped file's blocks), which go out from where they lie.
#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    /// (offset in `bytes`, block): that block's payload goes in at that offset.
    in_place: Vec<(usize, u64)>,
    /// The datagrams' bytes, payloads in place included.
    len: usize,
}

impl Batch {
    fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.in_place.clear();
        self.len = 0;
    }

    /// The batch's bytes in order, from the buffer and from `source`.
    fn parts<'a>(&'a self, source: &'a impl BlockSource) -> Vec<IoSlice<'a>> {
        let mut parts = Vec::with_capacity(2 * self.in_place.len() + 1);
        let mut cursor = 0;
        for &(at, block) in &self.in_place {
            parts.push(IoSlice::new(&self.bytes[cursor..at]));
            let payload = source
                .in_place(block)
                .expect("a block left in place is there still");
            parts.push(IoSlice::new(payload));
            cursor = at;
        }
        parts.push(IoSlice::new(&self.bytes[cursor..]));
        parts
    }
}

/// The datagrams due at `now_ns`, in one GSO batch of equal datagrams (only its last
/// may be shorter); whether a full batch went (more may be due). A batch the socket
/// cannot take now (its buffer full: the sender ran ahead of what the path drains) is
/// kept in `batch` and goes first next time, counted in `deferred`; the sender's own host
/// loses nothing. A file's blocks stay in its mapping (`Sender::poll_transmit_in_place`)
/// and the kernel copies them from there: copying each into the batch first, a sender
/// from tmpfs at 9.6 Gb/s took 0.54-0.57 core, against 0.43-0.50 (moving more) without.
fn send_due(
    udp: &mut Udp,
    sender: &mut Sender,
    now_ns: u64,
    source: &mut impl BlockSource,
    batch: &mut Batch,
    segment_bytes: usize,
    deferred: &mut u64,
) -> Result<bool, DriverError> {
    let batch_segments = (MAX_SEND_BYTES / segment_bytes).clamp(1, MAX_SEGMENTS);
    if batch.is_empty() {
        while batch.len < batch_segments * segment_bytes {
            let at = batch.bytes.len();
            let Some(outgoing) = sender.poll_transmit_in_place(now_ns, source, &mut batch.bytes)
            else {
                break;
            };
            if let Some(block) = outgoing.in_place {
                batch.in_place.push((at + DATA_HEADER_BYTES, block));
            }
            batch.len += outgoing.len;
            if outgoing.len != segment_bytes {
                break;
            }
        }
    }
    if batch.is_empty() {
        return Ok(false);
    }
    let full = batch.len == batch_segments * segment_bytes;
    match udp.send_segments_vectored(&batch.parts(source), segment_bytes) {
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
            *deferred += 1;
            Ok(false)
        }
        // A refused port (the receiver gone for now) loses the datagrams, as the
        // network would; the NACKs recover them.
        Err(e) if e.kind() != io::ErrorKind::ConnectionRefused => Err(e.into()),
        _ => {
            batch.clear();
            Ok(full)
        }
    }
}

fn held_bytes(held: &RangeSet, offer: &Offer) -> u64 {
    let transfer = offer.transfer();
    held.iter()
        .map(|blocks| {
            let full = (blocks.end - blocks.start) * u64::from(offer.block_bytes);
            // Only the last block can be short.
            if blocks.end == transfer.total_blocks() {
                full - u64::from(offer.block_bytes) + transfer.block_len(blocks.end - 1) as u64
            } else {
                full
            }
        })
        .sum()
}

/// Every NACK and DONE waiting on the socket, handed to the sender.
fn take_nacks(
    udp: &Udp,
    sender: &mut Sender,
    now_ns: u64,
    incoming: &mut [u8],
) -> Result<(), DriverError> {
    loop {
        match udp.recv_segments(incoming) {
            Ok((n, segment, _)) => {
                for datagram in incoming[..n].chunks_mut(segment) {
                    sender.handle_datagram(now_ns, datagram);
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::ConnectionRefused
                ) =>
            {
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        }
    }
}

fn unspecified(peer: SocketAddr) -> std::net::IpAddr {
    match peer {
        SocketAddr::V4(_) => std::net::Ipv4Addr::UNSPECIFIED.into(),
        SocketAddr::V6(_) => std::net::Ipv6Addr::UNSPECIFIED.into(),
    }
}

/// What a receiving side does with an offer: take it (a sink, with the blocks it already
/// holds) or refuse it, saying why.
pub type Accept<S> = Result<(S, RangeSet), String>;

/// Whether every block is in and the sink checks. This comes before DONE: blocks found
/// wrong are forgotten and fetched again.
fn check_if_complete<S>(
    receiver: &mut Receiver,
    sink: &mut S,
    finish: &mut impl FnMut(&mut S) -> Result<Vec<std::ops::Range<u64>>, String>,
) -> Result<bool, DriverError> {
    if !receiver.is_complete() {
        return Ok(false);
    }
    for blocks in finish(sink).map_err(DriverError::Sink)? {
        receiver.forget(blocks);
    }
    Ok(receiver.is_complete())
}

/// Take one transfer offered on `listener` into the sink `accept` makes of the offer;
/// `finish` checks the sink once every block is in (a file's digests) and may give back
/// blocks to fetch again.
pub fn receive<S: BlockSink>(
    listener: &TcpListener,
    accept: impl FnOnce(&Offer) -> Accept<S>,
    mut finish: impl FnMut(&mut S) -> Result<Vec<std::ops::Range<u64>>, String>,
    deadline: Duration,
) -> Result<(Finished<ReceiverStats>, S), DriverError> {
    let (mut control_stream, _) = listener.accept()?;
    let offer = control::read_offer(&mut control_stream)?;
    let (mut sink, held) = match accept(&offer) {
        Ok(taken) => taken,
        Err(why) => {
            control::write_refusal(&mut control_stream, &why)?;
            return Err(DriverError::Sink(why));
        }
    };
    let socket = UdpSocket::bind(SocketAddr::new(listener.local_addr()?.ip(), 0))?;
    let udp = Udp::new(socket);
    // Room for about 100 ms of 9.6 Gb/s (the kernel charges a coalesced 64 KB datagram
    // about twice its bytes): a receiver kept off its core that long (a busy machine, a
    // page fault storm) loses nothing. 64 MB overflowed on a two-core machine running an
    // emulator beside both ends.
    udp.set_buffers(256 << 20);
    control::write_answer(&mut control_stream, udp.socket.local_addr()?.port(), &held)?;
    let mut control_watch = ControlWatch::new(control_stream)?;
    let transfer = offer.transfer();
    let (held_bytes, held_blocks) = (held_bytes(&held, &offer), held.len());
    let mut receiver = Receiver::resume(transfer.clone(), offer.nack_group, held);
    udp.socket.set_nonblocking(true)?;
    let (clock, cpu_at_start) = (Instant::now(), thread_cpu_s());
    let (mut out, mut incoming) = (Vec::with_capacity(2048), vec![0u8; 65_536]);
    let mut peer = None;
    let mut quiet_since = None;
    // After DONE, stay a while to answer a repeated FIN (the DONE may be lost).
    let linger = Duration::from_nanos(4 * transfer.rtt_ns.max(1_000_000));
    let mut checked = false;
    let (mut first_in, mut whole_at) = (None, None);
    let mut before_clock_bytes = 0;
    loop {
        if clock.elapsed() > deadline {
            return Err(DriverError::TimedOut {
                done_bytes: receiver.received().len() * u64::from(transfer.block_bytes),
            });
        }
        match udp.recv_segments(&mut incoming) {
            Ok((n, segment, from)) => {
                let first = first_in.is_none();
                first_in.get_or_insert_with(Instant::now);
                let now_ns = clock.elapsed().as_nanos() as u64;
                for datagram in incoming[..n].chunks_mut(segment) {
                    receiver.handle_datagram(now_ns, datagram, &mut sink);
                }
                if first {
                    let blocks = receiver.received().len() - held_blocks;
                    before_clock_bytes = blocks * u64::from(transfer.block_bytes);
                }
                peer = Some(from);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                nap(&receiver, clock.elapsed().as_nanos() as u64);
            }
            Err(e) => return Err(e.into()),
        }
        if !checked && check_if_complete(&mut receiver, &mut sink, &mut finish)? {
            checked = true;
            whole_at = Some(Instant::now());
            control_watch.say_whole();
        }
        if control_watch.look_if_due()? == Peer::Gone {
            if checked {
                break; // the sender has what it waited for, by DONE or by the record
            }
            return Err(DriverError::PeerGone {
                peer: Side::Sender,
                done_bytes: receiver.received().len() * u64::from(transfer.block_bytes),
            });
        }
        let now_ns = clock.elapsed().as_nanos() as u64;
        receiver.handle_timeout(now_ns);
        if let Some(peer) = peer {
            while receiver.poll_transmit(now_ns, &mut out).is_some() {
                udp.socket.send_to(&out, peer)?;
                out.clear();
            }
        }
        if checked {
            let since = *quiet_since.get_or_insert_with(Instant::now);
            if since.elapsed() > linger {
                break;
            }
        }
    }
    let seconds = match (first_in, whole_at) {
        (Some(first), Some(whole)) => (whole - first).as_secs_f64(),
        _ => clock.elapsed().as_secs_f64(),
    };
    let bytes = transfer.total_bytes - held_bytes;
    let finished = Finished {
        bytes,
        timed_bytes: bytes.saturating_sub(before_clock_bytes),
        seconds,
        rtt_ns: transfer.rtt_ns,
        idle_ns: 0,
        block_bytes: transfer.block_bytes,
        cpu_cores: (thread_cpu_s() - cpu_at_start) / seconds,
        deferred_sends: 0,
        lowest_rate_scale: 1.0,
        stats: receiver.stats,
    };
    Ok((finished, sink))
}

/// How long the receiver sleeps when its socket is empty, rather than waiting on the
/// socket: a batch arriving meanwhile wakes nobody, where a waiting receiver was woken
/// by the first batch after each time it had drained the socket (each a context switch
/// on its side and an inter-processor wake-up on the side handing the batch over): in
/// one 4 GiB transfer at 9.6 Gb/s x 163 ms, 25,343 voluntary context switches waiting
/// against 3,593 napping. The socket's
/// buffer (256 MB, about 200 ms of 9.6 Gb/s) holds what comes in meanwhile, and half a
/// millisecond is far inside the quarter of a round trip the receiver waits before it
/// reports a gap. Measured at 9.6 Gb/s x 163 ms, three runs a side alternated with the
/// receiver waiting on the socket: 0.357-0.359 core against 0.394-0.407.
const RECEIVE_NAP: Duration = Duration::from_micros(500);

/// Sleep `RECEIVE_NAP`, or until the receiver's next timeout if that comes sooner.
fn nap(receiver: &Receiver, now_ns: u64) {
    let nap_ns = RECEIVE_NAP.as_nanos() as u64;
    let until_ns = receiver
        .poll_timeout()
        .map_or(now_ns + nap_ns, |due| due.clamp(now_ns, now_ns + nap_ns));
    if until_ns > now_ns {
        std::thread::sleep(Duration::from_nanos(until_ns - now_ns));
    }
}
