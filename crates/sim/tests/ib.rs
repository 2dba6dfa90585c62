//! InfiniBand across range extenders, against what each mechanism implies in closed form.

use longhaul_link::layer::Layer;
use longhaul_sim::ib::devices::{Connection, Extender, Hca, IbSwitch, PCIE_1_X8_PAYLOAD_BPS};
use longhaul_sim::ib::qp::Service;
use longhaul_sim::ib::run::{IbReport, IbTest, PERFTEST_MB, Tool, run};
use longhaul_sim::ib::wire::LinkSpeed;

const MB8: u64 = 8 << 20;
/// 4X SDR's 8 Gb/s of data, less 26 bytes of headers per 2048-byte packet, in bytes/s.
const SDR_PAYLOAD_BYTES_PER_S: f64 = 8e9 / 8.0 * 2048.0 / 2074.0;

fn average(r: &IbReport) -> f64 {
    r.bw_average_mb_s.expect("a bandwidth") * PERFTEST_MB
}

fn assert_close(what: &str, got: f64, want: f64, tolerance: f64) {
    let error = (got - want) / want;
    assert!(
        error.abs() <= tolerance,
        "{what}: {got:.4e} against {want:.4e} ({:+.2} %)",
        error * 100.0
    );
}

#[test]
fn uc_fills_the_sdr_link_less_its_headers() {
    let mut t = IbTest::new(Tool::SendBw, MB8, 26.7);
    t.service = Service::Uc;
    t.iters = 200;
    let r = run(&t);
    assert!(r.finished);
    assert_close("UC send", average(&r), SDR_PAYLOAD_BYTES_PER_S, 0.001);
}

#[test]
fn rc_pays_one_round_trip_for_the_last_ack() {
    let mut t = IbTest::new(Tool::RdmaBw, MB8, 163.0);
    t.iters = 300;
    let r = run(&t);
    let bytes = 300.0 * MB8 as f64;
    let want = bytes / (bytes / SDR_PAYLOAD_BYTES_PER_S + 0.163);
    assert_close("RC write", average(&r), want, 0.003);
    assert_eq!(r.client.qps[0].timeouts, 0);
    assert_eq!(r.client.qps[0].packets_resent, 0);
}

#[test]
fn the_extender_buffer_bounds_the_wan_to_a_buffer_per_round_trip() {
    let mut t = IbTest::new(Tool::RdmaBw, MB8, 163.0);
    t.iters = 100;
    let buffer = 32u64 << 20;
    t.extender = Some(Extender {
        buffer_bytes: buffer,
        ..Extender::longbow_xr(Layer::Oc192)
    });
    let r = run(&t);
    let bytes = 100.0 * MB8 as f64;
    let rate = buffer as f64 / 0.163;
    assert_close(
        "32 MiB over 163 ms",
        average(&r),
        bytes / (bytes / rate + 0.163),
        0.02,
    );
    assert!(r.extenders[0].credit_stalls > 0);
    assert!(r.extenders[0].max_buffer_bytes <= buffer);
}

#[test]
fn reads_are_bound_by_the_reads_outstanding() {
    let mut t = IbTest::new(Tool::ReadBw, MB8, 163.0);
    t.iters = 40;
    let r = run(&t);
    // Four reads per round trip plus the time to answer one.
    let per_read_s = 0.163 + MB8 as f64 / SDR_PAYLOAD_BYTES_PER_S;
    assert_close("read", average(&r), 4.0 * MB8 as f64 / per_read_s, 0.03);
}

#[test]
fn latency_is_half_the_round_trip_and_a_read_takes_all_of_it() {
    let lat = |tool| {
        let mut t = IbTest::new(tool, 2, 26.7);
        t.iters = 20;
        let r = run(&t);
        assert!(r.finished);
        r.latency.expect("a latency").typical_us
    };
    let send = lat(Tool::SendLat);
    assert_close("send latency", send, 26.7e3 / 2.0, 0.001);
    let ratio = lat(Tool::ReadLat) / lat(Tool::WriteLat);
    assert_close("read / write latency", ratio, 2.0, 0.001);
}

