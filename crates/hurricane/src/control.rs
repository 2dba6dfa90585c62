//! The control exchange (over TCP), version 3: the sender proposes the transfer, the
//! receiver answers with the UDP port it listens on and the blocks it already holds (a
//! transfer taken up again), and says on the same connection when every block is in and
//! checked. Either side closing the connection before that is the other's sign that the
//! transfer stopped. Big-endian, lengths checked before reading, read whole or refused
//! (docs/hurricane-wire.md).
//!
//! ```text
//! offer  (sender -> receiver): "HUC" version u8, id u64, block_bytes u32,
//!         total_bytes u64, rate_ceiling_bps u64, k u32, rtt_ns u64, key [u8; 32],
//!         flags u8 (1: encrypt), name_len u16, name (UTF-8, a relative path; empty for
//!         memory), and for a file: chunk_bytes u32, chunks u32, chunks x digest [u8; 32],
//!         digest [u8; 32] (BLAKE3 of the chunk digests in order)
//! answer (receiver -> sender): "HUC" version u8, udp_port u16, held u32,
//!         held x (start u64, end u64): blocks already stored
//! refusal (receiver -> sender): "HUC" version u8, 0 u16, len u16, reason (UTF-8)
//! whole  (receiver -> sender, after the answer): "HUC" version u8, "W"
//! ```

use std::io::{Read, Write};

use crate::Transfer;
use crate::range_set::RangeSet;
use crate::wire::Key;

pub const MAGIC: &[u8; 3] = b"HUC";
pub const VERSION: u8 = 3;
/// The record that says the transfer is whole: every block in and checked.
pub const WHOLE_BYTES: usize = 5;
const WHOLE_TAG: u8 = b'W';
const FIXED_OFFER_BYTES: usize = 3 + 1 + 8 + 4 + 8 + 8 + 4 + 8 + 32 + 1 + 2;
const ENCRYPT: u8 = 1;
/// The most chunks one file may have (a 1 TB file in 16 MiB chunks fits).
pub const MAX_CHUNKS: u32 = 1 << 20;
/// The most held ranges an answer carries (more are simply sent again).
pub const MAX_HELD_RANGES: usize = 1 << 16;

/// What a receiver needs to check a file: BLAKE3 of every chunk of `chunk_bytes` (the
/// last may be shorter) and of those digests in order (the file's digest).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileOffer {
    /// Where the file goes, relative to the receiver's directory.
    pub name: String,
    pub chunk_bytes: u32,
    pub chunk_digests: Vec<[u8; 32]>,
    pub digest: [u8; 32],
}

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
    /// None: memory to memory.
    pub file: Option<FileOffer>,
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
    /// The receiver would not take the transfer, and said why.
    Refused(String),
}

impl std::fmt::Display for ControlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ControlError::Io(e) => write!(f, "control connection: {e}"),
            ControlError::NotHurricane => f.write_str("the peer is not a Hurricane endpoint"),
            ControlError::Version(v) => write!(
                f,
                "the peer speaks control version {v}, this side {VERSION}: use the same \
                 hurricane release at both ends"
            ),
            ControlError::Invalid(what) => write!(f, "the offer is invalid: {what}"),
            ControlError::Refused(why) => write!(f, "the receiver refused the transfer: {why}"),
        }
    }
}

impl std::error::Error for ControlError {}

impl From<std::io::Error> for ControlError {
    fn from(e: std::io::Error) -> Self {
        ControlError::Io(e)
    }
}

fn header(stream: &mut impl Read) -> Result<(), ControlError> {
    let mut bytes = [0u8; 4];
    stream.read_exact(&mut bytes)?;
    if &bytes[..3] != MAGIC {
        return Err(ControlError::NotHurricane);
    }
    if bytes[3] != VERSION {
        return Err(ControlError::Version(bytes[3]));
    }
    Ok(())
}

fn read_array<const N: usize>(stream: &mut impl Read) -> Result<[u8; N], ControlError> {
    let mut bytes = [0u8; N];
    stream.read_exact(&mut bytes)?;
    Ok(bytes)
}

fn read_u16(stream: &mut impl Read) -> Result<u16, ControlError> {
    Ok(u16::from_be_bytes(read_array(stream)?))
}

fn read_u32(stream: &mut impl Read) -> Result<u32, ControlError> {
    Ok(u32::from_be_bytes(read_array(stream)?))
}

fn read_u64(stream: &mut impl Read) -> Result<u64, ControlError> {
    Ok(u64::from_be_bytes(read_array(stream)?))
}

