//! MPI point-to-point over one queue pair, and the OSU micro-benchmarks that measure it.
//!
//! The protocols (sans-IO: the rank reacts to the QP's completions and arrivals and
//! posts work requests):
//! - **eager** over RC, messages up to `eager_limit_bytes`: one send carrying a match
//!   header and the data; the receive is always posted (the OSU tests post theirs first).
//! - **rendezvous** over RC above it: a request to send (RTS), the receiver's clear to
//!   send (CTS), the data by RDMA write into the receive buffer, then a FIN (the RPUT
//!   protocol of Liu, Wu and Panda, "High performance RDMA-based MPI implementation over
//!   InfiniBand", ICS 2003).
//! - over **UC**, every message goes at once, whatever its size, and the receiver
//!   acknowledges it: the UC-based MPI of Yu, Rao and Vetter ("Experimental analysis of
//!   InfiniBand transport services on WAN", IEEE NAS 2008) acknowledges a message before
//!   marking it complete; with no handshake before the data a window costs one round
//!   trip instead of rendezvous's two, which is how the paper's "MPI over UC improves
//!   bandwidth by as much as 100 % at 8,600 miles" comes about (64 KB messages: 1.97x).
//! - over **UD**, which has neither connections nor RDMA: every message is cut into
//!   MTU-sized datagrams, each with the match header, reassembled by the receiver, which
//!   acknowledges the whole message (software reliability; the fabric here is lossless,
//!   so no datagram is resent).
//!
//! When a send completes (the buffer may be reused, `MPI_Wait` returns):
//! - RC: when the verbs say so — the eager send's or the FIN's work request completes,
//!   i.e. the transport has acknowledged it;
//! - UC and UD: only when the receiver's software acknowledgement arrives, since the
//!   verbs complete on sending and a lost packet would lose the message silently.
//!
//! Header sizes are Open MPI's ob1 (`pml_ob1_hdr.h`): a match header of 16 bytes (padded)
//! before eager data, 32 bytes for a rendezvous or control header (match + length +
//! request). The eager limit is Open MPI's openib BTL default, 12 KiB
//! (`btl_openib_mca.c`, `btl_eager_limit = 12 * 1024`).
//!
//! The OSU micro-benchmarks (`osu_latency.c`, `osu_bw.c`, `osu_bibw.c`): `skip` warm-up
//! iterations, then `iters` timed ones. Latency: ping-pong, one way = time / (2 x iters).
//! Bandwidth: a window of 64 non-blocking sends, wait for all, then a 4-byte reply from
//! the receiver; both ways: each side sends a window and receives one.

use std::collections::HashMap;

use serde::Serialize;

use super::qp::{Qp, Service, Verb, WorkRequest};

/// Open MPI's openib BTL eager limit (`btl_openib_mca.c`).
pub const EAGER_LIMIT_BYTES: u64 = 12 * 1024;
/// ob1's match header, padded (`pml_ob1_hdr.h`, `OMPI_PML_OB1_MATCH_HDR_LEN`).
pub const MATCH_HEADER_BYTES: u64 = 16;
/// ob1's rendezvous header (match + message length + sender's request): also the size
/// taken for CTS, FIN and acknowledgements.
pub const CONTROL_HEADER_BYTES: u64 = 32;
/// OSU's bandwidth window (`osu_bw.c`, `WINDOW_SIZE_LARGE` 64).
pub const OSU_WINDOW: u64 = 64;
/// The 4-byte reply that ends each window in `osu_bw`.
const OSU_REPLY_BYTES: u64 = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Benchmark {
    Latency,
    Bandwidth,
    BiBandwidth,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct OsuTest {
    pub benchmark: Benchmark,
    pub bytes: u64,
    /// Timed iterations.
    pub iters: u64,
    /// Warm-up iterations before them.
    pub skip: u64,
    pub window: u64,
    pub eager_limit_bytes: u64,
}

impl OsuTest {
    /// The OSU defaults: latency 10,000 iterations after 100 (1,000 after 10 above
    /// 8 KB); bandwidth 100 after 10 (20 after 2 above 8 KB), window 64.
    pub fn new(benchmark: Benchmark, bytes: u64) -> Self {
        let large = bytes > 8192;
        let (iters, skip) = match (benchmark, large) {
            (Benchmark::Latency, false) => (10_000, 100),
            (Benchmark::Latency, true) => (1_000, 10),
            (_, false) => (100, 10),
            (_, true) => (20, 2),
        };
        Self {
            benchmark,
            bytes,
            iters,
            skip,
            window: OSU_WINDOW,
            eager_limit_bytes: EAGER_LIMIT_BYTES,
        }
    }

    fn rounds(&self) -> u64 {
        self.iters + self.skip
    }
}

/// What a message on the wire is, in the immediate data: kind, message id, and (for
/// UD fragments) the message's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Eager = 1,
    Rts,
    Cts,
    Fin,
    Ack,
    Fragment,
}

fn imm(kind: Kind, id: u64, total: u64) -> u64 {
    (kind as u64) << 60 | (id & 0x0fff_ffff) << 32 | (total & 0xffff_ffff)
}