#[test]
fn a_ddr_hca_back_to_back_is_held_by_its_pcie_bus() {
    let mut t = IbTest::new(Tool::WriteBw, MB8, 0.0);
    t.iters = 100;
    t.hca = Hca::infinihost_pcie_x8(LinkSpeed::Ddr4x);
    t.extender = None;
    let ddr = run(&t);
    assert_close(
        "DDR on PCIe x8",
        average(&ddr),
        PCIE_1_X8_PAYLOAD_BPS as f64 / 8.0,
        0.01,
    );
    t.hca.bus_payload_bps = Hca::bus_by_name("pci-x").unwrap();
    assert_close(
        "DDR on PCI-X",
        average(&run(&t)),
        64.0 * 133.33e6 / 8.0,
        0.01,
    );
    t.hca = Hca::infinihost_pcie_x8(LinkSpeed::Ddr4x);
    // Behind a Longbow the same HCA trains to SDR.
    t.extender = Some(Extender::longbow_xr(Layer::Wanphy));
    assert_close(
        "DDR behind SDR",
        average(&run(&t)),
        SDR_PAYLOAD_BYTES_PER_S,
        0.002,
    );
}

#[test]
fn perftests_short_timeout_fires_on_a_loop_longer_than_it() {
    // 34,400 miles: a 653 ms round trip, above the ~500 ms floor of the adapter's timer.
    let mut t = IbTest::new(Tool::RdmaBw, MB8, 653.0);
    t.iters = 100;
    let cm = run(&t);
    t.connection = Connection::Socket;
    let socket = run(&t);
    assert_eq!(cm.client.qps[0].timeouts, 0);
    assert!(socket.client.qps[0].timeouts > 0);
    assert!(socket.client.qps[0].packets_resent > 0);
    assert!(average(&socket) < average(&cm));
    assert!(socket.finished && socket.client.failed == 0);
}

#[test]
fn both_ways_rc_shares_each_line_with_the_other_sides_acks() {
    let mut t = IbTest::new(Tool::SendBw, MB8, 26.7);
    t.iters = 100;
    t.bidirectional = true;
    let r = run(&t);
    let each =
        [r.client.bw_average_mb_s, r.server.bw_average_mb_s].map(|v| v.unwrap() * PERFTEST_MB);
    for side in each {
        assert!(side <= SDR_PAYLOAD_BYTES_PER_S);
        assert!(side > 0.95 * SDR_PAYLOAD_BYTES_PER_S);
    }
    assert!(r.server.qps[0].acks_sent > 0 && r.client.qps[0].acks_sent > 0);
}

#[test]
fn a_run_is_a_function_of_its_test() {
    let mut t = IbTest::new(Tool::WriteBw, 1 << 20, 26.7);
    t.iters = 50;
    t.qps = 3;
    let (a, b) = (run(&t), run(&t));
    assert_eq!(a.bw_average_mb_s, b.bw_average_mb_s);
    assert_eq!(a.client, b.client);
    assert_eq!(a.client.completed, 150);
}

#[test]
fn bad_tests_say_what_is_wrong() {
    let mut t = IbTest::new(Tool::ReadBw, MB8, 1.0);
    t.service = Service::Uc;
    assert!(t.check().unwrap_err().contains("no Read"));
    let mut t = IbTest::new(Tool::SendBw, 4096, 1.0);
    t.service = Service::Ud;
    assert!(t.check().unwrap_err().contains("MTU"));
    let mut t = IbTest::new(Tool::SendBw, 4096, 1.0);
    t.mtu_bytes = 3000;
    assert!(t.check().is_err());
    let mut t = IbTest::new(Tool::SendBw, 4096, 1.0);
    t.extender = None;
    assert!(t.check().unwrap_err().contains("--wan"));
}

fn osu(tool: Tool, bytes: u64, rtt_ms: f64, service: Service) -> IbReport {
    let mut t = IbTest::new(tool, bytes, rtt_ms);
    t.service = service;
    t.iters = t.iters.min(50);
    t.skip = t.skip.min(5);
    let r = run(&t);
    assert!(r.finished, "{tool:?} {bytes} B did not finish");
    r
}

fn mpi_value(r: &IbReport) -> f64 {
    r.mpi.as_ref().and_then(|m| m.value).expect("an OSU figure")
}

#[test]
fn mpi_latency_is_half_a_round_trip_eagerly_and_three_halves_by_rendezvous() {
    let eager = osu(Tool::OsuLatency, 8, 10.0, Service::Rc);
    assert_eq!(eager.mpi.as_ref().unwrap().protocol, "eager");
    assert_close("eager latency (us)", mpi_value(&eager), 5_000.0, 0.002);
    // RTS, CTS and the data each cross once per direction: 1.5 round trips, plus the
    // data's time on the line.
    let bytes = 64 << 10;
    let rendezvous = osu(Tool::OsuLatency, bytes, 10.0, Service::Rc);
    assert_eq!(rendezvous.mpi.as_ref().unwrap().protocol, "rendezvous");
    let want_us = 15_000.0 + bytes as f64 / SDR_PAYLOAD_BYTES_PER_S * 1e6;
    assert_close(
        "rendezvous latency (us)",
        mpi_value(&rendezvous),
        want_us,
        0.01,
    );
}

