//! Files at both ends. The sender maps its file and hashes it once before the transfer
//! (BLAKE3 per chunk, and of the chunk digests in order: the file's digest). The receiver
//! writes blocks into `<name>.hurricane-part` (space reserved first, so a full disk is a
//! refusal before the first datagram, not a failure after), checks each chunk on a
//! thread of its own as soon as its last block is in, makes it durable, and records it
//! in `<name>.hurricane-map`. A receiver started again over the same part and map holds
//! the verified chunks and fetches only the rest. When every chunk checks and the digests
//! agree, the part is renamed to its name: a file under its name is always whole.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;

use crate::control::FileOffer;
use crate::range_set::RangeSet;
use crate::receiver::BlockSink;
use crate::sender::BlockSource;

/// About 16 MiB: what a kill can cost a resumed transfer, and the unit of checking.
pub const CHUNK_TARGET_BYTES: u64 = 16 << 20;

/// The chunk size for `block_bytes`: a whole number of blocks, so every block lies in
/// exactly one chunk.
pub fn chunk_bytes_for(block_bytes: u32) -> u32 {
    let blocks = CHUNK_TARGET_BYTES.div_ceil(u64::from(block_bytes));
    (blocks * u64::from(block_bytes)) as u32
}

/// A file mapped into memory (read-only for the sender, shared and writable for the
/// receiver): blocks are copied out of and into it with no system call per block, and
/// the kernel reads ahead and writes back.
struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain memory; the receiver writes a chunk only before handing it
// to the checker, which then only reads it (no two threads touch the same bytes at once).
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

impl Mapping {
    fn new(file: &File, len: usize, writable: bool) -> io::Result<Self> {
        if len == 0 {
            return Ok(Self {
                ptr: std::ptr::NonNull::dangling().as_ptr(),
                len,
            });
        }
        let protection = if writable {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_READ
        };
        // SAFETY: a valid descriptor, a length within the file, no fixed address.
        let ptr = unsafe {
            use std::os::fd::AsRawFd;
            libc::mmap(
                std::ptr::null_mut(),
                len,
                protection,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: advice on the mapping just made.
        unsafe { libc::madvise(ptr, len, libc::MADV_SEQUENTIAL) };
        Ok(Self {
            ptr: ptr.cast(),
            len,
        })
    }

    fn bytes(&self, range: std::ops::Range<usize>) -> &[u8] {
        assert!(range.start <= range.end && range.end <= self.len);
        // SAFETY: within the mapping, checked above.
        unsafe { std::slice::from_raw_parts(self.ptr.add(range.start), range.end - range.start) }
    }

    /// Copy `bytes` in at `at`.
    ///
    /// # Safety
    /// No other thread may read or write those bytes meanwhile.
    unsafe fn write(&self, at: usize, bytes: &[u8]) {
        assert!(at <= self.len && bytes.len() <= self.len - at);
        // SAFETY: within the mapping; exclusivity is the caller's promise.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ptr.add(at), bytes.len()) };
    }

    /// Fault every page in for writing now (`MADV_POPULATE_WRITE`, Linux 5.14), not one
    /// fault per 4 KB page while datagrams arrive (its effect on the receiver's rate is
    /// not measured separately). Where the kernel lacks it, pages fault in as written.
    fn populate_for_writing(&self) {
        if self.len > 0 {
            // SAFETY: advice on the mapping made in `new`.
            unsafe { libc::madvise(self.ptr.cast(), self.len, libc::MADV_POPULATE_WRITE) };
        }
    }

    /// Make `range` durable (`msync(MS_SYNC)`).
    fn sync(&self, range: std::ops::Range<usize>) -> io::Result<()> {
        if range.is_empty() {
            return Ok(());
        }
        // msync wants a page-aligned start.
        let page = 4096;
        let start = range.start / page * page;
        // SAFETY: within the mapping.
        let result =
            unsafe { libc::msync(self.ptr.add(start).cast(), range.end - start, libc::MS_SYNC) };
        if result < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: the mapping made in `new`, unmapped once.
            unsafe { libc::munmap(self.ptr.cast(), self.len) };
        }
    }
}

pub fn digest_of_digests(chunks: &[[u8; 32]]) -> [u8; 32] {
    let mut hasher = blake3::Hasher::new();
    for digest in chunks {
        hasher.update(digest);
    }
    *hasher.finalize().as_bytes()
}

/// A file to send, mapped.
pub struct FileSource {
    map: Mapping,
    block_bytes: usize,
    _file: File,
}

impl FileSource {
    /// Open `path` and describe it as `name` for blocks of `block_bytes` (hashing it: one
    /// read of the whole file).
    pub fn open(path: &Path, name: &str, block_bytes: u32) -> io::Result<(Self, FileOffer)> {
        Self::open_in_chunks(path, name, block_bytes, chunk_bytes_for(block_bytes))
    }

