//! Two hosts and their adapters joined by a switch, as a network of first-come,
//! first-served servers: each host's CPU, each bus (one way of PCIe, or the whole of
//! PCI-X), each line direction. A message is a job through them: the sender posts it
//! (CPU), the adapter takes it up (doorbell, descriptor, the first DMA read's round trip),
//! its packets are read over the sender's bus, serialized on the line, pass the switch
//! and are written over the receiver's bus, and the receiver's adapter and CPU complete
//! it. Waits (latencies) overlap freely; uses of a server queue in order of arrival, so
//! two directions, back-to-back messages and acknowledgements contend where the
//! hardware would. Events are (time, sequence, job) in a binary heap: unlike the TCP
//! simulator's links, whose next events are mostly due soonest (`event::EventQueue`),
//! a loop's worth of packets waits here at once, each due later than the last.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use super::bus::Way;
use super::interconnect::{Completion, HOST, Host, Interconnect};

/// One end: 0 or 1.
pub type Side = usize;

#[derive(Debug, Clone, Copy)]
enum Stage {
    Use {
        server: usize,
        ns: u64,
    },
    Wait {
        ns: u64,
    },
    /// The packet has left the sender's bus: its read is done, and the adapter's send
    /// engine may start another (`DMA_READ_WINDOW_BYTES` of reads outstanding at most).
    ReadDone,
}

#[derive(Debug, Clone, Copy)]
enum Then {
    Head {
        msg: usize,
    },
    Packet {
        msg: usize,
        bytes: u64,
    },
    Tail {
        msg: usize,
    },
    /// An acknowledgement of `bytes` sent from `side` reached it.
    Ack {
        side: Side,
        bytes: u64,
    },
    /// Work that only occupies a server.
    Nothing,
}

#[derive(Debug)]
struct Job {
    stages: Vec<Stage>,
    next: usize,
    then: Then,
}

/// What a message costs the hosts beyond posting and polling: a library's copies,
/// matching and overhead, a registration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostWork {
    pub sender_ns: u64,
    pub receiver_ns: u64,
}

/// A message to move from `from` to the other side.
#[derive(Debug, Clone, Copy)]
pub struct Message {
    pub from: Side,
    pub bytes: u64,
    pub connection: u32,
    pub completion: Completion,
    pub work: HostWork,
    /// The receiving adapter's own work on it before completing it (MX's matching).
    pub receiver_adapter_ns: u64,
    /// The caller's, returned on delivery.
    pub tag: u64,
}

#[derive(Debug)]
struct InFlight {
    message: Message,
    packets_left: u64,
    next_packet: u64,
    bytes_left: u64,
}

/// What the servers were busy with, for the LogP gap and utilisation.
#[derive(Debug, Clone, Copy, Default)]
pub struct Busy {
    pub cpu_ns: [u64; 2],
}

pub struct Fabric {
    pub ic: Interconnect,
    pub host: Host,
    /// One-way propagation added between the switch ports (0 in a machine room).
    pub extra_one_way_ns: u64,
    free_at_ns: Vec<u64>,
    /// (due, sequence, job): ties in time go in the order they were scheduled.
    queue: BinaryHeap<Reverse<(u64, u64, usize)>>,
    scheduled: u64,
    jobs: Vec<Job>,
    spare_jobs: Vec<usize>,
    messages: Vec<InFlight>,
    delivered: VecDeque<(u64, Message)>,
    contexts: [ContextLru; 2],
    /// Each side's send engine: messages taken up, in posting order (a send queue is
    /// processed in order), and the packets whose reads are outstanding.
    send_queue: [VecDeque<usize>; 2],
    reads_outstanding: [u64; 2],
    /// Flow control per direction (by sending side): bytes sent and not yet
    /// acknowledged; bytes and packets arrived since the last acknowledgement.
    in_flight_bytes: [u64; 2],
    unacked_bytes: [u64; 2],
    unacked_packets: [u64; 2],
    pub busy: Busy,
    now_ns: u64,
}

/// Servers: 0-1 CPUs, 2-3 buses' up ways, 4-5 down ways (the same as up on PCI-X),
/// 6-7 lines out of each side, 8-9 the adapters' processors (work they do one thing at
/// a time, such as MX's matching).
const CPU: usize = 0;
const BUS_UP: usize = 2;
const BUS_DOWN: usize = 4;
const LINE: usize = 6;
const ADAPTER: usize = 8;