pub fn write_offer(stream: &mut impl Write, offer: &Offer) -> Result<(), ControlError> {
    let mut out = Vec::with_capacity(FIXED_OFFER_BYTES);
    out.extend_from_slice(MAGIC);
    out.push(VERSION);
    out.extend_from_slice(&offer.id.to_be_bytes());
    out.extend_from_slice(&offer.block_bytes.to_be_bytes());
    out.extend_from_slice(&offer.total_bytes.to_be_bytes());
    out.extend_from_slice(&offer.rate_ceiling_bps.to_be_bytes());
    out.extend_from_slice(&offer.nack_group.to_be_bytes());
    out.extend_from_slice(&offer.rtt_ns.to_be_bytes());
    out.extend_from_slice(offer.key.raw());
    out.push(if offer.key.encrypt { ENCRYPT } else { 0 });
    let name = offer.file.as_ref().map_or("", |f| f.name.as_str());
    let name_len = u16::try_from(name.len())
        .map_err(|_| ControlError::Invalid("a file name must be under 64 KiB"))?;
    out.extend_from_slice(&name_len.to_be_bytes());
    out.extend_from_slice(name.as_bytes());
    if let Some(file) = &offer.file {
        out.extend_from_slice(&file.chunk_bytes.to_be_bytes());
        out.extend_from_slice(&(file.chunk_digests.len() as u32).to_be_bytes());
        for digest in &file.chunk_digests {
            out.extend_from_slice(digest);
        }
        out.extend_from_slice(&file.digest);
    }
    stream.write_all(&out)?;
    Ok(stream.flush()?)
}

pub fn read_offer(stream: &mut impl Read) -> Result<Offer, ControlError> {
    header(stream)?;
    let id = read_u64(stream)?;
    let block_bytes = read_u32(stream)?;
    let total_bytes = read_u64(stream)?;
    let rate_ceiling_bps = read_u64(stream)?;
    let nack_group = read_u32(stream)?;
    let rtt_ns = read_u64(stream)?;
    let raw_key = read_array::<32>(stream)?;
    let flags = read_array::<1>(stream)?[0];
    let name_len = usize::from(read_u16(stream)?);
    let mut name = vec![0u8; name_len];
    stream.read_exact(&mut name)?;
    let file = if name.is_empty() {
        None
    } else {
        let name = String::from_utf8(name)
            .map_err(|_| ControlError::Invalid("the file name is not UTF-8"))?;
        let chunk_bytes = read_u32(stream)?;
        let chunks = read_u32(stream)?;
        if chunks > MAX_CHUNKS || chunk_bytes == 0 {
            return Err(ControlError::Invalid(
                "too many chunks, or chunks of no bytes",
            ));
        }
        if u64::from(chunks) != total_bytes.div_ceil(u64::from(chunk_bytes)) {
            return Err(ControlError::Invalid(
                "the chunk digests do not cover the file",
            ));
        }
        let chunk_digests = (0..chunks)
            .map(|_| read_array::<32>(stream))
            .collect::<Result<_, _>>()?;
        Some(FileOffer {
            name,
            chunk_bytes,
            chunk_digests,
            digest: read_array(stream)?,
        })
    };
    let offer = Offer {
        id,
        block_bytes,
        total_bytes,
        rate_ceiling_bps,
        nack_group,
        rtt_ns,
        key: Key::new(raw_key, flags & ENCRYPT != 0),
        file,
    };
    if offer.block_bytes == 0 || offer.block_bytes > 65_000 {
        return Err(ControlError::Invalid("block size must be 1..65000 bytes"));
    }
    if offer.rate_ceiling_bps == 0 {
        return Err(ControlError::Invalid("rate ceiling must be positive"));
    }
    Ok(offer)
}

/// Accept: the UDP port, and the blocks already held (at most `MAX_HELD_RANGES` ranges:
/// the rest are sent again, which costs time, never correctness).
pub fn write_answer(
    stream: &mut impl Write,
    udp_port: u16,
    held: &RangeSet,
) -> Result<(), ControlError> {
    assert!(udp_port != 0, "port 0 is the refusal");
    let mut out = MAGIC.to_vec();
    out.push(VERSION);
    out.extend_from_slice(&udp_port.to_be_bytes());
    let ranges: Vec<_> = held.iter().take(MAX_HELD_RANGES).collect();
    out.extend_from_slice(&(ranges.len() as u32).to_be_bytes());
    for range in ranges {
        out.extend_from_slice(&range.start.to_be_bytes());
        out.extend_from_slice(&range.end.to_be_bytes());
    }
    stream.write_all(&out)?;
    Ok(stream.flush()?)
}

/// Refuse, saying why (a full disk, a name outside the directory).
pub fn write_refusal(stream: &mut impl Write, reason: &str) -> Result<(), ControlError> {
    let mut out = MAGIC.to_vec();
    out.push(VERSION);
    out.extend_from_slice(&0u16.to_be_bytes());
    let reason = &reason.as_bytes()[..reason.len().min(1024)];
    out.extend_from_slice(&(reason.len() as u16).to_be_bytes());
    out.extend_from_slice(reason);
    stream.write_all(&out)?;
    Ok(stream.flush()?)
}

/// The receiver's UDP port and the blocks it holds, or its refusal.
pub fn read_answer(stream: &mut impl Read) -> Result<(u16, RangeSet), ControlError> {
    header(stream)?;
    let port = read_u16(stream)?;
    if port == 0 {
        let len = usize::from(read_u16(stream)?);
        let mut reason = vec![0u8; len];
        stream.read_exact(&mut reason)?;
        return Err(ControlError::Refused(
            String::from_utf8_lossy(&reason).into_owned(),
        ));
    }
    let count = read_u32(stream)? as usize;
    if count > MAX_HELD_RANGES {
        return Err(ControlError::Invalid("too many held ranges"));
    }
    let mut held = RangeSet::new();
    for _ in 0..count {
        let (start, end) = (read_u64(stream)?, read_u64(stream)?);
        if start >= end {
            return Err(ControlError::Invalid("an empty held range"));
        }
        held.insert(start..end);
    }
    Ok((port, held))
}

