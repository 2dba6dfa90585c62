//! Where frames wait while the link holds them: a ring of bytes per direction, mapped and
//! faulted in once, at the size the link can hold at most.
//!
//! A frame is read from the device straight into the ring (no copy) and stays there until
//! its last release. The link releases in the order it admitted (reordering, a fault for
//! tests, swaps only neighbours), so space is handed back in order: the ring's free space
//! starts where the oldest frame still held begins. A frame costs its bytes (its 10-byte
//! virtio header included) and 40 bytes of bookkeeping; the ring is resident in full from
//! the start. Faulting pages in as they are first used cost this machine 0.7 s a gigabyte,
//! single pages up to 0.7 ms, in the middle of a transfer: a long, fast circuit's first
//! slow start was late by hundreds of milliseconds.
//!
//! For the same reason a larger ring, when a change lets the link hold more, is mapped and
//! faulted in on a thread of its own while the engine goes on with the old one: on the
//! engine's thread, growing a 1,400-mile circuit's rings for a delay of 40 ms stopped the
//! line for 0.85 s, for 160 ms 3.1 s (on an idle two-core machine; under load, long
//! enough to lose every ping for a second). The old ring, once drained, is unmapped off
//! the engine's thread too.

use std::collections::VecDeque;
use std::io;
use std::ptr::NonNull;
use std::thread::JoinHandle;

/// A frame held in an arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameRef {
    /// The arena generation it lives in.
    generation: u32,
    /// Its place in the order frames were held.
    seq: u64,
    offset: usize,
    len: usize,
}

impl FrameRef {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

struct Held {
    seq: u64,
    offset: usize,
    /// Releases still to come (a duplicated frame is released twice).
    refs: u32,
}

/// One mapping.
struct Ring {
    generation: u32,
    base: NonNull<u8>,
    capacity: usize,
    /// Where the next frame goes.
    tail: usize,
    held: VecDeque<Held>,
    next_seq: u64,
}

// SAFETY: the mapping is owned by the ring and used from one thread at a time.
unsafe impl Send for Ring {}

impl Ring {
    fn map(generation: u32, capacity: usize) -> io::Result<Ring> {
        // SAFETY: an anonymous private mapping with no address hint; the result is
        // checked.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                capacity,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // Huge pages: every frame is copied in on its way in and out again a delay later,
        // long after its page left the TLB; with 4 KB pages each copy of a 64 KB frame
        // walked the page tables 16 times (twice over in a virtual machine). Then every
        // page is faulted in now, not while frames wait (by writing it, on a kernel older
        // than MADV_POPULATE_WRITE's 5.14). Huge pages are a request: a kernel that
        // refuses it still has a working ring.
        // SAFETY: the range is the mapping just made, writable and not yet shared.
        unsafe {
            libc::madvise(ptr, capacity, libc::MADV_HUGEPAGE);
            if libc::madvise(ptr, capacity, libc::MADV_POPULATE_WRITE) != 0 {
                std::ptr::write_bytes(ptr.cast::<u8>(), 0, capacity);
            }
        }
        Ok(Ring {
            generation,
            base: NonNull::new(ptr.cast()).expect("mmap returned a mapping"),
            capacity,
            tail: 0,
            held: VecDeque::new(),
            next_seq: 0,
        })
    }

    /// Where `len` bytes fit, contiguous, or None if the ring is too full.
    fn place(&self, len: usize) -> Option<usize> {
        let Some(oldest) = self.held.front() else {
            return (len <= self.capacity).then_some(0);
        };
        let newest = self.held.back().expect("not empty");
        if newest.offset >= oldest.offset {
            // Not wrapped: free after the tail, and before the oldest.
            if self.capacity - self.tail >= len {
                Some(self.tail)
            } else if oldest.offset >= len {
                Some(0)
            } else {
                None
            }
        } else if oldest.offset - self.tail >= len {
            Some(self.tail)
        } else {
            None
        }
    }

    fn slice(&mut self, offset: usize, len: usize) -> &mut [u8] {
        // SAFETY: offset + len <= capacity (place checked it, or it is a held frame's),
        // the mapping lives as long as the ring, and `&mut self` keeps any other slice of
        // the ring from living meanwhile.
        unsafe { std::slice::from_raw_parts_mut(self.base.as_ptr().add(offset), len) }
    }

    fn bytes(&self, offset: usize, len: usize) -> &[u8] {
        // SAFETY: a region given out by `place` and still held.
        unsafe { std::slice::from_raw_parts(self.base.as_ptr().add(offset), len) }
    }

