//! `longhaul-wan`: join two TUN devices in two network namespaces by an emulated
//! wide-area link, or talk to one that runs.

// Doc comments here are the command's help text, read by people, not rustdoc.
#![allow(clippy::doc_markdown)]

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use clap::{Args, Parser, Subcommand};
use serde_json::json;

use longhaul_wan::clock::{fine_timer_slack, now_ns, warn};
use longhaul_wan::config::{
    CrossTraffic, DirectionConfig, GilbertElliott, Jitter, Layer, LinkConfig, Loss, parse_bytes,
    parse_duration_ns, parse_rate,
};
use longhaul_wan::control::{ControlServer, request};
use longhaul_wan::echo::{self, Mode, Probe, ProbeOptions, ServeOptions, Server};
use longhaul_wan::encryptor::EncryptorConfig;
use longhaul_wan::engine::{Core, Engine, hold_cpu_latency_qos, run_in_real_time};
use longhaul_wan::traffic::{self, OnOff, SendOptions, Sink, SinkOptions};
use longhaul_wan::tun::{Tun, TunDevice};
use longhaul_wan::wake::{BusyBoard, BusyMark, KeepAwake, Spinners, WakeMargins};

#[derive(Parser)]
#[command(
    name = "longhaul-wan",
    version,
    about = "A userspace wide-area link between two TUN devices: rate, delay, queue, loss, cross-traffic."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Create the two devices and emulate the link until SIGTERM or SIGINT, a `stop`
    /// request, or the end of the process named by --parent-pid.
    ///
    /// Prints one JSON line when the devices exist (give them addresses and bring them up
    /// then), and the final counters as JSON when it stops.
    Run(Box<RunArgs>),
    /// Send one request to a running emulator and print its JSON answer:
    /// stats, config, stop, set followed by JSON fields such as '{"delay_ns": 13400000}', or
    /// encrypt followed by '{"config": {...}}' or '{"config": null}'.
    Ctl {
        /// The emulator's control socket (`run --control`).
        socket: PathBuf,
        /// stats | config | stop | set | encrypt | health
        op: String,
        /// For set: the fields to change, as a JSON object (may name "direction").
        fields: Option<String>,
    },
    /// Send UDP datagrams paced to a rate (UDP GSO: many datagrams per system call).
    ///
    /// Each datagram starts with its sequence number and send time (u64 big-endian:
    /// number from 0, CLOCK_REALTIME ns). Prints one JSON object when it ends: datagrams,
    /// bytes (payload), ip_bytes, duration_s, rate_bps (IP, over the time on), gso,
    /// send_errors, late_max_ns.
    UdpSend(UdpSendArgs),
    /// Receive and count UDP datagrams (UDP GRO: many datagrams per system call).
    ///
    /// Prints {"listening": "ADDR:PORT"} to stderr once bound, and one JSON object to
    /// stdout when it ends: datagrams, bytes, ip_bytes, lost, reordered, duration_s and
    /// rate_bps (first to last arrival), intervals (per second), gro, socket_drops.
    UdpSink(UdpSinkArgs),
    /// Time TCP exchanges, one round trip per sample (the jitter suite's echo tool):
    /// `serve` answers, `probe` asks and times.
    #[command(subcommand)]
    TcpEcho(TcpEchoCommand),
}

#[derive(Subcommand)]
enum TcpEchoCommand {
    /// Answer tcp-echo requests, one connection at a time, until --duration or SIGTERM.
    ///
    /// Prints {"listening": "ADDR:PORT"} to stderr once bound, and one JSON object to
    /// stdout when it ends: connections, exchanges (requests answered), errors
    /// (connections dropped: silent too long, broken, not speaking tcp-echo).
    Serve(TcpEchoServeArgs),
    /// Time --count exchanges with a tcp-echo server over one connection.
    ///
    /// echo: send N bytes (after an 8-byte header), read them back; size: send an 8-byte
    /// request naming N, read N bytes. A sample runs from the first byte written to the
    /// last byte read (CLOCK_MONOTONIC). Prints one JSON object: mode, size_bytes, count
    /// (samples), samples_ms, mean_ms, min_ms, max_ms, std_ms (population), range_pct
    /// ((max-min)/mean), std_pct (std/mean), errors (failed exchanges: each reconnects).
    /// Exits 1 if the server is unreachable, 2 for bad arguments.
    Probe(TcpEchoProbeArgs),
}

