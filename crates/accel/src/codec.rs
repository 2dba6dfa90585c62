//! What one direction of a session does to the bytes of its streams, with no sockets:
//! the `Encoder` turns a stream's bytes into DATA and REF frames, the `Decoder` turns
//! them back. Redundancy elimination (DRE) cuts each stream into content-defined chunks
//! (`FastCDC`, Xia et al., USENIX ATC 2016, as the `fastcdc` crate's 2020 variant) and
//! sends a 16-byte fingerprint (BLAKE3, truncated) for a chunk the peer already holds;
//! compression (LZ) sends a chunk as an LZ4 block where that saves at least 1/16.
//!
//! The two ends' caches stay in step without talking about it: the encoder enters a
//! chunk when it writes the chunk's DATA frame and the decoder when it reads it, the
//! session's frames arrive in the order they were written (one TCP connection), and both
//! evict the oldest chunks first under the same byte budget. A REF the decoder cannot
//! resolve, or a chunk whose fingerprint does not match its bytes, ends the session
//! (never a wrong byte delivered); a new session starts with both caches empty.

use std::collections::{HashMap, VecDeque};

use fastcdc::v2020::FastCDC;
use serde::Serialize;

use crate::wire::{Chunk, FINGERPRINT_BYTES, Features, Fingerprint, Frame};

/// `FastCDC`'s bounds: chunks of 2-64 KiB around 8 KiB, the sizes the `FastCDC` paper
/// evaluates (§5) and LBFS used (8 KiB expected).
pub const MIN_CHUNK_BYTES: usize = 2 << 10;
pub const AVG_CHUNK_BYTES: usize = 8 << 10;
pub const MAX_CHUNK_BYTES: usize = 64 << 10;
/// Without DRE, bytes are sent in pieces of at most this (one LZ4 block each with LZ).
pub const PIECE_BYTES: usize = 64 << 10;

pub fn fingerprint(bytes: &[u8]) -> Fingerprint {
    let hash = blake3::hash(bytes);
    hash.as_bytes()[..FINGERPRINT_BYTES]
        .try_into()
        .expect("16 bytes")
}

/// Chunks kept under a byte budget, oldest out first; the encoder keeps only their
/// sizes (`V = ()`), the decoder their bytes.
#[derive(Debug)]
pub struct ChunkCache<V> {
    budget_bytes: u64,
    held_bytes: u64,
    chunks: HashMap<Fingerprint, (u32, V)>,
    order: VecDeque<Fingerprint>,
}

impl<V> ChunkCache<V> {
    pub fn new(budget_bytes: u64) -> Self {
        Self {
            budget_bytes,
            held_bytes: 0,
            chunks: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    /// Whether a chunk of `len` bytes is entered at all (one larger than the budget is not).
    pub fn admits(&self, len: usize) -> bool {
        len as u64 <= self.budget_bytes
    }

    pub fn get(&self, fingerprint: &Fingerprint) -> Option<&(u32, V)> {
        self.chunks.get(fingerprint)
    }

    pub fn insert(&mut self, fingerprint: Fingerprint, len: u32, value: V) {
        if !self.admits(len as usize) || self.chunks.contains_key(&fingerprint) {
            return;
        }
        while self.held_bytes + u64::from(len) > self.budget_bytes {
            let oldest = self
                .order
                .pop_front()
                .expect("the cache holds what it counts");
            let (gone, _) = self
                .chunks
                .remove(&oldest)
                .expect("ordered chunks are held");
            self.held_bytes -= u64::from(gone);
        }
        self.held_bytes += u64::from(len);
        self.chunks.insert(fingerprint, (len, value));
        self.order.push_back(fingerprint);
    }

    pub fn len(&self) -> usize {
        self.chunks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }
}

/// One direction's counters, as the accelerator reports them.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct Counters {
    /// Bytes the streams carried (what the applications wrote).
    pub app_bytes: u64,
    /// Bytes of DATA and REF frames, headers included (what crossed the WAN for them).
    pub wire_bytes: u64,
    pub chunks_sent: u64,
    /// Chunks sent as a reference to what the peer held, and the bytes they stood for.
    pub cache_hits: u64,
    pub cache_hit_bytes: u64,
    /// Bytes offered to LZ4, and what those that paid became.
    pub lz_input_bytes: u64,
    pub lz_paid_input_bytes: u64,
    pub lz_output_bytes: u64,
}

impl Counters {
    /// Adds what `now` counts beyond `before` (the same encoder, earlier).
    pub fn add_since(&mut self, now: &Self, before: &Self) {
        self.app_bytes += now.app_bytes - before.app_bytes;
        self.wire_bytes += now.wire_bytes - before.wire_bytes;
        self.chunks_sent += now.chunks_sent - before.chunks_sent;
        self.cache_hits += now.cache_hits - before.cache_hits;
        self.cache_hit_bytes += now.cache_hit_bytes - before.cache_hit_bytes;
        self.lz_input_bytes += now.lz_input_bytes - before.lz_input_bytes;
        self.lz_paid_input_bytes += now.lz_paid_input_bytes - before.lz_paid_input_bytes;
        self.lz_output_bytes += now.lz_output_bytes - before.lz_output_bytes;
    }
}

pub struct Encoder {
    features: Features,
    cache: ChunkCache<()>,
    held: HashMap<u32, Vec<u8>>,
    pub counters: Counters,
}

impl Encoder {
    pub fn new(features: Features, cache_bytes: u64) -> Self {
        Self {
            features,
            cache: ChunkCache::new(cache_bytes),
            held: HashMap::new(),
            counters: Counters::default(),
        }
    }