/// Say the transfer is whole: every block is in and checked (a file under its name). The
/// sender learns it here even if every DONE datagram is lost.
pub fn write_whole(stream: &mut impl Write) -> Result<(), ControlError> {
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&[VERSION, WHOLE_TAG]);
    stream.write_all(&out)?;
    Ok(stream.flush()?)
}

/// Whether `bytes`, what came on the control connection after the answer, say the
/// transfer is whole: `Ok(false)` while they are a beginning of that record, an error
/// for anything else.
pub fn is_whole(bytes: &[u8]) -> Result<bool, ControlError> {
    let mut expected = MAGIC.to_vec();
    expected.extend_from_slice(&[VERSION, WHOLE_TAG]);
    let n = bytes.len().min(WHOLE_BYTES);
    if bytes[..n] != expected[..n] || bytes.len() > WHOLE_BYTES {
        return Err(ControlError::Invalid(
            "the control connection carried more than its records",
        ));
    }
    Ok(bytes.len() == WHOLE_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn offer(file: Option<FileOffer>) -> Offer {
        Offer {
            id: 5,
            block_bytes: 8192,
            total_bytes: 1 << 30,
            rate_ceiling_bps: 9_600_000_000,
            nack_group: 16,
            rtt_ns: 26_800_000,
            key: Key::new([4; 32], true),
            file,
        }
    }

    #[test]
    fn an_offer_round_trips_and_nonsense_is_refused() {
        let file = FileOffer {
            name: "dir/data.h5".into(),
            chunk_bytes: 1 << 28,
            chunk_digests: vec![[1; 32], [2; 32], [3; 32], [4; 32]],
            digest: [9; 32],
        };
        for offer in [offer(None), offer(Some(file))] {
            let mut bytes = Vec::new();
            write_offer(&mut bytes, &offer).unwrap();
            assert_eq!(read_offer(&mut bytes.as_slice()).unwrap(), offer);
            assert!(matches!(
                read_offer(&mut &bytes[..bytes.len() - 1]),
                Err(ControlError::Io(_))
            ));
            let mut other = bytes.clone();
            other[3] = 1;
            assert!(matches!(
                read_offer(&mut other.as_slice()),
                Err(ControlError::Version(1))
            ));
            other[0] = b'G';
            assert!(matches!(
                read_offer(&mut other.as_slice()),
                Err(ControlError::NotHurricane)
            ));
        }
    }

    #[test]
    fn chunk_digests_that_do_not_cover_the_file_are_refused() {
        let file = FileOffer {
            name: "f".into(),
            chunk_bytes: 1 << 28,
            chunk_digests: vec![[1; 32]],
            digest: [9; 32],
        };
        let mut bytes = Vec::new();
        write_offer(&mut bytes, &offer(Some(file))).unwrap();
        assert!(matches!(
            read_offer(&mut bytes.as_slice()),
            Err(ControlError::Invalid(_))
        ));
    }

    #[test]
    fn answers_and_refusals_round_trip() {
        let mut held = RangeSet::new();
        held.insert(0..10);
        held.insert(20..25);
        let mut answer = Vec::new();
        write_answer(&mut answer, 7001, &held).unwrap();
        assert_eq!(read_answer(&mut answer.as_slice()).unwrap(), (7001, held));
        let mut refusal = Vec::new();
        write_refusal(&mut refusal, "no space left on the device").unwrap();
        let Err(ControlError::Refused(why)) = read_answer(&mut refusal.as_slice()) else {
            panic!("a refusal");
        };
        assert_eq!(why, "no space left on the device");
    }

    #[test]
    fn the_whole_record_is_recognised_in_pieces_and_nothing_else_is() {
        let mut whole = Vec::new();
        write_whole(&mut whole).unwrap();
        assert_eq!(whole.len(), WHOLE_BYTES);
        for n in 0..WHOLE_BYTES {
            assert!(!is_whole(&whole[..n]).unwrap());
        }
        assert!(is_whole(&whole).unwrap());
        let mut more = whole.clone();
        more.push(0);
        assert!(is_whole(&more).is_err());
        let mut other = whole.clone();
        other[4] = b'X';
        assert!(is_whole(&other).is_err());
    }

    proptest! {
        /// Whatever a peer sends: an offer or an error, never a panic or a huge allocation.
        #[test]
        fn arbitrary_bytes_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..600)) {
            let mut bytes = MAGIC.to_vec();
            bytes.push(VERSION);
            bytes.extend_from_slice(&tail);
            let _ = read_offer(&mut bytes.as_slice());
            let _ = read_answer(&mut bytes.as_slice());
            let _ = is_whole(&tail);
        }
    }
}