    fn hold(&mut self, offset: usize, len: usize) -> FrameRef {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.held.push_back(Held {
            seq,
            offset,
            refs: 1,
        });
        self.tail = offset + len;
        FrameRef {
            generation: self.generation,
            seq,
            offset,
            len,
        }
    }

    fn find(&mut self, frame: FrameRef) -> Option<&mut Held> {
        let first = self.held.front()?.seq;
        let index = usize::try_from(frame.seq.checked_sub(first)?).ok()?;
        self.held.get_mut(index).filter(|h| h.refs > 0)
    }

    fn release(&mut self, frame: FrameRef) {
        if let Some(held) = self.find(frame) {
            held.refs -= 1;
        }
        while self.held.front().is_some_and(|h| h.refs == 0) {
            self.held.pop_front();
        }
        if self.held.is_empty() {
            self.tail = 0;
        }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, unmapped once.
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.capacity);
        }
    }
}

/// The frames one direction holds. A change that lets the link hold more than the ring
/// can starts a larger ring, mapped off the caller's thread; frames go on into the old
/// one until the larger is ready, and the old one goes when its last frame has left.
pub struct Arena {
    rings: VecDeque<Ring>,
    /// The larger ring being mapped and faulted in on a thread of its own, if one is.
    growing: Option<JoinHandle<io::Result<Ring>>>,
    /// The capacity asked for last: grown to once the ring being mapped is in.
    wanted_bytes: usize,
    /// Larger rings that could not be mapped (no address space or memory).
    pub failed_grows: u64,
    /// Frames that found no room (the ring was full): counted, not held.
    pub refused_frames: u64,
}

impl Arena {
    /// An arena holding up to `bound_bytes` of frames (rounded up to whole pages).
    pub fn new(bound_bytes: usize) -> io::Result<Arena> {
        let capacity = Self::round(bound_bytes);
        Ok(Arena {
            rings: VecDeque::from([Ring::map(0, capacity)?]),
            growing: None,
            wanted_bytes: capacity,
            failed_grows: 0,
            refused_frames: 0,
        })
    }

    fn round(bytes: usize) -> usize {
        bytes.div_ceil(4096).max(1) * 4096
    }

    pub fn capacity(&self) -> usize {
        self.newest().capacity
    }

    /// Bytes mapped (all of it resident), old rings still draining included.
    pub fn mapped_bytes(&self) -> usize {
        self.rings.iter().map(|r| r.capacity).sum()
    }

    pub fn held_frames(&self) -> usize {
        self.rings.iter().map(|r| r.held.len()).sum()
    }

    fn newest(&self) -> &Ring {
        self.rings.back().expect("an arena has a ring")
    }

    /// Give frames to come room for `bound_bytes`, as soon as a ring that large is mapped
    /// (on a thread of its own); until then they go into the current ring.
    pub fn grow_to(&mut self, bound_bytes: usize) {
        self.wanted_bytes = self.wanted_bytes.max(Self::round(bound_bytes));
        self.take_grown_ring();
    }

    /// Whether a larger ring is being mapped.
    pub fn is_growing(&self) -> bool {
        self.growing.is_some()
    }

    /// Take in the larger ring if it is ready, and start mapping one if a larger one is
    /// wanted and none is under way.
    fn take_grown_ring(&mut self) {
        if let Some(growing) = self.growing.take_if(|g| g.is_finished()) {
            if let Ok(Ok(ring)) = growing.join() {
                self.rings.push_back(ring);
                self.drop_empty_rings();
            } else {
                self.give_up_growing();
            }
        }
        if self.growing.is_none() && self.wanted_bytes > self.capacity() {
            let (generation, capacity) = (self.newest().generation + 1, self.wanted_bytes);
            if let Ok(mapping) =
                spawn_off_the_engine("arena-grow", move || Ring::map(generation, capacity))
            {
                self.growing = Some(mapping);
            } else {
                self.give_up_growing();
            }
        }
    }

    /// No larger ring could be mapped (no memory or address space): frames that find the
    /// current one full are refused, and the next change that asks for more tries again.
    fn give_up_growing(&mut self) {
        self.failed_grows += 1;
        self.wanted_bytes = self.capacity();
    }

    /// Wait for the larger ring being mapped, if one is, and take it in.
    #[cfg(test)]
    fn finish_growing(&mut self) {
        while self.growing.is_some() {
            std::thread::sleep(std::time::Duration::from_millis(1));
            self.take_grown_ring();
        }
    }

    /// Room for up to `len` bytes to read a frame into, or None if the arena is full.
    /// `keep` it with its real length, or leave it (nothing is held).
    pub fn room(&mut self, len: usize) -> Option<(usize, &mut [u8])> {
        if self.growing.is_some() {
            self.take_grown_ring();
        }
        let ring = self.rings.back_mut().expect("an arena has a ring");
        let offset = ring.place(len)?;
        Some((offset, ring.slice(offset, len)))
    }