    /// Frames for `bytes` of `stream`. With DRE the last chunk may be held back until
    /// more bytes show where it ends; `flush` (the application paused, or closed) sends
    /// it now.
    pub fn encode(&mut self, stream: u32, bytes: &[u8], flush: bool, out: &mut Vec<Frame>) {
        self.counters.app_bytes += bytes.len() as u64;
        if !self.features.dre {
            for piece in bytes.chunks(PIECE_BYTES) {
                let chunk = self.literal(piece, None);
                out.push(Frame::Data { stream, chunk });
            }
            return;
        }
        let mut pending = self.held.remove(&stream).unwrap_or_default();
        pending.extend_from_slice(bytes);
        let mut taken = 0;
        for cut in FastCDC::new(&pending, MIN_CHUNK_BYTES, AVG_CHUNK_BYTES, MAX_CHUNK_BYTES) {
            let end = cut.offset + cut.length;
            let content_defined = end < pending.len() || cut.length == MAX_CHUNK_BYTES;
            if !(content_defined || flush) {
                break;
            }
            out.push(self.deduplicated(stream, &pending[cut.offset..end]));
            taken = end;
        }
        if taken < pending.len() {
            pending.drain(..taken);
            self.held.insert(stream, pending);
        }
    }

    /// The stream is over: nothing of it stays held.
    pub fn forget(&mut self, stream: u32) {
        self.held.remove(&stream);
    }

    fn deduplicated(&mut self, stream: u32, bytes: &[u8]) -> Frame {
        let fingerprint = fingerprint(bytes);
        let len = bytes.len() as u32;
        if self.cache.get(&fingerprint).is_some() {
            self.counters.chunks_sent += 1;
            self.counters.cache_hits += 1;
            self.counters.cache_hit_bytes += u64::from(len);
            return Frame::Ref {
                stream,
                fingerprint,
                len,
            };
        }
        let cached = self.cache.admits(bytes.len()).then_some(fingerprint);
        self.cache.insert(fingerprint, len, ());
        Frame::Data {
            stream,
            chunk: self.literal(bytes, cached),
        }
    }

