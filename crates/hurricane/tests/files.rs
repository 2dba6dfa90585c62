//! A file received block by block, in the orders a lossy channel delivers them: each
//! chunk is checked once its last block is in, whatever the order, and a chunk written
//! wrong is refused and, written again, accepted; through a mapping, with `O_DIRECT`
//! from chunk buffers, and with `O_DIRECT` from too few buffers (chunks spilled to the
//! file before they are whole).

use std::path::PathBuf;

use hurricane::files::{FileSink, FileSource, SinkOptions, WriteMode};
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

fn options(write: WriteMode) -> SinkOptions {
    SinkOptions {
        write,
        ..SinkOptions::default()
    }
}

#[test]
fn every_order_of_arrival_checks_and_a_wrong_chunk_is_fetched_again_through_a_mapping() {
    arrivals("orders-mapped", &options(WriteMode::Mapped));
}

#[test]
fn every_order_of_arrival_checks_and_a_wrong_chunk_is_fetched_again_with_o_direct() {
    arrivals("orders-direct", &options(WriteMode::Direct));
}

/// Three and a half chunks: the last one short, and its last block short too.
const LEN: usize = 3 * CHUNK_BYTES as usize + 250 * BLOCK_BYTES as usize + 123;
const TOTAL_BLOCKS: u64 = (LEN as u64).div_ceil(BLOCK_BYTES as u64);
const CHUNK_BLOCKS: u64 = (CHUNK_BYTES / BLOCK_BYTES) as u64;

fn block_of(source: &mut FileSource, b: u64) -> Vec<u8> {
    let start = b * u64::from(BLOCK_BYTES);
    let mut buf = vec![0; (u64::from(BLOCK_BYTES)).min(LEN as u64 - start) as usize];
    source.read(b, &mut buf);
    buf
}

fn arrivals(what: &str, options: &SinkOptions) {
    let scratch = Scratch::new(what);
    let len = LEN;
    let original = contents(len);
    let source_path = scratch.0.join("source.bin");
    std::fs::write(&source_path, &original).expect("the source file");
    let (mut source, offer) =
        FileSource::open_in_chunks(&source_path, "copy.bin", BLOCK_BYTES, CHUNK_BYTES)
            .expect("the source opens");
    let (mut sink, held) = FileSink::accept(
        &scratch.0.join("in"),
        &offer,
        len as u64,
        BLOCK_BYTES,
        options,
    )
    .expect("the sink takes the file");
    assert!(held.is_empty());
    let expected_mode = if options.write == WriteMode::Direct {
        "direct"
    } else {
        "mapped"
    };
    assert_eq!(sink.write_mode(), expected_mode);

    let (total_blocks, chunk_blocks, block) = (TOTAL_BLOCKS, CHUNK_BLOCKS, block_of);
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

#[test]
fn with_too_few_buffers_a_chunk_is_spilled_to_the_file_checked_there_and_fetched_again() {
    let scratch = Scratch::new("spilled");
    let original = contents(LEN);
    let source_path = scratch.0.join("source.bin");
    std::fs::write(&source_path, &original).expect("the source file");
    let (mut source, offer) =
        FileSource::open_in_chunks(&source_path, "copy.bin", BLOCK_BYTES, CHUNK_BYTES)
            .expect("the source opens");
    // No memory to speak of: two buffers.
    let two = SinkOptions {
        write: WriteMode::Direct,
        buffer_memory_bytes: 0,
    };
    let (mut sink, _) =
        FileSink::accept(&scratch.0.join("in"), &offer, LEN as u64, BLOCK_BYTES, &two)
            .expect("the sink takes the file");
    let half = CHUNK_BLOCKS / 2;
    // Chunks 0 and 1 half in take both buffers; chunk 2's first block spills chunk 0,
    // whose other half then goes to the file block by block, one block of it wrong.
    let wrong_block = half + 3;
    let mut order: Vec<u64> = (0..half).chain(CHUNK_BLOCKS..CHUNK_BLOCKS + half).collect();
    order.extend(2 * CHUNK_BLOCKS..3 * CHUNK_BLOCKS);
    order.extend(half..CHUNK_BLOCKS);
    order.extend(CHUNK_BLOCKS + half..2 * CHUNK_BLOCKS);
    order.extend(3 * CHUNK_BLOCKS..TOTAL_BLOCKS);
    for &b in &order {
        let mut payload = block_of(&mut source, b);
        if b == wrong_block {
            payload[0] ^= 1;
        }
        sink.write(b, &payload);
    }
    assert_eq!(sink.spilled_chunks(), 1);
    let again = sink.finish().expect("the checks run");
    assert_eq!(
        again,
        vec![0..CHUNK_BLOCKS],
        "the spilled chunk did not check"
    );
    for b in 0..CHUNK_BLOCKS {
        sink.write(b, &block_of(&mut source, b));
    }
    assert_eq!(
        sink.finish().expect("the checks run"),
        Vec::<std::ops::Range<u64>>::new()
    );
    let landed = std::fs::read(scratch.0.join("in").join("copy.bin")).expect("renamed into place");
    assert!(landed == original, "the file landed whole and right");
}
