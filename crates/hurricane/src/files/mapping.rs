//! A file mapped into memory (read-only for the sender, shared and writable for the
//! receiver on tmpfs): blocks are copied out of and into it with no system call per
//! block, and the kernel reads ahead and writes back.

use std::fs::File;
use std::io;

/// The mapping: its start and length.
pub(super) struct Mapping {
    ptr: *mut u8,
    pub(super) len: usize,
}

// SAFETY: the mapping is plain memory; the receiver writes a chunk only before handing it
// to the checker, which then only reads it (no two threads touch the same bytes at once).
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

impl Mapping {
    pub(super) fn new(file: &File, len: usize, writable: bool) -> io::Result<Self> {
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

    pub(super) fn bytes(&self, range: std::ops::Range<usize>) -> &[u8] {
        assert!(range.start <= range.end && range.end <= self.len);
        // SAFETY: within the mapping, checked above.
        unsafe { std::slice::from_raw_parts(self.ptr.add(range.start), range.end - range.start) }
    }

    /// Copy `bytes` in at `at`.
    ///
    /// # Safety
    /// No other thread may read or write those bytes meanwhile.
    pub(super) unsafe fn write(&self, at: usize, bytes: &[u8]) {
        assert!(at <= self.len && bytes.len() <= self.len - at);
        // SAFETY: within the mapping; exclusivity is the caller's promise.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ptr.add(at), bytes.len()) };
    }

    /// Fault every page in for writing now (`MADV_POPULATE_WRITE`, Linux 5.14), not one
    /// fault per 4 KB page while datagrams arrive (its effect on the receiver's rate is
    /// not measured separately). Where the kernel lacks it, pages fault in as written.
    pub(super) fn populate_for_writing(&self) {
        if self.len > 0 {
            // SAFETY: advice on the mapping made in `new`.
            unsafe { libc::madvise(self.ptr.cast(), self.len, libc::MADV_POPULATE_WRITE) };
        }
    }

    /// Make `range` durable (`msync(MS_SYNC)`).
    pub(super) fn sync(&self, range: std::ops::Range<usize>) -> io::Result<()> {
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
