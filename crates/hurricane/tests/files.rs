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

/// A file of `LEN` bytes on its way into a sink.
struct Transfer {
    scratch: Scratch,
    original: Vec<u8>,
    source: FileSource,
    sink: FileSink,
}

impl Transfer {
    fn start(what: &str, options: &SinkOptions) -> Self {
        let scratch = Scratch::new(what);
        let original = contents(LEN);
        let source_path = scratch.0.join("source.bin");
        std::fs::write(&source_path, &original).expect("the source file");
        let (source, offer) =
            FileSource::open_in_chunks(&source_path, "copy.bin", BLOCK_BYTES, CHUNK_BYTES)
                .expect("the source opens");
        let in_dir = scratch.0.join("in");
        let (sink, held) = FileSink::accept(&in_dir, &offer, LEN as u64, BLOCK_BYTES, options)
            .expect("the sink takes the file");
        assert!(held.is_empty());
        Self {
            scratch,
            original,
            source,
            sink,
        }
    }

    fn block(&mut self, b: u64) -> Vec<u8> {
        let start = b * u64::from(BLOCK_BYTES);
        let mut buf = vec![0; (u64::from(BLOCK_BYTES)).min(LEN as u64 - start) as usize];
        self.source.read(b, &mut buf);
        buf
    }

    /// The blocks in `order`, one byte of `wrong_block` changed.
    fn deliver(&mut self, order: impl IntoIterator<Item = u64>, wrong_block: u64) {
        for b in order {
            let mut payload = self.block(b);
            if b == wrong_block {
                payload[10] ^= 0x40;
            }
            self.sink.write(b, &payload);
        }
    }

    /// Chunk 0 did not check: it alone is fetched again, then the file lands whole.
    fn fetch_chunk_0_again_and_land(&mut self) {
        let again = self.sink.finish().expect("the checks run");
        assert_eq!(
            again,
            vec![0..CHUNK_BLOCKS],
            "only the wrong chunk is fetched again"
        );
        assert_eq!(self.sink.bad_chunks, 1);
        self.deliver(0..CHUNK_BLOCKS, u64::MAX);
        assert_eq!(
            self.sink.finish().expect("the checks run"),
            Vec::<std::ops::Range<u64>>::new()
        );
        let landed =
            std::fs::read(self.scratch.0.join("in").join("copy.bin")).expect("renamed into place");
        assert!(landed == self.original, "the file landed whole and right");
        assert!(
            self.sink.check_cpu_s() > 0.0,
            "the checking thread's time is counted"
        );
    }
}

fn arrivals(what: &str, options: &SinkOptions) {
    let mut transfer = Transfer::start(what, options);
    let expected_mode = if options.write == WriteMode::Direct {
        "direct"
    } else {
        "mapped"
    };
    assert_eq!(transfer.sink.write_mode(), expected_mode);
    // Chunk 0 in order, one of its blocks wrong; chunk 1 in order but for one block held
    // back to its end; chunk 2 backwards; chunk 3 in order.
    let held_back = CHUNK_BLOCKS + 300;
    let mut order: Vec<u64> = (0..2 * CHUNK_BLOCKS).filter(|&b| b != held_back).collect();
    order.push(held_back);
    order.extend((2 * CHUNK_BLOCKS..3 * CHUNK_BLOCKS).rev());
    order.extend(3 * CHUNK_BLOCKS..TOTAL_BLOCKS);
    transfer.deliver(order, 7);
    transfer.fetch_chunk_0_again_and_land();
}

#[test]
fn with_too_few_buffers_a_chunk_is_spilled_to_the_file_checked_there_and_fetched_again() {
    // No memory to speak of: two buffers.
    let two = SinkOptions {
        write: WriteMode::Direct,
        buffer_memory_bytes: 0,
    };
    let mut transfer = Transfer::start("spilled", &two);
    let half = CHUNK_BLOCKS / 2;
    // Chunks 0 and 1 half in take both buffers; chunk 2's first block spills chunk 0,
    // whose other half then goes to the file block by block, one block of it wrong.
    let mut order: Vec<u64> = (0..half).chain(CHUNK_BLOCKS..CHUNK_BLOCKS + half).collect();
    order.extend(2 * CHUNK_BLOCKS..3 * CHUNK_BLOCKS);
    order.extend(half..CHUNK_BLOCKS);
    order.extend(CHUNK_BLOCKS + half..2 * CHUNK_BLOCKS);
    order.extend(3 * CHUNK_BLOCKS..TOTAL_BLOCKS);
    transfer.deliver(order, half + 3);
    assert_eq!(transfer.sink.spilled_chunks(), 1);
    transfer.fetch_chunk_0_again_and_land();
}
