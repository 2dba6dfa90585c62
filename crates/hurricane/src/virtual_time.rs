//! Transfers in virtual time: the sans-IO sender and receiver joined by a deterministic
//! link that delays, loses (at random or in bursts), reorders, duplicates and corrupts
//! datagrams, can go down for a while, and may end at a slow receiving host. No sockets
//! and no clock: what the fault tests and `hurricane faults` run, thousands of times
//! faster than real time and the same on every machine.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Range;

use crate::receiver::{BlockSink, Receiver};
use crate::sender::{BlockSource, Sender};

/// Bursty loss (Gilbert-Elliott, per datagram): the link enters a bad state with
/// probability `enter` and leaves it with `leave`; in it, datagrams are lost with `loss`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bursts {
    pub enter: f64,
    pub leave: f64,
    pub loss: f64,
}

/// What the link does to datagrams (both ways alike).
#[derive(Debug, Clone, PartialEq)]
pub struct Faults {
    pub loss: f64,
    pub bursts: Option<Bursts>,
    pub duplicate: f64,
    pub corrupt: f64,
    /// Up to this much extra delay per datagram: reordering.
    pub jitter_ns: u64,
    /// The link is down (loses everything) over this span.
    pub down_ns: Option<Range<u64>>,
}

pub const CLEAN: Faults = Faults {
    loss: 0.0,
    bursts: None,
    duplicate: 0.0,
    corrupt: 0.0,
    jitter_ns: 0,
    down_ns: None,
};

/// A receiving host slower than the channel: its socket buffer drains at `drain_bps`,
/// holds datagrams until their turn, and drops what does not fit in `buffer_bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlowHost {
    pub drain_bps: u64,
    pub buffer_bytes: u64,
}

/// (arrival, sequence, to the receiver?, bytes)
type InFlight = (u64, u64, bool, Vec<u8>);

pub struct Link {
    one_way_ns: u64,
    faults: Faults,
    host: Option<SlowHost>,
    /// The host buffer's bytes at `host_at_ns`.
    host_bytes: f64,
    host_at_ns: u64,
    bad: bool,
    rng: u64,
    seq: u64,
    queue: BinaryHeap<Reverse<InFlight>>,
}

impl Link {
    pub fn new(rtt_ns: u64, faults: Faults, host: Option<SlowHost>, seed: u64) -> Self {
        Self {
            one_way_ns: rtt_ns / 2,
            faults,
            host,
            host_bytes: 0.0,
            host_at_ns: 0,
            bad: false,
            rng: seed,
            seq: 0,
            queue: BinaryHeap::new(),
        }
    }

