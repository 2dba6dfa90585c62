//! Files at both ends. The sender maps its file and hashes it once before the transfer
//! (BLAKE3 per chunk, and of the chunk digests in order: the file's digest). The receiver
//! writes blocks into `<name>.hurricane-part` (space reserved first, so a full disk is a
//! refusal before the first datagram, not a failure after), checks each chunk on a
//! thread of its own as soon as its last block is in, makes it durable, and records it
//! in `<name>.hurricane-map` (`sink`, `check`). A receiver started again over the same
//! part and map holds the verified chunks and fetches only the rest. When every chunk
//! checks and the digests agree, the part is renamed to its name: a file under its name
//! is always whole. On tmpfs the receiver's blocks go into a mapping of the part
//! (`mapping`); on a disk into a buffer per chunk, written with `O_DIRECT` (`direct`).

use std::fs::File;
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::control::FileOffer;
use crate::sender::BlockSource;

mod check;
pub mod direct;
mod mapping;
mod sink;

use mapping::Mapping;
pub use sink::{FileSink, SinkOptions, WriteMode};

/// About 16 MiB: what a kill can cost a resumed transfer, and the unit of checking.
pub const CHUNK_TARGET_BYTES: u64 = 16 << 20;

/// The chunk size for `block_bytes`: a whole number of blocks, so every block lies in
/// exactly one chunk.
pub fn chunk_bytes_for(block_bytes: u32) -> u32 {
    let blocks = CHUNK_TARGET_BYTES.div_ceil(u64::from(block_bytes));
    (blocks * u64::from(block_bytes)) as u32
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
            chunk_bytes > 0 && chunk_bytes.is_multiple_of(block_bytes),
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