/// What an adapter reads ahead of its line: 32 read requests of 512 bytes, PCIe's tag
/// space without extended tags (PCIe 1.1 §2.2.6.2) at the default MaxReadRequestSize.
const DMA_READ_WINDOW_BYTES: u64 = 32 * 512;

impl Fabric {
    pub fn new(ic: Interconnect) -> Self {
        let entries = ic.context.entries.map(|n| n as usize);
        Self {
            ic,
            host: HOST,
            extra_one_way_ns: 0,
            free_at_ns: vec![0; 10],
            queue: BinaryHeap::new(),
            scheduled: 0,
            jobs: Vec::new(),
            spare_jobs: Vec::new(),
            messages: Vec::new(),
            delivered: VecDeque::new(),
            contexts: [ContextLru::new(entries), ContextLru::new(entries)],
            send_queue: [VecDeque::new(), VecDeque::new()],
            reads_outstanding: [0; 2],
            in_flight_bytes: [0; 2],
            unacked_bytes: [0; 2],
            unacked_packets: [0; 2],
            busy: Busy::default(),
            now_ns: 0,
        }
    }

    fn bus(&self, side: Side, way: Way) -> usize {
        if way == Way::Down && self.ic.bus.full_duplex() {
            BUS_DOWN + side
        } else {
            BUS_UP + side
        }
    }

    /// Post `message` at `at_ns` (not before the last delivery handed out).
    pub fn post(&mut self, at_ns: u64, message: Message) {
        assert!(at_ns >= self.now_ns, "posted in the past");
        let msg = self.messages.len();
        let a = message.from;
        let mut stages = vec![
            Stage::Use {
                server: CPU + a,
                ns: self.host.post_ns + message.work.sender_ns,
            },
            Stage::Wait {
                ns: self.host.doorbell_ns + self.context_ns(a, message.connection),
            },
            Stage::Wait {
                ns: self.ic.adapter_ns / 2 + self.host.dma_read_ns,
            },
        ];
        stages.shrink_to_fit();
        self.messages.push(InFlight {
            message,
            packets_left: 0,
            next_packet: 0,
            bytes_left: message.bytes,
        });
        self.start(at_ns, stages, Then::Head { msg });
    }

    /// Occupy `side`'s CPU (or its adapter's processor) for `ns` from `at_ns`: work
    /// beside the messages, such as searching a queue when a receive is posted.
    pub fn occupy(&mut self, at_ns: u64, side: Side, on_adapter: bool, ns: u64) {
        assert!(at_ns >= self.now_ns, "occupied in the past");
        let server = if on_adapter {
            ADAPTER + side
        } else {
            CPU + side
        };
        self.start(at_ns, vec![Stage::Use { server, ns }], Then::Nothing);
    }

