//! The applications that drive queue pairs, shaped like OFED's perftest (the
//! `ib_*_bw` and `ib_*_lat` tools of perftest 1.2, the OFED 1.2-1.3 era the USN
//! measurements used), and the endpoint that puts a QP and its application on a host.
//!
//! - bandwidth (`send_bw`, `write_bw`, `read_bw`, `rdma_bw`): keep `tx_depth` work
//!   requests posted, `iters` in all; stamp each post and each completion. perftest's
//!   "BW average" is all bytes over (last completion - first post), which includes one
//!   round trip for RC (the last ACK) and none for UC/UD (complete on send); its "BW
//!   peak" is the best (i..j) window (`print_report` in `send_bw.c`, `rdma_bw.c`).
//! - latency (`send_lat`, `write_lat`): ping-pong, each side answers the other's
//!   message; one-way latency is the round trip / 2. `read_lat`: one read at a time;
//!   its latency is the whole round trip.

use serde::Serialize;

use super::mpi::MpiRank;
use super::qp::{Qp, Verb, WorkRequest};
use super::wire::IbPacket;
use crate::packet::Packet;
use crate::transport::{FlowReport, Transport};

/// What one side of a test does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Post `iters` requests of `bytes`, `tx_depth` at a time.
    Stream {
        verb: Verb,
        bytes: u64,
        iters: u64,
        tx_depth: u64,
    },
    /// Send `iters` messages, each after the peer's previous one arrived (the side
    /// that starts) or in answer to it.
    PingPong {
        verb: Verb,
        bytes: u64,
        iters: u64,
        starts: bool,
    },
    /// One read at a time, `iters` of them.
    ReadOneByOne { bytes: u64, iters: u64 },
    /// Only answer: the responder of a stream or of reads.
    Passive,
}

/// What an application saw: times of its posts and completions (ns), and latency samples.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AppRecord {
    pub posted: Vec<u64>,
    pub completed: Vec<u64>,
    pub failed: u64,
    /// Ping-pong: when each answer arrived; read one by one: each read's round trip.
    pub samples_ns: Vec<u64>,
    pub messages_arrived: u64,
}

pub struct App {
    role: Role,
    started: bool,
    next_id: u64,
    record: AppRecord,
}

impl App {
    pub fn new(role: Role) -> Self {
        Self {
            role,
            started: false,
            next_id: 0,
            record: AppRecord::default(),
        }
    }

    pub fn record(&self) -> &AppRecord {
        &self.record
    }

    fn post(&mut self, qp: &mut Qp, verb: Verb, bytes: u64, now_ns: u64) {
        qp.post(WorkRequest {
            id: self.next_id,
            verb,
            bytes,
            imm: 0,
        });
        self.next_id += 1;
        self.record.posted.push(now_ns);
    }

    /// Take the QP's completions and arrivals, and post what the role posts next.
    pub fn react(&mut self, qp: &mut Qp, now_ns: u64) {
        if !self.started {
            self.started = true;
            self.start(qp, now_ns);
        }
        while let Some(done) = qp.poll_completion() {
            if !done.ok {
                self.record.failed += 1;
                continue;
            }
            self.record.completed.push(done.at_ns);
            self.on_completion(qp, now_ns);
        }
        while let Some(arrival) = qp.poll_arrival() {
            self.record.messages_arrived += 1;
            self.on_arrival(qp, arrival.at_ns, now_ns);
        }
    }

    fn start(&mut self, qp: &mut Qp, now_ns: u64) {
        match self.role {
            Role::Stream {
                verb,
                bytes,
                iters,
                tx_depth,
            } => {
                for _ in 0..tx_depth.min(iters) {
                    self.post(qp, verb, bytes, now_ns);
                }
            }
            Role::PingPong {
                verb,
                bytes,
                starts: true,
                ..
            } => self.post(qp, verb, bytes, now_ns),
            Role::ReadOneByOne { bytes, iters } if iters > 0 => {
                self.post(qp, Verb::Read, bytes, now_ns);
            }
            _ => {}
        }
    }

    fn on_completion(&mut self, qp: &mut Qp, now_ns: u64) {
        match self.role {
            Role::Stream {
                verb, bytes, iters, ..
            } => {
                if (self.record.posted.len() as u64) < iters {
                    self.post(qp, verb, bytes, now_ns);
                }
            }
            Role::ReadOneByOne { bytes, iters } => {
                let asked = *self.record.posted.last().expect("a read was posted");
                self.record.samples_ns.push(now_ns - asked);
                if (self.record.posted.len() as u64) < iters {
                    self.post(qp, Verb::Read, bytes, now_ns);
                }
            }
            Role::PingPong { .. } | Role::Passive => {}
        }
    }