    fn literal(&mut self, bytes: &[u8], cached: Option<Fingerprint>) -> Chunk {
        self.counters.chunks_sent += 1;
        if self.features.lz && !bytes.is_empty() {
            self.counters.lz_input_bytes += bytes.len() as u64;
            let packed = lz4_flex::block::compress(bytes);
            if packed.len() <= bytes.len() - bytes.len() / 16 {
                self.counters.lz_paid_input_bytes += bytes.len() as u64;
                self.counters.lz_output_bytes += packed.len() as u64;
                return Chunk {
                    cached,
                    lz4_original_len: Some(bytes.len() as u32),
                    bytes: packed,
                };
            }
        }
        Chunk {
            cached,
            lz4_original_len: None,
            bytes: bytes.to_vec(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodecError {
    UnknownReference,
    Mismatch,
    BadLz4(String),
}

impl std::fmt::Display for CodecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::UnknownReference => write!(f, "a reference to a chunk this end does not hold"),
            Self::Mismatch => write!(f, "a chunk whose bytes do not match its fingerprint"),
            Self::BadLz4(why) => write!(f, "an LZ4 block that does not decode: {why}"),
        }
    }
}

impl std::error::Error for CodecError {}

pub struct Decoder {
    cache: ChunkCache<Vec<u8>>,
}

impl Decoder {
    pub fn new(cache_bytes: u64) -> Self {
        Self {
            cache: ChunkCache::new(cache_bytes),
        }
    }

    /// The original bytes of a DATA chunk, entered in the cache if the sender did.
    pub fn data(&mut self, chunk: Chunk) -> Result<Vec<u8>, CodecError> {
        let bytes = match chunk.lz4_original_len {
            Some(len) if len as usize > crate::wire::MAX_BODY_BYTES => {
                return Err(CodecError::BadLz4(format!("claims {len} bytes")));
            }
            Some(len) => lz4_flex::block::decompress(&chunk.bytes, len as usize)
                .map_err(|e| CodecError::BadLz4(e.to_string()))?,
            None => chunk.bytes,
        };
        if let Some(expected) = chunk.cached {
            if fingerprint(&bytes) != expected {
                return Err(CodecError::Mismatch);
            }
            self.cache
                .insert(expected, bytes.len() as u32, bytes.clone());
        }
        Ok(bytes)
    }

    pub fn reference(&self, fingerprint: &Fingerprint, len: u32) -> Result<Vec<u8>, CodecError> {
        match self.cache.get(fingerprint) {
            Some((held, bytes)) if *held == len => Ok(bytes.clone()),
            _ => Err(CodecError::UnknownReference),
        }
    }

    /// A DATA or REF frame's bytes; other frames carry none.
    pub fn decode(&mut self, frame: Frame) -> Result<Option<(u32, Vec<u8>)>, CodecError> {
        match frame {
            Frame::Data { stream, chunk } => Ok(Some((stream, self.data(chunk)?))),
            Frame::Ref {
                stream,
                fingerprint,
                len,
            } => Ok(Some((stream, self.reference(&fingerprint, len)?))),
            _ => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn through(
        encoder: &mut Encoder,
        decoder: &mut Decoder,
        writes: &[(u32, Vec<u8>, bool)],
    ) -> HashMap<u32, Vec<u8>> {
        let mut got: HashMap<u32, Vec<u8>> = HashMap::new();
        for (stream, bytes, flush) in writes {
            let mut frames = Vec::new();
            encoder.encode(*stream, bytes, *flush, &mut frames);
            for frame in frames {
                let mut wire = Vec::new();
                encoder.counters.wire_bytes += frame.encode_into(&mut wire) as u64;
                if let Some((s, b)) = decoder.decode(frame).unwrap() {
                    got.entry(s).or_default().extend_from_slice(&b);
                }
            }
        }
        got
    }

    /// A deterministic, partly compressible, partly repeating byte pattern.
    fn sample(seed: u64, len: usize) -> Vec<u8> {
        let mut x = seed.wrapping_mul(6_364_136_223_846_793_005) | 1;
        (0..len)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if (i / 4096) % 3 == 0 {
                    (i % 251) as u8
                } else {
                    x as u8
                }
            })
            .collect()
    }

