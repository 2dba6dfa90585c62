//! The accelerator pair's session over the WAN, version 1 (docs/accelerator-wire.md).
//! Every integer is big-endian.
//!
//! ```text
//! hello (near → far, once)   "LHAX" u16 version  u8 features (1 dre, 2 lz)  u64 cache bytes
//! answer (far → near, once)  "LHAX" u16 version  u8 status (0 ok, 1 refused)
//!                            u16 reason length  reason (UTF-8)
//! frame (either way)         u8 kind  u32 stream  u32 body length  body
//!   1 OPEN    body: target "host:port" (near → far)
//!   2 DATA    body: u8 flags (1 lz4, 2 cached)  [u8[16] fingerprint if cached]
//!                   [u32 original length if lz4]  bytes
//!   3 REF     body: u8[16] fingerprint  u32 length   (a chunk the peer holds)
//!   4 CREDIT  body: u32 bytes the peer may send more on this stream
//!   5 FIN     body: empty  (no more bytes this way; the socket's write side is shut)
//!   6 RESET   body: reason (UTF-8)  (the stream is over, with an error)
//! ```
//!
//! The far end refuses a hello of another version or with features it lacks, with a
//! reason, and closes: a peer that speaks something else is told so, never misread.
//! Decoding checks every length before it reads; a body longer than `MAX_BODY_BYTES` or a
//! kind it does not know is an error, never a panic or an allocation the peer chose.

use std::fmt;

pub const MAGIC: &[u8; 4] = b"LHAX";
pub const VERSION: u16 = 1;
pub const HELLO_BYTES: usize = 4 + 2 + 1 + 8;
pub const FRAME_HEADER_BYTES: usize = 1 + 4 + 4;
pub const FINGERPRINT_BYTES: usize = 16;
/// The largest body: a chunk of up to 1 MiB, its flags, fingerprint and length.
pub const MAX_BODY_BYTES: usize = (1 << 20) + 64;
/// The longest refusal reason or target read from a peer.
pub const MAX_TEXT_BYTES: usize = 1024;

pub type Fingerprint = [u8; FINGERPRINT_BYTES];

/// Which of the optional features a session uses; flow optimization is the session itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Features {
    pub dre: bool,
    pub lz: bool,
}

impl Features {
    const DRE: u8 = 1;
    const LZ: u8 = 2;

    pub fn bits(self) -> u8 {
        (u8::from(self.dre) * Self::DRE) | (u8::from(self.lz) * Self::LZ)
    }

    pub fn from_bits(bits: u8) -> Result<Self, WireError> {
        if bits & !(Self::DRE | Self::LZ) != 0 {
            return Err(WireError::UnknownFeatures(bits));
        }
        Ok(Self {
            dre: bits & Self::DRE != 0,
            lz: bits & Self::LZ != 0,
        })
    }

    /// The name the CLI and the bench use: "tfo", "tfo+dre", "tfo+lz", "tfo+dre+lz".
    pub fn name(self) -> String {
        let mut name = String::from("tfo");
        if self.dre {
            name.push_str("+dre");
        }
        if self.lz {
            name.push_str("+lz");
        }
        name
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hello {
    pub version: u16,
    pub features: Features,
    pub cache_bytes: u64,
}

impl Hello {
    pub fn encode(&self) -> [u8; HELLO_BYTES] {
        let mut out = [0u8; HELLO_BYTES];
        out[..4].copy_from_slice(MAGIC);
        out[4..6].copy_from_slice(&self.version.to_be_bytes());
        out[6] = self.features.bits();
        out[7..15].copy_from_slice(&self.cache_bytes.to_be_bytes());
        out
    }

    /// The version is read before the features, so another version's hello is named as
    /// such rather than as bad features.
    pub fn decode(bytes: &[u8; HELLO_BYTES]) -> Result<Self, WireError> {
        if &bytes[..4] != MAGIC {
            return Err(WireError::NotAnAccelerator);
        }
        let version = u16::from_be_bytes([bytes[4], bytes[5]]);
        if version != VERSION {
            return Err(WireError::Version(version));
        }
        Ok(Self {
            version,
            features: Features::from_bits(bytes[6])?,
            cache_bytes: u64::from_be_bytes(bytes[7..15].try_into().expect("8 bytes")),
        })
    }
}

/// The far end's answer to a hello: accepted, or refused with a reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub version: u16,
    pub refusal: Option<String>,
}

impl Answer {
    pub fn encode(&self) -> Vec<u8> {
        let reason = self.refusal.as_deref().unwrap_or("").as_bytes();
        let reason = &reason[..reason.len().min(MAX_TEXT_BYTES)];
        let mut out = Vec::with_capacity(9 + reason.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&self.version.to_be_bytes());
        out.push(u8::from(self.refusal.is_some()));
        out.extend_from_slice(&(reason.len() as u16).to_be_bytes());
        out.extend_from_slice(reason);
        out
    }