#[derive(Args)]
struct RunArgs {
    /// Network namespace of device A (a name under /run/netns, or a path); default: this one.
    #[arg(long)]
    a_netns: Option<String>,
    /// Name of device A (created; up to 15 characters).
    #[arg(long)]
    a_dev: String,
    /// Network namespace of device B.
    #[arg(long)]
    b_netns: Option<String>,
    /// Name of device B.
    #[arg(long)]
    b_dev: String,
    /// The line's layer: ip (the rate counts IP bytes), oc192, oc48, oc12, oc3 (SONET,
    /// Ethernet mapped by GFP-F), wanphy, lanphy, gige. It caps the rate and sets the
    /// framing each packet costs.
    #[arg(long, value_parser = Layer::parse, default_value = "ip")]
    layer: Layer,
    /// The rate in each direction, e.g. 9.6g, 1g, 100m (framing counted); default: the
    /// layer's line rate, or 1g for the ip layer.
    #[arg(long, value_parser = parse_rate)]
    rate: Option<u64>,
    /// One-way propagation delay in each direction, e.g. 13.4ms, 81.5ms.
    #[arg(long, value_parser = parse_duration_ns, default_value = "0ms")]
    delay: u64,
    /// Queue limit in bytes, e.g. 196m; default: one bandwidth-delay product.
    #[arg(long, value_parser = parse_bytes)]
    queue: Option<u64>,
    /// Bytes of framing per wire segment beyond the IP packet; default: the layer's.
    #[arg(long)]
    frame_overhead: Option<u32>,
    /// Random loss: the probability that a segment is lost, e.g. 1e-5.
    #[arg(long)]
    loss: Option<f64>,
    /// Gilbert-Elliott burst loss: p_good_to_bad,p_bad_to_good[,loss_good,loss_bad]
    /// (default loss 0 in Good, 1 in Bad); with --loss, both apply.
    #[arg(long, value_parser = parse_gilbert_elliott)]
    burst_loss: Option<GilbertElliott>,
    /// Queueing jitter of a packet-switched core: hops=N,mean=DURATION (per hop, an
    /// exponential wait at each), e.g. hops=4,mean=150us. A SONET circuit has none.
    #[arg(long, value_parser = parse_jitter)]
    jitter: Option<Jitter>,
    /// Fault for tests: the probability that a frame is delivered after the next one.
    #[arg(long, default_value_t = 0.0)]
    reorder: f64,
    /// Fault for tests: the probability that a frame is delivered twice.
    #[arg(long, default_value_t = 0.0)]
    duplicate: f64,
    /// Synthetic cross-traffic: RATE[,on=DURATION,off=DURATION], e.g. 2g or 4g,on=50ms,off=50ms.
    #[arg(long, value_parser = parse_cross)]
    cross: Option<CrossTraffic>,
    /// Both directions as JSON ({"a_to_b": {...}, "b_to_a": {...}}); overrides the flags above.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Link encryptors at both ends of the line (AES-256-GCM per frame, as ESP in tunnel
    /// mode): a JSON file {"secret": HEX (32+ bytes), "mtu_bytes": 9000, "oversize":
    /// "fragment"|"drop", "rekey_interval_ns", "replay_window", "tamper"}. A running
    /// emulator takes the same object with `{"op": "encrypt", "config": {...}}`.
    #[arg(long)]
    encrypt: Option<PathBuf>,
    /// A Unix socket to answer stats, config, set and stop requests on.
    #[arg(long)]
    control: Option<PathBuf>,
    /// Seed of the loss decisions.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The most a sleep stops short of a frame's instant to poll the rest: the engine
    /// learns how late this machine wakes sleepers and stops that much short, up to this.
    #[arg(long, value_parser = parse_duration_ns, default_value = "200us")]
    spin: u64,
    /// After writing a frame, poll this long before sleeping, for the answer a host sends
    /// back at once (an echo reply): a sleeping engine would add its wake-up to the round
    /// trip.
    #[arg(long, value_parser = parse_duration_ns, default_value = "100us")]
    linger: u64,
    /// When to keep the machine's CPUs from halting (a spinning thread per CPU at the
    /// lowest priority): a halted CPU of a virtual machine wakes 50-150 us late, which an
    /// idle round trip pays. `quiet`: only while the line is quiet (a busy line keeps them
    /// busy anyway, and there the spinners slowed a paced sender beside them by 5-10 %).
    #[arg(long, value_enum, default_value_t = KeepAwake::Quiet)]
    keep_awake: KeepAwake,
    /// The CPU to run the emulator on: a number, `auto` (the last CPU, when there is more
    /// than one: the testbed steers the hosts' kernel work to the others), or `any`.
    #[arg(long, default_value = "auto")]
    cpu: String,
    /// Real-time (SCHED_FIFO) priority of the emulator's threads, 1-99; 0 leaves them to
    /// the fair scheduler, which on a busy machine keeps them waiting for milliseconds.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(i32).range(0..=99))]
    priority: i32,
    /// Keep idle CPUs out of deep sleep while running (a CPU latency request), so that a packet
    /// arriving while the emulator sleeps is seen at once: false lets the machine idle deeper.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    cpu_latency_qos: bool,
    /// Stop when this process ends (it must be the emulator's parent): a testbed that is
    /// killed takes its emulators with it.
    #[arg(long)]
    parent_pid: Option<i32>,
}