    fn on_arrival(&mut self, qp: &mut Qp, at_ns: u64, now_ns: u64) {
        if let Role::PingPong {
            verb, bytes, iters, ..
        } = self.role
        {
            self.record.samples_ns.push(at_ns);
            if (self.record.posted.len() as u64) < iters {
                self.post(qp, verb, bytes, now_ns);
            }
        }
    }
}

/// What drives a queue pair: a perftest application, or an MPI rank.
pub enum Driver {
    Perftest(App),
    Mpi(MpiRank),
}

impl Driver {
    fn react(&mut self, qp: &mut Qp, now_ns: u64) {
        match self {
            Driver::Perftest(app) => app.react(qp, now_ns),
            Driver::Mpi(rank) => rank.react(qp, now_ns),
        }
    }
}

/// A queue pair and what drives it: one end of an InfiniBand connection on a host, as a
/// [`Transport`].
pub struct IbEndpoint {
    id: u32,
    qp: Qp,
    driver: Driver,
    /// The time of the last call that told it: when the driver reacts to a completion
    /// that `packet_left` reports.
    now_ns: u64,
}

impl IbEndpoint {
    /// QP `id` driven by a perftest application playing `role`.
    pub fn new(id: u32, qp: Qp, role: Role) -> Self {
        Self::driven(id, qp, Driver::Perftest(App::new(role)))
    }

    pub fn driven(id: u32, qp: Qp, driver: Driver) -> Self {
        Self {
            id,
            qp,
            driver,
            now_ns: 0,
        }
    }

    pub fn qp(&self) -> &Qp {
        &self.qp
    }

    pub fn driver(&self) -> &Driver {
        &self.driver
    }

    /// The perftest application's record (None for an MPI rank).
    pub fn record(&self) -> Option<&AppRecord> {
        match &self.driver {
            Driver::Perftest(app) => Some(app.record()),
            Driver::Mpi(_) => None,
        }
    }
}

impl Transport for IbEndpoint {
    fn handle_packet(&mut self, now_ns: u64, pkt: &Packet) {
        self.now_ns = now_ns;
        if let Some(ib) = IbPacket::from_packet(pkt) {
            self.qp.handle_packet(now_ns, ib);
            self.driver.react(&mut self.qp, now_ns);
        }
    }

    fn poll_transmit(&mut self, now_ns: u64) -> Option<Packet> {
        self.now_ns = now_ns;
        self.driver.react(&mut self.qp, now_ns);
        let ib = self.qp.poll_transmit(now_ns)?;
        Some(ib.to_packet(self.id, now_ns))
    }

    fn packet_left(&mut self, left_ns: u64) {
        // UC/UD complete on send: the driver may post again.
        self.qp.packet_left(left_ns);
        self.driver.react(&mut self.qp, self.now_ns);
    }

    fn poll_timeout(&self) -> Option<u64> {
        self.qp.poll_timeout()
    }

    fn handle_timeout(&mut self, now_ns: u64) {
        self.now_ns = now_ns;
        self.qp.handle_timeout(now_ns);
        self.driver.react(&mut self.qp, now_ns);
    }

    fn held_by_interface(&self) -> bool {
        true
    }

    fn report(&self) -> FlowReport {
        let c = self.qp.counters();
        FlowReport {
            sent_bytes: c.payload_bytes_sent,
            received_bytes: c.payload_bytes_received,
            retransmits: c.packets_resent,
            timeouts: c.timeouts,
            ..FlowReport::default()
        }
    }
}

/// perftest's "BW average": all bytes over last completion - first post (s, B/s).
pub fn average_bytes_per_s(records: &[&AppRecord], bytes_each: u64) -> Option<f64> {
    let first = records.iter().filter_map(|r| r.posted.first()).min()?;
    let last = records.iter().filter_map(|r| r.completed.last()).max()?;
    let count: usize = records.iter().map(|r| r.completed.len()).sum();
    (last > first).then(|| (count as u64 * bytes_each) as f64 * 1e9 / (last - first) as f64)
}

/// perftest's "BW peak": the best rate over any window of posts `i..=j`, i.e. bytes each
/// over the least `(completed[j] - posted[i]) / (j - i + 1)` for `i <= j`.
pub fn peak_bytes_per_s(record: &AppRecord, bytes_each: u64) -> Option<f64> {
    let n = record.posted.len().min(record.completed.len());
    let mut best: Option<f64> = None;
    for i in 0..n {
        for j in i..n {
            let span = record.completed[j].saturating_sub(record.posted[i]) as f64;
            let per = span / (j - i + 1) as f64;
            if per > 0.0 && best.is_none_or(|b| per < b) {
                best = Some(per);
            }
        }
    }
    best.map(|per_ns| bytes_each as f64 * 1e9 / per_ns)
}
