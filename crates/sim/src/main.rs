//! `longhaul-sim`: the thin shell. It reads a scenario, runs it, prints JSON.

use std::io::Read;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use longhaul_link::layer::Layer;
use longhaul_sim::ib::devices::{Connection, Extender, Hca, IbSwitch};
use longhaul_sim::ib::run::{IbReport, IbTest, Tool};
use longhaul_sim::ib::{qp::Service, wire::LinkSpeed};
use longhaul_sim::{bench, network, presets, run, scenario};

#[derive(Parser)]
#[command(
    name = "longhaul-sim",
    about = "Packet-level discrete-event simulator of longhaul: TCP, InfiniBand, Hurricane"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args)]
struct HurricaneArgs {
    /// The reservation's rate (IP packets), Gb/s.
    #[arg(long, default_value_t = 9.6)]
    rate_gbps: f64,
    #[arg(long, default_value_t = 163.0)]
    rtt_ms: f64,
    /// Random loss per packet, each way.
    #[arg(long, default_value_t = 0.0)]
    loss: f64,
    /// The circuit's queue; one bandwidth-delay product if not given.
    #[arg(long)]
    queue_bytes: Option<u64>,
    /// Bytes to move: 6 s of the rate if not given.
    #[arg(long)]
    bytes: Option<u64>,
    /// The path's MTU: each block fills one IP packet of this size (at most 9,000).
    #[arg(long, default_value_t = 1500)]
    mtu: usize,
    /// k: new missing blocks that make a NACK.
    #[arg(long, default_value_t = hurricane::driver::DEFAULT_NACK_GROUP)]
    nack_group: u32,
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

impl HurricaneArgs {
    fn test(&self) -> Result<longhaul_sim::hurricane::HurricaneTest, String> {
        let valid = self.rate_gbps.is_finite()
            && self.rate_gbps > 0.0
            && self.rtt_ms.is_finite()
            && self.rtt_ms >= 0.0
            && (0.0..1.0).contains(&self.loss)
            && (576..=9000).contains(&self.mtu)
            && self.nack_group > 0;
        if !valid {
            return Err(
                "--rate-gbps must be positive, --rtt-ms 0 or more, --loss in [0, 1), \
                 --mtu 576-9000, --nack-group 1 or more"
                    .into(),
            );
        }
        let rate_bps = (self.rate_gbps * 1e9) as u64;
        let bytes = self.bytes.unwrap_or(rate_bps / 8 * 6);
        let mut test = longhaul_sim::hurricane::HurricaneTest::new(rate_bps, self.rtt_ms, bytes);
        test.loss = self.loss;
        test.queue_bytes = self.queue_bytes;
        test.seed = self.seed;
        test.block_bytes = hurricane::driver::block_bytes_for_mtu(self.mtu);
        test.nack_group = self.nack_group;
        Ok(test)
    }
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario (JSON file, or - for stdin) and print the results as JSON.
    Run {
        scenario: String,
        /// Seed of the random streams (overrides the scenario's).
        #[arg(long)]
        seed: Option<u64>,
        /// Threads: 2 runs the sending and the receiving side of a path whose one-way
        /// delay is 1 ms or more side by side, with the same results as 1; give 1 when
        /// other work shares the cores.
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=2))]
        threads: u8,
    },
    /// Run a network scenario (hosts, switches, links, flows on routes; JSON file or -)
    /// and print each flow group's results as JSON.
    Network {
        scenario: String,
        /// Seed of the random streams (overrides the scenario's).
        #[arg(long)]
        seed: Option<u64>,
    },
    /// Measure the simulator's speed (10 Gb/s CUBIC flows at 163 ms: one, twenty, lossy,
    /// mixed; an InfiniBand RDMA write at 8,600 miles).
    Bench {
        /// Print JSON only.
        #[arg(long)]
        json: bool,
        /// Simulated seconds per case.
        #[arg(long, default_value_t = 15.0)]
        seconds: f64,
        /// Runs of each case (the cases take turns); each reports its median run with
        /// the least and most.
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..))]
        repetitions: u16,
    },
    /// List the host and connection presets as JSON.
    Presets,
    /// An InfiniBand perftest tool (`send_bw`, `write_bw`, `read_bw`, `rdma_bw`,
    /// `send_lat`, `write_lat`, `read_lat`) or an OSU MPI benchmark (`osu_latency`,
    /// `osu_bw`, `osu_bibw`) between two HCAs, across a WAN loop between range extenders.
    Ib(Box<IbArgs>),
    /// One Hurricane transfer (the `hurricane` crate's own sender and receiver, as
    /// `hurricane send --bytes` runs them) over a reserved circuit in virtual time.
    Hurricane(HurricaneArgs),
    /// RDMA-capable interconnects on a LAN, side by side (NetEffect iWARP, Mellanox
    /// InfiniBand, Myri-10G MX over Myrinet and over Ethernet): `profile` (ping-pong
    /// latency and bandwidth, both-way bandwidth, at the user level and under MPI),
    /// `connections`, `logp`, `reuse`, `queue` (sweeps), `wan` (what-if over the USN
    /// loops), `fit` (the fitted constants).
    Rdma {
        /// profile, connections, logp, reuse, queue, wan, point (one measurement with the
        /// knobs below) or fit.
        what: String,
        /// iwarp, ib, mxom, mxoe, or all.
        #[arg(long, default_value = "all")]
        interconnect: String,
        /// Message size of the connections and queue sweeps and of `point`, bytes.
        #[arg(long, default_value_t = 1)]
        size: u64,
        #[command(flatten)]
        knobs: RdmaKnobs,
    },
}

