#!/usr/bin/env bash
# Install what longhaul needs on a fresh Debian 12 machine that has python3 and cargo.
# With --test, also the system packages only the tests use. Idempotent: a second run only
# checks. Run by `make setup` (and, with --test, by `make test`).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\033[1msetup:\033[0m %s\n' "$*"; }
die() { printf '\033[1;31msetup:\033[0m %s\n' "$*" >&2; exit 1; }

# uv manages the Python side. It comes from PyPI through pip when it is missing.
if ! command -v uv >/dev/null 2>&1 && ! python3 -m uv --version >/dev/null 2>&1; then
    if ! python3 -m pip --version >/dev/null 2>&1; then
        [ "$(id -u)" = 0 ] || die "pip is missing; run as root or install python3-pip"
        say "installing pip (apt-get install python3-pip)"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-pip >/dev/null
    fi
    say "installing uv from PyPI"
    # Debian marks its Python externally managed (PEP 668); uv is a standalone tool.
    python3 -m pip install --quiet uv 2>/dev/null ||
        python3 -m pip install --quiet --break-system-packages uv
fi

# Rust: the toolchain must know edition 2024; clippy and rustfmt are checked by `make test`.
command -v cargo >/dev/null 2>&1 || die "cargo is missing; install Rust with rustup (https://rustup.rs)"
rustc_minor=$(rustc --version | sed -E 's/^rustc 1\.([0-9]+).*/\1/')
[ "${rustc_minor:-0}" -ge 88 ] || die "Rust $(rustc --version) is too old; longhaul needs 1.88 or later (rustup update stable)"
for component in clippy rustfmt; do
    if ! cargo "${component/rustfmt/fmt}" --version >/dev/null 2>&1; then
        command -v rustup >/dev/null 2>&1 || die "cargo $component is missing and rustup is not there to add it"
        say "adding the Rust component $component"
        rustup component add "$component"
    fi
done

# System packages the emulated testbed runs: iperf3 and ping between its hosts, and
# iproute2 (ip netns); GridFTP's client and server and UDT4 (with g++ for its harness),
# the peers the Hurricane benchmark is set against. Installed when root; without root the
# testbed cannot run anyway.
need=()
command -v iperf3 >/dev/null 2>&1 || need+=(iperf3)
command -v ping >/dev/null 2>&1 || need+=(iputils-ping)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v globus-url-copy >/dev/null 2>&1 || need+=(globus-gass-copy-progs)
command -v globus-gridftp-server >/dev/null 2>&1 || need+=(globus-gridftp-server-progs)
[ -f /usr/include/udt/udt.h ] || need+=(libudt-dev)
command -v g++ >/dev/null 2>&1 || need+=(g++)
if [ ${#need[@]} -gt 0 ] && [ "$(id -u)" = 0 ]; then
    say "installing ${need[*]} (apt-get)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

# The link emulator and the simulator: release builds (a debug emulator cannot keep up,
# a debug simulator runs ten times slower).
say "building longhaul-wan, longhaul-sim, hurricane and longhaul-accel (cargo build --release)"
cargo build --release --locked --quiet -p longhaul-wan -p longhaul-sim -p hurricane -p longhaul-accel

# The UDT harness (UDT4 from libudt-dev), rebuilt when its source is newer than the binary.
udt_harness=target/udt-harness/udt_harness
if [ -f /usr/include/udt/udt.h ] && command -v g++ >/dev/null 2>&1; then
    if [ ! -x "$udt_harness" ] || [ tools/udt-harness/udt_harness.cpp -nt "$udt_harness" ]; then
        say "building the UDT harness (g++ -ludt)"
        mkdir -p "$(dirname "$udt_harness")"
        g++ -O2 -std=c++17 -Wall -Wextra -o "$udt_harness" tools/udt-harness/udt_harness.cpp -ludt -lpthread
    fi
else
    say "skipping the UDT harness: libudt-dev and g++ are missing (run as root to install them)"
fi

# ns-3, to time it beside the simulator (`make bench`: bench sim's vs_ns3_speedup) and to measure its
# answers for `longhaul sim validate` again (make ns3-answers): Debian's libns3-dev and g++.
if [ "${1:-}" = "--ns3" ] && [ ! -f /usr/include/ns3/core-module.h ]; then
    [ "$(id -u)" = 0 ] || die "ns-3 is needed (bench sim's vs_ns3_speedup, make ns3-answers): run as root, or apt-get install libns3-dev"
    say "installing libns3-dev (apt-get)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libns3-dev >/dev/null
fi

# System packages for the tests: a PostgreSQL server (the control-plane suite runs on
# SQLite and on PostgreSQL), Chromium (the web pages' end-to-end tests) and tcpdump (what
# the emulator delivers, seen from the receiving device).
if [ "${1:-}" = "--test" ]; then
    need=()
    compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || need+=(postgresql)
    command -v chromium >/dev/null 2>&1 || need+=(chromium)
    command -v setpriv >/dev/null 2>&1 || need+=(util-linux)
    command -v tcpdump >/dev/null 2>&1 || need+=(tcpdump)
    if [ ${#need[@]} -gt 0 ]; then
        [ "$(id -u)" = 0 ] || die "the tests need ${need[*]}: run as root, or apt-get install ${need[*]}"
        say "installing ${need[*]} (apt-get)"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
    fi
fi
