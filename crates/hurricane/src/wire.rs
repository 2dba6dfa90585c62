//! Hurricane's datagrams, version 1 (docs/hurricane-wire.md). Every field is big-endian.
//!
//! ```text
//! 0   "HUR"  magic
//! 3   u8     version (1)
//! 4   u8     kind: 1 DATA, 2 NACK, 3 FIN, 4 DONE
//! 5   u64    transfer id
//! 13  body   DATA: block u64, payload
//!            NACK: received_below u64, count u16, count x (start u64, end u64)
//!            FIN:  total_blocks u64
//!            DONE: total_blocks u64
//! end u8[16] MAC: BLAKE3 keyed with the transfer's key over every byte before it
//! ```
//!
//! Decoding checks every length before reading and the MAC before trusting anything:
//! a datagram that is not ours, or not whole, is an error, never a panic.

use std::ops::Range;

pub const MAGIC: &[u8; 3] = b"HUR";
pub const VERSION: u8 = 1;
pub const HEADER_BYTES: usize = 13;
pub const MAC_BYTES: usize = 16;
/// What a DATA datagram adds to its payload.
pub const DATA_OVERHEAD_BYTES: usize = HEADER_BYTES + 8 + MAC_BYTES;
/// The most missing ranges one NACK carries (a NACK stays near 1 KB).
pub const MAX_NACK_RANGES: usize = 64;

const DATA: u8 = 1;
const NACK: u8 = 2;
const FIN: u8 = 3;
const DONE: u8 = 4;

/// The transfer's 256-bit key, agreed over the control exchange.
#[derive(Clone, PartialEq, Eq)]
pub struct Key(pub [u8; 32]);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(..)")
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body<'a> {
    Data {
        block: u64,
        payload: &'a [u8],
    },
    /// Every block below `received_below` arrived; `missing` are gaps above it.
    Nack {
        received_below: u64,
        missing: Vec<Range<u64>>,
    },
    /// The sender has sent every one of `total_blocks` once.
    Fin {
        total_blocks: u64,
    },
    /// The receiver holds all `total_blocks`.
    Done {
        total_blocks: u64,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Datagram<'a> {
    pub transfer_id: u64,
    pub body: Body<'a>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireError {
    /// Shorter than a header and a MAC, or than its body says.
    Truncated,
    /// Not a Hurricane datagram.
    Magic,
    /// A version this build does not speak.
    Version(u8),
    Kind(u8),
    /// Bytes left over after the body.
    Length,
    /// A NACK range that is empty or reversed.
    Range,
    /// Not made with this transfer's key (forged, corrupted, or another transfer's).
    Mac,
}

fn mac(key: &Key, bytes: &[u8]) -> [u8; MAC_BYTES] {
    let hash = blake3::keyed_hash(&key.0, bytes);
    let mut out = [0; MAC_BYTES];
    out.copy_from_slice(&hash.as_bytes()[..MAC_BYTES]);
    out
}

/// Append `datagram`, MAC included, to `out`.
pub fn encode(key: &Key, datagram: &Datagram<'_>, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(MAGIC);
    out.push(VERSION);
    let kind = match datagram.body {
        Body::Data { .. } => DATA,
        Body::Nack { .. } => NACK,
        Body::Fin { .. } => FIN,
        Body::Done { .. } => DONE,
    };
    out.push(kind);
    out.extend_from_slice(&datagram.transfer_id.to_be_bytes());
    match &datagram.body {
        Body::Data { block, payload } => {
            out.extend_from_slice(&block.to_be_bytes());
            out.extend_from_slice(payload);
        }
        Body::Nack {
            received_below,
            missing,
        } => {
            assert!(
                missing.len() <= MAX_NACK_RANGES,
                "a NACK carries at most {MAX_NACK_RANGES} ranges"
            );
            out.extend_from_slice(&received_below.to_be_bytes());
            out.extend_from_slice(&(missing.len() as u16).to_be_bytes());
            for range in missing {
                out.extend_from_slice(&range.start.to_be_bytes());
                out.extend_from_slice(&range.end.to_be_bytes());
            }
        }
        Body::Fin { total_blocks } | Body::Done { total_blocks } => {
            out.extend_from_slice(&total_blocks.to_be_bytes());
        }
    }
    let tag = mac(key, &out[start..]);
    out.extend_from_slice(&tag);
}

struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if self.bytes.len() < n {
            return Err(WireError::Truncated);
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    fn u64(&mut self) -> Result<u64, WireError> {
        let bytes = self.take(8)?;
        Ok(u64::from_be_bytes(bytes.try_into().expect("8 bytes")))
    }

    fn u16(&mut self) -> Result<u16, WireError> {
        let bytes = self.take(2)?;
        Ok(u16::from_be_bytes(bytes.try_into().expect("2 bytes")))
    }
}

