//! The whole engine loop on in-memory devices and a fake clock that oversleeps, stops
//! for milliseconds at a time, and takes time to read and write, with reconfigurations
//! arriving over the control channel: what comes out never exceeds the rate.

use std::collections::VecDeque;
use std::io;

use longhaul_link::{DirectionConfig, Loss, PACING_TOLERANCE_NS};
use longhaul_wan::control::Then;
use longhaul_wan::engine::{Core, Device, Engine, Ready, Side};
use proptest::prelude::*;
use serde_json::{Value, json};

const MS: u64 = 1_000_000;
const VNET: usize = 10;

/// A frame the link reads as one plain IPv4 packet of `ip_bytes`.
fn plain(ip_bytes: usize) -> Vec<u8> {
    let mut frame = vec![0u8; VNET + ip_bytes];
    frame[VNET] = 0x45;
    frame
}

/// A TCP/IPv4 super-packet of `segments` segments of 1,448 payload bytes.
fn tcp_super(segments: usize) -> Vec<u8> {
    let mss = 1448usize;
    let ip_len = 20 + 32 + segments * mss;
    let mut frame = vec![0u8; VNET + ip_len];
    frame[0] = 1; // needs checksum
    frame[1] = 1; // GSO TCPv4
    frame[2..4].copy_from_slice(&52u16.to_le_bytes());
    frame[4..6].copy_from_slice(&(mss as u16).to_le_bytes());
    frame[6..8].copy_from_slice(&20u16.to_le_bytes());
    frame[8..10].copy_from_slice(&16u16.to_le_bytes());
    let ip = &mut frame[VNET..];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&(ip_len.min(65_535) as u16).to_be_bytes());
    ip[8] = 64;
    ip[9] = 6;
    ip[12..16].copy_from_slice(&[198, 18, 0, 1]);
    ip[16..20].copy_from_slice(&[198, 18, 0, 2]);
    ip[20 + 12] = 0x80; // data offset: 32 bytes
    frame
}

/// A UDP/IPv4 super-packet as a sender with `UDP_SEGMENT` hands it over: `segments`
/// datagrams of 1,472 bytes.
fn udp_super(segments: usize) -> Vec<u8> {
    let mss = 1472usize;
    let ip_len = 20 + 8 + segments * mss;
    let mut frame = vec![0u8; VNET + ip_len];
    frame[0] = 1; // needs checksum
    frame[1] = 5; // GSO UDP_L4
    frame[2..4].copy_from_slice(&28u16.to_le_bytes());
    frame[4..6].copy_from_slice(&(mss as u16).to_le_bytes());
    frame[6..8].copy_from_slice(&20u16.to_le_bytes());
    frame[8..10].copy_from_slice(&6u16.to_le_bytes());
    let ip = &mut frame[VNET..];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&(ip_len.min(65_535) as u16).to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&[198, 18, 0, 1]);
    ip[16..20].copy_from_slice(&[198, 18, 0, 2]);
    ip[24..26].copy_from_slice(&((ip_len - 20).min(65_535) as u16).to_be_bytes());
    frame
}

/// Devices in memory, and a clock that moves only when the engine works or waits.
struct FakeDevice {
    now: u64,
    inbox: [VecDeque<(u64, Vec<u8>)>; 2],
    /// (instant written, wire bytes the frame stands for) at each end.
    outbox: [Vec<(u64, usize)>; 2],
    read_cost_ns: u64,
    write_cost_ns: u64,
    /// The engine stops for (length) when the clock passes (instant).
    stalls: VecDeque<(u64, u64)>,
    /// How late a sleeper wakes, cycled through.
    oversleep_ns: Vec<u64>,
    wakes: usize,
    controls: VecDeque<(u64, String)>,
    answers: Vec<Value>,
    end_ns: u64,
    /// When each side was read and how many of its frames were waiting then.
    reads: [Vec<(u64, usize)>; 2],
    /// Every frame written at each end, if kept.
    frames: Option<[Vec<Vec<u8>>; 2]>,
}

impl FakeDevice {
    fn new(end_ns: u64) -> Self {
        Self {
            now: 0,
            inbox: [VecDeque::new(), VecDeque::new()],
            outbox: [Vec::new(), Vec::new()],
            read_cost_ns: 3_000,
            write_cost_ns: 1_500,
            stalls: VecDeque::new(),
            oversleep_ns: vec![0, 40_000, 120_000, 15_000],
            wakes: 0,
            controls: VecDeque::new(),
            answers: Vec::new(),
            end_ns,
            reads: [Vec::new(), Vec::new()],
            frames: None,
        }
    }

