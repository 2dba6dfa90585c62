//! The RDMA LAN models: each benchmark shows the mechanism it is meant to show.

use longhaul_sim::rdma::bus::Way;
use longhaul_sim::rdma::interconnect::{
    ALL, HOST, INFINIBAND, IWARP, Interconnect, MX_ETHERNET, MX_MYRINET,
};
use longhaul_sim::rdma::micro::{Setup, bothway, pingpong};
use longhaul_sim::rdma::report::{self, CONNECTIONS};

const BIG: u64 = 4 << 20;

fn within(value: f64, expected: f64, tolerance: f64) -> bool {
    (value - expected).abs() <= tolerance * expected
}

#[test]
fn large_messages_stream_at_the_slowest_part_of_the_path() {
    // iWARP: PCI-X split reads; Myri-10G: 64-byte completions on PCIe x4; IB: the line.
    let iwarp = pingpong(&Setup::user(IWARP), BIG).bandwidth_mb_s;
    let pci_x = IWARP.bus.streaming_bytes_per_s(Way::Down, BIG) / 1e6;
    assert!(within(iwarp, pci_x, 0.02), "{iwarp} vs {pci_x}");
    let mx = pingpong(&Setup::user(MX_MYRINET), BIG).bandwidth_mb_s;
    let x4 = MX_MYRINET.bus.streaming_bytes_per_s(Way::Down, BIG) / 1e6;
    assert!(within(mx, x4, 0.02), "{mx} vs {x4}");
    let ib = pingpong(&Setup::user(INFINIBAND), BIG).bandwidth_mb_s;
    let line = 1000.0 * 1024.0 / (1024.0 + 26.0);
    assert!(within(ib, line, 0.01), "{ib} vs {line}");
}

#[test]
fn a_half_duplex_bus_caps_both_ways_together() {
    for ic in ALL {
        let one = pingpong(&Setup::user(ic), BIG).bandwidth_mb_s;
        let both = bothway(&Setup::user(ic), BIG);
        if ic.bus.full_duplex() {
            assert!(both > 1.9 * one, "{}: {both} vs {one}", ic.name);
        } else {
            // PCI-X carries the outgoing reads and the incoming writes in turn.
            assert!(both < 1.1 * one, "{}: {both} vs {one}", ic.name);
            let raw = ic.bus.raw_bytes_per_s() as f64 / 1e6;
            assert!(both < raw, "{}: {both} above the bus's {raw}", ic.name);
        }
    }
}

#[test]
fn mpi_switches_to_rendezvous_above_the_eager_limit() {
    for ic in ALL {
        let profile = report::profile(ic);
        let limit = ic.mpi().eager_limit_bytes;
        for p in &profile.mpi {
            let expected = if p.bytes <= limit {
                "eager"
            } else {
                "rendezvous"
            };
            assert_eq!(p.protocol, expected, "{} {} B", ic.name, p.bytes);
        }
        assert_eq!(
            profile.summary.switch_point_bytes,
            (limit + 1).next_power_of_two()
        );
        // Rendezvous costs a round trip before the data: the first rendezvous size takes
        // longer than twice the last eager one would at the line.
        let last_eager = profile
            .mpi
            .iter()
            .rev()
            .find(|p| p.protocol == "eager")
            .unwrap();
        let first_rndv = profile
            .mpi
            .iter()
            .find(|p| p.protocol == "rendezvous")
            .unwrap();
        assert!(first_rndv.latency_us > last_eager.latency_us + profile.summary.user_latency_us);
    }
}

#[test]
fn mpi_adds_its_fitted_overhead_to_short_messages() {
    for ic in ALL {
        let user = pingpong(&Setup::user(ic), 1).latency_us;
        let mpi = pingpong(&Setup::mpi(ic), 1).latency_us;
        let lib = ic.mpi();
        assert!(
            mpi > user + lib.overhead_ns as f64 / 1e3 - 0.01,
            "{}: {mpi} vs {user}",
            ic.name
        );
    }
}

#[test]
fn latency_rises_once_connections_outgrow_the_adapters_cache() {
    for ic in [IWARP, INFINIBAND] {
        let cache = ic.context.entries.unwrap();
        let points = report::connections(ic, 1);
        let at = |n: u32| {
            points
                .iter()
                .find(|p| p.connections == n)
                .unwrap()
                .latency_us
        };
        let fits = CONNECTIONS
            .iter()
            .copied()
            .filter(|&n| n <= cache)
            .max()
            .unwrap();
        let spills = CONNECTIONS.iter().copied().find(|&n| n > cache).unwrap();
        assert!((at(1) - at(fits)).abs() < 1e-6, "{}", ic.name);
        // A round trip on a connection misses at each adapter once (the reply finds the
        // context its request just brought in): one fetch per one-way trip.
        let expected = ic.context.miss_ns as f64 / 1e3;
        assert!(
            within(at(spills) - at(1), expected, 0.01),
            "{}: {} vs {expected}",
            ic.name,
            at(spills) - at(1)
        );
    }
    let mx = report::connections(MX_MYRINET, 1);
    assert!(
        mx.iter()
            .all(|p| (p.latency_us - mx[0].latency_us).abs() < 1e-6),
        "MX keeps no connections"
    );
}

