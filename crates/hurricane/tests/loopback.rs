//! Whole transfers through real UDP and TCP sockets on loopback, bounded in time: memory
//! to memory, and files (checked, renamed into place, resumed after an interruption,
//! refused with a reason).

use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::thread::JoinHandle;
use std::time::Duration;

use hurricane::control;
use hurricane::driver::{self, DriverError, Finished, SendOptions, Side};
use hurricane::files::{FileSink, FileSource, SinkOptions};
use hurricane::pattern::{Pattern, PatternCheck, PatternSource};
use hurricane::range_set::RangeSet;
use hurricane::receiver::ReceiverStats;
use hurricane::sender::Pacing;
use hurricane::wire::DATA_OVERHEAD_BYTES;

fn options(rate_bps: u64, block_bytes: u32, deadline: Duration) -> SendOptions {
    SendOptions {
        block_bytes,
        rate_ceiling_bps: rate_bps,
        pacing: Pacing {
            burst_datagrams: 16,
            idle_ns: 0,
        },
        nack_group: 16,
        tune: false,
        encrypt: false,
        govern: true,
        deadline,
    }
}

type Receiving<T> = JoinHandle<Result<(Finished<ReceiverStats>, T), DriverError>>;

fn memory_receiver() -> (SocketAddr, Receiving<PatternCheck>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let to = listener.local_addr().unwrap();
    let receiving = std::thread::spawn(move || {
        driver::receive(
            &listener,
            |offer| Ok((PatternCheck::for_offer(offer), RangeSet::new())),
            |_| Ok(Vec::new()),
            Duration::from_secs(30),
        )
    });
    (to, receiving)
}

#[test]
fn a_transfer_over_loopback_arrives_whole_at_the_rate_asked() {
    for encrypt in [false, true] {
        let (to, receiving) = memory_receiver();
        let total = 16u64 << 20;
        let options = SendOptions {
            encrypt,
            ..options(400_000_000, 8192, Duration::from_secs(30))
        };
        let mut source = PatternSource { block_bytes: 8192 };
        let sent = driver::send(to, total, &mut source, None, options, &mut |_| {}).unwrap();
        let (received, sink) = receiving.join().unwrap().unwrap();
        assert_eq!((sink.bytes, sink.corrupted_bytes), (total, 0));
        assert_eq!(
            received.stats.forged + received.stats.stray + received.stats.malformed,
            0
        );
        // The receiver's clock starts as its first receive returns: what that one brought
        // (at least a block, at most a 64 KB batch) is not timed.
        let untimed = received.bytes - received.timed_bytes;
        assert!((8192..=65_536).contains(&untimed), "{untimed}");
        // Never faster than the ceiling (payload, Hurricane's overhead, UDP and IP's 28
        // bytes), but for what the driver may send ahead of its schedule or catch up on
        // after a late wake-up: three batches and 1 ms (4.4 ms at 400 Mb/s).
        let datagrams = total / 8192;
        let wire_bits = datagrams * (8192 + DATA_OVERHEAD_BYTES as u64 + 28) * 8;
        let slack_s = 0.0044;
        assert!(
            sent.seconds >= wire_bits as f64 / 400e6 - slack_s,
            "{}",
            sent.seconds
        );
    }
}

/// Bytes no two files share by accident.
fn write_file(path: &Path, bytes: usize, seed: u64) {
    let data: Vec<u8> = (0..bytes as u64)
        .map(|i| Pattern::byte(i.wrapping_mul(seed | 1).wrapping_add(seed)))
        .collect();
    std::fs::write(path, data).unwrap();
}

fn file_receiver(dir: &Path, deadline: Duration) -> (SocketAddr, Receiving<u64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let to = listener.local_addr().unwrap();
    let dir = dir.to_owned();
    let receiving = std::thread::spawn(move || {
        driver::receive(
            &listener,
            |offer| {
                let file = offer.file.as_ref().ok_or("a file")?;
                let options = SinkOptions::default();
                FileSink::accept(&dir, file, offer.total_bytes, offer.block_bytes, &options)
            },
            FileSink::finish,
            deadline,
        )
        .map(|(done, sink)| (done, sink.resumed_blocks))
    });
    (to, receiving)
}

fn send_file(
    to: SocketAddr,
    path: &Path,
    rate_bps: u64,
    deadline: Duration,
) -> Result<(), DriverError> {
    let block_bytes = 1400;
    let (mut source, offer) = FileSource::open(path, "sub/data.bin", block_bytes).unwrap();
    let options = options(rate_bps, block_bytes, deadline);
    driver::send(
        to,
        source.len(),
        &mut source,
        Some(offer),
        options,
        &mut |_| {},
    )
    .map(drop)
}