    /// The fixed part (magic, version, status, reason length); the reason follows.
    pub const HEAD_BYTES: usize = 9;

    /// Reads the head; returns the answer without its reason and the reason's length.
    pub fn decode_head(head: &[u8; Self::HEAD_BYTES]) -> Result<(Self, usize), WireError> {
        if &head[..4] != MAGIC {
            return Err(WireError::NotAnAccelerator);
        }
        let version = u16::from_be_bytes([head[4], head[5]]);
        let refused = match head[6] {
            0 => false,
            1 => true,
            other => return Err(WireError::BadBody(format!("answer status {other}"))),
        };
        let reason_len = usize::from(u16::from_be_bytes([head[7], head[8]]));
        if reason_len > MAX_TEXT_BYTES {
            return Err(WireError::TooLong(reason_len));
        }
        let refusal = refused.then(String::new);
        Ok((Self { version, refusal }, reason_len))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    Open {
        stream: u32,
        target: String,
    },
    Data {
        stream: u32,
        chunk: Chunk,
    },
    Ref {
        stream: u32,
        fingerprint: Fingerprint,
        len: u32,
    },
    Credit {
        stream: u32,
        bytes: u32,
    },
    Fin {
        stream: u32,
    },
    Reset {
        stream: u32,
        reason: String,
    },
}

/// A DATA body: the bytes as sent (compressed if `lz4_original_len` is set, to that many bytes),
/// and the fingerprint under which the receiver keeps the original, if it should.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    pub cached: Option<Fingerprint>,
    pub lz4_original_len: Option<u32>,
    pub bytes: Vec<u8>,
}

const OPEN: u8 = 1;
const DATA: u8 = 2;
const REF: u8 = 3;
const CREDIT: u8 = 4;
const FIN: u8 = 5;
const RESET: u8 = 6;
const FLAG_LZ4: u8 = 1;
const FLAG_CACHED: u8 = 2;

impl Frame {
    pub fn stream(&self) -> u32 {
        match self {
            Self::Open { stream, .. }
            | Self::Data { stream, .. }
            | Self::Ref { stream, .. }
            | Self::Credit { stream, .. }
            | Self::Fin { stream }
            | Self::Reset { stream, .. } => *stream,
        }
    }

    /// Appends the frame to `out`; returns how many bytes it took.
    pub fn encode_into(&self, out: &mut Vec<u8>) -> usize {
        let start = out.len();
        let (kind, stream) = (self.kind(), self.stream());
        out.push(kind);
        out.extend_from_slice(&stream.to_be_bytes());
        let len_at = out.len();
        out.extend_from_slice(&[0; 4]);
        match self {
            Self::Open { target, .. } => out.extend_from_slice(target.as_bytes()),
            Self::Data { chunk, .. } => {
                let flags = (u8::from(chunk.lz4_original_len.is_some()) * FLAG_LZ4)
                    | (u8::from(chunk.cached.is_some()) * FLAG_CACHED);
                out.push(flags);
                if let Some(fingerprint) = &chunk.cached {
                    out.extend_from_slice(fingerprint);
                }
                if let Some(len) = chunk.lz4_original_len {
                    out.extend_from_slice(&len.to_be_bytes());
                }
                out.extend_from_slice(&chunk.bytes);
            }
            Self::Ref {
                fingerprint, len, ..
            } => {
                out.extend_from_slice(fingerprint);
                out.extend_from_slice(&len.to_be_bytes());
            }
            Self::Credit { bytes, .. } => out.extend_from_slice(&bytes.to_be_bytes()),
            Self::Fin { .. } => {}
            Self::Reset { reason, .. } => {
                let reason = reason.as_bytes();
                out.extend_from_slice(&reason[..reason.len().min(MAX_TEXT_BYTES)]);
            }
        }
        let body = (out.len() - len_at - 4) as u32;
        out[len_at..len_at + 4].copy_from_slice(&body.to_be_bytes());
        out.len() - start
    }

