//! A link encryptor at each end of the line, a bump in the wire as the 10 Gb/s devices
//! were: what enters the line at one end is sealed with AES-256-GCM, what leaves it at the
//! other is opened, checked and handed on, or dropped and counted.
//!
//! The format is ESP's in tunnel mode with AES-GCM (RFC 4303, RFC 4106) and an implicit
//! IV (RFC 8750): each frame is one AEAD message under its security association's key,
//! its nonce the association's 4-byte salt and the frame's 64-bit sequence number (RFC
//! 4106 §4), its additional data the SPI and sequence number (RFC 4106 §5), its tag 16
//! bytes (RFC 4106 §6). On the line each segment costs `SEGMENT_OVERHEAD_BYTES` more: the
//! outer IPv4 header (20, RFC 791), SPI (4), sequence number (8, carried whole rather than
//! ESP's low 32 bits, RFC 4303 §2.2.1) and tag (16). 48 bytes is why USN's hosts had to
//! send IP packets of 8,950 bytes, not 9,000, for the sealed packet to fit a 9,000-byte
//! line: a packet that does not fit is fragmented after sealing (RFC 4459 §3: a second
//! frame, with its own IP header and framing, for the last bytes) or dropped
//! (`Oversize`).
//!
//! Keys: one shared secret, configured at both ends, and one key per association, derived
//! by HKDF-SHA256 (RFC 5869) from the secret and the SPI. The sender starts at a random
//! SPI and moves to the next (a new key) every `rekey_interval_ns`, as `IPsec` rekeys by
//! making a new association; a receiver keeps the current association and the one before
//! it (frames sealed just before a rekey are still on the line), each with its replay
//! window (RFC 4303 §3.4.3), checked before the tag and moved only by authentic frames.
//! A random first SPI keeps a restarted emulator from reusing a key with sequence numbers
//! it used before (NIST SP 800-38D §8.2: a nonce is never repeated under a key).
//!
//! Frames are held in the emulator as `[virtio header][ciphertext][tag][SPI][sequence]`:
//! the virtio header is the emulator's note of how the kernel cut the packet (it never
//! crosses a line), so it stays in clear and outside the message. A GSO super-packet is
//! sealed as one message and charged the overhead once per segment it stands for: GCM's
//! work is per byte, so the CPU cost is about that of sealing each segment (one call per
//! frame instead of one per segment; the per-call cost was not measured), but a tampered
//! super-packet loses all its segments, not one.
//!
//! Pure: no sockets, no clock (instants are arguments), no randomness (the first SPI is).

use std::collections::VecDeque;

use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
use aws_lc_rs::hkdf::{HKDF_SHA256, KeyType, Salt};
use longhaul_link::Shape;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};

/// AES-GCM's tag (RFC 4106 §6: the 16-octet ICV).
pub const TAG_BYTES: usize = 16;
pub const SPI_BYTES: usize = 4;
pub const SEQ_BYTES: usize = 8;
/// What sealing adds to a frame held in the emulator.
pub const TRAILER_BYTES: usize = TAG_BYTES + SPI_BYTES + SEQ_BYTES;
/// The outer IPv4 header of tunnel mode (RFC 791, no options).
pub const OUTER_IP_BYTES: u64 = 20;
/// What each segment costs on the line beyond its own IP packet.
pub const SEGMENT_OVERHEAD_BYTES: u64 = OUTER_IP_BYTES + TRAILER_BYTES as u64;
/// The least line MTU: IPv6's minimum link MTU (RFC 8200 §5), room for a sealed header.
pub const MIN_MTU_BYTES: u32 = 1280;
/// HKDF's salt (RFC 5869 §2.2), naming this format: another version derives other keys.
const KDF_SALT: &[u8] = b"longhaul-wan encryptor v1";
const KEY_AND_SALT_BYTES: usize = 32 + 4;