#[derive(clap::Args)]
struct IbArgs {
    /// `send_bw`, `write_bw`, `read_bw`, `rdma_bw` (`ib_rdma_bw`), `send_lat`, `write_lat`,
    /// `read_lat`; MPI over the QP: `osu_latency`, `osu_bw`, `osu_bibw`.
    test: String,
    /// Message size in bytes.
    #[arg(short = 's', long, default_value_t = 65_536)]
    size: u64,
    /// Every size from 2 to 2^23 bytes.
    #[arg(short = 'a', long)]
    all: bool,
    /// Queue pairs.
    #[arg(short = 'q', long, default_value_t = 1)]
    qps: u32,
    /// Connection type: RC, UC or UD.
    #[arg(short = 'c', long, default_value = "RC")]
    connection_type: String,
    /// Send-queue depth (default: the tool's own).
    #[arg(short = 't', long)]
    tx_depth: Option<u64>,
    /// Iterations (default: the tool's own).
    #[arg(short = 'n', long)]
    iters: Option<u64>,
    /// Both ways at once.
    #[arg(short = 'b', long)]
    bidirectional: bool,
    /// RDMA reads outstanding (read tests).
    #[arg(short = 'o', long, default_value_t = 4)]
    outs: u32,
    /// MPI (`osu_bw`, `osu_bibw`): sends posted per round.
    #[arg(short = 'w', long, default_value_t = 64)]
    window: u64,
    /// MPI: messages up to this size go eagerly, larger ones by rendezvous (bytes).
    #[arg(long, default_value_t = 12_288)]
    eager_limit: u64,
    /// Path MTU: 256, 512, 1024, 2048, 4096.
    #[arg(short = 'm', long, default_value_t = 2048)]
    mtu: u32,
    /// Connection set-up: cm (RDMA CM) or socket (perftest's TCP exchange).
    #[arg(long, default_value = "cm")]
    connection: String,
    /// Round trip of the WAN loop, ms (USN: 0.28 at 0.2 miles, 26.8 at 1,400, 163 at 8,600).
    #[arg(long, default_value_t = 0.28)]
    rtt_ms: f64,
    /// The range extenders' WAN layer: oc192, wanphy, lanphy; `none` for HCAs back to back
    /// (with `--rtt-ms 0`: without extenders IB does not cross a distance).
    #[arg(long, default_value = "oc192")]
    wan: String,
    /// HCA link speed: sdr or ddr.
    #[arg(long, default_value = "sdr")]
    hca: String,
    /// The HCA's host bus: pcie-x8 or pci-x.
    #[arg(long, default_value = "pcie-x8")]
    bus: String,
    /// UDP cross traffic onto the forward WAN line, Gb/s.
    #[arg(long, default_value_t = 0.0)]
    cross_gbps: f64,
    /// Traffic through the extender's 1GigE side ports onto the WAN line, Gb/s (<= 2).
    #[arg(long, default_value_t = 0.0)]
    side_ports_gbps: f64,
    /// The HCA's time to take up one work request, ns (bounds small messages' rate).
    #[arg(long, default_value_t = 0)]
    wqe_ns: u64,
    /// TCP streams through the extenders' 1GigE side ports beside the IB traffic.
    #[arg(long, default_value_t = 0)]
    side_tcp_streams: u32,
    /// InfiniBand switches on each side (between host and extender, or between hosts).
    #[arg(long, default_value_t = 0)]
    switches: u32,
    /// A switch's port-to-port latency, cable included, ns (its datasheet's).
    #[arg(long, default_value_t = 0)]
    switch_latency_ns: u64,
    /// A switch input port's buffer for the virtual lane, bytes (its datasheet's).
    #[arg(long, default_value_t = 0)]
    switch_buffer_bytes: u64,
    /// Each range extender's buffer (credit across the WAN), bytes.
    #[arg(long)]
    extender_buffer_bytes: Option<u64>,
    /// Print the whole report as JSON (a list with -a).
    #[arg(long)]
    json: bool,
}