    fn kind(&self) -> u8 {
        match self {
            Self::Open { .. } => OPEN,
            Self::Data { .. } => DATA,
            Self::Ref { .. } => REF,
            Self::Credit { .. } => CREDIT,
            Self::Fin { .. } => FIN,
            Self::Reset { .. } => RESET,
        }
    }

    /// The kind, stream and body length of a frame header, checked.
    pub fn decode_header(header: &[u8; FRAME_HEADER_BYTES]) -> Result<(u8, u32, usize), WireError> {
        let kind = header[0];
        if !(OPEN..=RESET).contains(&kind) {
            return Err(WireError::UnknownKind(kind));
        }
        let stream = u32::from_be_bytes(header[1..5].try_into().expect("4 bytes"));
        let len = u32::from_be_bytes(header[5..9].try_into().expect("4 bytes")) as usize;
        if len > MAX_BODY_BYTES {
            return Err(WireError::TooLong(len));
        }
        Ok((kind, stream, len))
    }

    /// A frame from its checked header and its whole body.
    pub fn decode_body(kind: u8, stream: u32, body: &[u8]) -> Result<Self, WireError> {
        let mut reader = Reader(body);
        let frame = match kind {
            OPEN => Self::Open {
                stream,
                target: reader.text()?,
            },
            DATA => {
                let flags = reader.take(1)?[0];
                if flags & !(FLAG_LZ4 | FLAG_CACHED) != 0 {
                    return Err(WireError::BadBody(format!("DATA flags {flags:#x}")));
                }
                let cached = if flags & FLAG_CACHED != 0 {
                    Some(reader.fingerprint()?)
                } else {
                    None
                };
                let lz4_original_len = if flags & FLAG_LZ4 != 0 {
                    Some(reader.u32()?)
                } else {
                    None
                };
                let chunk = Chunk {
                    cached,
                    lz4_original_len,
                    bytes: reader.rest().to_vec(),
                };
                Self::Data { stream, chunk }
            }
            REF => Self::Ref {
                stream,
                fingerprint: reader.fingerprint()?,
                len: reader.u32()?,
            },
            CREDIT => Self::Credit {
                stream,
                bytes: reader.u32()?,
            },
            FIN => Self::Fin { stream },
            RESET => Self::Reset {
                stream,
                reason: reader.text()?,
            },
            other => return Err(WireError::UnknownKind(other)),
        };
        if !reader.0.is_empty() {
            return Err(WireError::BadBody(format!(
                "{} bytes past the end",
                reader.0.len()
            )));
        }
        Ok(frame)
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if self.0.len() < n {
            return Err(WireError::BadBody(format!(
                "{} bytes where {n} were needed",
                self.0.len()
            )));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u32(&mut self) -> Result<u32, WireError> {
        Ok(u32::from_be_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }

    fn fingerprint(&mut self) -> Result<Fingerprint, WireError> {
        Ok(self.take(FINGERPRINT_BYTES)?.try_into().expect("16 bytes"))
    }

    fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.0)
    }

    fn text(&mut self) -> Result<String, WireError> {
        let bytes = self.rest();
        if bytes.len() > MAX_TEXT_BYTES {
            return Err(WireError::TooLong(bytes.len()));
        }
        String::from_utf8(bytes.to_vec())
            .map_err(|_| WireError::BadBody("text is not UTF-8".into()))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireError {
    NotAnAccelerator,
    Version(u16),
    UnknownFeatures(u8),
    UnknownKind(u8),
    TooLong(usize),
    BadBody(String),
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotAnAccelerator => write!(f, "the peer is not a longhaul accelerator"),
            Self::Version(v) => write!(
                f,
                "the peer speaks accelerator protocol version {v}, this one {VERSION}"
            ),
            Self::UnknownFeatures(bits) => write!(f, "unknown features {bits:#x}"),
            Self::UnknownKind(kind) => write!(f, "unknown frame kind {kind}"),
            Self::TooLong(n) => write!(f, "a {n}-byte body is longer than allowed"),
            Self::BadBody(what) => write!(f, "malformed frame: {what}"),
        }
    }
}

impl std::error::Error for WireError {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn round_trip(frame: &Frame) -> Frame {
        let mut out = Vec::new();
        let n = frame.encode_into(&mut out);
        assert_eq!(n, out.len());
        let header: [u8; FRAME_HEADER_BYTES] = out[..FRAME_HEADER_BYTES].try_into().unwrap();
        let (kind, stream, len) = Frame::decode_header(&header).unwrap();
        assert_eq!(len, out.len() - FRAME_HEADER_BYTES);
        Frame::decode_body(kind, stream, &out[FRAME_HEADER_BYTES..]).unwrap()
    }

