//! `hurricane faults`: real files sent in virtual time under every fault the issue names
//! — random and bursty loss, reordering, duplication, corruption, a link down for
//! seconds, the receiver or the sender killed mid-transfer and started again, a storm
//! of forged datagrams, a disk too small for the file — and what became of each: the
//! file under its name byte for byte, resumed from its verified chunks, or refused with
//! a reason. Never a wrong file under its name, and never a part file under it. The
//! receivers take turns at the ways a file is written: through a mapping, with
//! `O_DIRECT` from chunk buffers, and with `O_DIRECT` from only two buffers, so that
//! chunks are spilled to the file before they are whole.

use std::fs;
use std::path::{Path, PathBuf};

use crate::Transfer;
use crate::control::FileOffer;
use crate::files::{self, FileSink, FileSource, SinkOptions, WriteMode};
use crate::pattern::Pattern;
use crate::receiver::Receiver;
use crate::sender::{Pacing, Sender};
use crate::virtual_time::{self, Bursts, CLEAN, Faults, Link};
use crate::wire::{self, Body, Datagram, Key};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    RandomLoss,
    BurstyLoss,
    Reordering,
    Duplication,
    Corruption,
    LinkDown,
    ReceiverKilled,
    SenderKilled,
    ForgedStorm,
    DiskTooSmall,
}

pub const SCENARIOS: [Scenario; 10] = [
    Scenario::RandomLoss,
    Scenario::BurstyLoss,
    Scenario::Reordering,
    Scenario::Duplication,
    Scenario::Corruption,
    Scenario::LinkDown,
    Scenario::ReceiverKilled,
    Scenario::SenderKilled,
    Scenario::ForgedStorm,
    Scenario::DiskTooSmall,
];

impl Scenario {
    pub fn name(self) -> &'static str {
        match self {
            Scenario::RandomLoss => "random loss 1 %",
            Scenario::BurstyLoss => "bursty loss (Gilbert-Elliott)",
            Scenario::Reordering => "reordering (up to 5 ms)",
            Scenario::Duplication => "duplication 2 %",
            Scenario::Corruption => "corruption 1 %",
            Scenario::LinkDown => "link down 2 s",
            Scenario::ReceiverKilled => "receiver killed and restarted",
            Scenario::SenderKilled => "sender killed and restarted",
            Scenario::ForgedStorm => "forged datagram storm",
            Scenario::DiskTooSmall => "disk too small",
        }
    }

    fn faults(self) -> Faults {
        match self {
            Scenario::RandomLoss => Faults {
                loss: 0.01,
                ..CLEAN
            },
            Scenario::BurstyLoss => Faults {
                bursts: Some(Bursts {
                    enter: 0.002,
                    leave: 0.05,
                    loss: 0.8,
                }),
                ..CLEAN
            },
            Scenario::Reordering => Faults {
                jitter_ns: 5_000_000,
                ..CLEAN
            },
            Scenario::Duplication => Faults {
                duplicate: 0.02,
                ..CLEAN
            },
            Scenario::Corruption => Faults {
                corrupt: 0.01,
                ..CLEAN
            },
            Scenario::LinkDown => Faults {
                down_ns: Some(10_000_000..2_010_000_000),
                ..CLEAN
            },
            _ => Faults {
                loss: 0.001,
                ..CLEAN
            },
        }
    }
}

/// What became of the transfers.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    pub transfers: u64,
    /// Under its name and equal to the source, byte for byte.
    pub whole: u64,
    /// A wrong file under its name, or a part file left there: must stay 0.
    pub corrupted: u64,
    /// Started again after a kill, from the chunks verified before it.
    pub resumed: u64,
    /// Refused before the first datagram, with a reason.
    pub refused: u64,
    /// Anything else (must stay empty): scenario and what happened.
    pub failures: Vec<String>,
    /// Received with `O_DIRECT` (the rest through a mapping).
    pub direct: u64,
    /// Chunks written out before they were whole, for want of a buffer.
    pub spilled_chunks: u64,
}