/// What happens to a sealed packet longer than the line's MTU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Oversize {
    /// Fragmented after sealing: a second frame carries the bytes that did not fit (RFC
    /// 4459 §3), each with its own IP header and framing; the far end reassembles.
    #[default]
    Fragment,
    /// Dropped, as a switch drops a frame longer than its port's MTU: the host's large
    /// packets vanish (a path-MTU black hole, RFC 2923 §2.1).
    Drop,
}

/// How the encryptors at both ends are set up. The same at both ends and both directions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EncryptorConfig {
    /// The shared secret the keys are derived from (at least 32 bytes; in JSON as hex).
    #[serde(with = "hex_bytes")]
    pub secret: Vec<u8>,
    /// The line's MTU: the largest sealed IP packet one frame carries.
    #[serde(default = "default_mtu")]
    pub mtu_bytes: u32,
    #[serde(default)]
    pub oversize: Oversize,
    /// How long one key seals before the sender moves to the next association.
    #[serde(default = "default_rekey")]
    pub rekey_interval_ns: u64,
    /// Sequence numbers behind the highest seen that are still accepted once (RFC 4303
    /// §3.4.3 asks for at least 32, 64 by default; RFC 6479 larger at high speed).
    #[serde(default = "default_window")]
    pub replay_window: u32,
    /// Fault for tests: the probability that a sealed frame has one bit flipped on the
    /// line (an attacker in the path): each one must be refused and counted.
    #[serde(default)]
    pub tamper: f64,
}

/// A jumbo frame's MTU, as USN's 10GigE and OC-192 path carried.
fn default_mtu() -> u32 {
    9_000
}

/// Ten minutes. Not from a device's manual (USN's devices are not named): the interval
/// decides only how often the key changes, far inside AES-GCM's limits per key (NIST SP
/// 800-38D §8.3; the 64-bit sequence number never wraps).
fn default_rekey() -> u64 {
    600_000_000_000
}

fn default_window() -> u32 {
    1_024
}

impl EncryptorConfig {
    pub fn new(secret: Vec<u8>) -> Self {
        Self {
            secret,
            mtu_bytes: default_mtu(),
            oversize: Oversize::default(),
            rekey_interval_ns: default_rekey(),
            replay_window: default_window(),
            tamper: 0.0,
        }
    }

    pub fn check(&self) -> Result<(), String> {
        if self.secret.len() < 32 {
            return Err(format!(
                "the encryptor's secret has {} bytes; it needs at least 32 (e.g. head -c 32 /dev/urandom)",
                self.secret.len()
            ));
        }
        if self.mtu_bytes < MIN_MTU_BYTES {
            return Err(format!(
                "an MTU of {} bytes is below {MIN_MTU_BYTES}",
                self.mtu_bytes
            ));
        }
        if self.rekey_interval_ns == 0 {
            return Err("the rekey interval must be longer than 0".into());
        }
        if !(32..=1 << 20).contains(&self.replay_window) {
            return Err(format!(
                "a replay window of {} is outside 32 .. 1048576",
                self.replay_window
            ));
        }
        if !(0.0..=1.0).contains(&self.tamper) {
            return Err(format!("tamper {} is not a probability", self.tamper));
        }
        Ok(())
    }

    /// What a packet of `shape` costs on the line sealed, its framing `framing_bytes` per
    /// frame; None if it is dropped for its size (`Oversize::Drop`).
    pub fn sealed_shape(&self, shape: Shape, framing_bytes: u64) -> Option<Shape> {
        let full = shape.segment_ip_bytes(0);
        let last = shape.last_segment_ip_bytes;
        let sealed = |ip: u64| self.sealed_segment_bytes(ip, framing_bytes);
        let full_sealed = sealed(full)?;
        let last_sealed = sealed(last)?;
        let others = u64::from(shape.segments.saturating_sub(1));
        Some(Shape {
            segments: shape.segments,
            ip_bytes: full_sealed * others + last_sealed,
            last_segment_ip_bytes: last_sealed,
        })
    }