#[test]
fn a_file_arrives_whole_under_its_name_and_nothing_else_is_left() {
    let (from, into) = (tempdir("from"), tempdir("into"));
    let path = from.join("data.bin");
    write_file(&path, 40 << 20, 3);
    let (to, receiving) = file_receiver(&into, Duration::from_secs(30));
    send_file(to, &path, 2_000_000_000, Duration::from_secs(30)).unwrap();
    receiving.join().unwrap().unwrap();
    let landed = into.join("sub/data.bin");
    assert!(std::fs::read(&landed).unwrap() == std::fs::read(&path).unwrap());
    let left: Vec<_> = std::fs::read_dir(into.join("sub")).unwrap().collect();
    assert_eq!(left.len(), 1, "only the file itself: {left:?}");
}

#[test]
fn an_interrupted_file_is_resumed_from_its_verified_chunks() {
    let (from, into) = (tempdir("from-resume"), tempdir("into-resume"));
    let path = from.join("data.bin");
    write_file(&path, 48 << 20, 5);
    // 48 MiB at 200 Mb/s takes 2 s: the receiver gives up after 1, and the sender,
    // allowed 30, learns it from the closed control connection.
    let (to, receiving) = file_receiver(&into, Duration::from_secs(1));
    let first = send_file(to, &path, 200_000_000, Duration::from_secs(30));
    assert!(
        matches!(
            first,
            Err(DriverError::PeerGone {
                peer: Side::Receiver,
                ..
            })
        ),
        "{first:?}"
    );
    assert!(matches!(
        receiving.join().unwrap(),
        Err(DriverError::TimedOut { .. })
    ));
    assert!(
        !into.join("sub/data.bin").exists(),
        "no file under its name until whole"
    );
    assert!(into.join("sub/data.bin.hurricane-part").exists());
    let (to, receiving) = file_receiver(&into, Duration::from_secs(30));
    send_file(to, &path, 2_000_000_000, Duration::from_secs(30)).unwrap();
    let (_, resumed_blocks) = receiving.join().unwrap().unwrap();
    assert!(resumed_blocks > 0, "the verified chunks were kept");
    let landed = into.join("sub/data.bin");
    assert!(std::fs::read(&landed).unwrap() == std::fs::read(&path).unwrap());
}

#[test]
fn a_receiver_learns_that_its_sender_stopped_long_before_its_own_deadline() {
    let into = tempdir("into-sender-gone");
    let from = tempdir("from-sender-gone");
    let path = from.join("data.bin");
    write_file(&path, 48 << 20, 7);
    let (to, receiving) = file_receiver(&into, Duration::from_secs(60));
    // The sender gives up after half a second of a 2 s transfer.
    let first = send_file(to, &path, 200_000_000, Duration::from_millis(500));
    assert!(
        matches!(first, Err(DriverError::TimedOut { .. })),
        "{first:?}"
    );
    let started = std::time::Instant::now();
    let gone = receiving.join().unwrap();
    assert!(
        matches!(
            gone,
            Err(DriverError::PeerGone {
                peer: Side::Sender,
                ..
            })
        ),
        "{gone:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "not its deadline"
    );
    assert!(
        into.join("sub/data.bin.hurricane-part").exists(),
        "kept for a resume"
    );
}

/// A receiver that takes the offer, drops every datagram (so no DONE ever comes back)
/// and says on the control connection that the transfer is whole.
#[test]
fn a_sender_whose_done_datagrams_are_all_lost_finishes_on_the_control_record() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let to = listener.local_addr().unwrap();
    let receiving = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        control::read_offer(&mut stream).unwrap();
        let deaf = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = deaf.local_addr().unwrap().port();
        control::write_answer(&mut stream, port, &RangeSet::new()).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        control::write_whole(&mut stream).unwrap();
        // Held open: the sender must finish on the record, not on the close.
        std::thread::sleep(Duration::from_secs(5));
    });
    let mut source = PatternSource { block_bytes: 1400 };
    let options = options(100_000_000, 1400, Duration::from_secs(20));
    let started = std::time::Instant::now();
    let sent = driver::send(to, 1 << 20, &mut source, None, options, &mut |_| {});
    assert!(sent.is_ok(), "{sent:?}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "before the close"
    );
    receiving.join().unwrap();
}

#[test]
fn a_name_that_climbs_out_is_refused_with_the_reason() {
    let into = tempdir("into-refused");
    let from = tempdir("from-refused");
    let path = from.join("x.bin");
    write_file(&path, 1000, 1);
    let (to, receiving) = file_receiver(&into, Duration::from_secs(10));
    let (mut source, offer) = FileSource::open(&path, "../escape.bin", 1400).unwrap();
    let sent = driver::send(
        to,
        source.len(),
        &mut source,
        Some(offer),
        options(1_000_000_000, 1400, Duration::from_secs(10)),
        &mut |_| {},
    );
    let Err(DriverError::Control(refusal)) = sent else {
        panic!("refused: {sent:?}");
    };
    assert!(
        refusal.to_string().contains("not a plain relative path"),
        "{refusal}"
    );
    assert!(receiving.join().unwrap().is_err());
}

fn tempdir(what: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("hurricane-test-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