#[derive(Args)]
struct UdpSendArgs {
    /// Where to send: ADDR:PORT.
    #[arg(long)]
    to: SocketAddr,
    /// The rate while on, counting IP bytes (payload, UDP and IP headers), e.g. 2g, 500m.
    #[arg(long, value_parser = parse_rate)]
    rate: u64,
    /// How long to run, e.g. 3s.
    #[arg(long, value_parser = parse_duration_ns)]
    duration: u64,
    /// Payload bytes per datagram: 1472 fills a 1500-byte IPv4 packet, 1452 an IPv6 one
    /// (with GSO a datagram must fit the route's MTU).
    #[arg(long, default_value_t = 1472, value_parser = clap::value_parser!(u16).range(16..=65_507))]
    size: u16,
    /// The local address to send from: ADDR or ADDR:PORT.
    #[arg(long, value_parser = parse_bind)]
    bind: Option<SocketAddr>,
    /// Send for this long, then be silent for --off, repeating.
    #[arg(long, value_parser = parse_duration_ns, requires = "off")]
    on: Option<u64>,
    /// Silent this long after each --on.
    #[arg(long, value_parser = parse_duration_ns, requires = "on")]
    off: Option<u64>,
    /// Hand the kernel many datagrams per send (UDP GSO); false sends one per call.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    gso: bool,
}

#[derive(Args)]
struct UdpSinkArgs {
    /// Where to listen: ADDR:PORT (port 0: any free port, told on stderr).
    #[arg(long)]
    listen: SocketAddr,
    /// The longest to run, e.g. 10s.
    #[arg(long, value_parser = parse_duration_ns)]
    duration: u64,
    /// Stop this long after the last datagram, once traffic had started.
    #[arg(long, value_parser = parse_duration_ns, default_value = "2s")]
    idle_timeout: u64,
    /// Take datagrams coalesced (UDP GRO); false reads one per call.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    gro: bool,
}

