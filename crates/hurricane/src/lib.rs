//! Hurricane, the UDP transport of USN's dedicated channels, as a sans-IO core: the
//! sender sends W_c datagrams back to back, then stays idle T_s, never above the
//! reserved rate; the receiver reports what is missing in NACKs, once k new blocks are
//! missing (and again while gaps stay open), and the sender sends the NACKed blocks
//! again before new ones. No sockets, threads or clocks inside: a driver hands in
//! datagrams and the time (`handle_datagram`, `handle_timeout`) and takes out datagrams
//! and the next deadline (`poll_transmit`, `poll_timeout`), as quinn-proto does.
//!
//! `wire` is the versioned, authenticated datagram format; `range_set` the sets of
//! blocks; `sender` and `receiver` the two state machines; `control` the exchange over
//! TCP that starts a transfer; `tuner` the search for T_s; `driver` the thin shell over
//! real sockets.

pub mod control;
pub mod driver;
pub mod faults;
pub mod files;
pub mod governor;
pub mod range_set;
pub mod receiver;
pub mod sender;
pub mod tuner;
pub mod udp;
pub mod virtual_time;
pub mod wire;

/// What both ends agree on before the first datagram (the control exchange).
#[derive(Debug, Clone)]
pub struct Transfer {
    pub id: u64,
    pub key: wire::Key,
    /// Payload per DATA datagram; the last block may be shorter.
    pub block_bytes: u32,
    pub total_bytes: u64,
    /// The reservation's rate: the sender never puts more on the wire (IP packets).
    pub rate_ceiling_bps: u64,
    /// The round trip measured before starting: paces FIN retries and NACK repeats.
    pub rtt_ns: u64,
}

impl Transfer {
    pub fn total_blocks(&self) -> u64 {
        self.total_bytes.div_ceil(u64::from(self.block_bytes))
    }

    /// Bytes of `block`'s payload.
    pub fn block_len(&self, block: u64) -> usize {
        let start = block * u64::from(self.block_bytes);
        (self.total_bytes - start).min(u64::from(self.block_bytes)) as usize
    }

    /// The IP bytes of a full DATA datagram: what the rate ceiling counts for a block.
    pub fn datagram_ip_bytes(&self) -> usize {
        self.block_bytes as usize + wire::DATA_OVERHEAD_BYTES + IP_UDP_BYTES
    }
}

/// IPv4 and UDP headers around every datagram: what the rate ceiling counts too.
pub const IP_UDP_BYTES: usize = 28;