fn parse_imm(imm: u64) -> Option<(Kind, u64, u64)> {
    let kind = match imm >> 60 {
        1 => Kind::Eager,
        2 => Kind::Rts,
        3 => Kind::Cts,
        4 => Kind::Fin,
        5 => Kind::Ack,
        6 => Kind::Fragment,
        _ => return None,
    };
    Some((kind, (imm >> 32) & 0x0fff_ffff, imm & 0xffff_ffff))
}

/// What a rank saw: the timed span, and the counts it ran on.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MpiRecord {
    pub start_ns: Option<u64>,
    pub end_ns: Option<u64>,
    pub sends_completed: u64,
    pub receives_completed: u64,
    pub rendezvous: u64,
    pub fragments_sent: u64,
}

/// One MPI rank of a two-rank OSU test.
pub struct MpiRank {
    rank: u8,
    test: OsuTest,
    service: Service,
    mtu_bytes: u64,
    started: bool,
    next_wr: u64,
    /// Work requests whose completion completes a message (RC: eager sends and FINs).
    completes_message: HashMap<u64, u64>,
    next_message: u64,
    /// Rendezvous sends waiting for their CTS: message id -> bytes.
    waiting_cts: HashMap<u64, u64>,
    /// UD reassembly: message id -> bytes received.
    partial: HashMap<u64, u64>,
    /// Rounds this rank has finished, and (latency's answering rank, bandwidth's
    /// receiver) replies it has sent.
    rounds_done: u64,
    replies_sent: u64,
    record: MpiRecord,
}

impl MpiRank {
    pub fn new(rank: u8, test: OsuTest, service: Service, mtu_bytes: u32) -> Self {
        Self {
            rank,
            test,
            service,
            mtu_bytes: u64::from(mtu_bytes),
            started: false,
            next_wr: 0,
            completes_message: HashMap::new(),
            next_message: 0,
            waiting_cts: HashMap::new(),
            partial: HashMap::new(),
            rounds_done: 0,
            replies_sent: 0,
            record: MpiRecord::default(),
        }
    }

    pub fn record(&self) -> &MpiRecord {
        &self.record
    }

    /// Whether this rank has run every round of its test.
    pub fn finished(&self) -> bool {
        match (self.test.benchmark, self.rank) {
            (Benchmark::Latency | Benchmark::Bandwidth, 1) => {
                self.replies_sent >= self.test.rounds()
                    && self.record.sends_completed >= self.replies_sent
            }
            _ => self.rounds_done >= self.test.rounds(),
        }
    }

    fn post(&mut self, qp: &mut Qp, verb: Verb, bytes: u64, imm: u64) -> u64 {
        let id = self.next_wr;
        self.next_wr += 1;
        qp.post(WorkRequest {
            id,
            verb,
            bytes,
            imm,
        });
        id
    }

    /// `MPI_Isend` of `bytes`.
    fn send(&mut self, qp: &mut Qp, bytes: u64) {
        let message = self.next_message;
        self.next_message += 1;
        match self.service {
            Service::Ud => {
                let room = self.mtu_bytes - MATCH_HEADER_BYTES;
                let mut left = bytes;
                loop {
                    let part = left.min(room);
                    let tag = imm(Kind::Fragment, message, bytes);
                    self.post(qp, Verb::Send, part + MATCH_HEADER_BYTES, tag);
                    self.record.fragments_sent += 1;
                    left -= part;
                    if left == 0 {
                        break;
                    }
                }
            }
            Service::Uc => {
                // No rendezvous: the data goes now, the receiver's ACK completes it.
                let tag = imm(Kind::Eager, message, bytes);
                self.post(qp, Verb::Send, bytes + MATCH_HEADER_BYTES, tag);
            }
            Service::Rc if bytes <= self.test.eager_limit_bytes => {
                let tag = imm(Kind::Eager, message, bytes);
                let wr = self.post(qp, Verb::Send, bytes + MATCH_HEADER_BYTES, tag);
                self.completes_message.insert(wr, message);
            }
            Service::Rc => {
                self.record.rendezvous += 1;
                self.waiting_cts.insert(message, bytes);
                let tag = imm(Kind::Rts, message, bytes);
                self.post(qp, Verb::Send, CONTROL_HEADER_BYTES, tag);
            }
        }
    }

    fn control(&mut self, qp: &mut Qp, kind: Kind, message: u64) {
        self.post(qp, Verb::Send, CONTROL_HEADER_BYTES, imm(kind, message, 0));
    }

    /// A message for this rank arrived whole.
    fn received(&mut self, qp: &mut Qp, message: u64) {
        self.record.receives_completed += 1;
        if self.service != Service::Rc {
            self.control(qp, Kind::Ack, message);
        }
    }