#[test]
fn matching_costs_each_entry_passed_over() {
    for ic in ALL {
        let points = report::queue(ic, 1);
        let first = points[0];
        let last = points[points.len() - 1];
        let slope_ns =
            (last.latency_us - first.latency_us) * 1e3 / (last.entries - first.entries) as f64;
        assert!(
            within(slope_ns, ic.match_entry_ns as f64, 0.01),
            "{}: {slope_ns}",
            ic.name
        );
    }
}

#[test]
fn an_unexpected_queue_hides_behind_the_flight_until_it_outlasts_it() {
    for ic in ALL {
        let points = report::queue(ic, 1);
        let base = points[0].unexpected_latency_us;
        let short = points.iter().find(|p| p.entries == 10).unwrap();
        assert!(
            (short.unexpected_latency_us - base).abs() < 1e-6,
            "{}",
            ic.name
        );
        // Past the round trip, one search per round trip: half the posted walk's slope.
        let (a, b) = (points[points.len() - 2], points[points.len() - 1]);
        let slope_ns = (b.unexpected_latency_us - a.unexpected_latency_us) * 1e3
            / (b.entries - a.entries) as f64;
        assert!(
            within(slope_ns, ic.match_entry_ns as f64 / 2.0, 0.01),
            "{}: {slope_ns}",
            ic.name
        );
    }
}

#[test]
fn buffer_reuse_matters_only_to_rendezvous() {
    for ic in ALL {
        let points = report::reuse(ic);
        let of = |bytes: u64, pct: u32| {
            points
                .iter()
                .find(|p| p.bytes == bytes && p.reuse_pct == pct)
                .unwrap()
                .latency_us
        };
        let eager = report::REUSE_SIZES[0];
        assert!(
            (of(eager, 0) - of(eager, 100)).abs() < 1e-6,
            "{}: eager copies",
            ic.name
        );
        let rndv = report::REUSE_SIZES[1];
        // Both sides register a fresh buffer: twice one registration per one-way trip.
        let one = HOST.register_ns + rndv.div_ceil(4096) * HOST.register_page_ns;
        let extra = of(rndv, 0) - of(rndv, 100);
        assert!(
            within(extra, 2.0 * one as f64 / 1e3, 0.01),
            "{}: {extra}",
            ic.name
        );
        assert!(of(rndv, 50) < of(rndv, 25) && of(rndv, 25) < of(rndv, 0));
    }
}

#[test]
fn across_a_loop_the_window_decides() {
    let at_1400 = |ic: Interconnect| {
        report::wan(ic)
            .into_iter()
            .find(|p| (p.miles - 1400.0).abs() < 1e-9)
            .unwrap()
    };
    let rtt_s = 26.8e-3;
    let iwarp = at_1400(IWARP);
    let expected = IWARP.window_bytes.unwrap() as f64 / rtt_s / 1e6;
    assert!(
        within(iwarp.stream_mb_s, expected, 0.05),
        "{} vs {expected}",
        iwarp.stream_mb_s
    );
    let mxoe = at_1400(MX_ETHERNET);
    let expected = MX_ETHERNET.window_bytes.unwrap() as f64 / rtt_s / 1e6;
    assert!(
        within(mxoe.stream_mb_s, expected, 0.05),
        "{} vs {expected}",
        mxoe.stream_mb_s
    );
    // The range extenders' buffer covers the loop: IB keeps its line rate.
    let ib = at_1400(INFINIBAND);
    let lan = pingpong(&Setup::user(INFINIBAND), BIG).bandwidth_mb_s;
    assert!(
        within(ib.stream_mb_s, lan, 0.02),
        "{} vs {lan}",
        ib.stream_mb_s
    );
    assert!(within(ib.user_latency_us, 13_400.0 + 4.5, 0.001));
    assert!(
        report::wan(MX_MYRINET).is_empty(),
        "Myrinet stays in the machine room"
    );
}

#[test]
fn runs_are_deterministic() {
    for ic in ALL {
        assert_eq!(report::profile(ic), report::profile(ic));
    }
}
