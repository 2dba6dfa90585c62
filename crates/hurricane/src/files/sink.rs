//! A file being received: blocks into `<name>.hurricane-part` (space reserved first),
//! each whole chunk checked on its own thread (`check`), recorded in
//! `<name>.hurricane-map` once durable, the part renamed into place when every chunk
//! checks. On tmpfs the blocks go into a mapping of the part; on a disk into a buffer
//! per chunk, written with `O_DIRECT` once checked (`direct` says why and what it gains).

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;

use super::check::{Checked, Checker, Job};
use super::direct::{BUFFER_MEMORY_BYTES, ChunkBuffers, DirectFile};
use super::mapping::Mapping;
use super::{destination, digest_of_digests};
use crate::control::FileOffer;
use crate::range_set::RangeSet;
use crate::receiver::BlockSink;

/// How a received file's blocks reach it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum WriteMode {
    /// `O_DIRECT` where the file system takes it, the mapping on tmpfs and elsewhere.
    #[default]
    Auto,
    /// Into a shared mapping of the part, through the page cache.
    Mapped,
    /// A buffer per chunk, written with `O_DIRECT` (an error where it is refused).
    Direct,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SinkOptions {
    pub write: WriteMode,
    /// The most memory chunk buffers take when writing with `O_DIRECT`.
    pub buffer_memory_bytes: u64,
}

impl Default for SinkOptions {
    /// `Auto`, and `BUFFER_MEMORY_BYTES` of buffers or an eighth of the machine's memory,
    /// whichever is less.
    fn default() -> Self {
        Self {
            write: WriteMode::Auto,
            buffer_memory_bytes: BUFFER_MEMORY_BYTES.min(physical_memory_bytes() / 8),
        }
    }
}

fn physical_memory_bytes() -> u64 {
    // SAFETY: sysconf reads constants.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    (pages.max(0) as u64).saturating_mul(page.max(0) as u64)
}

/// Where the blocks go until their chunk is whole.
enum Store {
    Mapped(Arc<Mapping>),
    Direct(ChunkBuffers),
}

/// A file being received.
pub struct FileSink {
    store: Store,
    /// None when the file was whole under its name before this run.
    checker: Option<Checker>,
    block_bytes: u64,
    chunk_blocks: u64,
    total_bytes: u64,
    /// Blocks still missing in each chunk.
    missing: Vec<u64>,
    /// Chunks with the checker.
    outstanding: usize,
    part: PathBuf,
    map_path: PathBuf,
    dest: PathBuf,
    file: File,
    digest: [u8; 32],
    chunk_digests: Arc<Vec<[u8; 32]>>,
    /// Chunks that failed their check (counted, then fetched again).
    pub bad_chunks: u64,
    /// Blocks taken from an earlier, interrupted run.
    pub resumed_blocks: u64,
    /// The first block that could not be written, and why (`finish` reports it).
    failure: Option<String>,
}