#[test]
fn the_eager_limit_decides_the_protocol() {
    let at = osu(Tool::OsuBw, 12 * 1024, 1.0, Service::Rc);
    let above = osu(Tool::OsuBw, 12 * 1024 + 1, 1.0, Service::Rc);
    assert_eq!(at.mpi.as_ref().unwrap().protocol, "eager");
    // Above 8 KB OSU runs 20 timed rounds after 2, of 64 messages each.
    assert_eq!(above.mpi.as_ref().unwrap().rank0.rendezvous, 22 * 64);
}

#[test]
fn mpi_bandwidth_fills_the_line_with_large_messages_and_bibw_doubles_it() {
    let line_mb_s = SDR_PAYLOAD_BYTES_PER_S / 1e6;
    let bw = mpi_value(&osu(Tool::OsuBw, 4 << 20, 0.28, Service::Rc));
    assert!(
        bw > 0.98 * line_mb_s && bw <= line_mb_s,
        "{bw} of {line_mb_s}"
    );
    let both = mpi_value(&osu(Tool::OsuBibw, 4 << 20, 0.28, Service::Rc));
    assert_close("both ways", both, 2.0 * bw, 0.01);
    // Over UD every 2,032 bytes carry a match header and a datagram's headers.
    let ud = mpi_value(&osu(Tool::OsuBw, 4 << 20, 0.28, Service::Ud));
    assert!(ud < bw && ud > 0.95 * bw, "UD {ud} against RC {bw}");
}

#[test]
fn mpi_over_uc_completes_on_the_receivers_ack_and_skips_the_handshake() {
    let r = osu(Tool::OsuBw, 64 << 10, 163.488, Service::Uc);
    let m = r.mpi.as_ref().unwrap();
    // Every data message and every 4-byte reply was acknowledged by its receiver.
    assert_eq!(m.rank0.sends_completed, m.rank1.receives_completed);
    assert_eq!(m.rank1.sends_completed, m.rank0.receives_completed);
    assert_eq!(m.rank0.rendezvous, 0);
    // A window costs one round trip (data, then ACKs) where RC's rendezvous costs two
    // (RTS/CTS, then data and FIN): at 8,600 miles with 64 KB messages, nearly twice.
    let rc = osu(Tool::OsuBw, 64 << 10, 163.488, Service::Rc);
    let transfer_s = 64.0 * f64::from(64 << 10) / SDR_PAYLOAD_BYTES_PER_S;
    let want = (2.0 * 0.163_488 + transfer_s) / (0.163_488 + transfer_s);
    assert_close("UC over RC", mpi_value(&r) / mpi_value(&rc), want, 0.02);
}

#[test]
fn datagrams_on_the_wan_get_what_the_extenders_leave() {
    let mut t = IbTest::new(Tool::RdmaBw, MB8, 26.7);
    t.iters = 100;
    let alone = run(&t);
    // OC-192 carries 9.47 Gb/s of IB-sized frames; SDR fills 8.0 of them.
    t.cross_traffic_gbps = 1.0;
    let beside_one = run(&t);
    assert_close(
        "IB beside 1 Gb/s",
        average(&beside_one),
        average(&alone),
        0.001,
    );
    assert_eq!(beside_one.extenders[0].cross_frames_dropped, 0);
    // Beside 3 Gb/s the line is short: the extender's frames wait in its credited
    // buffer and are never lost, so the datagrams lose what does not fit.
    t.cross_traffic_gbps = 2.0;
    t.side_ports_gbps = 1.0;
    let beside_three = run(&t);
    assert_close(
        "IB beside 3 Gb/s",
        average(&beside_three),
        average(&alone),
        0.005,
    );
    let e = &beside_three.extenders[0];
    assert!(e.cross_frames_dropped > 0);
    let frame_bits = f64::from(1500 + longhaul_link::layer::GFP_F_ETHERNET_OVERHEAD_BYTES) * 8.0;
    // While IB sends (its bytes over its rate, less the last ACK's round trip), the
    // datagrams carried fill what the 8 Gb/s of IB frames leave of the WAN line.
    let sending_s = 100.0 * MB8 as f64 / average(&beside_three) - 0.0267;
    let carried_gbps = e.cross_frames_sent as f64 * frame_bits / sending_s / 1e9;
    let wan_gbps = beside_three.wan_rate_bps.unwrap() as f64 / 1e9;
    assert_close("datagrams carried", carried_gbps, wan_gbps - 8.0, 0.03);
    t.side_ports_gbps = 2.5;
    assert!(t.check().unwrap_err().contains("side ports"));
}

