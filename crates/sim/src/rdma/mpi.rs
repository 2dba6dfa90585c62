//! MPI's two protocols over a fabric, as the study's libraries ran them: eager (the
//! message and a header copied through the library's registered buffers) up to the
//! library's limit, rendezvous above it (a request; the receiver matches it, registers its
//! buffer if need be and replies; the sender registers its own and moves the data by
//! RDMA without a copy, followed on the same connection by a finish: one message of the
//! data and a header). Receives are matched against the posted-receive
//! queue, passing `queue_entries` non-matching entries first, in the host or (MX) in the
//! adapter.

use super::fabric::{Fabric, HostWork, Message, Side};
use super::interconnect::{Completion, MpiLibrary};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Eager,
    Request,
    Reply,
    Data,
}

impl Phase {
    const ALL: [Phase; 4] = [Phase::Eager, Phase::Request, Phase::Reply, Phase::Data];
}

/// One MPI send, from posting to the receiver's completion.
#[derive(Debug, Clone, Copy)]
pub struct Send {
    pub from: Side,
    pub bytes: u64,
    /// Whether each side's buffer was registered before (its registration cache hits).
    pub registered: bool,
    pub id: u64,
}

pub struct Mpi {
    pub fabric: Fabric,
    pub lib: MpiLibrary,
    pub queue_entries: u64,
    pub unexpected_entries: u64,
    sends: Vec<Send>,
}

impl Mpi {
    pub fn new(fabric: Fabric, lib: MpiLibrary) -> Self {
        Self {
            fabric,
            lib,
            queue_entries: 0,
            unexpected_entries: 0,
            sends: Vec::new(),
        }
    }

    pub fn eager(&self, bytes: u64) -> bool {
        bytes <= self.lib.eager_limit_bytes
    }

    fn copy_ns(&self, bytes: u64) -> u64 {
        (bytes * 1_000_000_000).div_ceil(self.fabric.host.copy_bytes_per_s)
    }

    fn register_ns(&self, send: &Send) -> u64 {
        if send.registered {
            return 0;
        }
        let host = &self.fabric.host;
        host.register_ns + send.bytes.div_ceil(4096) * host.register_page_ns
    }

    /// Passing over the queue's non-matching entries (the match itself is part of the
    /// fitted per-message times). In the adapter (MX) it occupies the receiving
    /// adapter's processor, not the host's CPU.
    fn match_ns(&self) -> u64 {
        self.queue_entries * self.fabric.ic.match_entry_ns
    }

    fn host_match_ns(&self) -> u64 {
        if self.fabric.ic.matching_in_adapter {
            0
        } else {
            self.match_ns()
        }
    }

    fn adapter_match_ns(&self) -> u64 {
        if self.fabric.ic.matching_in_adapter {
            self.match_ns()
        } else {
            0
        }
    }

    /// Post `send` at `at_ns`. The sender then posts its next receive (a ping-pong's
    /// order), searching the unexpected queue: on its CPU, or for MX in its adapter, so a
    /// search longer than the message's flight delays the answer's completion.
    pub fn send(&mut self, at_ns: u64, send: Send) {
        let index = self.sends.len() as u64;
        self.sends.push(send);
        let half = self.lib.overhead_ns / 2;
        if self.eager(send.bytes) {
            let work = HostWork {
                sender_ns: half + self.copy_ns(send.bytes),
                receiver_ns: self.lib.overhead_ns - half
                    + self.host_match_ns()
                    + self.copy_ns(send.bytes),
            };
            let bytes = send.bytes + self.lib.header_bytes;
            self.post(at_ns, send.from, bytes, work, index, Phase::Eager);
        } else {
            let work = HostWork {
                sender_ns: half + self.register_ns(&send),
                receiver_ns: self.host_match_ns(),
            };
            let header = self.lib.header_bytes.max(1);
            self.post(at_ns, send.from, header, work, index, Phase::Request);
        }
        if self.unexpected_entries > 0 {
            let ns = self.unexpected_entries * self.fabric.ic.match_entry_ns;
            let on_adapter = self.fabric.ic.matching_in_adapter;
            self.fabric.occupy(at_ns, send.from, on_adapter, ns);
        }
    }

    fn post(
        &mut self,
        at_ns: u64,
        from: Side,
        bytes: u64,
        work: HostWork,
        index: u64,
        phase: Phase,
    ) {
        let completion = if phase == Phase::Data {
            Completion::PollMemory
        } else {
            self.fabric.ic.user_completion
        };
        let receiver_adapter_ns = if matches!(phase, Phase::Eager | Phase::Request) {
            self.adapter_match_ns()
        } else {
            0
        };
        let tag = index * 8 + Phase::ALL.iter().position(|&p| p == phase).unwrap() as u64;
        let message = Message {
            from,
            bytes,
            connection: 0,
            completion,
            work,
            receiver_adapter_ns,
            tag,
        };
        self.fabric.post(at_ns, message);
    }

    /// The next completed send (time at the receiver, the send), running the protocols.
    pub fn next_completion(&mut self) -> Option<(u64, Send)> {
        loop {
            let (at_ns, message) = self.fabric.next_delivery()?;
            let index = message.tag / 8;
            let phase = Phase::ALL[(message.tag % 8) as usize];
            let send = self.sends[index as usize];
            let header = self.lib.header_bytes.max(1);
            match phase {
                Phase::Eager | Phase::Data => return Some((at_ns, send)),
                Phase::Request => {
                    let work = HostWork {
                        sender_ns: self.register_ns(&send),
                        receiver_ns: 0,
                    };
                    self.post(at_ns, 1 - send.from, header, work, index, Phase::Reply);
                }
                Phase::Reply => {
                    let finish = HostWork {
                        sender_ns: 0,
                        receiver_ns: self.lib.overhead_ns - self.lib.overhead_ns / 2,
                    };
                    let bytes = send.bytes + header;
                    self.post(at_ns, send.from, bytes, finish, index, Phase::Data);
                }
            }
        }
    }
}