impl FileSink {
    /// Take the file `offer` describes into `dir`, resuming a part left there before;
    /// the blocks already held, or why it cannot be taken.
    pub fn accept(
        dir: &Path,
        offer: &FileOffer,
        total_bytes: u64,
        block_bytes: u32,
        options: &SinkOptions,
    ) -> Result<(Self, RangeSet), String> {
        let dest = destination(dir, &offer.name)?;
        if offer.chunk_bytes == 0 || !offer.chunk_bytes.is_multiple_of(block_bytes) {
            return Err("chunks must hold whole blocks".into());
        }
        if offer.chunk_digests.len() as u64 != total_bytes.div_ceil(u64::from(offer.chunk_bytes)) {
            return Err("the chunk digests do not cover the file".into());
        }
        if digest_of_digests(&offer.chunk_digests) != offer.digest {
            return Err("the offer's digests do not agree".into());
        }
        let part = with_suffix(&dest, ".hurricane-part");
        let map_path = with_suffix(&dest, ".hurricane-map");
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot make {}: {e}", parent.display()))?;
        }
        if let Some(whole) = Self::already_whole(&dest, offer, total_bytes, block_bytes) {
            return Ok(whole);
        }
        let identity = map_identity(offer, total_bytes, block_bytes);
        let verified = read_map(&map_path, &identity);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(verified.is_empty())
            .open(&part)
            .map_err(|e| format!("cannot write {}: {e}", part.display()))?;
        if let Err(e) = reserve(&file, total_bytes) {
            // Nothing is left behind by a refusal (a part from an earlier run stays).
            if verified.is_empty() {
                let _ = std::fs::remove_file(&part);
            }
            return Err(format!(
                "no room for {} ({total_bytes} bytes) in {}: {e}",
                offer.name,
                dir.display()
            ));
        }
        if verified.is_empty() {
            write_map_header(&map_path, &identity)
                .map_err(|e| format!("cannot write {}: {e}", map_path.display()))?;
        }
        let (give_back, returned) = mpsc::channel();
        let store = open_store(
            &part,
            &file,
            total_bytes,
            offer.chunk_bytes,
            options,
            returned,
        )?;
        let chunk_blocks = u64::from(offer.chunk_bytes / block_bytes);
        let total_blocks = total_bytes.div_ceil(u64::from(block_bytes));
        let chunks = offer.chunk_digests.len();
        let mut missing: Vec<u64> = (0..chunks as u64)
            .map(|c| (total_blocks - c * chunk_blocks).min(chunk_blocks))
            .collect();
        let mut held = RangeSet::new();
        for &chunk in verified.iter().filter(|&&c| c < chunks) {
            missing[chunk] = 0;
            let start = chunk as u64 * chunk_blocks;
            held.insert(start..(start + chunk_blocks).min(total_blocks));
        }
        let chunk_digests = Arc::new(offer.chunk_digests.clone());
        let checker = Checker::start(
            Arc::clone(&chunk_digests),
            offer.chunk_bytes as usize,
            &map_path,
            give_back,
        )?;
        let sink = Self {
            store,
            checker: Some(checker),
            block_bytes: u64::from(block_bytes),
            chunk_blocks,
            total_bytes,
            missing,
            outstanding: 0,
            part,
            map_path,
            dest,
            file,
            digest: offer.digest,
            chunk_digests,
            bad_chunks: 0,
            resumed_blocks: held.len(),
            failure: None,
        };
        Ok((sink, held))
    }

    /// The file is under its name already and checks (a run that ended before the
    /// sender heard DONE): every block held, nothing to write.
    fn already_whole(
        dest: &Path,
        offer: &FileOffer,
        total_bytes: u64,
        block_bytes: u32,
    ) -> Option<(Self, RangeSet)> {
        let file = File::open(dest).ok()?;
        if file.metadata().ok()?.len() != total_bytes {
            return None;
        }
        let map = Mapping::new(&file, total_bytes as usize, false).ok()?;
        let chunk_bytes = offer.chunk_bytes as usize;
        let checks = offer
            .chunk_digests
            .iter()
            .enumerate()
            .all(|(chunk, digest)| {
                let start = chunk * chunk_bytes;
                let end = (start + chunk_bytes).min(map.len);
                blake3::hash(map.bytes(start..end)).as_bytes() == digest
            });
        if !checks {
            return None;
        }
        let total_blocks = total_bytes.div_ceil(u64::from(block_bytes));
        let mut held = RangeSet::new();
        held.insert(0..total_blocks);
        let sink = Self {
            store: Store::Mapped(Arc::new(map)),
            checker: None,
            block_bytes: u64::from(block_bytes),
            chunk_blocks: u64::from(offer.chunk_bytes / block_bytes),
            total_bytes,
            missing: vec![0; offer.chunk_digests.len()],
            outstanding: 0,
            part: dest.to_owned(),
            map_path: with_suffix(dest, ".hurricane-map"),
            dest: dest.to_owned(),
            file,
            digest: offer.digest,
            chunk_digests: Arc::new(offer.chunk_digests.clone()),
            bad_chunks: 0,
            resumed_blocks: total_blocks,
            failure: None,
        };
        Some((sink, held))
    }

    /// Once every block is in: wait for the checks; the blocks of chunks that failed
    /// (to fetch again), or, when all checked, the file renamed into place.
    pub fn finish(&mut self) -> Result<Vec<std::ops::Range<u64>>, String> {
        if let Some(why) = &self.failure {
            return Err(why.clone());
        }
        let Some(checker) = &self.checker else {
            return Ok(Vec::new());
        };
        let total_blocks = self.total_bytes.div_ceil(self.block_bytes);
        let mut bad = Vec::new();
        while self.outstanding > 0 {
            match checker.outcomes.recv() {
                Ok(Checked::Good) => self.outstanding -= 1,
                Ok(Checked::Bad(chunk)) => {
                    self.outstanding -= 1;
                    self.bad_chunks += 1;
                    let start = chunk as u64 * self.chunk_blocks;
                    self.missing[chunk] = self.chunk_blocks.min(total_blocks - start);
                    bad.push(start..start + self.missing[chunk]);
                }
                Ok(Checked::Failed(why)) => return Err(why),
                Err(_) => return Err("the checking thread stopped".into()),
            }
        }
        if !bad.is_empty() {
            return Ok(bad);
        }
        if digest_of_digests(&self.chunk_digests) != self.digest {
            return Err("the file's digest does not agree with its chunks".into());
        }
        self.file
            .sync_all()
            .map_err(|e| format!("cannot make {} durable: {e}", self.part.display()))?;
        std::fs::rename(&self.part, &self.dest)
            .map_err(|e| format!("cannot rename {} into place: {e}", self.part.display()))?;
        let _ = std::fs::remove_file(&self.map_path);
        if let Some(parent) = self.dest.parent()
            && let Ok(dir) = File::open(parent)
        {
            let _ = dir.sync_all();
        }
        Ok(Vec::new())
    }

    pub fn path(&self) -> &Path {
        &self.dest
    }

    /// How the blocks reached the file: `mapped` or `direct`.
    pub fn write_mode(&self) -> &'static str {
        match self.store {
            Store::Mapped(_) => "mapped",
            Store::Direct(_) => "direct",
        }
    }

    /// Chunks written out before they were whole, for want of a buffer.
    pub fn spilled_chunks(&self) -> u64 {
        match &self.store {
            Store::Mapped(_) => 0,
            Store::Direct(buffers) => buffers.spilled,
        }
    }

    /// CPU time the checking thread has used, as of its last check (BLAKE3 runs at
    /// about 7 GB/s on one core alone, so a 9.6 Gb/s transfer's chunks take a sixth of
    /// a core; beside the emulator and both ends, a fifth to a quarter).
    pub fn check_cpu_s(&self) -> f64 {
        self.checker.as_ref().map_or(0.0, Checker::cpu_s)
    }
}