    /// The IP bytes one segment of `ip_bytes` takes sealed, the framing of any extra
    /// fragment included (the link adds the first frame's framing itself).
    fn sealed_segment_bytes(&self, ip_bytes: u64, framing_bytes: u64) -> Option<u64> {
        let sealed = ip_bytes + SEGMENT_OVERHEAD_BYTES;
        let mtu = u64::from(self.mtu_bytes);
        if sealed <= mtu {
            return Some(sealed);
        }
        if self.oversize == Oversize::Drop {
            return None;
        }
        // Each fragment carries up to the MTU less its IP header, in multiples of 8 bytes
        // but the last (RFC 791, fragment offset).
        let per_fragment = (mtu - OUTER_IP_BYTES) / 8 * 8;
        let fragments = (sealed - OUTER_IP_BYTES).div_ceil(per_fragment);
        Some(sealed + (fragments - 1) * (OUTER_IP_BYTES + framing_bytes))
    }
}

/// One security association: its SPI and what the secret gives for it.
struct Association {
    spi: u32,
    key: LessSafeKey,
    salt: [u8; 4],
}

struct OkmLen(usize);

impl KeyType for OkmLen {
    fn len(&self) -> usize {
        self.0
    }
}

impl Association {
    fn derive(secret: &[u8], spi: u32) -> Self {
        let prk = Salt::new(HKDF_SHA256, KDF_SALT).extract(secret);
        let info = spi.to_be_bytes();
        let mut okm = [0u8; KEY_AND_SALT_BYTES];
        prk.expand(&[&info], OkmLen(KEY_AND_SALT_BYTES))
            .and_then(|o| o.fill(&mut okm))
            .expect("HKDF-SHA256 gives 36 bytes");
        let unbound = UnboundKey::new(&AES_256_GCM, &okm[..32]).expect("a 32-byte key");
        Self {
            spi,
            key: LessSafeKey::new(unbound),
            salt: okm[32..].try_into().expect("4 bytes"),
        }
    }

    fn nonce(&self, seq: u64) -> Nonce {
        let mut bytes = [0u8; 12];
        bytes[..4].copy_from_slice(&self.salt);
        bytes[4..].copy_from_slice(&seq.to_be_bytes());
        Nonce::assume_unique_for_key(bytes)
    }
}

fn aad(spi: u32, seq: u64) -> [u8; SPI_BYTES + SEQ_BYTES] {
    let mut bytes = [0u8; SPI_BYTES + SEQ_BYTES];
    bytes[..SPI_BYTES].copy_from_slice(&spi.to_be_bytes());
    bytes[SPI_BYTES..].copy_from_slice(&seq.to_be_bytes());
    bytes
}

/// The sending end of one direction.
pub struct Sealer {
    secret: Vec<u8>,
    association: Association,
    /// The last sequence number used (the first frame of an association is 1).
    seq: u64,
    keyed_at_ns: u64,
    rekey_interval_ns: u64,
    pub rekeys: u64,
}

impl Sealer {
    /// A sealer whose first association is `first_spi` (pick it at random), from `now_ns`.
    pub fn new(config: &EncryptorConfig, first_spi: u32, now_ns: u64) -> Self {
        Self {
            secret: config.secret.clone(),
            association: Association::derive(&config.secret, first_spi),
            seq: 0,
            keyed_at_ns: now_ns,
            rekey_interval_ns: config.rekey_interval_ns,
            rekeys: 0,
        }
    }

    /// Seal the frame `frame[..len]` (its first `clear` bytes stay in clear, outside the
    /// message) in place; `frame` has room for `TRAILER_BYTES` more. Its new length.
    pub fn seal(&mut self, now_ns: u64, frame: &mut [u8], clear: usize, len: usize) -> usize {
        if now_ns.saturating_sub(self.keyed_at_ns) >= self.rekey_interval_ns || self.seq == u64::MAX
        {
            let next = self.association.spi.wrapping_add(1);
            self.association = Association::derive(&self.secret, next);
            self.seq = 0;
            self.keyed_at_ns = now_ns;
            self.rekeys += 1;
        }
        self.seq += 1;
        let a = &self.association;
        let header = aad(a.spi, self.seq);
        let tag = a
            .key
            .seal_in_place_separate_tag(
                a.nonce(self.seq),
                Aad::from(header),
                &mut frame[clear..len],
            )
            .expect("AES-GCM seals any frame the emulator holds");
        frame[len..len + TAG_BYTES].copy_from_slice(tag.as_ref());
        frame[len + TAG_BYTES..len + TRAILER_BYTES].copy_from_slice(&header);
        len + TRAILER_BYTES
    }
}