#[derive(Args)]
struct TcpEchoServeArgs {
    /// Where to listen: ADDR:PORT (port 0: any free port, told on stderr).
    #[arg(long)]
    listen: SocketAddr,
    /// The longest to run, e.g. 60s; default: until SIGTERM or SIGINT.
    #[arg(long, value_parser = parse_duration_ns)]
    duration: Option<u64>,
    /// Drop a connection that sends or takes nothing for this long: one connection is
    /// served at a time, and the next waits behind it.
    #[arg(long, value_parser = parse_duration_ns, default_value = "10s")]
    idle_timeout: u64,
    /// Keep idle CPUs out of deep sleep while serving (see `run`): less wake-up delay in
    /// each round trip.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set)]
    cpu_latency_qos: bool,
}

#[derive(Args)]
struct TcpEchoProbeArgs {
    /// The server: ADDR:PORT.
    #[arg(long)]
    to: SocketAddr,
    /// echo (send N bytes, get them back) or size (name N, get N bytes).
    #[arg(long)]
    mode: Mode,
    /// N: 1 byte to 16 MiB, e.g. 64, 64ki, 1mi (k and m are powers of 1000).
    #[arg(long, value_parser = echo::parse_size_bytes)]
    size: usize,
    /// Exchanges to record.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    count: u32,
    /// From the start of one exchange to the start of the next (a slower exchange is
    /// followed at once).
    #[arg(long, value_parser = parse_duration_ns, default_value = "10ms")]
    interval: u64,
    /// Exchanges first, not recorded.
    #[arg(long, default_value_t = 3)]
    warmup: u32,
    /// The longest to connect, and the longest one exchange may take.
    #[arg(long, value_parser = parse_duration_ns, default_value = "5s")]
    timeout: u64,
    /// Keep idle CPUs out of deep sleep while probing (see `run`): less wake-up delay in
    /// each round trip.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set)]
    cpu_latency_qos: bool,
}

/// A local address to bind: ADDR:PORT, or ADDR (any port).
fn parse_bind(text: &str) -> Result<SocketAddr, String> {
    text.parse::<SocketAddr>()
        .or_else(|_| text.parse::<IpAddr>().map(|ip| SocketAddr::new(ip, 0)))
        .map_err(|_| format!("{text:?} is not ADDR or ADDR:PORT"))
}

fn parse_gilbert_elliott(text: &str) -> Result<GilbertElliott, String> {
    let values: Vec<f64> = text
        .split(',')
        .map(|v| {
            v.trim()
                .parse::<f64>()
                .map_err(|_| format!("{v:?} is not a number"))
        })
        .collect::<Result<_, _>>()?;
    let (p_good_to_bad, p_bad_to_good, loss_good, loss_bad) = match values[..] {
        [p, r] => (p, r, 0.0, 1.0),
        [p, r, good, bad] => (p, r, good, bad),
        _ => return Err("give p_good_to_bad,p_bad_to_good[,loss_good,loss_bad]".into()),
    };
    Ok(GilbertElliott {
        p_good_to_bad,
        p_bad_to_good,
        loss_good,
        loss_bad,
    })
}

fn parse_jitter(text: &str) -> Result<Jitter, String> {
    let mut jitter = Jitter {
        hops: 0,
        mean_ns_per_hop: 0,
    };
    for part in text.split(',') {
        match part.trim().split_once('=') {
            Some(("hops", v)) => {
                jitter.hops = v
                    .parse()
                    .map_err(|_| format!("hops {v:?} is not a count"))?;
            }
            Some(("mean", v)) => jitter.mean_ns_per_hop = parse_duration_ns(v)?,
            _ => return Err(format!("{part:?}: use hops=N,mean=DURATION")),
        }
    }
    jitter.check()?;
    Ok(jitter)
}