    fn on_arrival(&mut self, qp: &mut Qp, tag: u64, bytes: u64) {
        let Some((kind, message, total)) = parse_imm(tag) else {
            return;
        };
        match kind {
            Kind::Eager | Kind::Fin => self.received(qp, message),
            Kind::Rts => self.control(qp, Kind::Cts, message),
            Kind::Cts => {
                if let Some(size) = self.waiting_cts.remove(&message) {
                    self.post(qp, Verb::Write, size, 0);
                    let wr = self.post(
                        qp,
                        Verb::Send,
                        CONTROL_HEADER_BYTES,
                        imm(Kind::Fin, message, 0),
                    );
                    if self.service == Service::Rc {
                        self.completes_message.insert(wr, message);
                    }
                }
            }
            Kind::Ack => self.record.sends_completed += 1,
            Kind::Fragment => {
                let got = self.partial.entry(message).or_insert(0);
                *got += bytes - MATCH_HEADER_BYTES;
                if *got >= total {
                    self.partial.remove(&message);
                    self.received(qp, message);
                }
            }
        }
    }

    /// Take the QP's completions and arrivals, and run the benchmark on.
    pub fn react(&mut self, qp: &mut Qp, now_ns: u64) {
        if !self.started {
            self.started = true;
            self.start_round(qp, now_ns);
        }
        loop {
            let mut moved = false;
            while let Some(done) = qp.poll_completion() {
                moved = true;
                if done.ok && self.completes_message.remove(&done.id).is_some() {
                    self.record.sends_completed += 1;
                }
            }
            while let Some(arrival) = qp.poll_arrival() {
                moved = true;
                self.on_arrival(qp, arrival.imm, arrival.bytes);
            }
            if !self.advance(qp, now_ns) && !moved {
                break;
            }
        }
    }

    fn start_round(&mut self, qp: &mut Qp, now_ns: u64) {
        if self.rounds_done == self.test.skip && self.record.start_ns.is_none() {
            self.record.start_ns = Some(now_ns);
        }
        match (self.test.benchmark, self.rank) {
            (Benchmark::Latency, 0) => self.send(qp, self.test.bytes),
            (Benchmark::Bandwidth, 0) | (Benchmark::BiBandwidth, _) => {
                for _ in 0..self.test.window {
                    self.send(qp, self.test.bytes);
                }
            }
            _ => {}
        }
    }

    /// Finish rounds (and answer) while the counts allow; whether anything happened.
    fn advance(&mut self, qp: &mut Qp, now_ns: u64) -> bool {
        let t = self.test;
        let mut moved = false;
        match (t.benchmark, self.rank) {
            (Benchmark::Latency, 1) => {
                while self.replies_sent < self.record.receives_completed {
                    self.replies_sent += 1;
                    self.send(qp, t.bytes);
                    moved = true;
                }
            }
            (Benchmark::Bandwidth, 1) => {
                while (self.replies_sent + 1) * t.window <= self.record.receives_completed {
                    self.replies_sent += 1;
                    self.send(qp, OSU_REPLY_BYTES);
                    moved = true;
                }
            }
            _ => {
                while self.rounds_done < t.rounds() && self.round_complete(self.rounds_done + 1) {
                    self.rounds_done += 1;
                    moved = true;
                    if self.rounds_done == t.rounds() {
                        self.record.end_ns = Some(now_ns);
                    } else {
                        self.start_round(qp, now_ns);
                    }
                }
            }
        }
        moved
    }

    /// Whether `rounds` rounds are done on this (timing) rank.
    fn round_complete(&self, rounds: u64) -> bool {
        let (sent, received) = (self.record.sends_completed, self.record.receives_completed);
        match self.test.benchmark {
            Benchmark::Latency => sent >= rounds && received >= rounds,
            Benchmark::Bandwidth => sent >= rounds * self.test.window && received >= rounds,
            Benchmark::BiBandwidth => {
                sent >= rounds * self.test.window && received >= rounds * self.test.window
            }
        }
    }

    /// OSU's figure from the timing rank's record: latency in µs (one way), bandwidth
    /// in MB/s of 10^6 bytes (both ways added for `BiBandwidth`).
    pub fn figure(&self) -> Option<f64> {
        let span_s = (self.record.end_ns? - self.record.start_ns?) as f64 / 1e9;
        let t = self.test;
        Some(match t.benchmark {
            Benchmark::Latency => span_s * 1e6 / (2.0 * t.iters as f64),
            Benchmark::Bandwidth => (t.bytes * t.window * t.iters) as f64 / 1e6 / span_s,
            Benchmark::BiBandwidth => 2.0 * (t.bytes * t.window * t.iters) as f64 / 1e6 / span_s,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_immediate_carries_kind_message_and_size() {
        let tag = imm(Kind::Fragment, 12_345, 8 << 20);
        assert_eq!(parse_imm(tag), Some((Kind::Fragment, 12_345, 8 << 20)));
        assert_eq!(parse_imm(0), None);
    }

    #[test]
    fn osu_takes_fewer_iterations_above_8_kb() {
        let small = OsuTest::new(Benchmark::Bandwidth, 8192);
        let large = OsuTest::new(Benchmark::Bandwidth, 8193);
        assert_eq!(
            (small.iters, small.skip, large.iters, large.skip),
            (100, 10, 20, 2)
        );
        assert_eq!(OsuTest::new(Benchmark::Latency, 4).iters, 10_000);
    }
}
