//! `longhaul-sim`: the thin shell. It reads a scenario, runs it, prints JSON.

use std::io::Read;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use longhaul_sim::{bench, network, presets, run, scenario};

#[derive(Parser)]
#[command(
    name = "longhaul-sim",
    about = "Packet-level discrete-event TCP simulator of longhaul"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario (JSON file, or - for stdin) and print the results as JSON.
    Run {
        scenario: String,
        /// Seed of the random streams (overrides the scenario's).
        #[arg(long)]
        seed: Option<u64>,
    },
    /// Run a network scenario (hosts, switches, links, flows on routes; JSON file or -)
    /// and print each flow group's results as JSON.
    Network {
        scenario: String,
        /// Seed of the random streams (overrides the scenario's).
        #[arg(long)]
        seed: Option<u64>,
    },
    /// Measure the simulator's speed (one and twenty 10 Gb/s CUBIC flows at 163 ms).
    Bench {
        /// Print JSON only.
        #[arg(long)]
        json: bool,
        /// Simulated seconds per case.
        #[arg(long, default_value_t = 15.0)]
        seconds: f64,
    },
    /// List the host and connection presets as JSON.
    Presets,
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

fn main() -> ExitCode {
    // `longhaul-sim SCENARIO.json` means `run`.
    let mut args: Vec<String> = std::env::args().collect();
    if let Some(first) = args.get(1)
        && (first == "-" || !first.starts_with('-'))
        && !["run", "network", "bench", "presets", "help"].contains(&first.as_str())
    {
        args.insert(1, "run".to_string());
    }
    let cli = Cli::parse_from(args);
    match cli.command {
        Command::Run { scenario, seed } => match load(&scenario, seed, scenario::load) {
            Ok(resolved) => print_json(&run::run(&resolved)),
            Err(code) => return code,
        },
        Command::Network { scenario, seed } => match load(&scenario, seed, network::load) {
            Ok(resolved) => print_json(&network::run(&resolved)),
            Err(code) => return code,
        },
        Command::Bench { json, seconds } => {
            if !(seconds.is_finite() && seconds > 0.0) {
                eprintln!("longhaul-sim: --seconds must be positive");
                return ExitCode::from(2);
            }
            let report = bench::bench(seconds);
            if !json {
                for (name, case) in [
                    ("one_flow", &report.one_flow),
                    ("twenty_flows", &report.twenty_flows),
                    ("lossy", &report.lossy),
                    ("mixed", &report.mixed),
                ] {
                    eprintln!(
                        "{name}: {:.2}x real time, {:.2} M events/s, {:.2} Gb/s goodput",
                        case.realtime_factor,
                        case.events_per_s / 1e6,
                        case.goodput_bps / 1e9
                    );
                }
            }
            print_json(&report);
        }
        Command::Presets => {
            print_json(&serde_json::json!({
                "hosts": presets::host_presets(),
                "paths": presets::path_presets(),
            }));
        }
    }
    ExitCode::SUCCESS
}
