//! A queue pair: InfiniBand's transport endpoint, sans-IO. The requester side turns
//! posted work requests into packets and completes them; the responder side takes
//! requests, acknowledges them (RC), answers reads, and tells the application when a
//! message has arrived.
//!
//! The rules, from IBA vol. 1 rel. 1.2.1 chapter 9:
//! - **RC** (§9.7): every packet has a PSN; the responder expects them in order,
//!   acknowledges (coalesced: an ACK covers every PSN below the one it names), answers a
//!   PSN beyond the one it expects with one NAK (PSN sequence error, §9.7.5.2.2) and
//!   re-acknowledges duplicates (§9.7.5.1.1). The requester keeps at most
//!   `max_unacked_packets` unacknowledged, completes a send or write when it is
//!   acknowledged, goes back to the NAK'd PSN, and on its transport timer (local ACK
//!   timeout, 4.096 µs x 2^timeout, §9.7.6.1.3) goes back to the oldest unacknowledged
//!   PSN; `retry_count` timeouts in a row without progress put the QP in error.
//! - **UC** (§9.8): PSNs but no acknowledgement; a work request completes once sent; a
//!   packet lost loses its message, and the responder resumes at the next first packet.
//! - **UD** (§9.8): one packet per message, at most the MTU; completion once sent.
//! - **RDMA read** (§9.4.4): one request carrying the length; the responder answers
//!   with response packets that use the PSNs after the request's; at most `max_reads`
//!   reads outstanding (the initiator depth).
//!
//! Completions leave in the order work requests were posted (§10.8.6). Receive work
//! requests are assumed always posted (perftest posts its whole receive depth and
//! re-posts each one it uses), so no RNR NAK is modelled.

use std::collections::VecDeque;

use serde::Serialize;

use super::wire::{self, IbPacket, Opcode, READ_RESPONSE, SEND, WRITE};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Service {
    Rc,
    Uc,
    Ud,
}