/// The transfer id of a datagram that looks like ours, before its MAC is checked: what a
/// driver serving several transfers dispatches on.
pub fn peek_transfer_id(bytes: &[u8]) -> Option<u64> {
    if bytes.len() < HEADER_BYTES + MAC_BYTES || &bytes[..3] != MAGIC {
        return None;
    }
    Some(u64::from_be_bytes(bytes[5..13].try_into().ok()?))
}

/// Parse and authenticate one datagram.
pub fn decode<'a>(key: &Key, bytes: &'a [u8]) -> Result<Datagram<'a>, WireError> {
    if bytes.len() < HEADER_BYTES + MAC_BYTES {
        return Err(WireError::Truncated);
    }
    if &bytes[..3] != MAGIC {
        return Err(WireError::Magic);
    }
    if bytes[3] != VERSION {
        return Err(WireError::Version(bytes[3]));
    }
    let (signed, tag) = bytes.split_at(bytes.len() - MAC_BYTES);
    // Constant time is not needed against an attacker who only drops datagrams, but it
    // costs nothing here: blake3's Hash compares in constant time.
    let expected = blake3::keyed_hash(&key.0, signed);
    if !constant_time_prefix_eq(expected.as_bytes(), tag) {
        return Err(WireError::Mac);
    }
    let kind = signed[4];
    let mut reader = Reader {
        bytes: &signed[5..],
    };
    let transfer_id = reader.u64()?;
    let body = match kind {
        DATA => {
            let block = reader.u64()?;
            let payload = reader.bytes;
            reader.bytes = &[];
            Body::Data { block, payload }
        }
        NACK => {
            let received_below = reader.u64()?;
            let count = usize::from(reader.u16()?);
            if count > MAX_NACK_RANGES {
                return Err(WireError::Length);
            }
            let mut missing = Vec::with_capacity(count);
            for _ in 0..count {
                let (start, end) = (reader.u64()?, reader.u64()?);
                if start >= end {
                    return Err(WireError::Range);
                }
                missing.push(start..end);
            }
            Body::Nack {
                received_below,
                missing,
            }
        }
        FIN => Body::Fin {
            total_blocks: reader.u64()?,
        },
        DONE => Body::Done {
            total_blocks: reader.u64()?,
        },
        other => return Err(WireError::Kind(other)),
    };
    if !reader.bytes.is_empty() {
        return Err(WireError::Length);
    }
    Ok(Datagram { transfer_id, body })
}

fn constant_time_prefix_eq(full: &[u8; 32], tag: &[u8]) -> bool {
    tag.len() == MAC_BYTES
        && full[..MAC_BYTES]
            .iter()
            .zip(tag)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const KEY: Key = Key([7; 32]);

    fn round_trip(datagram: &Datagram<'_>) {
        let mut bytes = Vec::new();
        encode(&KEY, datagram, &mut bytes);
        assert_eq!(&decode(&KEY, &bytes).unwrap(), datagram);
        assert_eq!(peek_transfer_id(&bytes), Some(datagram.transfer_id));
    }

    #[test]
    fn every_kind_round_trips() {
        round_trip(&Datagram {
            transfer_id: 9,
            body: Body::Data {
                block: 3,
                payload: b"hello",
            },
        });
        round_trip(&Datagram {
            transfer_id: 9,
            body: Body::Nack {
                received_below: 4,
                missing: vec![5..7, 9..10],
            },
        });
        round_trip(&Datagram {
            transfer_id: 9,
            body: Body::Fin { total_blocks: 10 },
        });
        round_trip(&Datagram {
            transfer_id: 9,
            body: Body::Done { total_blocks: 10 },
        });
    }

    #[test]
    fn another_key_or_a_flipped_bit_is_refused() {
        let mut bytes = Vec::new();
        let datagram = Datagram {
            transfer_id: 1,
            body: Body::Data {
                block: 0,
                payload: &[1, 2, 3],
            },
        };
        encode(&KEY, &datagram, &mut bytes);
        assert_eq!(decode(&Key([8; 32]), &bytes), Err(WireError::Mac));
        for bit in 0..bytes.len() * 8 {
            let mut bad = bytes.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(decode(&KEY, &bad).is_err(), "bit {bit}");
        }
    }

    proptest! {
        /// Any bytes at all: an answer, never a panic.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
            let _ = decode(&KEY, &bytes);
            let _ = peek_transfer_id(&bytes);
        }

        /// A well-formed, correctly signed datagram with arbitrary fields decodes: the
        /// parser's bounds checks hold past the MAC too.
        #[test]
        fn signed_garbage_is_parsed_with_bounds_checks(
            kind in 0u8..8,
            body in proptest::collection::vec(any::<u8>(), 0..1200),
        ) {
            let mut bytes = MAGIC.to_vec();
            bytes.push(VERSION);
            bytes.push(kind);
            bytes.extend_from_slice(&5u64.to_be_bytes());
            bytes.extend_from_slice(&body);
            let tag = mac(&KEY, &bytes);
            bytes.extend_from_slice(&tag);
            let _ = decode(&KEY, &bytes);
        }
    }
}