    fn advance(&mut self, to: u64) {
        let mut to = to.max(self.now);
        while let Some(&(at, length)) = self.stalls.front() {
            if at > to {
                break;
            }
            self.stalls.pop_front();
            to += length;
        }
        self.now = to;
    }

    fn ready(&self) -> Ready {
        let has = |side: usize| {
            self.inbox[side]
                .front()
                .is_some_and(|(t, _)| *t <= self.now)
        };
        Ready {
            sides: [has(0), has(1)],
            control: self.controls.front().is_some_and(|(t, _)| *t <= self.now),
            stop: self.now >= self.end_ns,
        }
    }
}

impl Device for FakeDevice {
    fn now_ns(&mut self) -> u64 {
        self.now
    }

    fn read(&mut self, side: Side, buf: &mut [u8]) -> io::Result<Option<usize>> {
        let waiting = self.inbox[side]
            .iter()
            .take_while(|(t, _)| *t <= self.now)
            .count();
        self.reads[side].push((self.now, waiting));
        if self.inbox[side].front().is_none_or(|(t, _)| *t > self.now) {
            return Ok(None);
        }
        let (_, frame) = self.inbox[side].pop_front().expect("looked");
        buf[..frame.len()].copy_from_slice(&frame);
        self.advance(self.now + self.read_cost_ns);
        Ok(Some(frame.len()))
    }

    fn write(&mut self, side: Side, frame: &[u8]) -> io::Result<()> {
        let shape = longhaul_wan::engine::wire_shape(frame);
        self.outbox[side].push((self.now, shape.ip_bytes as usize));
        if let Some(frames) = &mut self.frames {
            frames[side].push(frame.to_vec());
        }
        // The receiver's work, as in a TUN write: a fixed part and a part per byte.
        self.advance(self.now + self.write_cost_ns + frame.len() as u64 / 10);
        Ok(())
    }

    fn wait(&mut self, until_ns: u64, sleep: bool) -> io::Result<Ready> {
        if sleep {
            let late = self.oversleep_ns[self.wakes % self.oversleep_ns.len()];
            self.wakes += 1;
            let arrival = [0, 1]
                .into_iter()
                .filter_map(|s| self.inbox[s].front().map(|(t, _)| *t))
                .chain(self.controls.front().map(|(t, _)| *t))
                .min()
                .unwrap_or(u64::MAX);
            let wake = until_ns
                .max(self.now)
                .min(arrival.max(self.now))
                .saturating_add(late);
            self.advance(wake.min(self.end_ns.max(self.now)));
        } else {
            self.advance(self.now + 500);
        }
        Ok(self.ready())
    }

    fn serve_control(&mut self, answer: &mut dyn FnMut(&str) -> (Value, Then)) -> Then {
        while self.controls.front().is_some_and(|(t, _)| *t <= self.now) {
            let (_, line) = self.controls.pop_front().expect("looked");
            let (reply, then) = answer(&line);
            self.answers.push(reply);
            if then == Then::Stop {
                return Then::Stop;
            }
        }
        Then::Continue
    }
}

fn engine(config: DirectionConfig, device: FakeDevice) -> Engine<FakeDevice> {
    let core = Core::new([config.clone(), config], 1, 0).unwrap();
    let mut engine = Engine::new(device, core);
    engine.margins = longhaul_wan::wake::WakeMargins::new(150_000);
    engine
}

/// The most wire bytes within `window_ns` after any frame (that frame not counted), per
/// epoch of `epoch_starts` (instants the rate changed).
fn worst_window(out: &[(u64, usize)], window_ns: u64, epoch_starts: &[u64]) -> Vec<(u64, u64)> {
    let epoch = |t: u64| epoch_starts.iter().filter(|&&s| s <= t).count();
    let mut worst = Vec::new();
    for (j, &(t0, _)) in out.iter().enumerate() {
        let mut bytes = 0u64;
        for &(t, b) in &out[j + 1..] {
            if t > t0 + window_ns || epoch(t) != epoch(t0) {
                break;
            }
            bytes += b as u64;
        }
        worst.push((t0, bytes));
    }
    worst
}