    /// The next delivery (time, message), running the fabric until there is one.
    pub fn next_delivery(&mut self) -> Option<(u64, Message)> {
        while self.delivered.is_empty() {
            let Reverse((at_ns, _, job)) = self.queue.pop()?;
            self.now_ns = at_ns;
            self.advance(job, at_ns);
        }
        self.delivered.pop_front()
    }

    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }

    fn context_ns(&mut self, side: Side, connection: u32) -> u64 {
        if self.contexts[side].touch(connection) {
            0
        } else {
            self.ic.context.miss_ns
        }
    }

    fn start(&mut self, at_ns: u64, stages: Vec<Stage>, then: Then) {
        let job = Job {
            stages,
            next: 0,
            then,
        };
        let id = if let Some(id) = self.spare_jobs.pop() {
            self.jobs[id] = job;
            id
        } else {
            self.jobs.push(job);
            self.jobs.len() - 1
        };
        self.schedule(at_ns, id);
    }

    fn advance(&mut self, id: usize, now_ns: u64) {
        let job = &mut self.jobs[id];
        let Some(&stage) = job.stages.get(job.next) else {
            let then = job.then;
            self.spare_jobs.push(id);
            self.finish(then, now_ns);
            return;
        };
        job.next += 1;
        let at_ns = match stage {
            Stage::ReadDone => {
                let side = match job.then {
                    Then::Packet { msg, .. } => self.messages[msg].message.from,
                    _ => unreachable!("only packets read"),
                };
                self.reads_outstanding[side] -= 1;
                self.fill(side, now_ns);
                now_ns
            }
            Stage::Wait { ns } => now_ns + ns,
            Stage::Use { server, ns } => {
                let start = self.free_at_ns[server].max(now_ns);
                self.free_at_ns[server] = start + ns;
                if server < BUS_UP {
                    self.busy.cpu_ns[server] += ns;
                }
                start + ns
            }
        };
        self.schedule(at_ns, id);
    }

    fn schedule(&mut self, at_ns: u64, job: usize) {
        self.scheduled += 1;
        self.queue.push(Reverse((at_ns, self.scheduled, job)));
    }

    fn finish(&mut self, then: Then, now_ns: u64) {
        match then {
            Then::Head { msg } => self.send_packets(msg, now_ns),
            Then::Packet { msg, bytes } => {
                let left = &mut self.messages[msg].packets_left;
                *left -= 1;
                let done = *left == 0;
                let message = self.messages[msg].message;
                let a = message.from;
                self.unacked_bytes[a] += bytes;
                self.unacked_packets[a] += 1;
                if done || self.unacked_packets[a] >= self.ic.line.ack_every_packets {
                    self.send_ack(a, now_ns);
                }
                if done {
                    self.complete(msg, now_ns);
                }
            }
            Then::Tail { msg } => {
                let message = self.messages[msg].message;
                self.delivered.push_back((now_ns, message));
            }
            Then::Ack { side, bytes } => {
                self.in_flight_bytes[side] -= bytes;
                self.fill(side, now_ns);
            }
            Then::Nothing => {}
        }
    }

    /// The receiver acknowledges what arrived from `side` (every `ack_every_packets`
    /// of that direction, and each message's last); the acknowledgement takes the
    /// reverse line and the way back before it opens the window. A window holds at least
    /// `ack_every_packets` packets, so a full one always brings an acknowledgement.
    fn send_ack(&mut self, side: Side, now_ns: u64) {
        let bytes = std::mem::take(&mut self.unacked_bytes[side]);
        self.unacked_packets[side] = 0;
        let ack = vec![
            Stage::Use {
                server: LINE + (1 - side),
                ns: self.ic.ack_ns(),
            },
            Stage::Wait {
                ns: self.ic.line.switch_ns + self.extra_one_way_ns,
            },
        ];
        self.start(now_ns, ack, Then::Ack { side, bytes });
    }

    fn packet_count(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.ic.line.packet_payload_bytes).max(1)
    }

    fn send_packets(&mut self, msg: usize, now_ns: u64) {
        let message = self.messages[msg].message;
        self.messages[msg].packets_left = self.packet_count(message.bytes);
        self.send_queue[message.from].push_back(msg);
        self.fill(message.from, now_ns);
    }

    /// Start packets of the side's send queue while its DMA reads and its flow-control
    /// window allow.
    fn fill(&mut self, side: Side, now_ns: u64) {
        let reads = (DMA_READ_WINDOW_BYTES / self.ic.line.packet_payload_bytes).max(1);
        while self.reads_outstanding[side] < reads {
            let Some(&msg) = self.send_queue[side].front() else {
                return;
            };
            let flight = &self.messages[msg];
            let payload = flight.bytes_left.min(self.ic.line.packet_payload_bytes);
            if let Some(window) = self.ic.window_bytes
                && self.in_flight_bytes[side] > 0
                && self.in_flight_bytes[side] + payload > window
            {
                return; // an acknowledgement will call again
            }
            self.start_packet(msg, payload, now_ns);
            if self.messages[msg].bytes_left == 0 {
                self.send_queue[side].pop_front();
            }
        }
    }

    /// The message's next packet: read over the sender's bus, on the line, through the
    /// switch, written over the receiver's bus.
    fn start_packet(&mut self, msg: usize, payload: u64, now_ns: u64) {
        let flight = &mut self.messages[msg];
        let first = flight.next_packet == 0;
        flight.next_packet += 1;
        flight.bytes_left -= payload;
        self.in_flight_bytes[flight.message.from] += payload;
        self.reads_outstanding[flight.message.from] += 1;
        let (a, b) = (flight.message.from, 1 - flight.message.from);
        let (up_ns, down_ns) = self.ic.bus.read_ns(payload.max(1));
        let mut stages = Vec::with_capacity(6);
        if up_ns > 0 {
            stages.push(Stage::Use {
                server: self.bus(a, Way::Up),
                ns: up_ns,
            });
        }
        if down_ns > 0 {
            stages.push(Stage::Use {
                server: self.bus(a, Way::Down),
                ns: down_ns,
            });
        }
        stages.push(Stage::ReadDone);
        stages.push(Stage::Use {
            server: LINE + a,
            ns: self.ic.packet_ns(payload, first),
        });
        stages.push(Stage::Wait {
            ns: self.ic.line.switch_ns + self.extra_one_way_ns,
        });
        stages.push(Stage::Use {
            server: self.bus(b, Way::Up),
            ns: self.ic.bus.write_ns(payload.max(1)),
        });
        self.start(
            now_ns,
            stages,
            Then::Packet {
                msg,
                bytes: payload,
            },
        );
    }

    fn complete(&mut self, msg: usize, now_ns: u64) {
        let message = self.messages[msg].message;
        let b = 1 - message.from;
        let mut stages = vec![Stage::Wait {
            ns: self.ic.adapter_ns - self.ic.adapter_ns / 2
                + self.context_ns(b, message.connection),
        }];
        // An adapter that matches receives (MX) takes each arrival in turn, after any
        // search it is running.
        if self.ic.matching_in_adapter {
            stages.push(Stage::Use {
                server: ADAPTER + b,
                ns: message.receiver_adapter_ns,
            });
        }
        if let Completion::Queue { entry_bytes } = message.completion {
            stages.push(Stage::Use {
                server: self.bus(b, Way::Up),
                ns: self.ic.bus.write_ns(entry_bytes),
            });
        }
        stages.push(Stage::Use {
            server: CPU + b,
            ns: self.host.poll_ns + message.work.receiver_ns,
        });
        self.start(now_ns, stages, Then::Tail { msg });
    }
}