impl IbArgs {
    fn test(&self, bytes: u64) -> Result<IbTest, String> {
        let tool = Tool::parse(&self.test)?;
        let mut t = IbTest::new(tool, bytes, self.rtt_ms);
        t.service = Service::parse(&self.connection_type)?;
        if let Some(iters) = self.iters {
            t.iters = iters;
        }
        if let Some(depth) = self.tx_depth {
            t.tx_depth = depth;
        }
        t.qps = self.qps;
        t.bidirectional = self.bidirectional;
        t.window = self.window;
        t.cross_traffic_gbps = self.cross_gbps;
        t.side_ports_gbps = self.side_ports_gbps;
        t.side_tcp_streams = self.side_tcp_streams;
        t.eager_limit_bytes = self.eager_limit;
        t.max_reads = self.outs;
        t.mtu_bytes = self.mtu;
        t.connection = Connection::parse(&self.connection)?;
        t.hca = Hca::infinihost_pcie_x8(LinkSpeed::parse(&self.hca)?);
        t.hca.wqe_ns = self.wqe_ns;
        t.hca.bus_payload_bps = Hca::bus_by_name(&self.bus)?;
        if self.switches > 0 {
            t.switch = Some(IbSwitch {
                count: self.switches,
                latency_ns: self.switch_latency_ns,
                buffer_bytes: self.switch_buffer_bytes,
            });
        }
        t.extender = if self.wan == "none" {
            None
        } else {
            let mut e = Extender::longbow_xr(Layer::parse(&self.wan)?);
            if e.wan.line_rate_bps().is_none() {
                return Err("--wan: a range extender needs a layer with a rate".into());
            }
            if let Some(b) = self.extender_buffer_bytes {
                e.buffer_bytes = b;
            }
            Some(e)
        };
        t.check()?;
        Ok(t)
    }

    fn sizes(&self) -> Vec<u64> {
        if self.all {
            (1..=23).map(|k| 1u64 << k).collect()
        } else {
            vec![self.size]
        }
    }
}

/// perftest's table: a line per size.
fn print_ib_table(reports: &[IbReport]) {
    let Some(first) = reports.first() else { return };
    if let Some(mpi) = &first.mpi {
        let what = if mpi.unit == "us" {
            "Latency (us)"
        } else {
            "Bandwidth (MB/s)"
        };
        println!("# Size          {what}");
        for r in reports {
            let value = r.mpi.as_ref().and_then(|m| m.value);
            let shown = value.map_or("-".into(), |v| format!("{v:.2}"));
            println!("{:<15} {shown}", r.test.bytes);
        }
    } else if first.test.tool.is_bandwidth() {
        println!(" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]");
        for r in reports {
            let peak = r
                .client
                .bw_peak_mb_s
                .map_or("-".into(), |v| format!("{v:.2}"));
            let avg = r.bw_average_mb_s.map_or("-".into(), |v| format!("{v:.2}"));
            println!(
                " {:<10} {:<14} {:<18} {}",
                r.test.bytes, r.test.iters, peak, avg
            );
        }
    } else {
        println!(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]");
        for r in reports {
            if let Some(l) = &r.latency {
                println!(
                    " {:<6} {:<14} {:<14.2} {:<12.2} {:.2}",
                    r.test.bytes, r.test.iters, l.min_us, l.max_us, l.typical_us
                );
            }
        }
    }
    for r in reports.iter().filter(|r| !r.finished) {
        eprintln!(
            "longhaul-sim: size {} did not finish within {} s of virtual time",
            r.test.bytes, r.test.time_limit_s
        );
    }
}