    /// As `open`, checked in chunks of `chunk_bytes` (a whole number of blocks).
    pub fn open_in_chunks(
        path: &Path,
        name: &str,
        block_bytes: u32,
        chunk_bytes: u32,
    ) -> io::Result<(Self, FileOffer)> {
        assert!(
            chunk_bytes > 0 && chunk_bytes % block_bytes == 0,
            "chunks hold whole blocks"
        );
        let file = File::open(path)?;
        let len = file.metadata()?.len() as usize;
        let map = Mapping::new(&file, len, false)?;
        let chunk_digests: Vec<[u8; 32]> = (0..len.div_ceil(chunk_bytes as usize))
            .map(|chunk| {
                let start = chunk * chunk_bytes as usize;
                let end = (start + chunk_bytes as usize).min(len);
                *blake3::hash(map.bytes(start..end)).as_bytes()
            })
            .collect();
        let offer = FileOffer {
            name: name.to_owned(),
            chunk_bytes,
            digest: digest_of_digests(&chunk_digests),
            chunk_digests,
        };
        let source = Self {
            map,
            block_bytes: block_bytes as usize,
            _file: file,
        };
        Ok((source, offer))
    }

    pub fn len(&self) -> u64 {
        self.map.len as u64
    }

    pub fn is_empty(&self) -> bool {
        self.map.len == 0
    }
}

impl BlockSource for FileSource {
    fn read(&mut self, block: u64, buf: &mut [u8]) {
        let start = block as usize * self.block_bytes;
        buf.copy_from_slice(self.map.bytes(start..start + buf.len()));
    }

    fn in_place(&self, block: u64) -> Option<&[u8]> {
        let start = block as usize * self.block_bytes;
        Some(
            self.map
                .bytes(start..(start + self.block_bytes).min(self.map.len)),
        )
    }
}

/// The files of a directory tree, as (path, name relative to the root with `/`), in a
/// stable order; a single file is a tree of one named by its file name.
pub fn tree(root: &Path) -> io::Result<Vec<(PathBuf, String)>> {
    let mut found = Vec::new();
    if root.is_file() {
        let name = root
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| io::Error::other(format!("{} has no UTF-8 name", root.display())))?;
        found.push((root.to_owned(), name.to_owned()));
        return Ok(found);
    }
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.is_file() {
                let relative = path.strip_prefix(root).expect("under the root");
                let name = relative.to_str().ok_or_else(|| {
                    io::Error::other(format!("{} has no UTF-8 name", path.display()))
                })?;
                found.push((path.clone(), name.to_owned()));
            }
        }
    }
    found.sort_by(|a, b| a.1.cmp(&b.1));
    Ok(found)
}

