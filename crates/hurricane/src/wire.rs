//! Hurricane's datagrams, version 2 (docs/hurricane-wire.md). Every field is big-endian.
//!
//! ```text
//! 0   "HUR"  magic
//! 3   u8     version (2)
//! 4   u8     kind: 1 DATA, 2 NACK, 3 FIN, 4 DONE; 0x80 set when the payload is encrypted
//! 5   u64    transfer id
//! 13  u64    packet number: counts the datagrams of one side, never repeats in a transfer
//! 21  body   DATA: block u64, payload
//!            NACK: received_below u64, echo u64, count u16, count x (start u64, end u64)
//!            FIN:  total_blocks u64
//!            DONE: total_blocks u64
//! end u8[16] AES-256-GCM tag under the transfer's key, nonce = side u32 ‖ packet number
//!            (side 0: the sender's DATA and FIN, 1: the receiver's NACK and DONE);
//!            authenticates every byte before it, and encrypts a DATA payload if asked
//! ```
//!
//! Why GCM and not a keyed hash: the tag is computed per datagram, and a 1,427-byte
//! datagram is where BLAKE3's tree gives no parallelism; measured on one core, keyed
//! BLAKE3 over 1,435 bytes runs at 0.9 GB/s (7 Gb/s, below the 9.6 Gb/s line), GHASH
//! with carry-less multiplication at 6.4 GB/s and AES-256-GCM encryption at 4.7 GB/s
//! (`cargo run -p hurricane --release --example mac_cost`). AES-GCM is NIST SP 800-38D;
//! the nonce's uniqueness per key (§8.2) is why every datagram carries a packet number.
//!
//! Decoding checks every length before reading and the tag before trusting anything:
//! a datagram that is not ours, or not whole, is an error, never a panic.

use std::ops::Range;
use std::sync::Arc;

use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};

pub const MAGIC: &[u8; 3] = b"HUR";
pub const VERSION: u8 = 2;
pub const HEADER_BYTES: usize = 21;
pub const MAC_BYTES: usize = 16;
/// What comes before a DATA datagram's payload: the header and the block number.
pub const DATA_HEADER_BYTES: usize = HEADER_BYTES + 8;
/// What a DATA datagram adds to its payload.
pub const DATA_OVERHEAD_BYTES: usize = DATA_HEADER_BYTES + MAC_BYTES;
/// The most missing ranges one NACK carries (a NACK stays near 1 KB).
pub const MAX_NACK_RANGES: usize = 64;

const DATA: u8 = 1;
const NACK: u8 = 2;
const FIN: u8 = 3;
const DONE: u8 = 4;
const ENCRYPTED: u8 = 0x80;

/// The transfer's 256-bit key, agreed over the control exchange, and whether DATA
/// payloads are encrypted under it (they are always authenticated).
#[derive(Clone)]
pub struct Key {
    raw: [u8; 32],
    pub encrypt: bool,
    aead: Arc<LessSafeKey>,
}

impl Key {
    pub fn new(raw: [u8; 32], encrypt: bool) -> Self {
        let unbound = UnboundKey::new(&AES_256_GCM, &raw).expect("a 32-byte AES-256 key");
        Self {
            raw,
            encrypt,
            aead: Arc::new(LessSafeKey::new(unbound)),
        }
    }

    pub fn raw(&self) -> &[u8; 32] {
        &self.raw
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw && self.encrypt == other.encrypt
    }
}

impl Eq for Key {}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Key(.., encrypt: {})", self.encrypt)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body<'a> {
    Data {
        block: u64,
        payload: &'a [u8],
    },
    /// Every block below `received_below` arrived; `missing` are gaps above it; `echo`
    /// is the highest packet number the receiver has had from the sender (its round
    /// trip, queueing included, for the sender).
    Nack {
        received_below: u64,
        echo: u64,
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
    /// This side's count of its datagrams: the nonce, so never the same twice.
    pub packet: u64,
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
    /// Not made with this transfer's key (forged, corrupted, or another transfer's), or
    /// encrypted where the transfer is not (or the other way round).
    Mac,
}