    fn random(&mut self) -> f64 {
        // SplitMix64: deterministic and good enough to draw faults.
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A datagram that arrives at `at_ns` whatever the faults (a forger's).
    pub fn inject(&mut self, at_ns: u64, to_receiver: bool, bytes: Vec<u8>) {
        self.seq += 1;
        self.queue
            .push(Reverse((at_ns, self.seq, to_receiver, bytes)));
    }

    fn lost(&mut self, now_ns: u64) -> bool {
        if self
            .faults
            .down_ns
            .as_ref()
            .is_some_and(|down| down.contains(&now_ns))
        {
            return true;
        }
        if let Some(bursts) = self.faults.bursts {
            let flip = if self.bad { bursts.leave } else { bursts.enter };
            if self.random() < flip {
                self.bad = !self.bad;
            }
            if self.bad && self.random() < bursts.loss {
                return true;
            }
        }
        self.random() < self.faults.loss
    }

    /// Into the slow host's buffer: how long the datagram waits there for the host to
    /// take it (the queue stretches the round trip), or None if it does not fit.
    fn host_wait_ns(&mut self, now_ns: u64, bytes: usize) -> Option<u64> {
        let Some(host) = self.host else {
            return Some(0);
        };
        let arrival = now_ns + self.one_way_ns;
        let drained = (arrival - self.host_at_ns) as f64 * host.drain_bps as f64 / 8e9;
        self.host_bytes = (self.host_bytes - drained).max(0.0);
        self.host_at_ns = arrival;
        if self.host_bytes + bytes as f64 > host.buffer_bytes as f64 {
            return None;
        }
        self.host_bytes += bytes as f64;
        Some((self.host_bytes * 8e9 / host.drain_bps as f64) as u64)
    }

    pub fn send(&mut self, now_ns: u64, to_receiver: bool, mut bytes: Vec<u8>) {
        if self.lost(now_ns) {
            return;
        }
        let wait_ns = if to_receiver {
            match self.host_wait_ns(now_ns, bytes.len()) {
                Some(wait) => wait,
                None => return,
            }
        } else {
            0
        };
        if self.random() < self.faults.corrupt {
            let last = bytes.len() - 1;
            let at = (self.random() * bytes.len() as f64) as usize;
            bytes[at.min(last)] ^= 0x10;
        }
        let copies = if self.random() < self.faults.duplicate {
            2
        } else {
            1
        };
        for _ in 0..copies {
            let jitter = (self.random() * self.faults.jitter_ns as f64) as u64;
            self.inject(
                now_ns + self.one_way_ns + wait_ns + jitter,
                to_receiver,
                bytes.clone(),
            );
        }
    }

    fn next_arrival(&self) -> Option<u64> {
        self.queue.peek().map(|Reverse((at, ..))| *at)
    }
}

/// How a run ended.
#[derive(Debug, Clone, Default)]
pub struct Ran {
    /// When the sender heard DONE; None if the run was stopped first.
    pub finished_ns: Option<u64>,
    /// (time, IP bytes) of every datagram the sender sent.
    pub sent: Vec<(u64, usize)>,
    /// Where the clock stood at the end.
    pub now_ns: u64,
}

/// Run `sender` and `receiver` over `link` from `start_ns` until DONE, or until
/// `stop_ns` (a kill). `check` looks at the sink once every block is in, before DONE may
/// go (a file's digests), and gives back blocks to fetch again.
#[allow(clippy::too_many_arguments)]
pub fn run<S: BlockSink>(
    sender: &mut Sender,
    receiver: &mut Receiver,
    source: &mut impl BlockSource,
    sink: &mut S,
    check: &mut dyn FnMut(&mut S) -> Vec<Range<u64>>,
    link: &mut Link,
    start_ns: u64,
    stop_ns: Option<u64>,
) -> Ran {
    let mut ran = Ran {
        now_ns: start_ns,
        ..Ran::default()
    };
    let mut buf = Vec::new();
    let mut checked = false;
    for _ in 0..50_000_000 {
        let now = ran.now_ns;
        if stop_ns.is_some_and(|stop| now >= stop) {
            return ran;
        }
        while link.next_arrival().is_some_and(|at| at <= now) {
            let Reverse((_, _, to_receiver, mut bytes)) = link.queue.pop().expect("peeked");
            if to_receiver {
                receiver.handle_datagram(now, &mut bytes, sink);
            } else {
                sender.handle_datagram(now, &mut bytes);
            }
        }
        if receiver.is_complete() && !checked {
            for blocks in check(sink) {
                receiver.forget(blocks);
            }
            checked = receiver.is_complete();
        }
        receiver.handle_timeout(now);
        sender.handle_timeout(now);
        while receiver.poll_transmit(now, &mut buf).is_some() {
            link.send(now, false, std::mem::take(&mut buf));
        }
        while let Some(len) = sender.poll_transmit(now, source, &mut buf) {
            ran.sent.push((now, len + crate::IP_UDP_BYTES));
            link.send(now, true, std::mem::take(&mut buf));
        }
        if sender.is_done() {
            ran.finished_ns = Some(now);
            return ran;
        }
        let next = [
            sender.poll_timeout(),
            receiver.poll_timeout(),
            link.next_arrival(),
            stop_ns,
        ]
        .into_iter()
        .flatten()
        .filter(|&at| at > now)
        .min()
        .expect("something is always pending until the sender is done");
        ran.now_ns = next;
    }
    panic!("the transfer did not finish in 50 million steps");
}
