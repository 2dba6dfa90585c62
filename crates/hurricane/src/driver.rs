//! The thin shell around the sans-IO core: a control exchange over TCP, then UDP
//! datagrams between two blocking sockets, the core's deadlines kept with the monotonic
//! clock (sleeping when the next one is far, yielding when it is near). Memory to memory
//! for now; GSO/GRO, batching and files come next.

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use crate::IP_UDP_BYTES;
use crate::control::{self, ControlError, Offer};
use crate::receiver::{BlockSink, Receiver, ReceiverStats};
use crate::sender::{BlockSource, Pacing, Sender, SenderStats};
use crate::tuner::Tuner;
use crate::wire::DATA_OVERHEAD_BYTES;
use crate::wire::Key;

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
                    "the transfer did not finish in time ({done_bytes} bytes done)"
                )
            }
        }
    }
}

impl std::error::Error for DriverError {}

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

/// How to send.
#[derive(Debug, Clone, Copy)]
pub struct SendOptions {
    pub block_bytes: u32,
    pub rate_ceiling_bps: u64,
    pub pacing: Pacing,
    pub nack_group: u32,
    /// Search T_s while sending (`tuner`), from `pacing.idle_ns`'s range.
    pub tune: bool,
    pub deadline: Duration,
}

#[derive(Debug, Clone, Copy)]
pub struct Finished<S> {
    pub bytes: u64,
    pub seconds: f64,
    pub rtt_ns: u64,
    /// The idle time the sender ended with (the tuner's choice when tuning).
    pub idle_ns: u64,
    pub stats: S,
}