    #[test]
    fn every_kind_of_frame_survives_encoding() {
        let frames = [
            Frame::Open {
                stream: 1,
                target: "198.18.0.2:5301".into(),
            },
            Frame::Data {
                stream: 7,
                chunk: Chunk {
                    cached: Some([9; 16]),
                    lz4_original_len: Some(800),
                    bytes: vec![1, 2, 3],
                },
            },
            Frame::Data {
                stream: 7,
                chunk: Chunk {
                    cached: None,
                    lz4_original_len: None,
                    bytes: vec![],
                },
            },
            Frame::Ref {
                stream: u32::MAX,
                fingerprint: [3; 16],
                len: 8192,
            },
            Frame::Credit {
                stream: 2,
                bytes: 65536,
            },
            Frame::Fin { stream: 2 },
            Frame::Reset {
                stream: 2,
                reason: "connection refused".into(),
            },
        ]; // fmt: skip
        for frame in &frames {
            assert_eq!(&round_trip(frame), frame);
        }
    }

    #[test]
    fn another_version_is_named_before_its_features_are_read() {
        let mut hello = Hello {
            version: VERSION,
            features: Features {
                dre: true,
                lz: true,
            },
            cache_bytes: 1 << 30,
        }
        .encode(); // fmt: skip
        assert_eq!(Hello::decode(&hello).unwrap().features.name(), "tfo+dre+lz");
        hello[5] = 9;
        hello[6] = 0xff;
        assert_eq!(Hello::decode(&hello), Err(WireError::Version(9)));
        hello[0] = b'G';
        assert_eq!(Hello::decode(&hello), Err(WireError::NotAnAccelerator));
    }

    #[test]
    fn a_refusal_carries_its_reason() {
        let answer = Answer {
            version: VERSION,
            refusal: Some("no room".into()),
        };
        let bytes = answer.encode();
        let head: [u8; Answer::HEAD_BYTES] = bytes[..Answer::HEAD_BYTES].try_into().unwrap();
        let (decoded, reason_len) = Answer::decode_head(&head).unwrap();
        assert_eq!(decoded.refusal, Some(String::new()));
        assert_eq!(&bytes[Answer::HEAD_BYTES..], b"no room");
        assert_eq!(reason_len, 7);
    }

    #[test]
    fn a_header_that_claims_a_huge_body_is_refused_before_any_allocation() {
        let mut header = [0u8; FRAME_HEADER_BYTES];
        header[0] = DATA;
        header[5..9].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(matches!(
            Frame::decode_header(&header),
            Err(WireError::TooLong(_))
        ));
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            if bytes.len() >= FRAME_HEADER_BYTES {
                let header: [u8; FRAME_HEADER_BYTES] = bytes[..FRAME_HEADER_BYTES].try_into().unwrap();
                if let Ok((kind, stream, _)) = Frame::decode_header(&header) {
                    let _ = Frame::decode_body(kind, stream, &bytes[FRAME_HEADER_BYTES..]);
                }
            }
            if bytes.len() >= HELLO_BYTES {
                let _ = Hello::decode(bytes[..HELLO_BYTES].try_into().unwrap());
            }
            if bytes.len() >= Answer::HEAD_BYTES {
                let _ = Answer::decode_head(bytes[..Answer::HEAD_BYTES].try_into().unwrap());
            }
        }

        #[test]
        fn any_data_frame_round_trips(stream: u32, bytes in proptest::collection::vec(any::<u8>(), 0..300),
                                      cached: Option<[u8; 16]>, lz4_original_len: Option<u32>) {
            let frame = Frame::Data { stream, chunk: Chunk { cached, lz4_original_len, bytes } };
            prop_assert_eq!(round_trip(&frame), frame);
        }
    }
}