#[test]
fn an_emulator_stopped_mid_flow_never_bursts() {
    // 1 Gb/s, 13.4 ms one way; a sender at the line rate in 64 KB super-packets for 2 s,
    // the emulator stopped for 8 ms and then 20 ms, waking late all the while.
    let rate = 1_000_000_000u64;
    let mut device = FakeDevice::new(2_200 * MS);
    let frame = tcp_super(44);
    let gap = (frame.len() as u64 - 10 + 43 * 52) * 8; // ns at 1 Gb/s
    let mut t = 0;
    while t < 2_000 * MS {
        device.inbox[0].push_back((t, frame.clone()));
        t += gap;
    }
    device.stalls = VecDeque::from([(500 * MS, 8 * MS), (1_200 * MS, 20 * MS)]);
    let mut engine = engine(DirectionConfig::new(rate, 13_400_000), device);
    engine.run().unwrap();
    let out = &engine.device.outbox[1];
    assert!(out.len() > 3_000, "{}", out.len());
    let allowed = rate as f64 * (1e6 + PACING_TOLERANCE_NS as f64) / 8e9;
    for (at, bytes) in worst_window(out, MS, &[]) {
        assert!(
            bytes as f64 <= allowed + 1.0,
            "{bytes} bytes in the 1 ms after {at} ns"
        );
    }
    // As tcpdump would count, in any 1 ms window: at most the rate plus one frame.
    let largest = out.iter().map(|(_, b)| *b).max().unwrap() as f64;
    for (j, &(t0, _)) in out.iter().enumerate() {
        let within: usize = out[j..]
            .iter()
            .take_while(|(t, _)| *t < t0 + MS)
            .map(|(_, b)| b)
            .sum();
        assert!(within as f64 <= allowed + largest, "{within} at {t0}");
    }
    // The emulator saw it too.
    let health = engine.core.health_since(0, engine.device.now);
    let ab = &health["a_to_b"];
    assert!(
        ab["lateness_max_ns"].as_u64().unwrap() >= 19 * MS,
        "{health}"
    );
    assert_eq!(ab["stalls"], 2, "{health}");
    assert!(ab["late_held_ns"].as_u64().unwrap() >= 27 * MS, "{health}");
    assert!(
        ab["max_1ms_rate_ratio"].as_f64().unwrap() <= 1.006,
        "{health}"
    );
}

#[test]
fn losses_inside_super_packets_cut_them_into_runs() {
    // TCP's and UDP's alike: a receiver with GRO (a UDP socket with `UDP_GRO`) would
    // have merged those segments, and one without gets them cut by its kernel.
    for frame in [tcp_super(44), udp_super(44)] {
        losses_inside_super_packets_cut_them_into_runs_of(&frame);
    }
}

fn losses_inside_super_packets_cut_them_into_runs_of(frame: &[u8]) {
    let mut config = DirectionConfig::new(10_000_000_000, MS);
    config.loss = Loss::random(0.01);
    let mut device = FakeDevice::new(200 * MS);
    for k in 0..500u64 {
        device.inbox[0].push_back((k * 100_000, frame.to_vec()));
    }
    let mut engine = engine(config, device);
    engine.run().unwrap();
    let stats = engine.core.stats(engine.device.now);
    let ab = &stats["a_to_b"];
    let delivered = ab["tx_segments"].as_u64().unwrap();
    let lost = ab["lost_random_segments"].as_u64().unwrap();
    assert_eq!(delivered + lost, 500 * 44);
    assert!(ab["split_frames"].as_u64().unwrap() > 50, "{ab}");
    // A loss cuts a frame in two at most: the segments either side go on as runs.
    let out = &engine.device.outbox[1];
    assert_eq!(out.len() as u64, ab["tx_frames"].as_u64().unwrap());
    assert!(
        out.len() as u64 <= 500 + lost,
        "{} frames for {lost} losses",
        out.len()
    );
    assert!(
        out.iter().any(|(_, b)| *b > 1500 && *b < 60_000),
        "runs of several segments"
    );
    assert_eq!(stats["memory"]["held_frames"], json!([0, 0]));
}

