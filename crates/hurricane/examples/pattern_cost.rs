//! What making and checking one block of the memory-to-memory pattern costs (`pattern.rs`),
//! against the way it was done before: a multiplication per word into an expected copy,
//! then a comparison.
//!
//! `cargo run -p hurricane --release --example pattern_cost`

use std::hint::black_box;
use std::time::Instant;

use hurricane::pattern::Pattern;
use hurricane::wire::DATA_OVERHEAD_BYTES;

/// A block of a 9000-byte IP packet, as the benchmark's circuits carry.
const BLOCK_BYTES: usize = 9000 - 28 - DATA_OVERHEAD_BYTES;
const BLOCKS: u64 = 400_000;
const REPETITIONS: usize = 5;
const ARRIVED: u64 = 64;

/// Each of `REPETITIONS` passes over `BLOCKS` blocks, in GB/s; the median with min and max.
fn gbytes_per_s(what: &str, mut one: impl FnMut(u64)) {
    let mut rates: Vec<f64> = (0..REPETITIONS)
        .map(|_| {
            let started = Instant::now();
            for block in 0..BLOCKS {
                one(block);
            }
            (BLOCKS as usize * BLOCK_BYTES) as f64 / started.elapsed().as_secs_f64() / 1e9
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    let (median, min, max) = (rates[REPETITIONS / 2], rates[0], rates[REPETITIONS - 1]);
    println!("{what}: {median:.2} GB/s ({min:.2}-{max:.2}; {BLOCK_BYTES}-byte blocks, one core)");
}

/// The pattern as it was made before (the code as it was): each word multiplied out.
fn fill_by_multiplication(offset: u64, buf: &mut [u8]) {
    let word = |index: u64| {
        index
            .wrapping_add(1)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .to_le_bytes()
    };
    let skip = (offset % 8) as usize;
    let mut index = offset / 8;
    let head = (8 - skip).min(buf.len());
    buf[..head].copy_from_slice(&word(index)[skip..skip + head]);
    index += 1;
    let mut words = buf[head..].chunks_exact_mut(8);
    for chunk in &mut words {
        chunk.copy_from_slice(&word(index));
        index += 1;
    }
    let tail = words.into_remainder();
    let len = tail.len();
    tail.copy_from_slice(&word(index)[..len]);
}

fn main() {
    let mut buf = vec![0; BLOCK_BYTES];
    let mut expected = vec![0; BLOCK_BYTES];
    let offset = |block: u64| block * BLOCK_BYTES as u64;
    gbytes_per_s("fill, a multiplication per word (before)", |block| {
        fill_by_multiplication(offset(block), black_box(&mut buf));
    });
    gbytes_per_s("fill, an addition per word", |block| {
        Pattern::fill(offset(block), black_box(&mut buf));
    });
    // Arrived blocks to check, as many as the receiver's caches hold between a
    // datagram's arrival and its check.
    let arrived: Vec<Vec<u8>> = (0..ARRIVED)
        .map(|block| {
            let mut bytes = vec![0; BLOCK_BYTES];
            Pattern::fill(offset(block), &mut bytes);
            bytes
        })
        .collect();
    let mut wrong = 0;
    gbytes_per_s(
        "check, an expected copy then a comparison (before)",
        |block| {
            let block = block % ARRIVED;
            fill_by_multiplication(offset(block), &mut expected);
            wrong += u64::from(black_box(&expected) != black_box(&arrived[block as usize]));
        },
    );
    gbytes_per_s("check, compared as it goes", |block| {
        let block = block % ARRIVED;
        wrong += Pattern::mismatches(offset(block), black_box(&arrived[block as usize]));
    });
    assert_eq!(wrong, 0);
}
