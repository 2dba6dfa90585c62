//! A whole transfer through real UDP and TCP sockets on loopback, memory to memory,
//! bounded in time.

use std::net::TcpListener;
use std::time::Duration;

use hurricane::driver::{self, MemorySink, PatternSource, SendOptions};
use hurricane::sender::Pacing;

#[test]
fn a_transfer_over_loopback_arrives_whole_at_the_rate_asked() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let to = listener.local_addr().unwrap();
    let receiving = std::thread::spawn(move || {
        driver::receive(&listener, MemorySink::for_offer, Duration::from_secs(30))
    });
    let total = 16u64 << 20;
    let options = SendOptions {
        block_bytes: 8192,
        rate_ceiling_bps: 400_000_000,
        pacing: Pacing {
            burst_datagrams: 16,
            idle_ns: 0,
        },
        nack_group: 16,
        tune: false,
        deadline: Duration::from_secs(30),
    };
    let sent = driver::send(to, total, &mut PatternSource { block_bytes: 8192 }, options).unwrap();
    let (received, sink) = receiving.join().unwrap().unwrap();
    assert_eq!(sink.data.len() as u64, total);
    let wrong = (0..total)
        .filter(|&i| sink.data[i as usize] != PatternSource::byte(i))
        .count();
    assert_eq!(wrong, 0);
    assert_eq!(
        received.stats.forged + received.stats.stray + received.stats.malformed,
        0
    );
    // Never faster than the ceiling: every datagram but the first waits its share of it
    // (payload, Hurricane's 37 bytes, UDP and IP's 28). A slow machine can only be slower.
    let datagrams = total / 8192;
    let wire_bits = (datagrams - 1) * (8192 + 37 + 28) * 8;
    assert!(sent.seconds >= wire_bits as f64 / 400e6, "{}", sent.seconds);
}