#[test]
fn a_full_queue_keeps_the_part_of_each_super_packet_that_fits_as_one_frame() {
    // A sender at twice the line rate into a queue of ten super-packets: from the time
    // it is full, each arriving super-packet finds room for about half of itself.
    let rate = 1_000_000_000u64;
    let mut config = DirectionConfig::new(rate, MS);
    config.queue_bytes = Some(10 * 66_000);
    let mut device = FakeDevice::new(300 * MS);
    let frame = tcp_super(44);
    let gap = (frame.len() as u64 - 10 + 43 * 52) * 8 / 2; // ns: twice the rate
    for k in 0..400u64 {
        device.inbox[0].push_back((k * gap, frame.clone()));
    }
    let mut engine = engine(config, device);
    engine.run().unwrap();
    let stats = engine.core.stats(engine.device.now);
    let ab = &stats["a_to_b"];
    let dropped = ab["dropped_queue_segments"].as_u64().unwrap();
    assert!(dropped > 100 * 44 / 2, "{ab}");
    assert_eq!(ab["tx_segments"].as_u64().unwrap() + dropped, 400 * 44);
    assert!(ab["tx_frames"].as_u64().unwrap() <= 400, "{ab}");
    assert_eq!(
        engine.device.outbox[1].len(),
        ab["tx_frames"].as_u64().unwrap() as usize
    );
}