/// Where a file named `name` goes under `dir`, or why it may not: only plain relative
/// paths, nothing that climbs out.
pub fn destination(dir: &Path, name: &str) -> Result<PathBuf, String> {
    let relative = Path::new(name);
    let plain = relative
        .components()
        .all(|c| matches!(c, Component::Normal(_)));
    if name.is_empty() || !plain {
        return Err(format!(
            "the file name {name:?} is not a plain relative path"
        ));
    }
    Ok(dir.join(relative))
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

/// A checked chunk, or one that did not check.
enum Checked {
    Good,
    Bad(usize),
    Failed(String),
}

/// A file being received.
pub struct FileSink {
    map: Arc<Mapping>,
    block_bytes: u64,
    chunk_blocks: u64,
    /// Blocks still missing in each chunk.
    missing: Vec<u64>,
    outstanding: usize,
    to_check: Option<mpsc::Sender<usize>>,
    checked: mpsc::Receiver<Checked>,
    checker: Option<JoinHandle<()>>,
    /// CPU time the checking thread has used, in nanoseconds (as of its last check).
    check_cpu_ns: Arc<AtomicU64>,
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
    /// The file was whole under its name before this run.
    whole_before: bool,
}

impl FileSink {
    /// Take the file `offer` describes into `dir`, resuming a part left there before;
    /// the blocks already held, or why it cannot be taken.
    pub fn accept(
        dir: &Path,
        offer: &FileOffer,
        total_bytes: u64,
        block_bytes: u32,
    ) -> Result<(Self, RangeSet), String> {
        let dest = destination(dir, &offer.name)?;
        if offer.chunk_bytes == 0 || offer.chunk_bytes % block_bytes != 0 {
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
        let map = Arc::new(
            Mapping::new(&file, total_bytes as usize, true)
                .map_err(|e| format!("cannot map {}: {e}", part.display()))?,
        );
        if in_memory(&file) {
            map.populate_for_writing();
        }
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
        let (to_check, checked, checker, check_cpu_ns) =
            start_checker(&map, &chunk_digests, offer.chunk_bytes as usize, &map_path)?;
        let sink = Self {
            map,
            block_bytes: u64::from(block_bytes),
            chunk_blocks,
            missing,
            outstanding: 0,
            to_check: Some(to_check),
            checked,
            checker: Some(checker),
            check_cpu_ns,
            part,
            map_path,
            dest,
            file,
            digest: offer.digest,
            chunk_digests,
            bad_chunks: 0,
            resumed_blocks: held.len(),
            whole_before: false,
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
        let (_, checked) = mpsc::channel();
        let sink = Self {
            map: Arc::new(map),
            block_bytes: u64::from(block_bytes),
            chunk_blocks: u64::from(offer.chunk_bytes / block_bytes),
            missing: vec![0; offer.chunk_digests.len()],
            outstanding: 0,
            to_check: None,
            checked,
            checker: None,
            check_cpu_ns: Arc::default(),
            part: dest.to_owned(),
            map_path: with_suffix(dest, ".hurricane-map"),
            dest: dest.to_owned(),
            file,
            digest: offer.digest,
            chunk_digests: Arc::new(offer.chunk_digests.clone()),
            bad_chunks: 0,
            resumed_blocks: total_blocks,
            whole_before: true,
        };
        Some((sink, held))
    }

    /// Once every block is in: wait for the checks; the blocks of chunks that failed
    /// (to fetch again), or, when all checked, the file renamed into place.
    pub fn finish(&mut self) -> Result<Vec<std::ops::Range<u64>>, String> {
        if self.whole_before {
            return Ok(Vec::new());
        }
        let mut bad = Vec::new();
        while self.outstanding > 0 {
            match self.checked.recv() {
                Ok(Checked::Good) => self.outstanding -= 1,
                Ok(Checked::Bad(chunk)) => {
                    self.outstanding -= 1;
                    self.bad_chunks += 1;
                    let start = chunk as u64 * self.chunk_blocks;
                    self.missing[chunk] = self
                        .chunk_blocks
                        .min(self.map.len.div_ceil(self.block_bytes as usize) as u64 - start);
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

    /// CPU time the checking thread has used, as of its last check (BLAKE3 runs at
    /// about 7 GB/s on one core alone, so a 9.6 Gb/s transfer's chunks take a sixth of
    /// a core; beside the emulator and both ends, a fifth to a quarter).
    pub fn check_cpu_s(&self) -> f64 {
        self.check_cpu_ns.load(Ordering::Relaxed) as f64 / 1e9
    }
}

impl BlockSink for FileSink {
    fn write(&mut self, block: u64, payload: &[u8]) {
        let start = (block * self.block_bytes) as usize;
        // SAFETY: the receiver writes each block once (duplicates are dropped before
        // they reach the sink) and hands a chunk to the checker only after its last
        // block; a chunk found bad is written again only after its check came back.
        unsafe { self.map.write(start, payload) };
        let chunk = (block / self.chunk_blocks) as usize;
        self.missing[chunk] -= 1;
        if self.missing[chunk] == 0
            && let Some(to_check) = &self.to_check
            && to_check.send(chunk).is_ok()
        {
            self.outstanding += 1;
        }
    }
}

impl Drop for FileSink {
    fn drop(&mut self) {
        self.to_check = None;
        if let Some(checker) = self.checker.take() {
            let _ = checker.join();
        }
    }
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

/// The checking thread's ends: where chunks go, where outcomes come back, the thread,
/// and the CPU time it has used (nanoseconds).
type CheckerHandles = (
    mpsc::Sender<usize>,
    mpsc::Receiver<Checked>,
    JoinHandle<()>,
    Arc<AtomicU64>,
);

fn start_checker(
    map: &Arc<Mapping>,
    digests: &Arc<Vec<[u8; 32]>>,
    chunk_bytes: usize,
    map_path: &Path,
) -> Result<CheckerHandles, String> {
    let (to_check, checking) = mpsc::channel();
    let (report, checked) = mpsc::channel();
    let cpu_ns = Arc::new(AtomicU64::new(0));
    let (map, digests, spent_ns) = (Arc::clone(map), Arc::clone(digests), Arc::clone(&cpu_ns));
    let map_path = map_path.to_owned();
    let thread = std::thread::Builder::new()
        .name("hurricane-check".into())
        .spawn(move || {
            let cpu_at_start = crate::driver::thread_cpu_s();
            let spent = || {
                let seconds = crate::driver::thread_cpu_s() - cpu_at_start;
                spent_ns.store((seconds * 1e9) as u64, Ordering::Relaxed);
            };
            check_chunks(
                &map,
                &digests,
                chunk_bytes,
                &map_path,
                &checking,
                &report,
                spent,
            );
        })
        .map_err(|e| format!("cannot start the checking thread: {e}"))?;
    Ok((to_check, checked, thread, cpu_ns))
}

/// The checking thread: each chunk handed over is hashed and compared; a good one is
/// made durable and recorded in the map (data first, then the line that names it).
fn check_chunks(
    map: &Mapping,
    digests: &[[u8; 32]],
    chunk_bytes: usize,
    map_path: &Path,
    chunks: &mpsc::Receiver<usize>,
    report: &mpsc::Sender<Checked>,
    spent: impl Fn(),
) {
    let mut record = match OpenOptions::new().append(true).open(map_path) {
        Ok(file) => file,
        Err(e) => {
            let _ = report.send(Checked::Failed(format!(
                "cannot append to {}: {e}",
                map_path.display()
            )));
            return;
        }
    };
    for chunk in chunks {
        let start = chunk * chunk_bytes;
        let range = start..(start + chunk_bytes).min(map.len);
        let outcome = if *blake3::hash(map.bytes(range.clone())).as_bytes() == digests[chunk] {
            let durable = map
                .sync(range)
                .and_then(|()| writeln!(record, "{chunk}"))
                .and_then(|()| record.sync_data());
            match durable {
                Ok(()) => Checked::Good,
                Err(e) => Checked::Failed(format!("cannot record chunk {chunk}: {e}")),
            }
        } else {
            Checked::Bad(chunk)
        };
        spent();
        if report.send(outcome).is_err() {
            return;
        }
    }
}