fn side(kind: u8) -> u32 {
    u32::from(matches!(kind & !ENCRYPTED, NACK | DONE))
}

fn nonce_bytes(kind: u8, packet: u64) -> [u8; 12] {
    let mut bytes = [0u8; 12];
    bytes[..4].copy_from_slice(&side(kind).to_be_bytes());
    bytes[4..].copy_from_slice(&packet.to_be_bytes());
    bytes
}

fn nonce(kind: u8, packet: u64) -> Nonce {
    Nonce::assume_unique_for_key(nonce_bytes(kind, packet))
}

/// Append `datagram`, tag included, to `out`.
pub fn encode(key: &Key, datagram: &Datagram<'_>, out: &mut Vec<u8>) {
    let (transfer_id, packet) = (datagram.transfer_id, datagram.packet);
    let kind = match &datagram.body {
        Body::Data { block, payload } => {
            let fill = |buf: &mut [u8]| buf.copy_from_slice(payload);
            return encode_data(key, transfer_id, packet, *block, payload.len(), fill, out);
        }
        Body::Nack { .. } => NACK,
        Body::Fin { .. } => FIN,
        Body::Done { .. } => DONE,
    };
    let start = out.len();
    push_header(out, kind, transfer_id, packet);
    match &datagram.body {
        Body::Nack {
            received_below,
            echo,
            missing,
        } => {
            assert!(
                missing.len() <= MAX_NACK_RANGES,
                "a NACK carries at most {MAX_NACK_RANGES} ranges"
            );
            out.extend_from_slice(&received_below.to_be_bytes());
            out.extend_from_slice(&echo.to_be_bytes());
            out.extend_from_slice(&(missing.len() as u16).to_be_bytes());
            for range in missing {
                out.extend_from_slice(&range.start.to_be_bytes());
                out.extend_from_slice(&range.end.to_be_bytes());
            }
        }
        Body::Fin { total_blocks } | Body::Done { total_blocks } => {
            out.extend_from_slice(&total_blocks.to_be_bytes());
        }
        Body::Data { .. } => unreachable!("encoded above"),
    }
    let clear_end = out.len();
    seal(key, kind, packet, out, start, clear_end);
}

/// Append a DATA datagram of `block`, tag included, to `out`, its `len` payload bytes
/// written in place by `fill` (a sender reads a file's block straight into the datagram,
/// with no copy in between).
pub fn encode_data(
    key: &Key,
    transfer_id: u64,
    packet: u64,
    block: u64,
    len: usize,
    fill: impl FnOnce(&mut [u8]),
    out: &mut Vec<u8>,
) {
    let kind = if key.encrypt { DATA | ENCRYPTED } else { DATA };
    let start = out.len();
    push_header(out, kind, transfer_id, packet);
    out.extend_from_slice(&block.to_be_bytes());
    let payload_at = out.len();
    out.resize(payload_at + len, 0);
    fill(&mut out[payload_at..]);
    // What is authenticated only, and what is also encrypted (the payload, if asked).
    let clear_end = if key.encrypt { payload_at } else { out.len() };
    seal(key, kind, packet, out, start, clear_end);
}

/// Append the header of a DATA datagram of `block` and its tag to `out`, leaving out
/// its payload, which stays where it lies (a mapped file's block) and goes out between
/// the two: the tag is the one `encode_data` gives the same datagram whole. Only for a
/// key that does not encrypt (an encrypted payload is made anew anyway).
pub fn encode_data_around(
    tagger: &mut PartsTagger,
    key: &Key,
    transfer_id: u64,
    packet: u64,
    block: u64,
    payload: &[u8],
    out: &mut Vec<u8>,
) {
    assert!(!key.encrypt, "an encrypted payload cannot stay in place");
    let start = out.len();
    push_header(out, DATA, transfer_id, packet);
    out.extend_from_slice(&block.to_be_bytes());
    let tag = tagger.tag(&nonce_bytes(DATA, packet), &[&out[start..], payload]);
    out.extend_from_slice(&tag);
}