fn parse_cross(text: &str) -> Result<CrossTraffic, String> {
    let mut parts = text.split(',');
    let rate_bps = parse_rate(parts.next().unwrap_or_default())?;
    let mut cross = CrossTraffic {
        rate_bps,
        packet_bytes: 1_500,
        on_ns: 0,
        off_ns: 0,
    };
    for part in parts {
        match part.split_once('=') {
            Some(("on", v)) => cross.on_ns = parse_duration_ns(v)?,
            Some(("off", v)) => cross.off_ns = parse_duration_ns(v)?,
            Some(("size", v)) => {
                cross.packet_bytes = v.parse().map_err(|_| format!("size {v:?} is not bytes"))?;
            }
            _ => {
                return Err(format!(
                    "{part:?}: use on=DURATION, off=DURATION or size=BYTES"
                ));
            }
        }
    }
    Ok(cross)
}

fn link_config(args: &RunArgs) -> Result<LinkConfig, String> {
    if let Some(path) = &args.config {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("--config {}: {e}", path.display()))?;
        return serde_json::from_str(&text)
            .map_err(|e| format!("--config {}: {e}", path.display()));
    }
    let rate = args
        .rate
        .or(args.layer.line_rate_bps())
        .unwrap_or(1_000_000_000);
    let mut one = DirectionConfig::new(rate, args.delay);
    one.layer = args.layer;
    one.queue_bytes = args.queue;
    one.frame_overhead_bytes = args.frame_overhead;
    one.cross.clone_from(&args.cross);
    one.loss = Loss {
        random: args.loss.unwrap_or(0.0),
        burst: args.burst_loss,
    };
    one.jitter = args.jitter;
    one.faults.reorder = args.reorder;
    one.faults.duplicate = args.duplicate;
    Ok(LinkConfig {
        a_to_b: one.clone(),
        b_to_a: one,
    })
}

fn encryptor_config(path: &std::path::Path) -> Result<EncryptorConfig, (u8, String)> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| (2, format!("--encrypt {}: {e}", path.display())))?;
    let mut json = serde_json::Deserializer::from_str(&text);
    let config: EncryptorConfig = serde_path_to_error::deserialize(&mut json).map_err(|e| {
        (
            2,
            format!("--encrypt {}: {}: {}", path.display(), e.path(), e.inner()),
        )
    })?;
    config
        .check()
        .map_err(|e| (2, format!("--encrypt {}: {e}", path.display())))?;
    Ok(config)
}

fn run(args: &RunArgs) -> Result<(), (u8, String)> {
    let config = link_config(args).map_err(|e| (2, e))?;
    for (name, direction) in [("a_to_b", &config.a_to_b), ("b_to_a", &config.b_to_a)] {
        direction.check().map_err(|e| (2, format!("{name}: {e}")))?;
    }
    if args.a_dev == args.b_dev && args.a_netns == args.b_netns {
        return Err((2, "the two devices must differ (name or namespace)".into()));
    }
    let encryptor = args.encrypt.as_deref().map(encryptor_config).transpose()?;
    let stop = stop_on_signals()?;
    fine_timer_slack();
    let open = |netns: &Option<String>, dev: &str| {
        Tun::open(netns.as_deref(), dev).map_err(|e| (1, format!("device {dev}: {e}")))
    };
    let a = open(&args.a_netns, &args.a_dev)?;
    let b = open(&args.b_netns, &args.b_dev)?;
    let control = match &args.control {
        Some(path) => Some(
            ControlServer::bind(path)
                .map_err(|e| (1, format!("--control {}: {e}", path.display())))?,
        ),
        None => None,
    };
    let mut core = Core::new([config.a_to_b, config.b_to_a], args.seed, now_ns())
        .map_err(|e| (1, format!("cannot map the frame arenas: {e}")))?;
    if encryptor.is_some() {
        core.set_encryptors(encryptor, now_ns());
    }
    let board = BusyBoard::open(BusyBoard::DEFAULT_DIR, std::process::id());
    let spinners =
        (args.keep_awake != KeepAwake::Never).then(|| Spinners::start(&stop, true, board.as_ref()));
    let mut device = TunDevice::new([a, b], control, stop)
        .map_err(|e| (1, format!("cannot watch the TUN devices (epoll): {e}")))?;
    if let Some(pid) = args.parent_pid {
        device
            .die_with(pid)
            .map_err(|e| (1, format!("--parent-pid {pid}: {e}")))?;
    }
    let ready = json!({
        "ready": true,
        "pid": std::process::id(),
        "a": device.ends[0].name,
        "b": device.ends[1].name,
        "udp_offload": device.ends[0].udp_offload && device.ends[1].udp_offload,
    });
    println!("{ready}");
    let _qos = match args.cpu_latency_qos.then(hold_cpu_latency_qos) {
        Some(Ok(file)) => Some(file),
        Some(Err(e)) => {
            warn_no_qos(&e);
            None
        }
        None => None,
    };
    let priority = (args.priority > 0).then_some(args.priority);
    if let Some(priority) = priority
        && let Err(e) = run_in_real_time(priority)
    {
        warn(&format!(
            "no real-time priority ({e}); releases may come late under load"
        ));
    }
    pin_to_cpu(&args.cpu).map_err(|e| (2, format!("--cpu {}: {e}", args.cpu)))?;
    let mut core = core;
    if args.keep_awake == KeepAwake::Quiet {
        core.spinners = spinners;
    }
    core.busy_mark = board.map(BusyMark::new);
    let mut engine = Engine::new(device, core);
    engine.margins = WakeMargins::new(args.spin);
    engine.linger_ns = args.linger;
    engine.run().map_err(|e| (1, format!("emulator: {e}")))?;
    engine.core.drain();
    println!("{}", engine.core.stats(now_ns()));
    Ok(())
}

