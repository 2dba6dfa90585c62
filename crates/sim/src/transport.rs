//! The transport-endpoint trait: what a host needs of one end of a flow, whatever the
//! protocol. TCP's sender and receiver implement it today; datagram senders (Hurricane)
//! and InfiniBand queue pairs are meant to. Sans-IO, in quinn's shape: the host hands an
//! endpoint the packets addressed to it and its expired deadlines, and asks what it
//! would send now and when it next wants to be woken; the endpoint owns no clock, socket
//! or event queue.

use crate::packet::Packet;

/// What a flow's end reports to the results: its own counters, zero where they do not
/// apply (a receiver has no congestion window).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlowReport {
    /// Bytes of the flow's data sent, retransmissions not counted (TCP's `snd_nxt`).
    pub sent_bytes: u64,
    /// Bytes delivered in order to the application.
    pub received_bytes: u64,
    pub retransmits: u64,
    pub fast_recoveries: u64,
    pub timeouts: u64,
    pub cwnd_bytes: u64,
    /// Smoothed RTT; 0 before the first sample.
    pub srtt_ns: u64,
    pub max_rcv_window_bytes: u64,
}

pub trait Transport {
    /// A packet addressed to this endpoint arrived; kinds it does not take are ignored.
    fn handle_packet(&mut self, now_ns: u64, pkt: &Packet);

    /// The next packet to send now, if any.
    fn poll_transmit(&mut self, now_ns: u64) -> Option<Packet>;

    /// When [`Transport::handle_timeout`] is next wanted.
    fn poll_timeout(&self) -> Option<u64>;

    /// A deadline given by `poll_timeout` may have passed.
    fn handle_timeout(&mut self, now_ns: u64);

    /// Whether the interface's small-queue limit holds this endpoint's packets back (bulk
    /// data) or they leave at once (acknowledgements).
    fn held_by_interface(&self) -> bool;

    /// The last packet `poll_transmit` gave leaves the interface (its last bit) at
    /// `left_ns`: what completes on send (InfiniBand UC and UD) completes then.
    fn packet_left(&mut self, _left_ns: u64) {}

    fn report(&self) -> FlowReport;
}

/// A boxed endpoint is one (the host boxes the large ones).
impl<T: Transport + ?Sized> Transport for Box<T> {
    fn handle_packet(&mut self, now_ns: u64, pkt: &Packet) {
        (**self).handle_packet(now_ns, pkt);
    }
    fn poll_transmit(&mut self, now_ns: u64) -> Option<Packet> {
        (**self).poll_transmit(now_ns)
    }
    fn poll_timeout(&self) -> Option<u64> {
        (**self).poll_timeout()
    }
    fn handle_timeout(&mut self, now_ns: u64) {
        (**self).handle_timeout(now_ns);
    }
    fn held_by_interface(&self) -> bool {
        (**self).held_by_interface()
    }
    fn packet_left(&mut self, left_ns: u64) {
        (**self).packet_left(left_ns);
    }
    fn report(&self) -> FlowReport {
        (**self).report()
    }
}