fn rate_changes() -> impl Strategy<Value = Vec<(u64, u64, u64)>> {
    // (instant, rate, delay) of each `set`.
    prop::collection::vec(
        (0u64..400 * MS, 50_000_000u64..5_000_000_000, 0u64..40 * MS),
        0..3,
    )
    .prop_map(|mut v| {
        v.sort_unstable();
        v
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn whatever_the_machine_does_no_window_exceeds_the_rate(
        rate in 50_000_000u64..5_000_000_000,
        delay in 0u64..40 * MS,
        gaps_us in prop::collection::vec(0u64..600, 50..800),
        sizes in prop::collection::vec(prop_oneof![Just(0usize), 1usize..45], 1..20),
        stalls in prop::collection::vec((0u64..400 * MS, 0u64..25 * MS), 0..4),
        oversleep in prop::collection::vec(0u64..300_000, 1..6),
        changes in rate_changes(),
    ) {
        let mut device = FakeDevice::new(600 * MS);
        let mut t = 0;
        for (k, gap) in gaps_us.iter().enumerate() {
            t += gap * 1_000;
            let frame = match sizes[k % sizes.len()] {
                0 => plain(1500),
                n => tcp_super(n),
            };
            device.inbox[0].push_back((t, frame));
        }
        let mut stalls = stalls;
        stalls.sort_unstable();
        device.stalls = stalls.into();
        device.oversleep_ns = oversleep;
        device.controls = changes
            .iter()
            .map(|(at, r, d)| (*at, json!({"op": "set", "rate_bps": r, "delay_ns": d}).to_string()))
            .collect();
        let mut config = DirectionConfig::new(rate, delay);
        config.queue_bytes = Some(50_000_000);
        let mut engine = engine(config, device);
        engine.run().unwrap();
        prop_assert!(engine.device.answers.iter().all(|a| a["ok"] == true));
        // The rate in force at each instant: it changes when a `set` is answered, which
        // is when the engine looked (no later than the next wake-up after it was sent).
        let mut epochs = vec![(0u64, rate)];
        epochs.extend(changes.iter().map(|(at, r, _)| (*at, *r)));
        let out = &engine.device.outbox[1];
        let starts: Vec<u64> = epochs[1..].iter().map(|(at, _)| *at).collect();
        for (at, bytes) in worst_window(out, MS, &starts) {
            let rate_then = epochs.iter().rev().find(|(s, _)| *s <= at).map(|(_, r)| *r).unwrap();
            // A set is answered a little after it is sent: the old rate may hold until.
            let slowest = epochs.iter().map(|(_, r)| *r).filter(|r| *r >= rate_then).min().unwrap_or(rate_then);
            let allowed = slowest.max(rate_then) as f64 * (1e6 + PACING_TOLERANCE_NS as f64) / 8e9;
            let near_change = starts.iter().any(|s| at.abs_diff(*s) < 2 * MS);
            prop_assert!(near_change || bytes as f64 <= allowed + 80.0,
                "{} bytes in the 1 ms after {} ns at {} b/s", bytes, at, rate_then);
        }
        let c = engine.core.stats(engine.device.now);
        let ab = &c["a_to_b"];
        prop_assert!(ab["max_1ms_rate_ratio"].as_f64().unwrap() <= 1.0 + PACING_TOLERANCE_NS as f64 / 1e6 + 1e-3,
            "the emulator's own figure: {}", ab["max_1ms_rate_ratio"]);
    }
}

#[test]
fn a_frame_is_delayed_from_when_it_was_in_the_device_not_from_when_its_read_ended() {
    // An idle line, a read that takes 30 us: the frame leaves one delay after the read
    // began, the read's own time not added to the round trip.
    let mut device = FakeDevice::new(20 * MS);
    device.read_cost_ns = 30_000;
    device.oversleep_ns = vec![0];
    device.inbox[0].push_back((MS, plain(100)));
    let mut engine = engine(DirectionConfig::new(1_000_000_000, 10 * MS), device);
    engine.run().unwrap();
    let [(at, _)] = engine.device.outbox[1][..] else {
        panic!("{:?}", engine.device.outbox[1]);
    };
    let serialization_ns = 100 * 8;
    let after = at - MS - 10 * MS - serialization_ns;
    assert!(after < 2_000, "released {after} ns after the delay");
}

#[test]
fn an_engine_behind_on_its_writes_still_reads_its_devices_every_millisecond() {
    // Writes into the far host take 20 us, the line time of a 1,500-byte frame at 1 Gb/s
    // 12 us: from the first release on the engine is behind for good. A TUN device drops
    // what its ring cannot take, and the sending host's TCP takes that for congestion, so
    // the frames must wait in the emulated queue (counted) rather than in the device.
    let mut device = FakeDevice::new(300 * MS);
    device.write_cost_ns = 20_000;
    let frame = plain(1500);
    let gap_ns = 12_000;
    let mut t = 0;
    while t < 200 * MS {
        device.inbox[0].push_back((t, frame.clone()));
        t += gap_ns;
    }
    let mut engine = engine(DirectionConfig::new(1_000_000_000, 5_000_000), device);
    engine.run().unwrap();
    let reads = &engine.device.reads[0];
    let behind = reads
        .iter()
        .filter(|(at, _)| *at > 10 * MS && *at < 200 * MS);
    let most_waiting = behind.clone().map(|(_, n)| *n).max().unwrap();
    // A millisecond of arrivals (83 frames), and a little more.
    assert!(
        most_waiting <= 120,
        "{most_waiting} frames waited in the device"
    );
    let gaps = reads
        .windows(2)
        .filter(|w| w[1].0 < 200 * MS)
        .map(|w| w[1].0 - w[0].0);
    let longest = gaps.max().unwrap();
    assert!(
        longest <= 1_300_000,
        "a device went unread for {longest} ns"
    );
    assert!(
        engine.device.outbox[1].len() > 5_000,
        "the line kept releasing"
    );
}

#[test]
fn the_lateness_of_the_sleeps_the_awake_budget_forces_is_counted_apart() {
    // Frames come every 12 us, too close together to sleep a margin short of the next
    // release: the engine polls through the gaps until it has been awake too much, then
    // sleeps some of them through (each waking 15 us late), and the lateness that costs
    // is told apart from that of ordinary sleeps and polls.
    let mut device = FakeDevice::new(120 * MS);
    device.oversleep_ns = vec![15_000];
    let frame = plain(1500);
    let mut t = 0;
    while t < 100 * MS {
        device.inbox[0].push_back((t, frame.clone()));
        t += 12_000;
    }
    let mut engine = engine(DirectionConfig::new(1_000_000_000, 5 * MS), device);
    engine.run().unwrap();
    let counters = &engine.core.counters;
    assert!(counters.sleeps_over_budget > 0, "{counters:?}");
    let blame = &counters.late_after[0];
    assert!(
        blame.sleep_over_budget_ns > blame.sleep_ns + blame.poll_ns,
        "{blame:?}"
    );
}

/// A plain IPv4 packet of `ip_bytes` whose bytes say which it is.
fn numbered(k: u32, ip_bytes: usize) -> Vec<u8> {
    let mut frame = plain(ip_bytes);
    for (i, byte) in frame[VNET + 20..].iter_mut().enumerate() {
        *byte = (k as usize * 31 + i) as u8;
    }
    frame[VNET + 20..VNET + 24].copy_from_slice(&k.to_be_bytes());
    frame
}

fn encryptor(json: &Value) -> longhaul_wan::encryptor::EncryptorConfig {
    let mut config = json!({"secret": "11".repeat(32)});
    for (k, v) in json.as_object().unwrap() {
        config[k] = v.clone();
    }
    serde_json::from_value(config).unwrap()
}

/// Run `config`'s link (encrypted with `encrypt`, or not) over `frames` sent from A, one
/// every `gap_ns`; the engine when it is done.
fn run_with(
    config: &DirectionConfig,
    encrypt: Option<&Value>,
    frames: &[Vec<u8>],
    gap_ns: u64,
) -> Engine<FakeDevice> {
    let mut device = FakeDevice::new(frames.len() as u64 * gap_ns + 20 * MS);
    device.frames = Some([Vec::new(), Vec::new()]);
    for (k, frame) in frames.iter().enumerate() {
        device.inbox[0].push_back((k as u64 * gap_ns, frame.clone()));
    }
    let mut engine = engine(config.clone(), device);
    engine.core.set_encryptors(encrypt.map(encryptor), 0);
    engine.run().unwrap();
    engine
}

fn written(engine: &Engine<FakeDevice>, side: usize) -> &[Vec<u8>] {
    &engine.device.frames.as_ref().unwrap()[side]
}

#[test]
fn an_encrypted_line_hands_the_hosts_what_a_plain_one_does_and_costs_48_bytes_a_segment() {
    // The same traffic and loss seed with and without the encryptors: super-packets cut
    // by losses, and plain packets. The line is fast enough that nothing queues.
    let mut config = DirectionConfig::new(10_000_000_000, MS);
    config.loss = Loss::random(0.01);
    let frames: Vec<Vec<u8>> = (0..300u32)
        .map(|k| {
            if k % 3 == 0 {
                numbered(k, 1_200)
            } else {
                tcp_super(20)
            }
        })
        .collect();
    let plain = run_with(&config, None, &frames, 100_000);
    let sealed = run_with(&config, Some(&json!({})), &frames, 100_000);
    assert_eq!(written(&sealed, 1), written(&plain, 1));
    let stats = |e: &Engine<FakeDevice>| e.core.stats(e.device.now);
    let (p, s) = (stats(&plain), stats(&sealed));
    let segments = p["a_to_b"]["tx_segments"].as_u64().unwrap();
    assert!(p["a_to_b"]["split_frames"].as_u64().unwrap() > 10);
    assert_eq!(s["a_to_b"]["tx_segments"].as_u64().unwrap(), segments);
    let ip = |v: &Value| v["a_to_b"]["tx_bytes"].as_u64().unwrap();
    assert_eq!(ip(&s) - ip(&p), 48 * segments, "{p} {s}");
    let counters = &s["encryptor"]["a_to_b"];
    assert_eq!(counters["opened_frames"], p["a_to_b"]["tx_frames"]);
    assert_eq!(counters["refused_forged"], json!(0));
}

#[test]
fn every_tampered_frame_is_refused_and_counted_and_nothing_altered_reaches_a_host() {
    let config = DirectionConfig::new(10_000_000_000, MS);
    let frames: Vec<Vec<u8>> = (0..2_000u32).map(|k| numbered(k, 1_400)).collect();
    let engine = run_with(&config, Some(&json!({"tamper": 0.1})), &frames, 20_000);
    let counters = &engine.core.stats(engine.device.now)["encryptor"]["a_to_b"];
    let tampered = counters["tampered"].as_u64().unwrap();
    let refused = counters["refused_forged"].as_u64().unwrap()
        + counters["refused_replayed"].as_u64().unwrap();
    assert!(tampered > 100, "{counters}");
    assert_eq!(refused, tampered, "{counters}");
    let out = written(&engine, 1);
    assert_eq!(out.len() as u64 + tampered, 2_000);
    for frame in out {
        let k = u32::from_be_bytes(frame[VNET + 20..VNET + 24].try_into().unwrap());
        assert_eq!(*frame, numbered(k, 1_400));
    }
}

#[test]
fn duplicated_frames_are_refused_as_replays_and_reordered_ones_delivered() {
    let mut config = DirectionConfig::new(10_000_000_000, MS);
    config.faults.duplicate = 0.05;
    config.faults.reorder = 0.05;
    let frames: Vec<Vec<u8>> = (0..2_000u32).map(|k| numbered(k, 1_000)).collect();
    let engine = run_with(
        &config,
        Some(&json!({"replay_window": 64})),
        &frames,
        20_000,
    );
    let stats = engine.core.stats(engine.device.now);
    let counters = &stats["encryptor"]["a_to_b"];
    let out = written(&engine, 1);
    assert_eq!(out.len(), 2_000, "each frame once: {counters}");
    let mut seen: Vec<u32> = out
        .iter()
        .map(|f| u32::from_be_bytes(f[VNET + 20..VNET + 24].try_into().unwrap()))
        .collect();
    assert!(seen.windows(2).any(|w| w[0] > w[1]), "some reordered");
    seen.sort_unstable();
    assert_eq!(seen, (0..2_000).collect::<Vec<_>>());
    assert!(
        counters["refused_replayed"].as_u64().unwrap() > 50,
        "{counters}"
    );
    assert_eq!(counters["refused_forged"], json!(0));
}

#[test]
fn a_packet_too_long_sealed_is_fragmented_or_dropped_as_configured() {
    let config = DirectionConfig::new(10_000_000_000, MS);
    let frames = vec![numbered(1, 9_000), numbered(2, 8_950)];
    let fragmenting = run_with(&config, Some(&json!({})), &frames, 100_000);
    assert_eq!(written(&fragmenting, 1), frames.as_slice());
    let s = fragmenting.core.stats(fragmenting.device.now);
    assert_eq!(s["encryptor"]["a_to_b"]["fragmented_segments"], json!(1));
    // 9,048 + 8,998 sealed, and the second fragment's IP header and framing.
    assert_eq!(s["a_to_b"]["tx_bytes"], json!(9_048 + 20 + 8_998));
    let dropping = run_with(
        &config,
        Some(&json!({"oversize": "drop"})),
        &frames,
        100_000,
    );
    assert_eq!(written(&dropping, 1), &frames[1..]);
    let s = dropping.core.stats(dropping.device.now);
    assert_eq!(
        s["encryptor"]["a_to_b"]["oversize_dropped_frames"],
        json!(1)
    );
}

/// An engine on a 1 Gb/s line carrying `device`'s frames that marks its line on a board
/// in a directory of its own (`what`), and the board as another emulator sees it.
fn marking_engine(
    what: &str,
    device: FakeDevice,
) -> (
    Engine<FakeDevice>,
    longhaul_wan::wake::BusyBoard,
    std::path::PathBuf,
) {
    use longhaul_wan::wake::{BusyBoard, BusyMark};
    let dir = std::env::temp_dir().join(format!("longhaul-board-{what}-{}", std::process::id()));
    // The mark is filed under this test's parent's id, so that this process, looking at
    // the board as another emulator, sees it as a live one's.
    let marked = BusyBoard::open(&dir, std::os::unix::process::parent_id()).unwrap();
    let other = BusyBoard::open(&dir, std::process::id()).unwrap();
    let mut engine = engine(DirectionConfig::new(1_000_000_000, MS), device);
    engine.core.busy_mark = Some(BusyMark::new(marked));
    (engine, other, dir)
}

#[test]
fn a_busy_line_is_marked_on_the_board_without_spinners_and_unmarked_when_it_ends() {
    // An emulator that never keeps the CPUs awake still tells the others its line is
    // busy, or their spinners would take the CPUs its hosts need.
    let mut device = FakeDevice::new(300 * MS);
    for k in 0..3_000u64 {
        device.inbox[0].push_back((k * 100_000, plain(1_500)));
    }
    let (mut engine, other, dir) = marking_engine("engine", device);
    assert!(!other.others_busy());
    engine.run().unwrap();
    assert!(
        other.others_busy(),
        "a line carrying frames to the end is busy"
    );
    drop(engine);
    assert!(
        !other.others_busy(),
        "an emulator that ended leaves no mark"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_line_full_of_super_packets_is_busy_though_few_frames_cross_it() {
    // 44 segments a frame fill 1 Gb/s with about 95 frames in 50 ms: counted as frames
    // the line looked quiet, and the spinners took the CPUs its hosts needed.
    let mut device = FakeDevice::new(300 * MS);
    for k in 0..500u64 {
        device.inbox[0].push_back((k * 600_000, tcp_super(44)));
    }
    let (mut engine, other, dir) = marking_engine("super", device);
    engine.run().unwrap();
    let stats = engine.core.stats(engine.device.now);
    let frames = stats["a_to_b"]["tx_frames"].as_u64().unwrap();
    assert!(
        frames < 600,
        "{frames} frames in 300 ms: fewer than 200 a window"
    );
    assert!(other.others_busy(), "a full line is busy");
    drop(engine);
    std::fs::remove_dir_all(&dir).unwrap();
}