/// Run this thread on the CPU `choice` names (see `RunArgs::cpu`).
fn pin_to_cpu(choice: &str) -> Result<(), String> {
    let online = longhaul_wan::sched::online_cpus();
    let cpu = match choice {
        "any" => return Ok(()),
        "auto" if online < 2 => return Ok(()),
        "auto" => online - 1,
        number => number
            .parse::<usize>()
            .ok()
            .filter(|n| *n < online)
            .ok_or_else(|| format!("give auto, any or a CPU number below {online}"))?,
    };
    longhaul_wan::sched::set_cpus([cpu]).map_err(|e| e.to_string())
}

/// A flag that SIGTERM and SIGINT set.
fn stop_on_signals() -> Result<Arc<AtomicBool>, (u8, String)> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(signal, Arc::clone(&stop)).map_err(|e| (1, e.to_string()))?;
    }
    Ok(stop)
}

fn udp_send(args: &UdpSendArgs) -> Result<(), (u8, String)> {
    if args.on == Some(0) {
        return Err((2, "--on must be above 0".into()));
    }
    if args.duration == 0 {
        return Err((2, "--duration must be above 0".into()));
    }
    let options = SendOptions {
        to: args.to,
        bind: args.bind,
        rate_bps: args.rate,
        duration_ns: args.duration,
        payload_bytes: usize::from(args.size),
        on_off: match (args.on, args.off) {
            (Some(on_ns), Some(off_ns)) => OnOff { on_ns, off_ns },
            _ => OnOff::ALWAYS,
        },
        gso: args.gso,
    };
    let stop = stop_on_signals()?;
    let report = traffic::send(&options, &stop).map_err(|e| (1, format!("udp-send: {e}")))?;
    print_json(&report)
}

fn udp_sink(args: &UdpSinkArgs) -> Result<(), (u8, String)> {
    let options = SinkOptions {
        listen: args.listen,
        duration_ns: args.duration,
        idle_timeout_ns: args.idle_timeout,
        gro: args.gro,
    };
    let stop = stop_on_signals()?;
    let sink = Sink::bind(&options).map_err(|e| (1, format!("udp-sink: {e}")))?;
    let bound = sink.local_addr().map_err(|e| (1, e.to_string()))?;
    eprintln!("{}", json!({ "listening": bound.to_string() }));
    let report = sink.run(&stop).map_err(|e| (1, format!("udp-sink: {e}")))?;
    print_json(&report)
}