const BLOCK_BYTES: u32 = 1427;
/// Small chunks (256 blocks, 365 KB) so that a kill in a few-MB file leaves chunks to
/// resume from.
const CHUNK_BYTES: u32 = 256 * BLOCK_BYTES;
const RATE_BPS: u64 = 1_000_000_000;
const RTT_NS: u64 = 26_800_000;
const PACING: Pacing = Pacing {
    burst_datagrams: 64,
    idle_ns: 0,
};

fn random(seed: &mut u64) -> u64 {
    *seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *seed;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Run `transfers` fault transfers with files under `dir` (emptied first, removed
/// after); `progress` hears each one's number as it ends.
pub fn run(dir: &Path, transfers: u64, progress: &mut dyn FnMut(u64)) -> std::io::Result<Tally> {
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir)?;
    let direct_taken = files::direct::takes_direct(dir);
    let mut tally = Tally::default();
    for i in 0..transfers {
        let scenario = SCENARIOS[(i % SCENARIOS.len() as u64) as usize];
        let case_dir = dir.join(format!("t{i}"));
        fs::create_dir_all(&case_dir)?;
        let mut turn = Turn {
            options: sink_options(i, direct_taken),
            spilled_chunks: 0,
        };
        tally.direct += u64::from(turn.options.write == WriteMode::Direct);
        let outcome = one(&case_dir, scenario, i, &mut turn);
        tally.spilled_chunks += turn.spilled_chunks;
        match outcome {
            Ok(Outcome::Whole { resumed }) => {
                tally.whole += 1;
                tally.resumed += u64::from(resumed);
            }
            Ok(Outcome::Refused) => tally.refused += 1,
            Ok(Outcome::Corrupted(why)) => {
                tally.corrupted += 1;
                tally
                    .failures
                    .push(format!("{} #{i}: {why}", scenario.name()));
            }
            Err(why) => tally
                .failures
                .push(format!("{} #{i}: {why}", scenario.name())),
        }
        tally.transfers += 1;
        fs::remove_dir_all(&case_dir)?;
        progress(i + 1);
    }
    let _ = fs::remove_dir_all(dir);
    Ok(tally)
}

/// How a transfer's receiver writes its file, and what that came to.
struct Turn {
    options: SinkOptions,
    /// Chunks written out before they were whole, over its sessions.
    spilled_chunks: u64,
}

/// How transfer `i` is written: each scenario's runs take turns at a mapping, `O_DIRECT`,
/// and `O_DIRECT` with two buffers (where the file system takes `O_DIRECT`).
fn sink_options(i: u64, direct_taken: bool) -> SinkOptions {
    let turn = i / SCENARIOS.len() as u64 % 3;
    let write = if turn == 0 || !direct_taken {
        WriteMode::Mapped
    } else {
        WriteMode::Direct
    };
    SinkOptions {
        write,
        buffer_memory_bytes: if turn == 2 { 0 } else { 64 << 20 },
    }
}

enum Outcome {
    Whole { resumed: bool },
    Refused,
    Corrupted(String),
}

fn transfer(seed: u64, total_bytes: u64, encrypt: bool) -> Transfer {
    let mut key = [0u8; 32];
    let mut s = seed;
    for chunk in key.chunks_mut(8) {
        chunk.copy_from_slice(&random(&mut s).to_le_bytes());
    }
    Transfer {
        id: random(&mut s),
        key: Key::new(key, encrypt),
        block_bytes: BLOCK_BYTES,
        total_bytes,
        rate_ceiling_bps: RATE_BPS,
        rtt_ns: RTT_NS,
    }
}

/// One session: accept (or refuse), then run until DONE or `stop_ns`.
struct Session {
    dest: PathBuf,
    /// Why the receiver would not take it.
    refused: Option<String>,
    held_blocks: u64,
    finished: bool,
}

#[allow(clippy::too_many_arguments)]
fn session(
    dir: &Path,
    source: &mut FileSource,
    offer: &FileOffer,
    t: &Transfer,
    faults: Faults,
    seed: u64,
    stop_ns: Option<u64>,
    forged: &[(u64, Vec<u8>)],
    turn: &mut Turn,
) -> Result<Session, String> {
    let dest = dir.join("in");
    let accepted = FileSink::accept(&dest, offer, t.total_bytes, t.block_bytes, &turn.options);
    let (mut sink, held) = match accepted {
        Ok(taken) => taken,
        Err(why) => {
            return Ok(Session {
                dest: dest.join(&offer.name),
                refused: Some(why),
                held_blocks: 0,
                finished: false,
            });
        }
    };
    let held_blocks = held.len();
    let mut sender = Sender::resume(t.clone(), PACING, held.clone());
    let mut receiver = Receiver::resume(t.clone(), 16, held);
    let mut link = Link::new(t.rtt_ns, faults, None, seed);
    for (at, bytes) in forged {
        link.inject(*at, true, bytes.clone());
        link.inject(*at, false, bytes.clone());
    }
    let mut failure = None;
    let ran = virtual_time::run(
        &mut sender,
        &mut receiver,
        source,
        &mut sink,
        &mut |sink: &mut FileSink| match sink.finish() {
            Ok(bad) => bad,
            Err(why) => {
                failure = Some(why);
                Vec::new()
            }
        },
        &mut link,
        0,
        stop_ns,
    );
    turn.spilled_chunks += sink.spilled_chunks();
    if let Some(why) = failure {
        return Err(why);
    }
    Ok(Session {
        dest: sink.path().to_owned(),
        refused: None,
        held_blocks,
        finished: ran.finished_ns.is_some(),
    })
}

/// Forged datagrams: another key, another transfer's id, random bytes, replays.
fn storm(t: &Transfer, seed: u64) -> Vec<(u64, Vec<u8>)> {
    let mut s = seed;
    let wrong = Key::new([0xEE; 32], false);
    (0..3000u64)
        .map(|i| {
            let at = i * 10_000;
            let mut bytes = Vec::new();
            let payload = vec![0xAB; BLOCK_BYTES as usize];
            match i % 3 {
                0 => wire::encode(
                    &wrong,
                    &Datagram {
                        transfer_id: t.id,
                        packet: i,
                        body: Body::Data {
                            block: random(&mut s) % 100,
                            payload: &payload,
                        },
                    },
                    &mut bytes,
                ),
                1 => wire::encode(
                    &t.key,
                    &Datagram {
                        transfer_id: t.id ^ 1,
                        packet: i,
                        body: Body::Done { total_blocks: 1 },
                    },
                    &mut bytes,
                ),
                _ => {
                    let len = (random(&mut s) % 1500) as usize;
                    bytes = (0..len).map(|_| random(&mut s) as u8).collect();
                }
            }
            (at, bytes)
        })
        .collect()
}

fn one(dir: &Path, scenario: Scenario, i: u64, turn: &mut Turn) -> Result<Outcome, String> {
    let mut seed = i.wrapping_mul(0x5851_F42D_4C95_7F2D) ^ 0xABCD;
    // 1-6 MB, not a whole number of blocks.
    let size = (1 << 20) + random(&mut seed) % (5 << 20);
    let source_path = dir.join("source.bin");
    let mut data = vec![0u8; size as usize];
    Pattern::fill(random(&mut seed) % (1 << 40), &mut data);
    fs::write(&source_path, &data).map_err(|e| e.to_string())?;
    let name = format!("sub/file-{i}.bin");
    let (mut source, mut offer) =
        FileSource::open_in_chunks(&source_path, &name, BLOCK_BYTES, CHUNK_BYTES)
            .map_err(|e| e.to_string())?;
    let encrypt = i % 2 == 1;
    let mut t = transfer(seed, size, encrypt);
    if scenario == Scenario::DiskTooSmall {
        // A well-formed offer of a petabyte: no disk here holds it.
        t.total_bytes = 1 << 50;
        offer.chunk_bytes = u32::MAX / BLOCK_BYTES * BLOCK_BYTES;
        let chunks = t.total_bytes.div_ceil(u64::from(offer.chunk_bytes));
        offer.chunk_digests = vec![[7; 32]; chunks as usize];
        offer.digest = files::digest_of_digests(&offer.chunk_digests);
        let s = session(dir, &mut source, &offer, &t, CLEAN, seed, None, &[], turn)?;
        let left = fs::read_dir(dir.join("in/sub")).map_or(0, Iterator::count);
        return match s.refused {
            Some(why) if why.contains("no room") && left == 0 => Ok(Outcome::Refused),
            _ => Err(format!(
                "not refused cleanly ({:?}, {left} files left)",
                s.refused
            )),
        };
    }
    let faults = scenario.faults();
    let forged = if scenario == Scenario::ForgedStorm {
        storm(&t, seed)
    } else {
        Vec::new()
    };
    let killed = matches!(scenario, Scenario::ReceiverKilled | Scenario::SenderKilled);
    // Killed about halfway: the file takes about size * 8 / rate.
    let stop_ns = killed.then(|| size * 8 * 1_000_000_000 / RATE_BPS / 2 + RTT_NS);
    let first = session(
        dir,
        &mut source,
        &offer,
        &t,
        faults.clone(),
        seed,
        stop_ns,
        &forged,
        turn,
    )?;
    let mut resumed = false;
    if killed {
        if first.finished {
            return Err("the kill came after the end".into());
        }
        // A kill after the file landed but before DONE reached the sender leaves it
        // whole under its name; anything else under its name is a failure.
        if first.dest.exists() && fs::read(&first.dest).ok().as_deref() != Some(&data[..]) {
            return Ok(Outcome::Corrupted(
                "a file under its name that is not whole".into(),
            ));
        }
        // Started again: a new control exchange, so a new id and key.
        let again = transfer(seed ^ 0xFFFF, size, encrypt);
        let second = session(
            dir,
            &mut source,
            &offer,
            &again,
            faults,
            seed + 1,
            None,
            &[],
            turn,
        )?;
        resumed = second.held_blocks > 0;
        if !second.finished {
            return Err("the restarted transfer did not finish".into());
        }
    } else if !first.finished {
        return Err("the transfer did not finish".into());
    }
    let dest = dir.join("in").join(&name);
    match fs::read(&dest) {
        Ok(landed) if landed == data => {}
        Ok(_) => {
            return Ok(Outcome::Corrupted(
                "the file differs from its source".into(),
            ));
        }
        Err(e) => return Err(format!("no file under its name: {e}")),
    }
    let leftovers = fs::read_dir(dir.join("in/sub")).map_or(0, Iterator::count);
    if leftovers != 1 {
        return Ok(Outcome::Corrupted(format!("{leftovers} files beside it")));
    }
    Ok(Outcome::Whole { resumed })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scenario_ends_whole_resumed_or_refused() {
        let dir = std::env::temp_dir().join(format!("hurricane-faults-{}", std::process::id()));
        // Each scenario three times: through a mapping, with O_DIRECT, and with O_DIRECT
        // from two buffers.
        let transfers = 3 * SCENARIOS.len() as u64;
        let tally = run(&dir, transfers, &mut |_| {}).unwrap();
        assert_eq!(tally.failures, Vec::<String>::new());
        assert_eq!(tally.corrupted, 0);
        assert_eq!(tally.refused, 3, "the disk too small");
        assert_eq!(tally.resumed, 6, "both kills");
        assert_eq!(tally.whole, transfers - 3);
        if files::direct::takes_direct(dir.parent().unwrap()) {
            assert_eq!(tally.direct, 2 * SCENARIOS.len() as u64);
            assert!(tally.spilled_chunks > 0, "two buffers spill");
        }
    }
}