    #[test]
    fn a_file_sent_twice_crosses_the_second_time_as_references() {
        let file = sample(1, 1 << 20);
        let features = Features {
            dre: true,
            lz: false,
        };
        let (mut enc, mut dec) = (Encoder::new(features, 64 << 20), Decoder::new(64 << 20));
        let first = through(&mut enc, &mut dec, &[(1, file.clone(), true)]);
        let after_first = enc.counters;
        let second = through(&mut enc, &mut dec, &[(3, file.clone(), true)]);
        assert_eq!(first[&1], file);
        assert_eq!(second[&3], file);
        let second_wire = enc.counters.wire_bytes - after_first.wire_bytes;
        assert!(
            second_wire * 100 < file.len() as u64,
            "{second_wire} bytes on the wire"
        );
        assert!(enc.counters.cache_hits > 0);
    }

    #[test]
    fn compression_is_skipped_where_it_does_not_pay() {
        let features = Features {
            dre: false,
            lz: true,
        };
        let (mut enc, mut dec) = (Encoder::new(features, 0), Decoder::new(0));
        let zeros = vec![0u8; 1 << 16];
        let got = through(&mut enc, &mut dec, &[(1, zeros.clone(), false)]);
        assert_eq!(got[&1], zeros);
        assert!(enc.counters.lz_output_bytes < 1024);
        let mut x = 88_172_645_463_325_252u64;
        let noise: Vec<u8> = (0..1 << 16)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
            })
            .collect();
        let before = enc.counters.lz_paid_input_bytes;
        let got = through(&mut enc, &mut dec, &[(3, noise.clone(), false)]);
        assert_eq!(got[&3], noise);
        assert_eq!(
            enc.counters.lz_paid_input_bytes, before,
            "noise went uncompressed"
        );
    }

    #[test]
    fn the_oldest_chunks_leave_first_and_a_reference_never_outlives_its_chunk() {
        let mut cache = ChunkCache::new(10);
        cache.insert([1; 16], 4, ());
        cache.insert([2; 16], 4, ());
        cache.insert([3; 16], 4, ());
        assert!(cache.get(&[1; 16]).is_none());
        assert!(cache.get(&[2; 16]).is_some() && cache.get(&[3; 16]).is_some());
        cache.insert([4; 16], 11, ());
        assert!(
            cache.get(&[4; 16]).is_none(),
            "larger than the budget: never entered"
        );
        let decoder = Decoder::new(10);
        assert_eq!(
            decoder.reference(&[2; 16], 4),
            Err(CodecError::UnknownReference)
        );
    }

    #[test]
    fn a_chunk_that_does_not_match_its_fingerprint_is_refused() {
        let mut decoder = Decoder::new(1 << 20);
        let chunk = Chunk {
            cached: Some([0; 16]),
            lz4_original_len: None,
            bytes: vec![1, 2, 3],
        };
        assert_eq!(decoder.data(chunk), Err(CodecError::Mismatch));
        let bomb = Chunk {
            cached: None,
            lz4_original_len: Some(u32::MAX),
            bytes: vec![0],
        };
        assert!(matches!(decoder.data(bomb), Err(CodecError::BadLz4(_))));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Whatever the features, the cache budget (evicting chunks mid-stream) and the
        /// way writes are split and interleaved between streams, every stream's bytes
        /// come out as they went in.
        #[test]
        fn streams_come_out_byte_exact(dre: bool, lz: bool, budget_kib in 0u64..512,
                                       writes in proptest::collection::vec((0u32..3, 0u64..6, 1usize..40_000, any::<bool>()), 1..30)) {
            let features = Features { dre, lz };
            let (mut enc, mut dec) = (Encoder::new(features, budget_kib << 10), Decoder::new(budget_kib << 10));
            let mut sent: HashMap<u32, Vec<u8>> = HashMap::new();
            let mut script = Vec::new();
            for (stream, seed, len, flush) in writes {
                let bytes = sample(seed, len);
                sent.entry(stream).or_default().extend_from_slice(&bytes);
                script.push((stream, bytes, flush));
            }
            for stream in sent.keys() {
                script.push((*stream, Vec::new(), true));
            }
            let got = through(&mut enc, &mut dec, &script);
            for (stream, bytes) in &sent {
                prop_assert_eq!(got.get(stream).map(Vec::len), Some(bytes.len()));
                prop_assert!(got[stream] == *bytes);
            }
        }
    }
}