    /// Hold the `len` bytes written at `offset` of the room just given.
    pub fn keep(&mut self, offset: usize, len: usize) -> FrameRef {
        self.rings.back_mut().expect("a ring").hold(offset, len)
    }

    /// The room given last at `offset` (`len` bytes of it), not yet kept: to work on a
    /// frame read into it before it is kept.
    pub fn written(&mut self, offset: usize, len: usize) -> &mut [u8] {
        self.rings.back_mut().expect("a ring").slice(offset, len)
    }

    /// Copy `bytes` in as a frame of its own, if there is room.
    pub fn copy_in(&mut self, bytes: &[u8]) -> Option<FrameRef> {
        let (offset, room) = self.room(bytes.len())?;
        room.copy_from_slice(bytes);
        Some(self.keep(offset, bytes.len()))
    }

    pub fn bytes(&self, frame: FrameRef) -> &[u8] {
        let ring = self
            .rings
            .iter()
            .find(|r| r.generation == frame.generation)
            .expect("a frame's ring lives until it is released");
        ring.bytes(frame.offset, frame.len)
    }

    pub fn bytes_mut(&mut self, frame: FrameRef) -> &mut [u8] {
        let ring = self
            .rings
            .iter_mut()
            .find(|r| r.generation == frame.generation)
            .expect("a frame's ring lives until it is released");
        ring.slice(frame.offset, frame.len)
    }

    /// The frame will be released `count` more times than once.
    pub fn add_releases(&mut self, frame: FrameRef, count: u32) {
        if count == 0 {
            return;
        }
        if let Some(ring) = self
            .rings
            .iter_mut()
            .find(|r| r.generation == frame.generation)
            && let Some(held) = ring.find(frame)
        {
            held.refs += count;
        }
    }

    /// Give back a frame just kept and never handed to the link (refused, or cut into
    /// segments): if it is the newest, its space is reused at once.
    pub fn discard(&mut self, frame: FrameRef) {
        let ring = self.rings.back_mut().expect("a ring");
        let newest = ring.generation == frame.generation
            && ring.held.back().is_some_and(|h| h.seq == frame.seq);
        if newest {
            ring.held.pop_back();
            ring.next_seq -= 1;
            ring.tail = frame.offset;
            if ring.held.is_empty() {
                ring.tail = 0;
            }
        } else {
            self.release(frame);
        }
    }

    /// One release of `frame`: its space is free once every release came and every
    /// frame before it has gone.
    pub fn release(&mut self, frame: FrameRef) {
        if let Some(ring) = self
            .rings
            .iter_mut()
            .find(|r| r.generation == frame.generation)
        {
            ring.release(frame);
        }
        self.drop_empty_rings();
    }

    fn drop_empty_rings(&mut self) {
        while self.rings.len() > 1 && self.rings.front().is_some_and(|r| r.held.is_empty()) {
            if let Some(ring) = self.rings.pop_front() {
                unmap_off_this_thread(ring);
            }
        }
    }
}

/// Unmap a drained ring on a thread of its own: unmapping a 720 MB huge-page ring (a
/// 1,400-mile circuit set to 160 ms) took 1.7-3.4 ms, a stop the engine's line would show
/// as lateness; starting the thread that does it from a `SCHED_FIFO` thread pinned to one
/// CPU, 0.06-0.14 ms (a one-off program). The new thread starts with the engine's
/// real-time priority and CPU, so it runs only when the engine waits, and then leaves
/// both. If no thread can be started the ring is unmapped here.
fn unmap_off_this_thread(ring: Ring) {
    let _ = spawn_off_the_engine("arena-unmap", move || drop(ring));
}

