//! The control exchange (over TCP, before the first datagram), version 1: the sender
//! proposes the transfer, the receiver answers with the UDP port it listens on. Fixed
//! layouts, big-endian, read whole or refused (docs/hurricane-wire.md).
//!
//! ```text
//! offer  (sender -> receiver, 76 bytes): "HUC" version u8, id u64, block_bytes u32,
//!         total_bytes u64, rate_ceiling_bps u64, k u32, rtt_ns u64, key [u8; 32]
//! answer (receiver -> sender, 6 bytes):  "HUC" version u8, udp_port u16
//! ```

use std::io::{Read, Write};

use crate::Transfer;
use crate::wire::Key;

pub const MAGIC: &[u8; 3] = b"HUC";
pub const VERSION: u8 = 1;
const OFFER_BYTES: usize = 3 + 1 + 8 + 4 + 8 + 8 + 4 + 8 + 32;
const ANSWER_BYTES: usize = 3 + 1 + 2;

/// What the sender proposes: the transfer, with the round trip it measured connecting,
/// and the NACK group size k.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    pub id: u64,
    pub block_bytes: u32,
    pub total_bytes: u64,
    pub rate_ceiling_bps: u64,
    pub nack_group: u32,
    pub rtt_ns: u64,
    pub key: Key,
}

impl Offer {
    pub fn transfer(&self) -> Transfer {
        Transfer {
            id: self.id,
            key: self.key.clone(),
            block_bytes: self.block_bytes,
            total_bytes: self.total_bytes,
            rate_ceiling_bps: self.rate_ceiling_bps,
            rtt_ns: self.rtt_ns,
        }
    }
}

#[derive(Debug)]
pub enum ControlError {
    Io(std::io::Error),
    /// The peer does not speak this exchange (or this version of it).
    NotHurricane,
    Version(u8),
    /// A field no transfer can have (a zero block size, a zero rate).
    Invalid(&'static str),
}

impl std::fmt::Display for ControlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ControlError::Io(e) => write!(f, "control connection: {e}"),
            ControlError::NotHurricane => f.write_str("the peer is not a Hurricane endpoint"),
            ControlError::Version(v) => write!(
                f,
                "the peer speaks control version {v}, this side {VERSION}"
            ),
            ControlError::Invalid(what) => write!(f, "the offer is invalid: {what}"),
        }
    }
}

impl std::error::Error for ControlError {}

impl From<std::io::Error> for ControlError {
    fn from(e: std::io::Error) -> Self {
        ControlError::Io(e)
    }
}

fn header(bytes: &[u8]) -> Result<(), ControlError> {
    if &bytes[..3] != MAGIC {
        return Err(ControlError::NotHurricane);
    }
    if bytes[3] != VERSION {
        return Err(ControlError::Version(bytes[3]));
    }
    Ok(())
}

pub fn write_offer(stream: &mut impl Write, offer: &Offer) -> Result<(), ControlError> {
    let mut out = Vec::with_capacity(OFFER_BYTES);
    out.extend_from_slice(MAGIC);
    out.push(VERSION);
    out.extend_from_slice(&offer.id.to_be_bytes());
    out.extend_from_slice(&offer.block_bytes.to_be_bytes());
    out.extend_from_slice(&offer.total_bytes.to_be_bytes());
    out.extend_from_slice(&offer.rate_ceiling_bps.to_be_bytes());
    out.extend_from_slice(&offer.nack_group.to_be_bytes());
    out.extend_from_slice(&offer.rtt_ns.to_be_bytes());
    out.extend_from_slice(&offer.key.0);
    stream.write_all(&out)?;
    Ok(stream.flush()?)
}

pub fn read_offer(stream: &mut impl Read) -> Result<Offer, ControlError> {
    let mut bytes = [0u8; OFFER_BYTES];
    stream.read_exact(&mut bytes)?;
    header(&bytes)?;
    let u64_at = |at: usize| u64::from_be_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    let u32_at = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    let offer = Offer {
        id: u64_at(4),
        block_bytes: u32_at(12),
        total_bytes: u64_at(16),
        rate_ceiling_bps: u64_at(24),
        nack_group: u32_at(32),
        rtt_ns: u64_at(36),
        key: Key(bytes[44..76].try_into().expect("32 bytes")),
    };
    if offer.block_bytes == 0 || offer.block_bytes > 65_000 {
        return Err(ControlError::Invalid("block size must be 1..65000 bytes"));
    }
    if offer.rate_ceiling_bps == 0 {
        return Err(ControlError::Invalid("rate ceiling must be positive"));
    }
    Ok(offer)
}

pub fn write_answer(stream: &mut impl Write, udp_port: u16) -> Result<(), ControlError> {
    let mut out = MAGIC.to_vec();
    out.push(VERSION);
    out.extend_from_slice(&udp_port.to_be_bytes());
    stream.write_all(&out)?;
    Ok(stream.flush()?)
}

pub fn read_answer(stream: &mut impl Read) -> Result<u16, ControlError> {
    let mut bytes = [0u8; ANSWER_BYTES];
    stream.read_exact(&mut bytes)?;
    header(&bytes)?;
    Ok(u16::from_be_bytes([bytes[4], bytes[5]]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_offer_round_trips_and_nonsense_is_refused() {
        let offer = Offer {
            id: 5,
            block_bytes: 8192,
            total_bytes: 1 << 30,
            rate_ceiling_bps: 9_600_000_000,
            nack_group: 16,
            rtt_ns: 26_800_000,
            key: Key([4; 32]),
        };
        let mut bytes = Vec::new();
        write_offer(&mut bytes, &offer).unwrap();
        assert_eq!(read_offer(&mut bytes.as_slice()).unwrap(), offer);
        assert!(matches!(
            read_offer(&mut &bytes[..10]),
            Err(ControlError::Io(_))
        ));
        let mut other = bytes.clone();
        other[3] = 2;
        assert!(matches!(
            read_offer(&mut other.as_slice()),
            Err(ControlError::Version(2))
        ));
        other[0] = b'G';
        assert!(matches!(
            read_offer(&mut other.as_slice()),
            Err(ControlError::NotHurricane)
        ));
        let mut answer = Vec::new();
        write_answer(&mut answer, 7001).unwrap();
        assert_eq!(read_answer(&mut answer.as_slice()).unwrap(), 7001);
    }
}