/// Why a frame was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Too short to hold a trailer.
    Truncated,
    /// Its sequence number was seen, or is behind the replay window.
    Replayed,
    /// Its tag does not match (altered, forged, or of an association we cannot derive).
    Forged,
}

/// Which sequence numbers an association has accepted (RFC 4303 §3.4.3, Appendix A).
#[derive(Debug, Clone)]
pub struct ReplayWindow {
    bits: Vec<u64>,
    /// The highest sequence number accepted (0: none yet).
    top: u64,
}

impl ReplayWindow {
    pub fn new(size: u32) -> Self {
        Self {
            bits: vec![0; (size as usize).div_ceil(64)],
            top: 0,
        }
    }

    fn size(&self) -> u64 {
        self.bits.len() as u64 * 64
    }

    fn bit(&self, seq: u64) -> (usize, u64) {
        let at = seq % self.size();
        ((at / 64) as usize, 1 << (at % 64))
    }

    /// Whether `seq` may be accepted (before its tag is checked).
    pub fn admits(&self, seq: u64) -> bool {
        if seq == 0 {
            return false;
        }
        if seq > self.top {
            return true;
        }
        if self.top - seq >= self.size() {
            return false;
        }
        let (word, mask) = self.bit(seq);
        self.bits[word] & mask == 0
    }

    /// Note `seq` accepted (after its tag was checked).
    pub fn accept(&mut self, seq: u64) {
        if seq > self.top {
            if seq - self.top >= self.size() {
                self.bits.fill(0);
            } else {
                for skipped in self.top + 1..seq {
                    let (word, mask) = self.bit(skipped);
                    self.bits[word] &= !mask;
                }
            }
            self.top = seq;
        }
        let (word, mask) = self.bit(seq);
        self.bits[word] |= mask;
    }
}

/// The receiving end of one direction.
pub struct Opener {
    secret: Vec<u8>,
    window_size: u32,
    /// The newest association last: the current one and the one before it.
    associations: VecDeque<(Association, ReplayWindow)>,
}

/// Associations a receiver keeps: the current one and the one before it.
const KEPT_ASSOCIATIONS: usize = 2;
/// How far ahead of the newest association a new one may be.
const MAX_SPI_STEP: u32 = 16;

impl Opener {
    pub fn new(config: &EncryptorConfig) -> Self {
        Self {
            secret: config.secret.clone(),
            window_size: config.replay_window,
            associations: VecDeque::new(),
        }
    }

    /// Open `frame` (its first `clear` bytes in clear) in place: the length of the frame
    /// it was, or why it is refused.
    pub fn open(&mut self, frame: &mut [u8], clear: usize) -> Result<usize, Refusal> {
        let len = frame.len();
        if len < clear + TRAILER_BYTES {
            return Err(Refusal::Truncated);
        }
        let body_end = len - TRAILER_BYTES;
        let header: [u8; SPI_BYTES + SEQ_BYTES] =
            frame[body_end + TAG_BYTES..].try_into().expect("12 bytes");
        let spi = u32::from_be_bytes(header[..SPI_BYTES].try_into().expect("4 bytes"));
        let seq = u64::from_be_bytes(header[SPI_BYTES..].try_into().expect("8 bytes"));
        let known = self.associations.iter().position(|(a, _)| a.spi == spi);
        let fresh = match known {
            Some(index) if !self.associations[index].1.admits(seq) => {
                return Err(Refusal::Replayed);
            }
            Some(_) => None,
            None if !self.may_follow(spi) => return Err(Refusal::Replayed),
            None => Some(Association::derive(&self.secret, spi)),
        };
        let association = match (&fresh, known) {
            (Some(fresh), _) => fresh,
            (None, Some(index)) => &self.associations[index].0,
            (None, None) => unreachable!("an association is known or fresh"),
        };
        let opened = association.key.open_in_place(
            association.nonce(seq),
            Aad::from(header),
            &mut frame[clear..body_end + TAG_BYTES],
        );
        if opened.is_err() {
            return Err(Refusal::Forged);
        }
        let index = match (fresh, known) {
            (Some(fresh), _) => self.install(fresh),
            (None, index) => index.expect("known"),
        };
        self.associations[index].1.accept(seq);
        Ok(body_end)
    }

