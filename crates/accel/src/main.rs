//! `longhaul-accel`: the accelerator pair and the tools that measure it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use longhaul_accel::proxy::{Allowed, Far, Near, WanSocket};
use longhaul_accel::session::{MIN_WINDOW_BYTES, Report, SharedReport, Terms};
use longhaul_accel::tools;
use longhaul_accel::wire::Features;

#[derive(Parser)]
#[command(
    version,
    about = "longhaul's WAN accelerator pair (flow optimization, redundancy \
elimination, LZ compression) and the tools that measure it"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The accelerator beside the clients: carries their connections to the far one.
    Near(NearArgs),
    /// The accelerator beside the servers: opens the connections the near one carries.
    Far(FarArgs),
    /// Receive connections with a pinned window; print what arrived (JSON).
    Sink(SinkArgs),
    /// Send a file on one or more connections at once; print what was sent (JSON).
    Send(SendArgs),
}

#[derive(Args)]
struct WanArgs {
    /// Kernel buffers of the session's connection, each way: hold the bandwidth-delay
    /// product (and the queue) of the WAN, or the WAN is not filled.
    #[arg(long, default_value_t = 32 << 20)]
    wan_buffer_bytes: usize,
    /// Congestion control of the session's connection (as the kernel names it).
    #[arg(long, default_value = "cubic")]
    congestion: String,
    /// Bytes one stream may have in flight between the accelerators (its credit).
    #[arg(long, default_value_t = 16 << 20)]
    window_bytes: u32,
}

impl WanArgs {
    fn socket(&self) -> WanSocket {
        WanSocket {
            buffer_bytes: self.wan_buffer_bytes,
            congestion: Some(self.congestion.clone()),
        }
    }
}

#[derive(Args)]
struct NearArgs {
    /// LISTEN=TARGET: accept clients on LISTEN, and have the far side connect to TARGET
    /// for each (repeatable).
    #[arg(long = "forward", required = true, value_parser = parse_forward)]
    forwards: Vec<(SocketAddr, String)>,
    /// The far accelerator's address.
    #[arg(long)]
    peer: SocketAddr,
    /// tfo, tfo+dre, tfo+lz or tfo+dre+lz.
    #[arg(long, default_value = "tfo+dre+lz", value_parser = parse_features)]
    features: Features,
    /// The DRE cache each end keeps, per direction, in MiB.
    #[arg(long, default_value_t = 512)]
    cache_mib: u64,
    #[command(flatten)]
    wan: WanArgs,
}

#[derive(Args)]
struct FarArgs {
    /// Where the near accelerators connect.
    #[arg(long)]
    listen: SocketAddr,
    /// An address block this side may open connections into (repeatable), like
    /// 198.18.0.0/15: without one it opens none.
    #[arg(long = "allow", required = true)]
    allowed: Vec<Allowed>,
    /// The largest DRE cache a near side may ask for, in MiB.
    #[arg(long, default_value_t = 2048)]
    max_cache_mib: u64,
    #[command(flatten)]
    wan: WanArgs,
}

#[derive(Args)]
struct SinkArgs {
    #[arg(long)]
    listen: SocketAddr,
    /// The largest window this host advertises (65535: a host without window scaling).
    #[arg(long)]
    window_bytes: Option<u32>,
    /// How many connections to take before reporting.
    #[arg(long, default_value_t = 1)]
    connections: usize,
    /// Give up on a connection silent this long.
    #[arg(long, default_value_t = 300.0)]
    timeout_s: f64,
}

#[derive(Args)]
struct SendArgs {
    #[arg(long)]
    to: SocketAddr,
    #[arg(long)]
    file: PathBuf,
    /// Connections, each sending the whole file, all at once.
    #[arg(long, default_value_t = 1)]
    streams: usize,
    /// Bytes each stream sends: stream i the i-th slice of this many (default: each
    /// sends the whole file).
    #[arg(long)]
    bytes: Option<u64>,
    #[arg(long, default_value_t = 300.0)]
    timeout_s: f64,
}