impl BlockSink for FileSink {
    fn write(&mut self, block: u64, payload: &[u8]) {
        let start = block * self.block_bytes;
        let chunk = (block / self.chunk_blocks) as usize;
        match &mut self.store {
            // SAFETY: the receiver writes each block once (duplicates are dropped before
            // they reach the sink) and hands a chunk to the checker only after its last
            // block; a chunk found bad is written again only after its check came back.
            Store::Mapped(map) => unsafe { map.write(start as usize, payload) },
            Store::Direct(buffers) => {
                if let Err(e) = buffers.write(chunk, start, payload) {
                    self.failure
                        .get_or_insert_with(|| format!("cannot write block {block}: {e}"));
                }
            }
        }
        self.missing[chunk] -= 1;
        if self.missing[chunk] > 0 {
            return;
        }
        let job = match &mut self.store {
            Store::Mapped(map) => Job::Mapped {
                chunk,
                map: Arc::clone(map),
            },
            Store::Direct(buffers) => Job::Direct {
                chunk,
                whole: buffers.take(chunk),
                file: Arc::clone(&buffers.file),
            },
        };
        if self
            .checker
            .as_ref()
            .is_some_and(|checker| checker.hand(job))
        {
            self.outstanding += 1;
        }
    }
}

/// The part's store for `options` (see `WriteMode`).
fn open_store(
    part: &Path,
    file: &File,
    total_bytes: u64,
    chunk_bytes: u32,
    options: &SinkOptions,
    returned: mpsc::Receiver<crate::files::direct::AlignedBuf>,
) -> Result<Store, String> {
    let mapped = || {
        let map = Mapping::new(file, total_bytes as usize, true)
            .map_err(|e| format!("cannot map {}: {e}", part.display()))?;
        if in_memory(file) {
            map.populate_for_writing();
        }
        Ok(Store::Mapped(Arc::new(map)))
    };
    let direct = || DirectFile::open(part, file, total_bytes, u64::from(chunk_bytes));
    let with_buffers = |direct: DirectFile| {
        Store::Direct(ChunkBuffers::new(
            Arc::new(direct),
            options.buffer_memory_bytes,
            returned,
        ))
    };
    match options.write {
        WriteMode::Mapped => mapped(),
        WriteMode::Auto if in_memory(file) => mapped(),
        WriteMode::Auto => direct().map(with_buffers).or_else(|_| mapped()),
        WriteMode::Direct => direct().map(with_buffers).map_err(|e| {
            format!(
                "cannot write {} with O_DIRECT: {e} (--write mapped goes through the page cache)",
                part.display()
            )
        }),
    }
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// What a map's first line must say for the part beside it to be taken up again.
fn map_identity(offer: &FileOffer, total_bytes: u64, block_bytes: u32) -> String {
    let hex = blake3::Hash::from(offer.digest).to_hex();
    format!(
        "hurricane-map 1 {total_bytes} {block_bytes} {} {hex}",
        offer.chunk_bytes
    )
}

/// The verified chunks a map records, if it is this file's; a torn last line (a kill
/// while writing it) is left out.
fn read_map(path: &Path, identity: &str) -> Vec<usize> {
    let Ok(bytes) = std::fs::read(path) else {
        return Vec::new();
    };
    let mut lines = bytes.split_inclusive(|&b| b == b'\n');
    let first = lines.next().unwrap_or_default();
    if first.strip_suffix(b"\n") != Some(identity.as_bytes()) {
        return Vec::new();
    }
    lines
        .filter_map(|line| line.strip_suffix(b"\n"))
        .filter_map(|line| std::str::from_utf8(line).ok()?.parse().ok())
        .collect()
}

/// Whether `file` lives in memory (tmpfs), where faulting its pages in up front costs
/// no I/O (on a disk it would write the whole file's pages back once more).
fn in_memory(file: &File) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: fstatfs fills one statfs.
    unsafe {
        let mut stats: libc::statfs = std::mem::zeroed();
        libc::fstatfs(file.as_raw_fd(), &raw mut stats) == 0 && stats.f_type == libc::TMPFS_MAGIC
    }
}

/// Reserve the file's space (`posix_fallocate`): a full disk refuses the transfer now.
fn reserve(file: &File, bytes: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    if bytes == 0 {
        return Ok(());
    }
    // SAFETY: a valid descriptor.
    let error = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, bytes as libc::off_t) };
    if error != 0 {
        return Err(io::Error::from_raw_os_error(error));
    }
    Ok(())
}

fn write_map_header(path: &Path, identity: &str) -> io::Result<()> {
    let mut file = File::create(path)?;
    writeln!(file, "{identity}")?;
    file.sync_all()
}