    /// Whether a frame of an association not kept may start a new one: the first any
    /// sender shows, or one of the next few after the newest (a rekey, or several whose
    /// frames were all lost). One behind the kept ones is a replay of frames whose window
    /// is gone.
    fn may_follow(&self, spi: u32) -> bool {
        self.associations
            .back()
            .is_none_or(|(newest, _)| (1..=MAX_SPI_STEP).contains(&spi.wrapping_sub(newest.spi)))
    }

    /// Keep an authenticated new association, forgetting the oldest beyond what is kept;
    /// its index.
    fn install(&mut self, association: Association) -> usize {
        self.associations
            .push_back((association, ReplayWindow::new(self.window_size)));
        while self.associations.len() > KEPT_ASSOCIATIONS {
            self.associations.pop_front();
        }
        self.associations.len() - 1
    }
}

/// What the encryptors of one direction did.
#[derive(Debug, Default, Clone, Serialize)]
pub struct EncryptorCounters {
    pub sealed_frames: u64,
    /// Bytes sealed (the frames' IP packets).
    pub sealed_bytes: u64,
    /// Time spent sealing and opening: the encryptor's cost in CPU.
    pub seal_ns: u64,
    pub opened_frames: u64,
    pub open_ns: u64,
    /// Frames the tamper fault altered on the line.
    pub tampered: u64,
    /// Frames refused at the far end, by why.
    pub refused_forged: u64,
    pub refused_replayed: u64,
    pub refused_truncated: u64,
    /// Segments that did not fit the MTU sealed: fragmented, or dropped with their frame.
    pub fragmented_segments: u64,
    pub oversize_dropped_frames: u64,
    pub rekeys: u64,
}

/// The encryptors of a link: a sealer where each direction enters the line and an
/// opener where it leaves, and the tamper fault between them.
pub struct LinkEncryptors {
    pub config: EncryptorConfig,
    sealers: [Sealer; 2],
    openers: [Opener; 2],
    tamper_rng: Xoshiro256PlusPlus,
    pub counters: [EncryptorCounters; 2],
}