fn parse_forward(text: &str) -> Result<(SocketAddr, String), String> {
    let (listen, target) = text
        .split_once('=')
        .ok_or("expected LISTEN=TARGET, like 127.0.0.1:5301=198.18.0.2:5301")?;
    let listen = listen
        .parse()
        .map_err(|_| format!("{listen:?} is not an address and port"))?;
    target
        .parse::<SocketAddr>()
        .map_err(|_| format!("{target:?} is not an address and port"))?;
    Ok((listen, target.to_string()))
}

fn parse_features(text: &str) -> Result<Features, String> {
    let mut features = Features::default();
    let mut parts = text.split('+');
    if parts.next() != Some("tfo") {
        return Err("features start with tfo: tfo, tfo+dre, tfo+lz or tfo+dre+lz".into());
    }
    for part in parts {
        match part {
            "dre" => features.dre = true,
            "lz" => features.lz = true,
            other => {
                return Err(format!(
                    "unknown feature {other:?}: tfo, tfo+dre, tfo+lz or tfo+dre+lz"
                ));
            }
        }
    }
    Ok(features)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Near(args) => run_proxy(|report| near(args, report)),
        Command::Far(args) => run_proxy(|report| far(args, report)),
        Command::Sink(args) => sink(&args),
        Command::Send(args) => send(&args),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("longhaul-accel: {why}");
            ExitCode::from(2)
        }
    }
}

fn check_window(wan: &WanArgs) -> Result<(), String> {
    if wan.window_bytes < MIN_WINDOW_BYTES {
        return Err(format!(
            "--window-bytes must be at least {MIN_WINDOW_BYTES}"
        ));
    }
    Ok(())
}

type Serve = std::pin::Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;

/// Runs an accelerator until SIGINT or SIGTERM, then prints its report (JSON).
fn run_proxy(start: impl FnOnce(SharedReport) -> Result<Serve, String>) -> Result<(), String> {
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    let report: SharedReport = Arc::default();
    let outcome = runtime.block_on(async {
        let serve = start(Arc::clone(&report))?;
        eprintln!("listening");
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(|e| e.to_string())?;
        tokio::select! {
            ended = serve => ended,
            _ = tokio::signal::ctrl_c() => Ok(()),
            _ = term.recv() => Ok(()),
        }
    });
    let report: Report = report.lock().expect("report").clone();
    println!(
        "{}",
        serde_json::to_string(&report).expect("a report serializes")
    );
    runtime.shutdown_timeout(Duration::from_millis(100));
    outcome
}

fn near(args: NearArgs, report: SharedReport) -> Result<Serve, String> {
    check_window(&args.wan)?;
    let near = Near {
        forwards: args.forwards,
        peer: args.peer,
        terms: Terms {
            features: args.features,
            cache_bytes: args.cache_mib << 20,
            window_bytes: args.wan.window_bytes,
        },
        wan: args.wan.socket(),
    };
    let serve = near.bind(report).map_err(|e| e.to_string())?;
    Ok(Box::pin(async move { Err(serve.await) }))
}

fn far(args: FarArgs, report: SharedReport) -> Result<Serve, String> {
    check_window(&args.wan)?;
    let far = Far {
        listen: args.listen,
        allowed: args.allowed,
        wan: args.wan.socket(),
        max_cache_bytes: args.max_cache_mib << 20,
        window_bytes: args.wan.window_bytes,
    };
    let serve = far
        .bind(report)
        .map_err(|e| format!("listening on {}: {e}", args.listen))?;
    Ok(Box::pin(async move {
        serve.await;
        Ok(())
    }))
}

fn sink(args: &SinkArgs) -> Result<(), String> {
    let listener = tools::sink_listener(args.listen, args.window_bytes)
        .map_err(|e| format!("listening on {}: {e}", args.listen))?;
    eprintln!("listening");
    let report = tools::sink(
        &listener,
        args.connections,
        Duration::from_secs_f64(args.timeout_s),
    )
    .map_err(|e| e.to_string())?;
    println!(
        "{}",
        serde_json::to_string(&report).expect("a report serializes")
    );
    Ok(())
}

fn send(args: &SendArgs) -> Result<(), String> {
    let report = tools::send(
        args.to,
        &args.file,
        args.streams,
        args.bytes,
        Duration::from_secs_f64(args.timeout_s),
    )
    .map_err(|e| format!("sending to {}: {e}", args.to))?;
    println!(
        "{}",
        serde_json::to_string(&report).expect("a report serializes")
    );
    Ok(())
}