fn tcp_echo_serve(args: &TcpEchoServeArgs) -> Result<(), (u8, String)> {
    if args.idle_timeout == 0 {
        return Err((2, "--idle-timeout must be above 0".into()));
    }
    let options = ServeOptions {
        listen: args.listen,
        duration_ns: args.duration,
        idle_timeout_ns: args.idle_timeout,
    };
    let stop = stop_on_signals()?;
    let mut server = Server::bind(&options).map_err(|e| (1, format!("tcp-echo serve: {e}")))?;
    let bound = server.local_addr().map_err(|e| (1, e.to_string()))?;
    let _qos = cpu_latency_qos(args.cpu_latency_qos);
    eprintln!("{}", json!({ "listening": bound.to_string() }));
    let report = server
        .run(&stop)
        .map_err(|e| (1, format!("tcp-echo serve: {e}")))?;
    print_json(&report)
}

fn tcp_echo_probe(args: &TcpEchoProbeArgs) -> Result<(), (u8, String)> {
    if args.timeout == 0 {
        return Err((2, "--timeout must be above 0".into()));
    }
    let options = ProbeOptions {
        to: args.to,
        mode: args.mode,
        size_bytes: args.size,
        count: args.count as usize,
        interval_ns: args.interval,
        warmup: args.warmup as usize,
        timeout_ns: args.timeout,
    };
    let stop = stop_on_signals()?;
    let mut probe = Probe::connect(&options).map_err(|e| (1, format!("tcp-echo probe: {e}")))?;
    let _qos = cpu_latency_qos(args.cpu_latency_qos);
    let (report, cut_short) = probe.run(&stop);
    print_json(&report)?;
    if let Some(e) = cut_short {
        return Err((1, format!("tcp-echo probe: ended early: {e}")));
    }
    if report.count == 0 && report.errors > 0 {
        return Err((1, "tcp-echo probe: no exchange succeeded".into()));
    }
    Ok(())
}

/// The CPU latency request, if asked for and granted (a warning if not).
fn cpu_latency_qos(wanted: bool) -> Option<std::fs::File> {
    if !wanted {
        return None;
    }
    hold_cpu_latency_qos().map_err(|e| warn_no_qos(&e)).ok()
}

/// One line of JSON, its fields in the order the report declares them.
fn print_json(report: &impl serde::Serialize) -> Result<(), (u8, String)> {
    let line = serde_json::to_string(report).map_err(|e| (1, e.to_string()))?;
    println!("{line}");
    Ok(())
}

fn warn_no_qos(error: &std::io::Error) {
    warn(&format!(
        "no CPU latency request ({error}); arrivals may be seen late"
    ));
}

fn ctl(socket: &std::path::Path, op: &str, fields: Option<&str>) -> Result<(), (u8, String)> {
    let mut body = match fields {
        Some(text) => serde_json::from_str::<serde_json::Value>(text)
            .map_err(|e| (2, format!("fields are not a JSON object: {e}")))?,
        None => json!({}),
    };
    let Some(map) = body.as_object_mut() else {
        return Err((2, "fields must be a JSON object".into()));
    };
    map.insert("op".into(), json!(op));
    let answer = request(socket, &body.to_string()).map_err(|e| (1, e.to_string()))?;
    println!("{answer}");
    if answer["ok"] == true {
        Ok(())
    } else {
        Err((2, answer["error"].as_str().unwrap_or("refused").to_owned()))
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Run(args) => run(args),
        Command::Ctl { socket, op, fields } => ctl(socket, op, fields.as_deref()),
        Command::UdpSend(args) => udp_send(args),
        Command::UdpSink(args) => udp_sink(args),
        Command::TcpEcho(TcpEchoCommand::Serve(args)) => tcp_echo_serve(args),
        Command::TcpEcho(TcpEchoCommand::Probe(args)) => tcp_echo_probe(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err((code, message)) => {
            eprintln!("longhaul-wan: {message}");
            ExitCode::from(code)
        }
    }
}