impl LinkEncryptors {
    /// `first_spis` of each direction: pick them at random.
    pub fn new(config: EncryptorConfig, first_spis: [u32; 2], seed: u64, now_ns: u64) -> Self {
        Self {
            sealers: first_spis.map(|spi| Sealer::new(&config, spi, now_ns)),
            openers: [Opener::new(&config), Opener::new(&config)],
            tamper_rng: Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x656e_6372_7970_7421),
            counters: Default::default(),
            config,
        }
    }

    /// What a frame of `shape` costs on direction `direction`'s line sealed (None: dropped
    /// for its size), counted.
    pub fn shape(&mut self, direction: usize, shape: Shape, framing_bytes: u64) -> Option<Shape> {
        let sealed = self.config.sealed_shape(shape, framing_bytes);
        let c = &mut self.counters[direction];
        let over = |ip: u64| ip + SEGMENT_OVERHEAD_BYTES > u64::from(self.config.mtu_bytes);
        match sealed {
            None => c.oversize_dropped_frames += 1,
            Some(_) if over(shape.segment_ip_bytes(0)) => {
                let last_fits = !over(shape.last_segment_ip_bytes);
                c.fragmented_segments += u64::from(shape.segments) - u64::from(last_fits);
            }
            Some(_) => {}
        }
        sealed
    }

    /// Seal a frame entering direction `direction` (see `Sealer::seal`); its new length.
    pub fn seal(
        &mut self,
        direction: usize,
        now_ns: u64,
        frame: &mut [u8],
        clear: usize,
        len: usize,
    ) -> usize {
        let sealer = &mut self.sealers[direction];
        let sealed = sealer.seal(now_ns, frame, clear, len);
        let c = &mut self.counters[direction];
        c.sealed_frames += 1;
        c.sealed_bytes += (len - clear) as u64;
        c.rekeys = sealer.rekeys;
        sealed
    }

    /// A frame leaving direction `direction`'s line, perhaps tampered with on the way,
    /// opened in place: its length, or None if refused (counted).
    pub fn open(&mut self, direction: usize, frame: &mut [u8], clear: usize) -> Option<usize> {
        let c = &mut self.counters[direction];
        if self.config.tamper > 0.0
            && frame.len() > clear
            && self.tamper_rng.random_bool(self.config.tamper)
        {
            let bit = self.tamper_rng.random_range(clear * 8..frame.len() * 8);
            frame[bit / 8] ^= 1 << (bit % 8);
            c.tampered += 1;
        }
        match self.openers[direction].open(frame, clear) {
            Ok(len) => {
                c.opened_frames += 1;
                Some(len)
            }
            Err(Refusal::Forged) => {
                c.refused_forged += 1;
                None
            }
            Err(Refusal::Replayed) => {
                c.refused_replayed += 1;
                None
            }
            Err(Refusal::Truncated) => {
                c.refused_truncated += 1;
                None
            }
        }
    }
}

/// Hex in JSON for the secret.
mod hex_bytes {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        use std::fmt::Write;
        let text = bytes.iter().fold(String::new(), |mut text, b| {
            let _ = write!(text, "{b:02x}");
            text
        });
        s.serialize_str(&text)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        super::parse_hex(&text).map_err(serde::de::Error::custom)
    }
}

