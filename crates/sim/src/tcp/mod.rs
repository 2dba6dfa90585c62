//! TCP as sans-IO state machines: the sender and the receiver take (now, packet) and give
//! back packets and deadlines; a host drives them in virtual time.

pub mod ranges;
pub mod receiver;
pub mod rtt;
pub mod sender;

/// IPv4 + TCP headers with the timestamp option: MSS = MTU - this (1448 for 1500).
pub const TCP_IP_HEADER_BYTES: u32 = 52;
/// SACK option: kind, length, padding, then 8 bytes per block.
pub const SACK_OPTION_BASE_BYTES: u32 = 4;
pub const SACK_BLOCK_BYTES: u32 = 8;
