//! The checking thread: each chunk handed over whole is hashed (BLAKE3) and compared with
//! the sender's digest of it; a good one is made durable and recorded in the map (data
//! first, then the line that names it), a bad one is reported to be fetched again.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;

use super::direct::{AlignedBuf, DirectFile, Whole};
use super::mapping::Mapping;

/// A chunk whose last block is in.
pub enum Job {
    /// In the part's mapping.
    Mapped { chunk: usize, map: Arc<Mapping> },
    /// In a buffer of its own or spilled to the part (see `direct`).
    Direct {
        chunk: usize,
        whole: Whole,
        file: Arc<DirectFile>,
    },
}

/// A checked chunk, or one that did not check.
pub enum Checked {
    Good,
    Bad(usize),
    Failed(String),
}

/// The checking thread and its ends.
pub struct Checker {
    jobs: Option<mpsc::Sender<Job>>,
    pub outcomes: mpsc::Receiver<Checked>,
    thread: Option<JoinHandle<()>>,
    /// CPU time the thread has used, in nanoseconds (as of its last check).
    cpu_ns: Arc<AtomicU64>,
}

impl Checker {
    /// A thread checking chunks of `chunk_bytes` against `digests`, recording the good
    /// ones in `map_path` and giving the buffers of direct chunks back on `give_back`.
    pub fn start(
        digests: Arc<Vec<[u8; 32]>>,
        chunk_bytes: usize,
        map_path: &Path,
        give_back: mpsc::Sender<AlignedBuf>,
    ) -> Result<Self, String> {
        let mut record = OpenOptions::new()
            .append(true)
            .open(map_path)
            .map_err(|e| format!("cannot append to {}: {e}", map_path.display()))?;
        let (jobs, incoming) = mpsc::channel();
        let (report, outcomes) = mpsc::channel();
        let cpu_ns = Arc::new(AtomicU64::new(0));
        let spent_ns = Arc::clone(&cpu_ns);
        let thread = std::thread::Builder::new()
            .name("hurricane-check".into())
            .spawn(move || {
                let cpu_at_start = crate::driver::thread_cpu_s();
                let mut scratch = Vec::new();
                for job in incoming {
                    let outcome = check(job, &digests, chunk_bytes, &give_back, &mut scratch);
                    let outcome = match outcome {
                        Ok((chunk, true)) => match writeln!(record, "{chunk}")
                            .and_then(|()| record.sync_data())
                        {
                            Ok(()) => Checked::Good,
                            Err(e) => Checked::Failed(format!("cannot record chunk {chunk}: {e}")),
                        },
                        Ok((chunk, false)) => Checked::Bad(chunk),
                        Err(why) => Checked::Failed(why),
                    };
                    let seconds = crate::driver::thread_cpu_s() - cpu_at_start;
                    spent_ns.store((seconds * 1e9) as u64, Ordering::Relaxed);
                    if report.send(outcome).is_err() {
                        return;
                    }
                }
            })
            .map_err(|e| format!("cannot start the checking thread: {e}"))?;
        Ok(Self {
            jobs: Some(jobs),
            outcomes,
            thread: Some(thread),
            cpu_ns,
        })
    }

    /// Hand a whole chunk over; false if the thread has stopped.
    pub fn hand(&self, job: Job) -> bool {
        self.jobs
            .as_ref()
            .is_some_and(|jobs| jobs.send(job).is_ok())
    }

    pub fn cpu_s(&self) -> f64 {
        self.cpu_ns.load(Ordering::Relaxed) as f64 / 1e9
    }
}

impl Drop for Checker {
    fn drop(&mut self) {
        self.jobs = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Whether `job`'s chunk checks, made durable if it does; or why that could not be told.
fn check(
    job: Job,
    digests: &[[u8; 32]],
    chunk_bytes: usize,
    give_back: &mpsc::Sender<AlignedBuf>,
    scratch: &mut Vec<u8>,
) -> Result<(usize, bool), String> {
    let matches = |chunk: usize, bytes: &[u8]| *blake3::hash(bytes).as_bytes() == digests[chunk];
    let durable = |chunk: usize, e: io::Error| format!("cannot make chunk {chunk} durable: {e}");
    match job {
        Job::Mapped { chunk, map } => {
            let start = chunk * chunk_bytes;
            let range = start..(start + chunk_bytes).min(map.len);
            let good = matches(chunk, map.bytes(range.clone()));
            if good {
                map.sync(range).map_err(|e| durable(chunk, e))?;
            }
            Ok((chunk, good))
        }
        Job::Direct {
            chunk,
            whole: Whole::Buffered(buf),
            file,
        } => {
            let in_buffer = file.layout.in_buffer(chunk, &file.layout.chunk(chunk));
            let good = matches(chunk, &buf.bytes()[in_buffer]);
            let written = if good {
                file.write_chunk(chunk, &buf).and_then(|()| file.sync())
            } else {
                Ok(())
            };
            let _ = give_back.send(buf);
            written.map_err(|e| durable(chunk, e))?;
            Ok((chunk, good))
        }
        Job::Direct {
            chunk,
            whole: Whole::Spilled,
            file,
        } => {
            file.read_chunk(chunk, scratch)
                .map_err(|e| format!("cannot read chunk {chunk} back: {e}"))?;
            let good = matches(chunk, scratch);
            if good {
                file.sync().map_err(|e| durable(chunk, e))?;
            }
            Ok((chunk, good))
        }
    }
}