#[test]
fn the_time_to_take_up_a_work_request_bounds_the_message_rate() {
    let mut t = IbTest::new(Tool::WriteBw, 64, 0.0);
    t.iters = 2_000;
    t.extender = None;
    let free = run(&t);
    t.hca.wqe_ns = 1_000;
    let bound = run(&t);
    let rate = |r: &IbReport| average(r) / 64.0;
    assert!(rate(&free) > 5e6, "{} messages a second", rate(&free));
    assert_close("one message per microsecond", rate(&bound), 1e6, 0.01);
    // Large messages overlap the next request's take-up with their own packets.
    let mut big = IbTest::new(Tool::WriteBw, 1 << 20, 0.0);
    big.iters = 50;
    big.extender = None;
    big.hca = Hca::infinihost_pcie_x8(LinkSpeed::Sdr4x);
    let before = average(&run(&big));
    big.hca.wqe_ns = 1_000;
    assert_close("1 MB messages", average(&run(&big)), before, 0.001);
}

#[test]
fn a_switch_forwards_against_the_next_ports_credit() {
    let lan = |switch: Option<IbSwitch>| {
        let mut t = IbTest::new(Tool::WriteBw, 1 << 20, 0.0);
        t.iters = 100;
        t.extender = None;
        t.switch = switch;
        run(&t)
    };
    let direct = lan(None);
    // A buffer of four packets covers a short switch's credit round trip.
    let near = lan(Some(IbSwitch {
        count: 1,
        latency_ns: 200,
        buffer_bytes: 4 * 2112,
    }));
    assert_close("through a switch", average(&near), average(&direct), 0.002);
    // Between two switches, the second one's 8 KiB holds three packets (2,112 bytes
    // each in 64-byte blocks); credit for one returns a packet's time plus 20 µs after
    // it left the first switch: three packets of 2,048 bytes per 22.07 µs.
    let far = lan(Some(IbSwitch {
        count: 2,
        latency_ns: 10_000,
        buffer_bytes: 8 << 10,
    }));
    let cycle_s = 20e-6 + 2074.0 * 8.0 / 8e9;
    assert_close("credit-bound", average(&far), 3.0 * 2048.0 / cycle_s, 0.01);
    let mut t = IbTest::new(Tool::WriteBw, 1 << 20, 0.0);
    t.extender = None;
    t.switch = Some(IbSwitch {
        count: 1,
        latency_ns: 0,
        buffer_bytes: 1024,
    });
    assert!(t.check().unwrap_err().contains("buffer"));
}

#[test]
fn tcp_through_the_side_ports_shares_what_the_extenders_leave() {
    let mut t = IbTest::new(Tool::RdmaBw, MB8, 26.7);
    t.iters = 300;
    let alone = run(&t);
    t.side_tcp_streams = 1;
    let beside = run(&t);
    let tcp = beside.side_tcp.as_ref().expect("a side-port report");
    // One CUBIC stream fills its 1GigE port less its slow start; IB keeps its rate.
    assert_close(
        "IB beside side-port TCP",
        average(&beside),
        average(&alone),
        0.001,
    );
    assert!(
        tcp.goodput_gbps > 0.8 && tcp.goodput_gbps < 0.95,
        "{}",
        tcp.goodput_gbps
    );
    assert_eq!((tcp.retransmits, tcp.dropped), (0, 0));
    // Beside 2 Gb/s of UDP the Ethernet side asks more than the 1.47 Gb/s left:
    // the unresponsive UDP keeps its share, TCP loses packets and backs off.
    t.cross_traffic_gbps = 2.0;
    let squeezed = run(&t);
    let tcp = squeezed.side_tcp.as_ref().unwrap();
    assert!(tcp.dropped > 0 && tcp.retransmits > 0);
    assert!(tcp.goodput_gbps < 0.2, "{}", tcp.goodput_gbps);
    assert_close("IB beside both", average(&squeezed), average(&alone), 0.001);
}