fn read_scenario(path: &str) -> Result<String, String> {
    if path == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| format!("cannot read the scenario from stdin: {e}"))?;
        Ok(s)
    } else {
        std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))
    }
}

/// Read and resolve a scenario with `resolve`; on bad input say why and give exit code 2.
fn load<T>(
    path: &str,
    seed: Option<u64>,
    resolve: fn(&str, Option<u64>) -> Result<T, scenario::ScenarioError>,
) -> Result<T, ExitCode> {
    read_scenario(path)
        .and_then(|json| resolve(&json, seed).map_err(|e| e.to_string()))
        .map_err(|message| {
            eprintln!("longhaul-sim: {message}");
            ExitCode::from(2)
        })
}

fn print_json<T: serde::Serialize>(value: &T) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).expect("serializable")
    );
}

/// The knobs of `longhaul-sim rdma point`.
#[derive(clap::Args)]
struct RdmaKnobs {
    /// `point`: under MPI (the study's library for the interconnect) instead of verbs.
    #[arg(long)]
    mpi: bool,
    /// `point`: connections the ping-pong rotates over.
    #[arg(long, default_value_t = 1)]
    connections: u32,
    /// `point`: per cent of MPI sends whose buffers were registered before.
    #[arg(long, default_value_t = 100)]
    reuse_pct: u32,
    /// `point`: non-matching entries in the posted-receive queue.
    #[arg(long, default_value_t = 0)]
    queue_entries: u64,
    /// `point`: messages in the unexpected queue, searched at each receive's posting.
    #[arg(long, default_value_t = 0)]
    unexpected_entries: u64,
    /// `point`: the round trip of a loop between the switch ports, ms (0: one room).
    #[arg(long, default_value_t = 0.0)]
    rtt_ms: f64,
}

impl RdmaKnobs {
    fn setup(
        &self,
        ic: longhaul_sim::rdma::interconnect::Interconnect,
    ) -> Result<longhaul_sim::rdma::micro::Setup, String> {
        use longhaul_sim::rdma::micro::Setup;
        if self.connections == 0 || self.reuse_pct > 100 {
            return Err("rdma point: --connections >= 1 and --reuse-pct <= 100".into());
        }
        if !(self.rtt_ms.is_finite() && self.rtt_ms >= 0.0) {
            return Err("rdma point: --rtt-ms must be 0 or more".into());
        }
        if self.rtt_ms > 0.0 && !ic.leaves_the_room {
            return Err(format!(
                "rdma point: {} cannot be carried over a loop",
                ic.label
            ));
        }
        let base = if self.mpi {
            Setup::mpi(ic)
        } else {
            Setup::user(ic)
        };
        Ok(Setup {
            connections: self.connections,
            reuse_pct: self.reuse_pct,
            queue_entries: self.queue_entries,
            unexpected_entries: self.unexpected_entries,
            extra_one_way_ns: (self.rtt_ms * 1e6 / 2.0) as u64,
            ..base
        })
    }
}

/// `longhaul-sim rdma WHAT`: one object per interconnect, keyed by its name.
fn rdma_command(
    what: &str,
    interconnect: &str,
    size: u64,
    knobs: &RdmaKnobs,
) -> Result<serde_json::Value, String> {
    use longhaul_sim::rdma::{fit, interconnect as ics, report};
    let chosen = if interconnect == "all" {
        ics::ALL.to_vec()
    } else {
        vec![ics::Interconnect::by_name(interconnect)?]
    };
    let mut out = serde_json::Map::new();
    for ic in chosen {
        let value = match what {
            "profile" => serde_json::to_value(report::profile(ic)),
            "connections" => serde_json::to_value(report::connections(ic, size)),
            "logp" => serde_json::to_value(report::logp_sweep(ic)),
            "reuse" => serde_json::to_value(report::reuse(ic)),
            "queue" => serde_json::to_value(report::queue(ic, size)),
            "wan" => serde_json::to_value(report::wan(ic)),
            "point" => serde_json::to_value(report::point(&knobs.setup(ic)?, size)),
            "fit" => serde_json::to_value(fit::fit(ic)),
            _ => {
                return Err(format!(
                    "rdma: {what:?} is not profile, connections, logp, reuse, queue, wan, point or fit"
                ));
            }
        };
        out.insert(ic.name.to_string(), value.expect("serializable"));
    }
    Ok(serde_json::Value::Object(out))
}

