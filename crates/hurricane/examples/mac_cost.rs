//! What tagging one DATA datagram costs, on this machine: the figures `wire.rs` cites
//! for choosing AES-256-GCM over keyed BLAKE3.
//!
//! `cargo run -p hurricane --release --example mac_cost`

use std::time::Instant;

use hurricane::wire::{self, Body, DATA_OVERHEAD_BYTES, Datagram, Key};

const PAYLOAD_BYTES: usize = 1500 - 28 - DATA_OVERHEAD_BYTES;
const DATAGRAMS: u64 = 300_000;

fn gbytes_per_s(what: &str, mut one: impl FnMut(u64)) {
    let started = Instant::now();
    for i in 0..DATAGRAMS {
        one(i);
    }
    let seconds = started.elapsed().as_secs_f64();
    let rate = (DATAGRAMS as usize * PAYLOAD_BYTES) as f64 / seconds / 1e9;
    println!("{what}: {rate:.2} GB/s of payload ({PAYLOAD_BYTES}-byte datagrams, one core)");
}

fn main() {
    let payload = vec![0x5a; PAYLOAD_BYTES];
    let mut out = Vec::with_capacity(2048);
    for encrypt in [false, true] {
        let key = Key::new([7; 32], encrypt);
        let what = if encrypt {
            "AES-256-GCM encrypt + tag"
        } else {
            "AES-256-GCM tag (GMAC)"
        };
        gbytes_per_s(what, |packet| {
            out.clear();
            let datagram = Datagram {
                transfer_id: 1,
                packet,
                body: Body::Data {
                    block: packet,
                    payload: &payload,
                },
            };
            wire::encode(&key, &datagram, &mut out);
        });
        let mut bytes = out.clone();
        gbytes_per_s(&format!("{what}, verify"), |_| {
            bytes.copy_from_slice(&out);
            wire::decode(&key, &mut bytes).expect("verifies");
        });
    }
    let key = Key::new([7; 32], false);
    let mut tagger = wire::PartsTagger::new(&key);
    gbytes_per_s(
        "AES-256-GCM tag (GMAC) in two pieces, header and payload apart",
        |packet| {
            out.clear();
            wire::encode_data_around(&mut tagger, &key, 1, packet, packet, &payload, &mut out);
        },
    );
    let raw = [7u8; 32];
    gbytes_per_s("keyed BLAKE3 over the same bytes", |packet| {
        let mut hasher = blake3::Hasher::new_keyed(&raw);
        hasher.update(&packet.to_be_bytes());
        hasher.update(&payload);
        std::hint::black_box(hasher.finalize());
    });
}