/// Least-recently-used connection contexts on one adapter.
#[derive(Debug)]
struct ContextLru {
    capacity: Option<usize>,
    /// Most recent last.
    order: Vec<u32>,
}

impl ContextLru {
    fn new(capacity: Option<usize>) -> Self {
        Self {
            capacity,
            order: Vec::new(),
        }
    }

    /// True on a hit. With no capacity (no per-connection state) every touch hits.
    fn touch(&mut self, connection: u32) -> bool {
        let Some(capacity) = self.capacity else {
            return true;
        };
        let hit = if let Some(at) = self.order.iter().position(|&c| c == connection) {
            self.order.remove(at);
            true
        } else {
            if self.order.len() == capacity {
                self.order.remove(0);
            }
            false
        };
        self.order.push(connection);
        hit
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rdma::interconnect::INFINIBAND;

    fn message(from: Side, bytes: u64, tag: u64) -> Message {
        Message {
            from,
            bytes,
            connection: 0,
            completion: Completion::PollMemory,
            work: HostWork::default(),
            receiver_adapter_ns: 0,
            tag,
        }
    }

    #[test]
    fn a_large_message_streams_at_the_slowest_server() {
        let mut fabric = Fabric::new(INFINIBAND);
        fabric.post(0, message(0, 8 << 20, 1));
        let (at_ns, m) = fabric.next_delivery().unwrap();
        assert_eq!(m.tag, 1);
        let line = f64::from(8u32 << 20) * 1e9 / at_ns as f64;
        let limit = 1e9 * 1024.0 / 1050.0;
        assert!(line < limit && line > 0.99 * limit, "{line} vs {limit}");
    }

    #[test]
    fn two_ways_share_nothing_on_pcie_but_the_acks() {
        let mut one = Fabric::new(INFINIBAND);
        one.post(0, message(0, 4 << 20, 0));
        let alone = one.next_delivery().unwrap().0;
        let mut two = Fabric::new(INFINIBAND);
        two.post(0, message(0, 4 << 20, 0));
        two.post(0, message(1, 4 << 20, 1));
        let both = two
            .next_delivery()
            .unwrap()
            .0
            .max(two.next_delivery().unwrap().0);
        assert!(
            both >= alone && both < alone + alone / 50,
            "{both} vs {alone}"
        );
    }

    #[test]
    fn contexts_miss_once_the_cache_is_full() {
        let mut lru = ContextLru::new(Some(2));
        assert!(!lru.touch(1));
        assert!(!lru.touch(2));
        assert!(lru.touch(1));
        assert!(!lru.touch(3)); // evicts 2
        assert!(!lru.touch(2));
        let mut none = ContextLru::new(None);
        assert!(none.touch(7));
    }
}