/// Run `work` on a new thread named `name` that first leaves the engine's real-time
/// priority and its CPU (which a thread inherits from the one that starts it) for the
/// ordinary scheduler on any CPU: faulting a ring in takes a core for up to seconds, and
/// the engine must not wait behind it. A failure to move leaves the thread as it was,
/// which only makes it slower to get the CPU.
fn spawn_off_the_engine<T: Send + 'static>(
    name: &str,
    work: impl FnOnce() -> T + Send + 'static,
) -> io::Result<JoinHandle<T>> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let _ = crate::sched::set_policy(libc::SCHED_OTHER, 0);
            let _ = crate::sched::set_cpus(0..crate::sched::online_cpus());
            work()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(arena: &mut Arena, len: usize, fill: u8) -> Option<FrameRef> {
        arena.copy_in(&vec![fill; len])
    }

    #[test]
    fn frames_are_held_in_order_and_space_comes_back() {
        let mut arena = Arena::new(4096 * 4).unwrap();
        let a = frame(&mut arena, 6000, 1).unwrap();
        let b = frame(&mut arena, 6000, 2).unwrap();
        assert!(frame(&mut arena, 6000, 3).is_none(), "16 KB holds two");
        assert!(arena.bytes(b).iter().all(|&x| x == 2));
        arena.release(a);
        // The space before b is free, but only 6,000 bytes of it: a 7,000-byte frame
        // waits for b to go.
        assert!(frame(&mut arena, 7000, 4).is_none());
        let c = frame(&mut arena, 6000, 3).unwrap();
        assert!(arena.bytes(c).iter().all(|&x| x == 3));
        assert!(arena.bytes(b).iter().all(|&x| x == 2), "b untouched");
        arena.release(b);
        arena.release(c);
        assert_eq!(arena.held_frames(), 0);
        assert!(
            frame(&mut arena, 16_000, 5).is_some(),
            "all of it is free again"
        );
    }

    #[test]
    fn a_frame_released_twice_is_held_until_the_second() {
        let mut arena = Arena::new(4096).unwrap();
        let a = frame(&mut arena, 3000, 7).unwrap();
        arena.add_releases(a, 1);
        arena.release(a);
        assert_eq!(arena.held_frames(), 1);
        arena.release(a);
        assert_eq!(arena.held_frames(), 0);
    }

    #[test]
    fn a_neighbour_released_first_waits_for_the_one_before() {
        let mut arena = Arena::new(4096 * 2).unwrap();
        let a = frame(&mut arena, 3000, 1).unwrap();
        let b = frame(&mut arena, 3000, 2).unwrap();
        arena.release(b);
        assert_eq!(arena.held_frames(), 2, "b's space follows a's");
        assert!(arena.bytes(a).iter().all(|&x| x == 1));
        arena.release(a);
        assert_eq!(arena.held_frames(), 0);
    }

    #[test]
    fn a_frame_given_up_at_once_waits_for_those_before_it() {
        let mut arena = Arena::new(4096 * 4).unwrap();
        let held: Vec<FrameRef> = (0..4)
            .map(|k| frame(&mut arena, 3000, k).unwrap())
            .collect();
        arena.release(held[3]); // refused by the link just after it was read
        assert_eq!(arena.held_frames(), 4);
        for frame in &held[..3] {
            arena.release(*frame);
        }
        assert_eq!(arena.held_frames(), 0);
    }

    #[test]
    fn a_discarded_newest_frame_gives_its_space_back_at_once() {
        let mut arena = Arena::new(4096 * 2).unwrap();
        let a = frame(&mut arena, 3000, 1).unwrap();
        let b = frame(&mut arena, 5000, 2).unwrap();
        arena.discard(b);
        let c = frame(&mut arena, 5000, 3).unwrap();
        assert_eq!(arena.held_frames(), 2);
        assert!(arena.bytes(a).iter().all(|&x| x == 1));
        assert!(arena.bytes(c).iter().all(|&x| x == 3));
    }

    #[test]
    fn a_larger_ring_takes_over_and_the_old_one_goes_when_empty() {
        let mut arena = Arena::new(4096).unwrap();
        let a = frame(&mut arena, 3000, 1).unwrap();
        arena.grow_to(4096 * 8);
        arena.finish_growing();
        let b = frame(&mut arena, 20_000, 2).unwrap();
        assert!(arena.bytes(a).iter().all(|&x| x == 1));
        assert_eq!(arena.rings.len(), 2);
        arena.release(a);
        assert_eq!(arena.rings.len(), 1);
        assert!(arena.bytes(b).iter().all(|&x| x == 2));
    }

    #[test]
    fn growing_twice_ends_at_the_larger_size_and_frames_go_on_meanwhile() {
        let mut arena = Arena::new(4096).unwrap();
        arena.grow_to(4096 * 64);
        // Whether or not the larger ring is ready yet, frames still find room.
        let a = frame(&mut arena, 3000, 1).unwrap();
        arena.grow_to(4096 * 256);
        arena.grow_to(4096 * 8); // smaller than asked already: nothing more
        arena.finish_growing();
        assert_eq!(arena.capacity(), 4096 * 256);
        assert_eq!(arena.failed_grows, 0);
        assert!(arena.bytes(a).iter().all(|&x| x == 1));
        let b = frame(&mut arena, 500_000, 2).unwrap();
        arena.release(a);
        assert_eq!(
            arena.rings.len(),
            1,
            "the rings before the largest are gone"
        );
        assert!(arena.bytes(b).iter().all(|&x| x == 2));
    }
}