/// AES-256-GCM tags over additional data given in pieces, which GCM allows (GHASH runs
/// over their concatenation, NIST SP 800-38D §7.1): a datagram's header in one buffer and
/// its payload in another. aws-lc's `EVP_CIPHER` interface takes the pieces; the AEAD
/// interface that `aws-lc-rs` wraps takes one slice.
pub struct PartsTagger {
    ctx: *mut aws_lc_sys::EVP_CIPHER_CTX,
}

// SAFETY: the context is owned by this value alone and used only through `&mut self`.
unsafe impl Send for PartsTagger {}

impl PartsTagger {
    pub fn new(key: &Key) -> Self {
        // SAFETY: a fresh context, set up for AES-256-GCM with the 32-byte key; the
        // pointers outlive the calls. Each call's result is checked.
        unsafe {
            let ctx = aws_lc_sys::EVP_CIPHER_CTX_new();
            assert!(!ctx.is_null(), "aws-lc could not allocate a cipher context");
            let set = aws_lc_sys::EVP_EncryptInit_ex(
                ctx,
                aws_lc_sys::EVP_aes_256_gcm(),
                std::ptr::null_mut(),
                key.raw.as_ptr(),
                std::ptr::null(),
            );
            assert_eq!(set, 1, "aws-lc refused an AES-256-GCM key");
            Self { ctx }
        }
    }

    /// The tag of empty plaintext with `parts`, in order, as additional data.
    fn tag(&mut self, nonce: &[u8; 12], parts: &[&[u8]]) -> [u8; MAC_BYTES] {
        let mut tag = [0u8; MAC_BYTES];
        let mut written: libc::c_int = 0;
        // SAFETY: the context was set up in `new` (a 12-byte nonce is GCM's default);
        // every pointer and length describes a live slice for the call's duration, and
        // a null output marks additional data. Each call's result is checked.
        unsafe {
            let ok = aws_lc_sys::EVP_EncryptInit_ex(
                self.ctx,
                std::ptr::null(),
                std::ptr::null_mut(),
                std::ptr::null(),
                nonce.as_ptr(),
            ) == 1
                && parts.iter().all(|part| {
                    aws_lc_sys::EVP_EncryptUpdate(
                        self.ctx,
                        std::ptr::null_mut(),
                        &raw mut written,
                        part.as_ptr(),
                        part.len() as libc::c_int,
                    ) == 1
                })
                && aws_lc_sys::EVP_EncryptFinal_ex(self.ctx, tag.as_mut_ptr(), &raw mut written)
                    == 1
                && aws_lc_sys::EVP_CIPHER_CTX_ctrl(
                    self.ctx,
                    aws_lc_sys::EVP_CTRL_GCM_GET_TAG,
                    MAC_BYTES as libc::c_int,
                    tag.as_mut_ptr().cast(),
                ) == 1;
            assert!(ok, "AES-GCM tags any datagram a UDP packet can hold");
        }
        tag
    }
}

impl Drop for PartsTagger {
    fn drop(&mut self) {
        // SAFETY: the context made in `new`, freed once.
        unsafe { aws_lc_sys::EVP_CIPHER_CTX_free(self.ctx) };
    }
}

fn push_header(out: &mut Vec<u8>, kind: u8, transfer_id: u64, packet: u64) {
    out.extend_from_slice(MAGIC);
    out.push(VERSION);
    out.push(kind);
    out.extend_from_slice(&transfer_id.to_be_bytes());
    out.extend_from_slice(&packet.to_be_bytes());
}