/// Random bytes from the kernel (the transfer's key and id).
fn random<const N: usize>() -> io::Result<[u8; N]> {
    use std::io::Read;
    let mut bytes = [0u8; N];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// Wait until `deadline_ns` on `clock`: sleep while it is far, yield when near.
fn wait_until(clock: Instant, deadline_ns: u64) {
    let now_ns = clock.elapsed().as_nanos() as u64;
    if deadline_ns <= now_ns {
        return;
    }
    let left = deadline_ns - now_ns;
    if left > 200_000 {
        std::thread::sleep(Duration::from_nanos(left - 100_000));
    } else {
        std::thread::yield_now();
    }
}

/// Send `total_bytes` from `source` to the receiver whose control port is `to`.
pub fn send(
    to: SocketAddr,
    total_bytes: u64,
    source: &mut impl BlockSource,
    options: SendOptions,
) -> Result<Finished<SenderStats>, DriverError> {
    let started = Instant::now();
    let mut control_stream = TcpStream::connect_timeout(&to, Duration::from_secs(10))
        .map_err(|error| DriverError::Unreachable { to, error })?;
    control_stream.set_nodelay(true)?;
    let rtt_ns = started.elapsed().as_nanos() as u64;
    let offer = Offer {
        id: u64::from_be_bytes(random()?),
        block_bytes: options.block_bytes,
        total_bytes,
        rate_ceiling_bps: options.rate_ceiling_bps,
        nack_group: options.nack_group,
        rtt_ns,
        key: Key(random()?),
    };
    control::write_offer(&mut control_stream, &offer)?;
    let port = control::read_answer(&mut control_stream)?;
    let socket = UdpSocket::bind(SocketAddr::new(unspecified(to), 0))?;
    socket.connect(SocketAddr::new(to.ip(), port))?;
    socket.set_nonblocking(true)?;
    let mut sender = Sender::new(offer.transfer(), options.pacing);
    if options.tune {
        // Up to twice a burst's time at the ceiling: down to a third of the rate.
        let datagram_bytes = options.block_bytes as usize + DATA_OVERHEAD_BYTES + IP_UDP_BYTES;
        let datagram_bits = datagram_bytes as u64 * 8;
        let burst_ns = u64::from(options.pacing.burst_datagrams) * datagram_bits * 1_000_000_000
            / options.rate_ceiling_bps;
        sender.tuner = Some(Tuner::new(2 * burst_ns, rtt_ns));
    }
    let clock = Instant::now();
    let (mut out, mut incoming) = (Vec::with_capacity(65_536), vec![0u8; 65_536]);
    while !sender.is_done() {
        if clock.elapsed() > options.deadline {
            return Err(DriverError::TimedOut { done_bytes: 0 });
        }
        let now_ns = clock.elapsed().as_nanos() as u64;
        loop {
            match socket.recv(&mut incoming) {
                Ok(n) => sender.handle_datagram(now_ns, &incoming[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => break,
                Err(e) => return Err(e.into()),
            }
        }
        sender.handle_timeout(now_ns);
        while sender.poll_transmit(now_ns, source, &mut out).is_some() {
            match socket.send(&out) {
                Ok(_) => {}
                // A full socket buffer or a refused port loses the datagram, as the
                // network would; the NACKs recover it.
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::ConnectionRefused
                    ) => {}
                Err(e) => return Err(e.into()),
            }
            out.clear();
        }
        let next = sender
            .poll_timeout()
            .unwrap_or(now_ns)
            .min(now_ns + 1_000_000);
        wait_until(clock, next);
    }
    Ok(Finished {
        bytes: total_bytes,
        seconds: clock.elapsed().as_secs_f64(),
        rtt_ns,
        idle_ns: sender
            .tuner
            .as_ref()
            .map_or(options.pacing.idle_ns, Tuner::idle_ns),
        stats: sender.stats,
    })
}

fn unspecified(peer: SocketAddr) -> std::net::IpAddr {
    match peer {
        SocketAddr::V4(_) => std::net::Ipv4Addr::UNSPECIFIED.into(),
        SocketAddr::V6(_) => std::net::Ipv6Addr::UNSPECIFIED.into(),
    }
}

/// Take one transfer offered on `listener` into `sink`, which learns its size first.
pub fn receive<S: BlockSink>(
    listener: &TcpListener,
    make_sink: impl FnOnce(&Offer) -> S,
    deadline: Duration,
) -> Result<(Finished<ReceiverStats>, S), DriverError> {
    let (mut control_stream, _) = listener.accept()?;
    let offer = control::read_offer(&mut control_stream)?;
    let mut sink = make_sink(&offer);
    let socket = UdpSocket::bind(SocketAddr::new(listener.local_addr()?.ip(), 0))?;
    control::write_answer(&mut control_stream, socket.local_addr()?.port())?;
    let transfer = offer.transfer();
    let mut receiver = Receiver::new(transfer.clone(), offer.nack_group);
    socket.set_read_timeout(Some(Duration::from_millis(1)))?;
    let clock = Instant::now();
    let (mut out, mut incoming) = (Vec::with_capacity(2048), vec![0u8; 65_536]);
    let mut peer = None;
    let mut quiet_since = None;
    // After DONE, stay a while to answer a repeated FIN (the DONE may be lost).
    let linger = Duration::from_nanos(4 * transfer.rtt_ns.max(1_000_000));
    loop {
        if clock.elapsed() > deadline {
            return Err(DriverError::TimedOut {
                done_bytes: receiver.received().len() * u64::from(transfer.block_bytes),
            });
        }
        match socket.recv_from(&mut incoming) {
            Ok((n, from)) => {
                let now_ns = clock.elapsed().as_nanos() as u64;
                receiver.handle_datagram(now_ns, &incoming[..n], &mut sink);
                peer = Some(from);
                quiet_since = None;
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(e.into()),
        }
        let now_ns = clock.elapsed().as_nanos() as u64;
        receiver.handle_timeout(now_ns);
        if let Some(peer) = peer {
            while receiver.poll_transmit(now_ns, &mut out).is_some() {
                socket.send_to(&out, peer)?;
                out.clear();
            }
        }
        if receiver.is_complete() {
            let since = *quiet_since.get_or_insert_with(Instant::now);
            if since.elapsed() > linger {
                break;
            }
        }
    }
    let finished = Finished {
        bytes: transfer.total_bytes,
        seconds: clock.elapsed().as_secs_f64(),
        rtt_ns: transfer.rtt_ns,
        idle_ns: 0,
        stats: receiver.stats,
    };
    Ok((finished, sink))
}

/// Blocks held in memory.
pub struct MemorySink {
    pub data: Vec<u8>,
    block_bytes: usize,
}

impl MemorySink {
    pub fn for_offer(offer: &Offer) -> Self {
        Self {
            data: vec![0; offer.total_bytes as usize],
            block_bytes: offer.block_bytes as usize,
        }
    }
}

impl BlockSink for MemorySink {
    fn write(&mut self, block: u64, payload: &[u8]) {
        let start = block as usize * self.block_bytes;
        self.data[start..start + payload.len()].copy_from_slice(payload);
    }
}

/// Blocks made on the fly from their number: memory-to-memory tests and benchmarks,
/// checkable at the far end without sending the expected bytes along.
pub struct PatternSource {
    pub block_bytes: usize,
}

impl PatternSource {
    pub fn byte(offset: u64) -> u8 {
        (offset.wrapping_mul(2_654_435_761) >> 24) as u8
    }
}

impl BlockSource for PatternSource {
    fn read(&mut self, block: u64, buf: &mut [u8]) {
        let start = block * self.block_bytes as u64;
        for (i, b) in buf.iter_mut().enumerate() {
            *b = Self::byte(start + i as u64);
        }
    }
}
