//! A file received block by block, in the orders a lossy channel delivers them: each
//! chunk is checked once its last block is in, whatever the order, and a chunk written
//! wrong is refused and, written again, accepted.

use std::path::PathBuf;

use hurricane::files::{FileSink, FileSource};
use hurricane::receiver::BlockSink;
use hurricane::sender::BlockSource;

const BLOCK_BYTES: u32 = 1_000;
/// Chunks of 600 blocks.
const CHUNK_BYTES: u32 = 600 * BLOCK_BYTES;

struct Scratch(PathBuf);

impl Scratch {
    fn new(what: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("hurricane-files-{what}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("in")).expect("a scratch directory");
        Self(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Bytes no two blocks share (a block written at another's place does not check).
fn contents(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect()
}

#[test]
fn every_order_of_arrival_checks_and_a_wrong_chunk_is_fetched_again() {
    let scratch = Scratch::new("orders");
    // Three and a half chunks: the last one short, and its last block short too.
    let len = 3 * CHUNK_BYTES as usize + 250 * BLOCK_BYTES as usize + 123;
    let original = contents(len);
    let source_path = scratch.0.join("source.bin");
    std::fs::write(&source_path, &original).expect("the source file");
    let (mut source, offer) =
        FileSource::open_in_chunks(&source_path, "copy.bin", BLOCK_BYTES, CHUNK_BYTES)
            .expect("the source opens");
    let (mut sink, held) = FileSink::accept(&scratch.0.join("in"), &offer, len as u64, BLOCK_BYTES)
        .expect("the sink takes the file");
    assert!(held.is_empty());

    let total_blocks = (len as u64).div_ceil(u64::from(BLOCK_BYTES));
    let chunk_blocks = u64::from(CHUNK_BYTES / BLOCK_BYTES);
    let block = |source: &mut FileSource, b: u64| {
        let start = b * u64::from(BLOCK_BYTES);
        let mut buf = vec![0; (u64::from(BLOCK_BYTES)).min(len as u64 - start) as usize];
        source.read(b, &mut buf);
        buf
    };
    // Chunk 0 in order, one of its blocks wrong; chunk 1 in order but for one block held
    // back to its end; chunk 2 backwards; chunk 3 in order.
    let wrong_block = 7;
    let held_back = chunk_blocks + 300;
    let mut order: Vec<u64> = (0..2 * chunk_blocks).filter(|&b| b != held_back).collect();
    order.push(held_back);
    order.extend((2 * chunk_blocks..3 * chunk_blocks).rev());
    order.extend(3 * chunk_blocks..total_blocks);
    for b in order {
        let mut payload = block(&mut source, b);
        if b == wrong_block {
            payload[10] ^= 0x40;
        }
        sink.write(b, &payload);
    }
    let again = sink.finish().expect("the checks run");
    assert_eq!(
        again,
        vec![0..chunk_blocks],
        "only the wrong chunk is fetched again"
    );
    assert_eq!(sink.bad_chunks, 1);

    for b in 0..chunk_blocks {
        sink.write(b, &block(&mut source, b));
    }
    assert_eq!(
        sink.finish().expect("the checks run"),
        Vec::<std::ops::Range<u64>>::new()
    );
    let landed = std::fs::read(scratch.0.join("in").join("copy.bin")).expect("renamed into place");
    assert!(landed == original, "the file landed whole and right");
    assert!(
        sink.check_cpu_s() > 0.0,
        "the checking thread's time is counted"
    );
}