/// Tag the datagram that begins at `start` in `out`: the bytes up to `clear_end` are
/// authenticated, those after it encrypted too.
fn seal(key: &Key, kind: u8, packet: u64, out: &mut Vec<u8>, start: usize, clear_end: usize) {
    let (clear, secret) = out[start..].split_at_mut(clear_end - start);
    let tag = key
        .aead
        .seal_in_place_separate_tag(nonce(kind, packet), Aad::from(&*clear), secret)
        .expect("AES-GCM seals any datagram a UDP packet can hold");
    out.extend_from_slice(tag.as_ref());
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

/// The transfer id of a datagram that looks like ours, before its tag is checked: what a
/// driver serving several transfers dispatches on.
pub fn peek_transfer_id(bytes: &[u8]) -> Option<u64> {
    if bytes.len() < HEADER_BYTES + MAC_BYTES || &bytes[..3] != MAGIC {
        return None;
    }
    Some(u64::from_be_bytes(bytes[5..13].try_into().ok()?))
}

/// Authenticate one datagram (decrypting its payload in place if it is encrypted) and
/// parse it.
pub fn decode<'a>(key: &Key, bytes: &'a mut [u8]) -> Result<Datagram<'a>, WireError> {
    if bytes.len() < HEADER_BYTES + MAC_BYTES {
        return Err(WireError::Truncated);
    }
    if &bytes[..3] != MAGIC {
        return Err(WireError::Magic);
    }
    if bytes[3] != VERSION {
        return Err(WireError::Version(bytes[3]));
    }
    let kind = bytes[4];
    let encrypted = kind & ENCRYPTED != 0;
    if encrypted != (key.encrypt && kind & !ENCRYPTED == DATA) {
        return Err(WireError::Mac);
    }
    let packet = u64::from_be_bytes(bytes[13..21].try_into().expect("8 bytes"));
    let signed_len = bytes.len() - MAC_BYTES;
    let clear_end = if encrypted {
        if bytes.len() < HEADER_BYTES + 8 + MAC_BYTES {
            return Err(WireError::Truncated);
        }
        HEADER_BYTES + 8
    } else {
        signed_len
    };
    let (clear, secret_and_tag) = bytes.split_at_mut(clear_end);
    key.aead
        .open_in_place(nonce(kind, packet), Aad::from(&*clear), secret_and_tag)
        .map_err(|_| WireError::Mac)?;
    let bytes: &'a [u8] = bytes;
    let mut reader = Reader {
        bytes: &bytes[HEADER_BYTES..signed_len],
    };
    let transfer_id = u64::from_be_bytes(bytes[5..13].try_into().expect("8 bytes"));
    let body = match kind & !ENCRYPTED {
        DATA => {
            let block = reader.u64()?;
            let payload = reader.bytes;
            reader.bytes = &[];
            Body::Data { block, payload }
        }
        NACK => {
            let received_below = reader.u64()?;
            let echo = reader.u64()?;
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
                echo,
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
    Ok(Datagram {
        transfer_id,
        packet,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key() -> Key {
        Key::new([7; 32], false)
    }

    fn round_trip(key: &Key, datagram: &Datagram<'_>) {
        let mut bytes = Vec::new();
        encode(key, datagram, &mut bytes);
        assert_eq!(peek_transfer_id(&bytes), Some(datagram.transfer_id));
        assert_eq!(&decode(key, &mut bytes).unwrap(), datagram);
    }

    fn every_kind() -> Vec<Datagram<'static>> {
        let bodies = [
            Body::Data {
                block: 3,
                payload: b"hello",
            },
            Body::Nack {
                received_below: 4,
                echo: 17,
                missing: vec![5..7, 9..10],
            },
            Body::Fin { total_blocks: 10 },
            Body::Done { total_blocks: 10 },
        ];
        bodies
            .into_iter()
            .enumerate()
            .map(|(packet, body)| Datagram {
                transfer_id: 9,
                packet: packet as u64,
                body,
            })
            .collect()
    }

    #[test]
    fn every_kind_round_trips_clear_or_encrypted() {
        for encrypt in [false, true] {
            for datagram in every_kind() {
                round_trip(&Key::new([7; 32], encrypt), &datagram);
            }
        }
    }

    #[test]
    fn an_encrypted_payload_is_not_on_the_wire() {
        let mut bytes = Vec::new();
        let secret = b"a secret payload";
        let datagram = Datagram {
            transfer_id: 1,
            packet: 0,
            body: Body::Data {
                block: 0,
                payload: secret,
            },
        };
        encode(&Key::new([7; 32], true), &datagram, &mut bytes);
        assert!(!bytes.windows(secret.len()).any(|w| w == secret));
        // A receiver that expects clear payloads refuses it, and the other way round.
        assert_eq!(decode(&key(), &mut bytes.clone()), Err(WireError::Mac));
        let mut clear = Vec::new();
        encode(&key(), &datagram, &mut clear);
        assert_eq!(
            decode(&Key::new([7; 32], true), &mut clear),
            Err(WireError::Mac)
        );
    }

    #[test]
    fn another_key_or_a_flipped_bit_is_refused() {
        for encrypt in [false, true] {
            let key = Key::new([7; 32], encrypt);
            let mut bytes = Vec::new();
            let datagram = Datagram {
                transfer_id: 1,
                packet: 5,
                body: Body::Data {
                    block: 0,
                    payload: &[1, 2, 3],
                },
            };
            encode(&key, &datagram, &mut bytes);
            assert_eq!(
                decode(&Key::new([8; 32], encrypt), &mut bytes.clone()),
                Err(WireError::Mac)
            );
            for bit in 0..bytes.len() * 8 {
                let mut bad = bytes.clone();
                bad[bit / 8] ^= 1 << (bit % 8);
                assert!(decode(&key, &mut bad).is_err(), "bit {bit}");
            }
        }
    }

    #[test]
    fn the_two_sides_never_share_a_nonce() {
        // The same packet number from the sender (DATA) and the receiver (NACK).
        assert_ne!(side(DATA), side(NACK));
        assert_eq!(side(DATA), side(FIN));
        assert_eq!(side(NACK), side(DONE));
        assert_eq!(side(DATA | ENCRYPTED), side(DATA));
    }

    proptest! {
        /// A datagram tagged in pieces, its payload put back between header and tag, is
        /// the datagram `encode_data` makes whole, and it decodes.
        #[test]
        fn tagged_around_its_payload_is_the_whole_datagram(
            payload in proptest::collection::vec(any::<u8>(), 1..1500),
            packet in any::<u64>(),
            block in any::<u64>(),
        ) {
            let key = key();
            let mut tagger = PartsTagger::new(&key);
            let mut around = vec![0xee; 3];
            encode_data_around(&mut tagger, &key, 5, packet, block, &payload, &mut around);
            prop_assert_eq!(around.len(), 3 + DATA_OVERHEAD_BYTES);
            let mut assembled = around[..3 + DATA_HEADER_BYTES].to_vec();
            assembled.extend_from_slice(&payload);
            assembled.extend_from_slice(&around[3 + DATA_HEADER_BYTES..]);
            let mut whole = vec![0xee; 3];
            let fill = |buf: &mut [u8]| buf.copy_from_slice(&payload);
            encode_data(&key, 5, packet, block, payload.len(), fill, &mut whole);
            prop_assert_eq!(&assembled, &whole);
            let decoded = decode(&key, &mut assembled[3..]).unwrap();
            prop_assert_eq!(decoded.body, Body::Data { block, payload: &payload });
        }

        /// Any bytes at all: an answer, never a panic.
        #[test]
        fn arbitrary_bytes_never_panic(mut bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
            let _ = peek_transfer_id(&bytes);
            let _ = decode(&key(), &mut bytes.clone());
            let _ = decode(&Key::new([7; 32], true), &mut bytes);
        }

        /// A well-formed, correctly tagged datagram with arbitrary fields decodes or is
        /// refused: the parser's bounds checks hold past the tag too.
        #[test]
        fn signed_garbage_is_parsed_with_bounds_checks(
            kind in 0u8..8,
            body in proptest::collection::vec(any::<u8>(), 0..1200),
        ) {
            let key = key();
            let mut bytes = MAGIC.to_vec();
            bytes.push(VERSION);
            bytes.push(kind);
            bytes.extend_from_slice(&5u64.to_be_bytes());
            bytes.extend_from_slice(&11u64.to_be_bytes());
            bytes.extend_from_slice(&body);
            let tag = key
                .aead
                .seal_in_place_separate_tag(nonce(kind, 11), Aad::from(&bytes[..]), &mut [])
                .unwrap();
            bytes.extend_from_slice(tag.as_ref());
            let _ = decode(&key, &mut bytes);
        }
    }
}