/// `bench`: each case's figures on standard error (unless `json`), the report as JSON.
fn bench_command(json: bool, seconds: f64, repetitions: u16) -> ExitCode {
    if !(seconds.is_finite() && seconds > 0.0) {
        eprintln!("longhaul-sim: --seconds must be positive");
        return ExitCode::from(2);
    }
    let report = bench::bench(
        seconds,
        usize::from(repetitions),
        |name, repetition, run| {
            if !json {
                eprintln!(
                    "{name}, run {repetition} of {repetitions}: {:.2}x real time, {:.2} Gb/s goodput",
                    run.simulated_s / run.wall_s.max(1e-9),
                    run.goodput_bps / 1e9
                );
            }
        },
    );
    if !json {
        for (name, case) in [
            ("one_flow", &report.one_flow),
            ("twenty_flows", &report.twenty_flows),
            ("lossy", &report.lossy),
            ("mixed", &report.mixed),
            ("ib_write", &report.ib_write),
        ] {
            eprintln!(
                "{name}: {:.2}x real time ({:.2}-{:.2}), {:.2} M events/s, {:.2} Gb/s goodput",
                case.realtime_factor,
                case.realtime_factor_min,
                case.realtime_factor_max,
                case.events_per_s / 1e6,
                case.goodput_bps / 1e9
            );
        }
    }
    print_json(&report);
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    // `longhaul-sim SCENARIO.json` means `run`.
    let mut args: Vec<String> = std::env::args().collect();
    if let Some(first) = args.get(1)
        && (first == "-" || !first.starts_with('-'))
        && first != "help"
        && Cli::command().find_subcommand(first).is_none()
    {
        args.insert(1, "run".to_string());
    }
    let cli = Cli::parse_from(args);
    match cli.command {
        Command::Run {
            scenario,
            seed,
            threads,
        } => match load(&scenario, seed, scenario::load) {
            Ok(resolved) => {
                let threads = if threads == 1 {
                    run::Threads::One
                } else {
                    run::Threads::Two
                };
                print_json(&run::run_with(&resolved, threads));
            }
            Err(code) => return code,
        },
        Command::Network { scenario, seed } => match load(&scenario, seed, network::load) {
            Ok(resolved) => print_json(&network::run(&resolved)),
            Err(code) => return code,
        },
        Command::Bench {
            json,
            seconds,
            repetitions,
        } => return bench_command(json, seconds, repetitions),
        Command::Ib(args) => {
            let tests: Result<Vec<IbTest>, String> =
                args.sizes().into_iter().map(|s| args.test(s)).collect();
            let tests = match tests {
                Ok(t) => t,
                Err(message) => {
                    eprintln!("longhaul-sim: {message}");
                    return ExitCode::from(2);
                }
            };
            let reports: Vec<IbReport> = tests.iter().map(longhaul_sim::ib::run::run).collect();
            if args.json {
                if args.all {
                    print_json(&reports);
                } else {
                    print_json(&reports[0]);
                }
            } else {
                print_ib_table(&reports);
            }
        }
        Command::Rdma {
            what,
            interconnect,
            size,
            knobs,
        } => match rdma_command(&what, &interconnect, size, &knobs) {
            Ok(value) => print_json(&value),
            Err(message) => {
                eprintln!("longhaul-sim: {message}");
                return ExitCode::from(2);
            }
        },
        Command::Hurricane(args) => match args.test() {
            Ok(test) => print_json(&longhaul_sim::hurricane::run(&test)),
            Err(message) => {
                eprintln!("longhaul-sim: {message}");
                return ExitCode::from(2);
            }
        },
        Command::Presets => {
            print_json(&serde_json::json!({
                "hosts": presets::host_presets(),
                "paths": presets::path_presets(),
            }));
        }
    }
    ExitCode::SUCCESS
}