/// Bytes from hex (whitespace around them ignored).
pub fn parse_hex(text: &str) -> Result<Vec<u8>, String> {
    let text = text.trim();
    if !text.len().is_multiple_of(2) {
        return Err("hex needs an even number of digits".into());
    }
    (0..text.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&text[i..i + 2], 16)
                .map_err(|_| format!("{:?} is not hex", &text[i..i + 2]))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const CLEAR: usize = 10;

    fn config() -> EncryptorConfig {
        EncryptorConfig::new((0..32).collect())
    }

    fn sealed(sealer: &mut Sealer, now_ns: u64, body: &[u8]) -> Vec<u8> {
        let mut frame = vec![7u8; CLEAR];
        frame.extend_from_slice(body);
        let len = frame.len();
        frame.resize(len + TRAILER_BYTES, 0);
        let n = sealer.seal(now_ns, &mut frame, CLEAR, len);
        frame.truncate(n);
        frame
    }

    fn opened(opener: &mut Opener, mut frame: Vec<u8>) -> Result<Vec<u8>, Refusal> {
        let n = opener.open(&mut frame, CLEAR)?;
        Ok(frame[CLEAR..n].to_vec())
    }

    #[test]
    fn a_sealed_frame_opens_to_what_it_was_and_hides_it() {
        let c = config();
        let mut sealer = Sealer::new(&c, 0x1234, 0);
        let mut opener = Opener::new(&c);
        let body = b"an IP packet with something to hide in it".to_vec();
        let frame = sealed(&mut sealer, 0, &body);
        assert_eq!(frame.len(), CLEAR + body.len() + TRAILER_BYTES);
        assert!(!frame.windows(9).any(|w| w == b"something"));
        assert_eq!(frame[..CLEAR], [7u8; CLEAR]);
        assert_eq!(opened(&mut opener, frame).unwrap(), body);
    }

    #[test]
    fn every_flipped_bit_is_refused() {
        let c = config();
        let mut sealer = Sealer::new(&c, 1, 0);
        let frame = sealed(&mut sealer, 0, &[0x55; 40]);
        for bit in CLEAR * 8..frame.len() * 8 {
            let mut bad = frame.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            let refused = opened(&mut Opener::new(&c), bad).unwrap_err();
            assert!(
                matches!(refused, Refusal::Forged | Refusal::Replayed),
                "bit {bit}: {refused:?}"
            );
        }
    }

    #[test]
    fn a_replayed_frame_is_refused_and_reordered_ones_are_not() {
        let c = config();
        let mut sealer = Sealer::new(&c, 9, 0);
        let mut opener = Opener::new(&c);
        let frames: Vec<_> = (0..4u8).map(|i| sealed(&mut sealer, 0, &[i; 20])).collect();
        opened(&mut opener, frames[1].clone()).unwrap();
        opened(&mut opener, frames[0].clone()).unwrap();
        assert_eq!(
            opened(&mut opener, frames[1].clone()),
            Err(Refusal::Replayed)
        );
        opened(&mut opener, frames[3].clone()).unwrap();
        opened(&mut opener, frames[2].clone()).unwrap();
        assert_eq!(
            opened(&mut opener, frames[0].clone()),
            Err(Refusal::Replayed)
        );
    }

    #[test]
    fn a_frame_behind_the_window_is_refused() {
        let mut c = config();
        c.replay_window = 64;
        let mut sealer = Sealer::new(&c, 9, 0);
        let mut opener = Opener::new(&c);
        let first = sealed(&mut sealer, 0, &[1; 20]);
        let later: Vec<_> = (0..64).map(|_| sealed(&mut sealer, 0, &[2; 20])).collect();
        opened(&mut opener, later.last().unwrap().clone()).unwrap();
        assert_eq!(opened(&mut opener, first), Err(Refusal::Replayed));
        opened(&mut opener, later[0].clone()).unwrap();
    }

    #[test]
    fn truncated_frames_are_refused() {
        let c = config();
        let mut sealer = Sealer::new(&c, 9, 0);
        let frame = sealed(&mut sealer, 0, &[3; 30]);
        for cut in 0..frame.len() {
            let refused = opened(&mut Opener::new(&c), frame[..cut].to_vec()).unwrap_err();
            assert!(
                matches!(refused, Refusal::Truncated | Refusal::Forged),
                "{cut}: {refused:?}"
            );
        }
    }

    #[test]
    fn a_frame_under_another_secret_is_forged() {
        let c = config();
        let mut other = config();
        other.secret = vec![1; 32];
        let frame = sealed(&mut Sealer::new(&other, 5, 0), 0, &[4; 30]);
        assert_eq!(opened(&mut Opener::new(&c), frame), Err(Refusal::Forged));
    }

    #[test]
    fn rekeying_changes_the_association_and_frames_of_the_last_one_still_open() {
        let mut c = config();
        c.rekey_interval_ns = 1_000;
        let mut sealer = Sealer::new(&c, u32::MAX, 0);
        let mut opener = Opener::new(&c);
        let first = sealed(&mut sealer, 0, &[0; 20]);
        let old = sealed(&mut sealer, 10, &[1; 20]);
        let new = sealed(&mut sealer, 2_000, &[2; 20]);
        assert_eq!(sealer.rekeys, 1);
        assert_eq!(old[old.len() - 12..old.len() - 8], u32::MAX.to_be_bytes());
        assert_eq!(new[new.len() - 12..new.len() - 8], 0u32.to_be_bytes());
        opened(&mut opener, first.clone()).unwrap();
        // The new association's first frame arrives before the old one's last.
        assert_eq!(opened(&mut opener, new.clone()).unwrap(), vec![2; 20]);
        assert_eq!(opened(&mut opener, old).unwrap(), vec![1; 20]);
        // A third association forgets the first: its frames are stale, not new.
        let third = sealed(&mut sealer, 4_000, &[3; 20]);
        opened(&mut opener, third).unwrap();
        assert_eq!(opened(&mut opener, first), Err(Refusal::Replayed));
        assert_eq!(opened(&mut opener, new), Err(Refusal::Replayed));
    }

    #[test]
    fn the_same_plaintext_never_seals_alike() {
        let c = config();
        let mut sealer = Sealer::new(&c, 3, 0);
        let a = sealed(&mut sealer, 0, &[0; 64]);
        let b = sealed(&mut sealer, 0, &[0; 64]);
        let c2 = sealed(&mut Sealer::new(&c, 4, 0), 0, &[0; 64]);
        assert_ne!(a[CLEAR..CLEAR + 64], b[CLEAR..CLEAR + 64]);
        assert_ne!(a[CLEAR..CLEAR + 64], c2[CLEAR..CLEAR + 64]);
    }

    #[test]
    fn an_aligned_jumbo_packet_fits_a_9000_byte_line_and_a_9000_byte_one_is_split() {
        let c = config();
        let framing = 26;
        let aligned = c.sealed_shape(Shape::single(8_950), framing).unwrap();
        assert_eq!(aligned.ip_bytes, 8_998);
        let whole = c.sealed_shape(Shape::single(9_000), framing).unwrap();
        // A 9,048-byte packet: 8,976 + 20 in the first frame, the rest behind another
        // IP header and its own framing.
        assert_eq!(whole.ip_bytes, 9_048 + 20 + framing);
        let mut dropping = c.clone();
        dropping.oversize = Oversize::Drop;
        assert_eq!(dropping.sealed_shape(Shape::single(9_000), framing), None);
        assert!(
            dropping
                .sealed_shape(Shape::single(8_952), framing)
                .is_some()
        );
    }

    #[test]
    fn a_super_packet_pays_the_overhead_per_segment() {
        let c = config();
        let shape = Shape {
            segments: 4,
            ip_bytes: 3 * 1_500 + 700,
            last_segment_ip_bytes: 700,
        };
        let sealed = c.sealed_shape(shape, 38).unwrap();
        assert_eq!(sealed.segments, 4);
        assert_eq!(sealed.ip_bytes, shape.ip_bytes + 4 * SEGMENT_OVERHEAD_BYTES);
        assert_eq!(sealed.segment_ip_bytes(0), 1_548);
        assert_eq!(sealed.last_segment_ip_bytes, 748);
    }

    #[test]
    fn the_secret_is_checked_and_read_as_hex() {
        assert!(EncryptorConfig::new(vec![0; 31]).check().is_err());
        assert!(config().check().is_ok());
        let json = r#"{"secret": "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", "mtu_bytes": 8950}"#;
        let parsed: EncryptorConfig = serde_json::from_str(json).unwrap();
        assert_eq!(parsed.secret, config().secret);
        assert_eq!(parsed.mtu_bytes, 8_950);
        assert!(parse_hex("0g").is_err());
    }

    proptest! {
        #[test]
        fn arbitrary_frames_never_panic_and_never_open(
            bytes in proptest::collection::vec(any::<u8>(), 0..600),
        ) {
            let mut frame = bytes;
            let opened = Opener::new(&config()).open(&mut frame, CLEAR);
            prop_assert!(opened.is_err());
        }

        #[test]
        fn any_order_of_frames_opens_each_once(
            order in Just((0..40usize).collect::<Vec<_>>()).prop_shuffle(),
            repeats in proptest::collection::vec(0..40usize, 0..10),
        ) {
            let c = config();
            let mut sealer = Sealer::new(&c, 77, 0);
            let frames: Vec<_> = (0..40u8).map(|i| sealed(&mut sealer, 0, &[i; 33])).collect();
            let mut opener = Opener::new(&c);
            let mut seen = [false; 40];
            for i in order.iter().copied().chain(repeats) {
                match opened(&mut opener, frames[i].clone()) {
                    Ok(body) => {
                        prop_assert!(!seen[i]);
                        prop_assert_eq!(body, vec![i as u8; 33]);
                        seen[i] = true;
                    }
                    Err(refusal) => {
                        prop_assert_eq!(refusal, Refusal::Replayed);
                        prop_assert!(seen[i]);
                    }
                }
            }
            prop_assert!(seen.iter().all(|s| *s));
        }
    }
}
