//! Bytes made on the fly from their offset, what memory-to-memory transfers send and
//! check at the far end without the expected bytes sent along: a transfer of any size in
//! no memory, with proof it arrived right.
//!
//! The pattern is a sequence of little-endian 8-byte words, word i = (i + 1) · `STEP`
//! (wrapping): Fibonacci hashing of the word's index, so no two nearby words are alike.
//! Each word is the one before plus `STEP`, so filling and checking need an addition per
//! word, which the compiler spreads over vector lanes, where a multiplication per word
//! would not be; and checking compares as it goes, with no expected copy to build.

use crate::control::Offer;
use crate::receiver::BlockSink;
use crate::sender::BlockSource;

/// 2^64 / φ, odd: Knuth's multiplicative hashing constant.
const STEP: u64 = 0x9E37_79B9_7F4A_7C15;

pub struct Pattern;

impl Pattern {
    fn word(index: u64) -> u64 {
        index.wrapping_add(1).wrapping_mul(STEP)
    }

    pub fn byte(offset: u64) -> u8 {
        Self::word(offset / 8).to_le_bytes()[(offset % 8) as usize]
    }

    /// The pattern's bytes from `offset` on, into `buf`.
    pub fn fill(offset: u64, buf: &mut [u8]) {
        let (head, first_whole, tail) = split_at_words(offset, buf.len());
        let (head_bytes, rest) = buf.split_at_mut(head.len());
        head_bytes.copy_from_slice(&Self::word(offset / 8).to_le_bytes()[head.clone()]);
        let mut word = Self::word(first_whole);
        let mut chunks = rest.chunks_exact_mut(8);
        for chunk in &mut chunks {
            chunk.copy_from_slice(&word.to_le_bytes());
            word = word.wrapping_add(STEP);
        }
        chunks
            .into_remainder()
            .copy_from_slice(&word.to_le_bytes()[..tail]);
    }

    /// How many of `bytes` differ from the pattern at `offset` (0 when they are its
    /// bytes, as they always should be: the count itself is worked out only if not).
    pub fn mismatches(offset: u64, bytes: &[u8]) -> u64 {
        let (head, first_whole, tail) = split_at_words(offset, bytes.len());
        let (head_bytes, rest) = bytes.split_at(head.len());
        let mut differ = part_differs(head_bytes, &Self::word(offset / 8).to_le_bytes()[head]);
        let mut word = Self::word(first_whole);
        let mut diff = 0;
        let mut chunks = rest.chunks_exact(8);
        for chunk in &mut chunks {
            diff |= u64::from_le_bytes(chunk.try_into().expect("8 bytes")) ^ word;
            word = word.wrapping_add(STEP);
        }
        differ |= diff != 0 || part_differs(chunks.remainder(), &word.to_le_bytes()[..tail]);
        if !differ {
            return 0;
        }
        let wrong = (offset..)
            .zip(bytes)
            .filter(|&(at, &b)| b != Self::byte(at));
        wrong.count() as u64
    }
}

/// Whether a part of a word (under 8 bytes) differs from what it should be: a loop of a
/// few bytes, where `!=` on the slices would call `memcmp` (3 % of a 9.6 Gb/s receiver's
/// time for the two parts of each block, in a profile).
fn part_differs(got: &[u8], expected: &[u8]) -> bool {
    got.iter().zip(expected).any(|(a, b)| a != b)
}

/// How `len` bytes from `offset` fall on the pattern's words: the bytes of the word
/// `offset` starts in (`head`, the range within that word, empty when `offset` is a
/// word's start), the index of the first whole word after it, and how many bytes of
/// the word after the whole ones end the run.
fn split_at_words(offset: u64, len: usize) -> (std::ops::Range<usize>, u64, usize) {
    let skip = (offset % 8) as usize;
    let head_len = if skip == 0 { 0 } else { (8 - skip).min(len) };
    let first_whole = offset.div_ceil(8);
    (skip..skip + head_len, first_whole, (len - head_len) % 8)
}

/// Generated blocks (memory to memory).
pub struct PatternSource {
    pub block_bytes: usize,
}

impl BlockSource for PatternSource {
    fn read(&mut self, block: u64, buf: &mut [u8]) {
        Pattern::fill(block * self.block_bytes as u64, buf);
    }
}

/// Takes generated blocks and checks every byte, keeping none.
pub struct PatternCheck {
    block_bytes: u64,
    pub bytes: u64,
    pub corrupted_bytes: u64,
}

impl PatternCheck {
    pub fn new(block_bytes: u32) -> Self {
        Self {
            block_bytes: u64::from(block_bytes),
            bytes: 0,
            corrupted_bytes: 0,
        }
    }

    pub fn for_offer(offer: &Offer) -> Self {
        Self::new(offer.block_bytes)
    }
}

impl BlockSink for PatternCheck {
    fn write(&mut self, block: u64, payload: &[u8]) {
        self.corrupted_bytes += Pattern::mismatches(block * self.block_bytes, payload);
        self.bytes += payload.len() as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The pattern as first defined, a multiplication per word: the progression must
    /// give the same bytes, since each end of a transfer makes them with its own build.
    fn by_multiplication(offset: u64, len: usize) -> Vec<u8> {
        (offset..offset + len as u64)
            .map(|at| ((at / 8 + 1).wrapping_mul(STEP)).to_le_bytes()[(at % 8) as usize])
            .collect()
    }

    #[test]
    fn the_first_words() {
        let mut buf = [0; 16];
        Pattern::fill(0, &mut buf);
        assert_eq!(buf[..8], STEP.to_le_bytes());
        assert_eq!(buf[8..], STEP.wrapping_mul(2).to_le_bytes());
    }

    proptest! {
        #[test]
        fn fill_gives_each_offsets_byte(offset in 0u64..(1 << 50), len in 0usize..100) {
            let mut buf = vec![0xA5; len];
            Pattern::fill(offset, &mut buf);
            prop_assert_eq!(&buf, &by_multiplication(offset, len));
            prop_assert_eq!(Pattern::mismatches(offset, &buf), 0);
        }

        #[test]
        fn mismatches_counts_every_changed_byte(
            offset in 0u64..(1 << 50),
            len in 1usize..100,
            changed in proptest::collection::btree_set(0usize..100, 1..10),
        ) {
            let mut buf = by_multiplication(offset, len);
            let changed: Vec<usize> = changed.into_iter().filter(|&i| i < len).collect();
            for &i in &changed {
                buf[i] ^= 0x40;
            }
            prop_assert_eq!(Pattern::mismatches(offset, &buf), changed.len() as u64);
        }
    }
}