impl Service {
    pub fn parse(name: &str) -> Result<Self, String> {
        match name.to_ascii_uppercase().as_str() {
            "RC" => Ok(Service::Rc),
            "UC" => Ok(Service::Uc),
            "UD" => Ok(Service::Ud),
            _ => Err(format!("connection type {name:?} is not RC, UC or UD")),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verb {
    Send,
    Write,
    Read,
}

impl Verb {
    /// Which verbs a service offers (IBA vol. 1 table 81: UC has no read, UD only sends).
    pub fn check(self, service: Service) -> Result<(), String> {
        match (service, self) {
            (Service::Rc, _)
            | (Service::Uc, Verb::Send | Verb::Write)
            | (Service::Ud, Verb::Send) => Ok(()),
            _ => Err(format!("{service:?} has no {self:?} operation")),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct QpConfig {
    pub service: Service,
    pub mtu_bytes: u32,
    /// RC: packets sent and not yet acknowledged, at most.
    pub max_unacked_packets: u64,
    /// RDMA reads outstanding at most (the QP's initiator depth, `max_rd_atomic`).
    pub max_reads: u32,
    /// RC: the local ACK timeout, 4.096 µs x 2^timeout.
    pub ack_timeout_ns: u64,
    /// RC: timeouts in a row without progress before the QP goes to error.
    pub retry_count: u32,
    /// RC responder: acknowledge at least every this many packets (and every message's
    /// last packet).
    pub ack_every_packets: u64,
    /// The adapter's time to take up one work request (fetch its descriptor, start its
    /// DMA): work requests start at most one per this, overlapped with the packets of
    /// the one before. It bounds the message rate of small messages.
    pub wqe_ns: u64,
}

/// The local ACK timeout of a `timeout` exponent (IBA vol. 1 §9.7.6.1.3; 0 means none).
pub fn ack_timeout_ns(exponent: u32) -> u64 {
    if exponent == 0 {
        u64::MAX
    } else {
        4_096 << exponent
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkRequest {
    pub id: u64,
    pub verb: Verb,
    pub bytes: u64,
    /// What the responder's application learns with the message (`Arrival::imm`): a
    /// protocol above the verbs (MPI) says here what a message is. It rides on the last
    /// packet and costs no wire bytes: such a protocol counts its header in `bytes`.
    pub imm: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    pub id: u64,
    pub at_ns: u64,
    /// False when the QP went to error before the request completed.
    pub ok: bool,
}

/// A message that arrived at the responder (a send, or the last packet of a write).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    pub verb: Verb,
    pub bytes: u64,
    pub at_ns: u64,
    /// The sender's `WorkRequest::imm`.
    pub imm: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct QpCounters {
    pub packets_sent: u64,
    pub packets_resent: u64,
    pub payload_bytes_sent: u64,
    pub acks_sent: u64,
    pub naks_sent: u64,
    pub timeouts: u64,
    pub duplicates_received: u64,
    pub messages_received: u64,
    pub payload_bytes_received: u64,
    /// The QP went to error (retries exhausted).
    pub error: bool,
}

#[derive(Debug, Clone, Copy)]
struct Posted {
    wr: WorkRequest,
    first_psn: u64,
    /// PSNs the request uses: its packets, or a read's response packets.
    packets: u64,
    /// A read whose last response arrived; a send or write sent (UC/UD) or acknowledged.
    done: bool,
}

impl Posted {
    fn end_psn(&self) -> u64 {
        self.first_psn + self.packets
    }
}

/// The message the responder is in the middle of.
#[derive(Debug, Clone, Copy, Default)]
struct Incoming {
    bytes: u64,
    /// UC: a packet of this message was lost; drop the rest of it.
    broken: bool,
}

/// A read the responder is answering: PSNs `next..end`, `bytes_left` still to send.
#[derive(Debug, Clone, Copy)]
struct Answer {
    next_psn: u64,
    first_psn: u64,
    end_psn: u64,
    bytes_left: u64,
}

pub struct Qp {
    config: QpConfig,
    // Requester.
    queue: VecDeque<Posted>,
    next_post_psn: u64,
    /// The next PSN to put on the wire (go-back-N moves it back).
    next_psn: u64,
    /// The highest `next_psn` has been: what is below it and sent again is a resend.
    sent_high_psn: u64,
    /// Every PSN below this is acknowledged (RC) or needs no acknowledgement.
    acked_psn: u64,
    /// The next read-response PSN expected, and reads sent and not yet answered.
    /// The next response PSN of the oldest read asked for and not yet answered whole.
    read_psn: u64,
    timer_ns: Option<u64>,
    /// The next work request may start at this time (`wqe_ns` after the last one did);
    /// `waiting_wqe` while a request waits for it.
    wqe_ready_ns: u64,
    waiting_wqe: bool,
    retries: u32,
    completions: VecDeque<Completion>,
    /// UC/UD requests whose last packet was just handed out: they complete when it
    /// has left the adapter ([`Qp::packet_left`]).
    leaving: Vec<u64>,
    // Responder.
    expected_psn: u64,
    incoming: Incoming,
    unacked_received: u64,
    nak_sent: bool,
    /// The ACK or NAK the responder owes, sent before anything else (a NAK wins).
    owed: Option<Opcode>,
    answers: VecDeque<Answer>,
    arrivals: VecDeque<Arrival>,
    counters: QpCounters,
}

impl Qp {
    pub fn new(config: QpConfig) -> Self {
        assert!(config.max_unacked_packets > 0 && config.ack_every_packets > 0);
        Self {
            config,
            queue: VecDeque::new(),
            next_post_psn: 0,
            next_psn: 0,
            sent_high_psn: 0,
            acked_psn: 0,
            read_psn: 0,
            timer_ns: None,
            wqe_ready_ns: 0,
            waiting_wqe: false,
            retries: 0,
            completions: VecDeque::new(),
            leaving: Vec::new(),
            expected_psn: 0,
            incoming: Incoming::default(),
            unacked_received: 0,
            nak_sent: false,
            owed: None,
            answers: VecDeque::new(),
            arrivals: VecDeque::new(),
            counters: QpCounters::default(),
        }
    }

    pub fn config(&self) -> &QpConfig {
        &self.config
    }

    pub fn counters(&self) -> &QpCounters {
        &self.counters
    }

    /// Post a work request (the application keeps to its send-queue depth).
    pub fn post(&mut self, wr: WorkRequest) {
        debug_assert!(wr.verb.check(self.config.service).is_ok());
        let packets = wire::packets_for(wr.bytes, self.config.mtu_bytes);
        self.queue.push_back(Posted {
            wr,
            first_psn: self.next_post_psn,
            packets,
            done: false,
        });
        self.next_post_psn += packets;
    }

    pub fn poll_completion(&mut self) -> Option<Completion> {
        self.completions.pop_front()
    }

    pub fn poll_arrival(&mut self) -> Option<Arrival> {
        self.arrivals.pop_front()
    }

    /// The transport timer, or when a waiting work request may start, whichever is first.
    pub fn poll_timeout(&self) -> Option<u64> {
        let wqe = self.waiting_wqe.then_some(self.wqe_ready_ns);
        match (self.timer_ns, wqe) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn reliable(&self) -> bool {
        self.config.service == Service::Rc
    }

    /// The transport timer ran out: go back to the oldest unacknowledged PSN, or give up.
    pub fn handle_timeout(&mut self, now_ns: u64) {
        let Some(at) = self.timer_ns else { return };
        if now_ns < at {
            return;
        }
        self.counters.timeouts += 1;
        self.retries += 1;
        if self.retries > self.config.retry_count {
            self.fail(now_ns);
            return;
        }
        self.go_back(self.acked_psn);
        self.timer_ns = Some(now_ns + self.config.ack_timeout_ns);
    }

    /// Retries exhausted: every request still queued completes in error (§10.3.1).
    fn fail(&mut self, now_ns: u64) {
        self.counters.error = true;
        self.timer_ns = None;
        for posted in self.queue.drain(..) {
            self.completions.push_back(Completion {
                id: posted.wr.id,
                at_ns: now_ns,
                ok: false,
            });
        }
        self.next_psn = self.next_post_psn;
        self.acked_psn = self.next_post_psn;
    }

    /// Reads asked for and not yet answered whole, oldest first.
    fn reads_in_flight(&self) -> impl Iterator<Item = &Posted> {
        let asked_below = self.next_psn;
        self.queue
            .iter()
            .filter(move |p| p.wr.verb == Verb::Read && !p.done && p.first_psn < asked_below)
    }

    /// Resend from `psn` on: every request at or after it is sent again, and a read not
    /// yet answered whole is asked again from its request.
    fn go_back(&mut self, psn: u64) {
        let unanswered = self.reads_in_flight().next().map(|r| r.first_psn);
        self.next_psn = unanswered.map_or(psn, |first| first.min(psn));
        self.read_psn = self.next_psn;
    }

    fn restart_timer(&mut self, now_ns: u64) {
        let waiting = self.acked_psn < self.next_psn || self.reads_in_flight().next().is_some();
        self.timer_ns = (self.reliable() && waiting && !self.counters.error)
            .then(|| now_ns.saturating_add(self.config.ack_timeout_ns));
    }

    /// Complete, in posting order, every request at the front that is done.
    fn complete_front(&mut self, now_ns: u64) {
        while let Some(front) = self.queue.front() {
            let done = match front.wr.verb {
                Verb::Read => front.done,
                _ if self.reliable() => front.end_psn() <= self.acked_psn,
                _ => front.done,
            };
            if !done {
                break;
            }
            let posted = self.queue.pop_front().expect("front");
            self.completions.push_back(Completion {
                id: posted.wr.id,
                at_ns: now_ns,
                ok: true,
            });
        }
    }

    /// The packet the responder owes first. Responses go in PSN order (§9.7.5.1): a read's
    /// responses before the ACK or NAK that names a PSN after it.
    fn poll_responder(&mut self) -> Option<IbPacket> {
        if self.answers.is_empty()
            && let Some(op) = self.owed.take()
        {
            self.unacked_received = 0;
            self.counters.acks_sent += 1;
            return Some(IbPacket {
                op,
                psn: self.expected_psn.saturating_sub(1),
                payload: 0,
                value: self.expected_psn,
            });
        }
        let answer = self.answers.front_mut()?;
        let mtu = u64::from(self.config.mtu_bytes);
        let payload = answer.bytes_left.min(mtu);
        let count = answer.end_psn - answer.first_psn;
        let op = Opcode::nth(READ_RESPONSE, answer.next_psn - answer.first_psn, count);
        let pkt = IbPacket {
            op,
            psn: answer.next_psn,
            payload: payload as u32,
            value: 0,
        };
        answer.next_psn += 1;
        answer.bytes_left -= payload;
        if answer.next_psn == answer.end_psn {
            self.answers.pop_front();
        }
        Some(pkt)
    }

    /// The requester's next packet, if its windows allow one.
    fn poll_requester(&mut self, now_ns: u64) -> Option<IbPacket> {
        if self.counters.error {
            return None;
        }
        let unacked = self.next_psn.saturating_sub(self.acked_psn);
        if self.reliable() && unacked >= self.config.max_unacked_packets {
            return None;
        }
        let index = self.queue.partition_point(|p| p.end_psn() <= self.next_psn);
        let posted = *self.queue.get(index)?;
        let mtu = u64::from(self.config.mtu_bytes);
        let resent = self.next_psn < self.sent_high_psn;
        let starts_request = self.next_psn == posted.first_psn && !resent;
        if starts_request && self.config.wqe_ns > 0 {
            if now_ns < self.wqe_ready_ns {
                self.waiting_wqe = true;
                return None;
            }
            self.waiting_wqe = false;
            self.wqe_ready_ns = now_ns + self.config.wqe_ns;
        }
        let pkt = if posted.wr.verb == Verb::Read {
            if self.reads_in_flight().count() >= self.config.max_reads as usize {
                return None;
            }
            if self.reads_in_flight().next().is_none() {
                self.read_psn = posted.first_psn;
            }
            self.next_psn = posted.end_psn();
            IbPacket {
                op: Opcode::ReadRequest,
                psn: posted.first_psn,
                payload: 0,
                value: posted.wr.bytes,
            }
        } else {
            let k = self.next_psn - posted.first_psn;
            let payload = posted.wr.bytes.saturating_sub(k * mtu).min(mtu) as u32;
            let op = match (self.config.service, posted.wr.verb) {
                (Service::Ud, _) => Opcode::UdSend,
                (_, Verb::Send) => Opcode::nth(SEND, k, posted.packets),
                _ => Opcode::nth(WRITE, k, posted.packets),
            };
            self.next_psn += 1;
            let last = self.next_psn == posted.end_psn();
            if !self.reliable() && last {
                self.queue[index].done = true;
                self.leaving.push(posted.wr.id);
            }
            IbPacket {
                op,
                psn: self.next_psn - 1,
                payload,
                value: if last { posted.wr.imm } else { 0 },
            }
        };
        self.sent_high_psn = self.sent_high_psn.max(self.next_psn);
        self.counters.packets_sent += 1;
        self.counters.payload_bytes_sent += u64::from(pkt.payload);
        if resent {
            self.counters.packets_resent += 1;
        }
        if self.reliable() && self.timer_ns.is_none() {
            self.timer_ns = Some(now_ns.saturating_add(self.config.ack_timeout_ns));
        }
        Some(pkt)
    }

    /// The packet last handed out has left the adapter: unreliable requests it ended
    /// complete now (IBA §10.8: UC and UD complete once sent).
    pub fn packet_left(&mut self, left_ns: u64) {
        if !self.leaving.is_empty() {
            self.leaving.clear();
            self.complete_front(left_ns);
        }
    }

    /// The next packet this QP sends now, responder's first.
    pub fn poll_transmit(&mut self, now_ns: u64) -> Option<IbPacket> {
        self.poll_responder()
            .or_else(|| self.poll_requester(now_ns))
    }

    /// A packet for this QP arrived.
    pub fn handle_packet(&mut self, now_ns: u64, pkt: IbPacket) {
        match pkt.op {
            Opcode::Ack => self.on_ack(now_ns, pkt.value),
            Opcode::NakSequence => {
                self.on_ack(now_ns, pkt.value);
                self.go_back(pkt.value);
            }
            op if op.is_read_response() => self.on_read_response(now_ns, pkt),
            _ => self.on_request(now_ns, pkt),
        }
    }

    /// Progress restarts the transport timer; a repeated ACK does not. An ACK beyond a
    /// read still unanswered says its responses were lost (responses travel in PSN
    /// order before it): the read is asked again (IBA §9.7.5.1.2, implicit NAK).
    fn on_ack(&mut self, now_ns: u64, next_expected: u64) {
        if next_expected > self.acked_psn {
            self.acked_psn = next_expected.min(self.next_post_psn);
            // After a go-back, what the ACK covers is not sent a second time.
            self.next_psn = self.next_psn.max(self.acked_psn);
            let lost_read = self
                .reads_in_flight()
                .next()
                .filter(|r| r.end_psn() <= self.acked_psn)
                .map(|r| r.first_psn);
            if let Some(first) = lost_read {
                self.go_back(first);
            }
            self.retries = 0;
            self.complete_front(now_ns);
            self.restart_timer(now_ns);
        }
    }

    /// Responses of the oldest read in flight, in PSN order; anything else is a
    /// duplicate or follows a loss, which the timer or an implicit NAK recovers.
    fn on_read_response(&mut self, now_ns: u64, pkt: IbPacket) {
        let Some(read) = self.reads_in_flight().next().copied() else {
            return;
        };
        self.read_psn = self.read_psn.max(read.first_psn);
        if pkt.psn != self.read_psn || pkt.psn >= read.end_psn() {
            return;
        }
        self.read_psn += 1;
        self.counters.payload_bytes_received += u64::from(pkt.payload);
        // A response acknowledges every PSN before it (§9.7.5.1.2, implicit ACK).
        self.acked_psn = self.acked_psn.max(pkt.psn + 1);
        self.retries = 0;
        if self.read_psn == read.end_psn() {
            if let Some(done) = self
                .queue
                .iter_mut()
                .find(|p| p.first_psn == read.first_psn)
            {
                done.done = true;
            }
            let next = self.reads_in_flight().next().map(|r| r.first_psn);
            if let Some(first) = next {
                self.read_psn = first;
            }
        }
        self.complete_front(now_ns);
        self.restart_timer(now_ns);
    }

    fn on_request(&mut self, now_ns: u64, pkt: IbPacket) {
        match self.config.service {
            Service::Rc => self.on_reliable_request(now_ns, pkt),
            Service::Uc => self.on_unreliable_request(now_ns, pkt),
            Service::Ud => self.accept(now_ns, pkt),
        }
    }

    fn on_reliable_request(&mut self, now_ns: u64, pkt: IbPacket) {
        if pkt.psn < self.expected_psn {
            // A duplicate: acknowledge again; a repeated read is answered again.
            self.counters.duplicates_received += 1;
            if pkt.op == Opcode::ReadRequest {
                self.answer_read(pkt);
            } else {
                self.owe_ack();
            }
            return;
        }
        if pkt.psn > self.expected_psn {
            if !self.nak_sent {
                self.nak_sent = true;
                self.owed = Some(Opcode::NakSequence);
                self.counters.naks_sent += 1;
            }
            return;
        }
        self.nak_sent = false;
        self.accept(now_ns, pkt);
        if pkt.op == Opcode::ReadRequest {
            self.answer_read(pkt);
            return;
        }
        self.unacked_received += 1;
        if pkt.op.ends_message() || self.unacked_received >= self.config.ack_every_packets {
            self.owe_ack();
        }
    }

    /// UC: a gap in PSNs loses the message in progress; the responder drops packets until
    /// the next message starts.
    fn owe_ack(&mut self) {
        self.owed.get_or_insert(Opcode::Ack);
    }

    fn on_unreliable_request(&mut self, now_ns: u64, pkt: IbPacket) {
        if pkt.psn != self.expected_psn {
            self.incoming = Incoming {
                bytes: 0,
                broken: true,
            };
        }
        if pkt.op.starts_message() {
            self.incoming = Incoming::default();
        }
        if self.incoming.broken {
            self.expected_psn = pkt.psn + 1;
            return;
        }
        self.accept(now_ns, pkt);
    }

    /// Take an in-order request: count its bytes; a message's last packet arrives.
    fn accept(&mut self, now_ns: u64, pkt: IbPacket) {
        if pkt.op == Opcode::ReadRequest {
            let packets = wire::packets_for(pkt.value, self.config.mtu_bytes);
            self.expected_psn = pkt.psn + packets;
            return;
        }
        self.expected_psn = pkt.psn + 1;
        self.incoming.bytes += u64::from(pkt.payload);
        self.counters.payload_bytes_received += u64::from(pkt.payload);
        if pkt.op.ends_message() {
            let verb = match pkt.op {
                Opcode::WriteLast | Opcode::WriteOnly => Verb::Write,
                _ => Verb::Send,
            };
            self.counters.messages_received += 1;
            self.arrivals.push_back(Arrival {
                verb,
                bytes: std::mem::take(&mut self.incoming.bytes),
                at_ns: now_ns,
                imm: pkt.value,
            });
        }
    }

    fn answer_read(&mut self, pkt: IbPacket) {
        let packets = wire::packets_for(pkt.value, self.config.mtu_bytes);
        self.answers.push_back(Answer {
            next_psn: pkt.psn,
            first_psn: pkt.psn,
            end_psn: pkt.psn + packets,
            bytes_left: pkt.value,
        });
    }
}
