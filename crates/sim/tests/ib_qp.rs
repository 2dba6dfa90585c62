//! The queue pair against its rules (IBA vol. 1 chapter 9), on a line in memory:
//! scripted losses, then random work under random losses (proptest).

use longhaul_sim::ib::qp::{Qp, QpConfig, Service, Verb, WorkRequest};
use longhaul_sim::ib::wire::{IbPacket, Opcode};
use proptest::prelude::*;

const DELAY_NS: u64 = 1_000;

fn config(service: Service) -> QpConfig {
    QpConfig {
        service,
        mtu_bytes: 1024,
        max_unacked_packets: 1 << 20,
        max_reads: 4,
        ack_timeout_ns: 100_000,
        retry_count: 7,
        ack_every_packets: 4,
        wqe_ns: 0,
    }
}

/// Smaller packets, windows and timers, so random work exercises them.
fn small_config(service: Service) -> QpConfig {
    QpConfig {
        mtu_bytes: 256,
        max_unacked_packets: 64,
        max_reads: 2,
        ack_timeout_ns: 50_000,
        ack_every_packets: 3,
        ..config(service)
    }
}

/// Two QPs on a line of `DELAY_NS` each way; `lost(from_requester, n)` drops the n-th
/// packet (counted from 0) a side sends. Runs until nothing moves or `until_ns`.
fn exchange(a: &mut Qp, b: &mut Qp, lost: impl Fn(bool, u64) -> bool, until_ns: u64) {
    let mut in_flight: Vec<(u64, bool, IbPacket)> = Vec::new();
    let mut sent = [0u64; 2];
    let mut now = 0;
    while now < until_ns {
        for (side, qp) in [(true, &mut *a), (false, &mut *b)] {
            while let Some(pkt) = qp.poll_transmit(now) {
                qp.packet_left(now);
                let n = &mut sent[usize::from(!side)];
                if !lost(side, *n) {
                    in_flight.push((now + DELAY_NS, side, pkt));
                }
                *n += 1;
            }
        }
        in_flight.sort_by_key(|&(at, _, _)| at);
        let next_arrival = in_flight.first().map(|&(at, _, _)| at);
        let next_timer = [a.poll_timeout(), b.poll_timeout()]
            .into_iter()
            .flatten()
            .min();
        let Some(next) = [next_arrival, next_timer].into_iter().flatten().min() else {
            break;
        };
        now = next.max(now + 1);
        while let Some(&(at, from_a, pkt)) = in_flight.first() {
            if at > now {
                break;
            }
            in_flight.remove(0);
            if from_a {
                b.handle_packet(at, pkt);
            } else {
                a.handle_packet(at, pkt);
            }
        }
        a.handle_timeout(now);
        b.handle_timeout(now);
    }
}

fn write(id: u64, bytes: u64) -> WorkRequest {
    WorkRequest {
        id,
        verb: Verb::Write,
        bytes,
        imm: 0,
    }
}

fn completions(qp: &mut Qp) -> Vec<(u64, bool)> {
    std::iter::from_fn(|| qp.poll_completion())
        .map(|c| (c.id, c.ok))
        .collect()
}

#[test]
fn rc_goes_back_to_the_naked_psn_after_a_loss() {
    let (mut a, mut b) = (Qp::new(config(Service::Rc)), Qp::new(config(Service::Rc)));
    a.post(write(1, 10 * 1024));
    a.post(write(2, 10 * 1024));
    exchange(&mut a, &mut b, |from_a, n| from_a && n == 3, 10_000_000);
    assert_eq!(completions(&mut a), vec![(1, true), (2, true)]);
    assert_eq!(b.counters().naks_sent, 1);
    assert_eq!(b.counters().payload_bytes_received, 20 * 1024);
    assert_eq!(b.counters().messages_received, 2);
    // Everything after the lost packet that was in flight went again, and nothing
    // timed out.
    assert!(a.counters().packets_resent >= 1);
    assert_eq!(a.counters().timeouts, 0);
}

#[test]
fn rc_resends_on_its_timer_when_the_last_packet_is_lost() {
    let (mut a, mut b) = (Qp::new(config(Service::Rc)), Qp::new(config(Service::Rc)));
    a.post(write(1, 4 * 1024));
    exchange(&mut a, &mut b, |from_a, n| from_a && n == 3, 10_000_000);
    assert_eq!(completions(&mut a), vec![(1, true)]);
    assert_eq!(a.counters().timeouts, 1);
    assert_eq!(b.counters().messages_received, 1);
}

#[test]
fn rc_gives_up_after_its_retries() {
    let (mut a, mut b) = (Qp::new(config(Service::Rc)), Qp::new(config(Service::Rc)));
    a.post(write(1, 1024));
    a.post(write(2, 1024));
    exchange(&mut a, &mut b, |from_a, _| from_a, 100_000_000);
    assert_eq!(completions(&mut a), vec![(1, false), (2, false)]);
    assert_eq!(a.counters().timeouts, 8);
    assert!(a.counters().error);
}

#[test]
fn uc_loses_the_message_a_packet_of_it_was_lost_from() {
    let (mut a, mut b) = (Qp::new(config(Service::Uc)), Qp::new(config(Service::Uc)));
    a.post(write(1, 3 * 1024));
    a.post(write(2, 3 * 1024));
    exchange(&mut a, &mut b, |from_a, n| from_a && n == 1, 10_000_000);
    // Both complete on send; only the second arrives whole.
    assert_eq!(completions(&mut a), vec![(1, true), (2, true)]);
    let arrived: Vec<_> = std::iter::from_fn(|| b.poll_arrival())
        .map(|m| m.bytes)
        .collect();
    assert_eq!(arrived, vec![3 * 1024]);
    assert_eq!(a.counters().packets_resent, 0);
}

#[test]
fn reads_are_answered_and_bounded_in_number() {
    let mut cfg = config(Service::Rc);
    cfg.max_reads = 2;
    let (mut a, mut b) = (Qp::new(cfg), Qp::new(cfg));
    for id in 0..4 {
        a.post(WorkRequest {
            id,
            verb: Verb::Read,
            bytes: 2 * 1024,
            imm: 0,
        });
    }
    // Only two requests go before an answer comes back.
    let mut requests = 0;
    while let Some(pkt) = a.poll_transmit(0) {
        assert_eq!(pkt.op, Opcode::ReadRequest);
        requests += 1;
    }
    assert_eq!(requests, 2);
    let mut a = Qp::new(cfg);
    for id in 0..4 {
        a.post(WorkRequest {
            id,
            verb: Verb::Read,
            bytes: 2 * 1024,
            imm: 0,
        });
    }
    exchange(&mut a, &mut b, |_, _| false, 10_000_000);
    assert_eq!(completions(&mut a).len(), 4);
    assert_eq!(a.counters().payload_bytes_received, 8 * 1024);
}

#[test]
fn a_lost_read_response_is_asked_for_again() {
    let (mut a, mut b) = (Qp::new(config(Service::Rc)), Qp::new(config(Service::Rc)));
    a.post(WorkRequest {
        id: 7,
        verb: Verb::Read,
        bytes: 3 * 1024,
        imm: 0,
    });
    exchange(&mut a, &mut b, |from_a, n| !from_a && n == 1, 10_000_000);
    assert_eq!(completions(&mut a), vec![(7, true)]);
    assert_eq!(a.counters().timeouts, 1);
    // The whole read was asked again: its first packet arrived twice.
    assert_eq!(a.counters().payload_bytes_received, 4 * 1024);
}

#[test]
fn ud_sends_one_packet_per_message_and_completes_on_send() {
    let (mut a, mut b) = (Qp::new(config(Service::Ud)), Qp::new(config(Service::Ud)));
    for id in 0..3 {
        a.post(WorkRequest {
            id,
            verb: Verb::Send,
            bytes: 1000,
            imm: 0,
        });
    }
    exchange(&mut a, &mut b, |from_a, n| from_a && n == 1, 10_000_000);
    assert_eq!(completions(&mut a).len(), 3);
    assert_eq!(b.counters().messages_received, 2);
    assert_eq!(a.counters().packets_sent, 3);
}

fn work() -> impl Strategy<Value = Vec<(u8, u64)>> {
    prop::collection::vec((0u8..3, 1u64..2_000), 1..12)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn rc_delivers_everything_once_in_order_or_fails_cleanly(
        requests in work(),
        lost_a in prop::collection::btree_set(0u64..200, 0..12),
        lost_b in prop::collection::btree_set(0u64..200, 0..6),
    ) {
        let (mut a, mut b) = (Qp::new(small_config(Service::Rc)), Qp::new(small_config(Service::Rc)));
        let mut expected = Vec::new();
        let mut read_bytes = 0;
        for (id, &(verb, bytes)) in requests.iter().enumerate() {
            let verb = [Verb::Send, Verb::Write, Verb::Read][usize::from(verb)];
            a.post(WorkRequest { id: id as u64, verb, bytes, imm: id as u64 });
            match verb {
                Verb::Read => read_bytes += bytes,
                _ => expected.push((verb, bytes, id as u64)),
            }
        }
        let lost = |from_a: bool, n: u64| if from_a { lost_a.contains(&n) } else { lost_b.contains(&n) };
        exchange(&mut a, &mut b, lost, 1_000_000_000);
        let done: Vec<_> = std::iter::from_fn(|| a.poll_completion()).collect();
        // Every request completes, in posting order.
        prop_assert_eq!(done.len(), requests.len());
        prop_assert!(done.windows(2).all(|w| w[0].id < w[1].id));
        if done.iter().all(|c| c.ok) {
            // The responder saw each send and write whole, once, in order.
            let arrived: Vec<_> = std::iter::from_fn(|| b.poll_arrival())
                .map(|m| (m.verb, m.bytes, m.imm))
                .collect();
            prop_assert_eq!(arrived, expected);
            prop_assert!(a.counters().payload_bytes_received >= read_bytes);
        } else {
            prop_assert!(a.counters().error);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn uc_completes_everything_and_delivers_only_whole_messages_in_order(
        requests in prop::collection::vec((0u8..2, 1u64..2_000), 1..12),
        lost in prop::collection::btree_set(0u64..100, 0..10),
    ) {
        let (mut a, mut b) = (Qp::new(small_config(Service::Uc)), Qp::new(small_config(Service::Uc)));
        let mut sent = Vec::new();
        for (id, &(verb, bytes)) in requests.iter().enumerate() {
            let verb = [Verb::Send, Verb::Write][usize::from(verb)];
            a.post(WorkRequest { id: id as u64, verb, bytes, imm: id as u64 });
            sent.push((verb, bytes, id as u64));
        }
        exchange(&mut a, &mut b, |from_a, n| from_a && lost.contains(&n), 1_000_000_000);
        let done: Vec<_> = std::iter::from_fn(|| a.poll_completion()).collect();
        prop_assert_eq!(done.len(), requests.len());
        prop_assert!(done.iter().all(|c| c.ok));
        prop_assert_eq!(a.counters().packets_resent, 0);
        // What arrives is whole messages, in order: a subsequence of what was sent.
        let arrived: Vec<_> = std::iter::from_fn(|| b.poll_arrival())
            .map(|m| (m.verb, m.bytes, m.imm))
            .collect();
        let mut rest = sent.iter();
        for message in &arrived {
            prop_assert!(rest.any(|s| s == message), "{:?} is not whole or out of order", message);
        }
        if lost.is_empty() {
            prop_assert_eq!(arrived.len(), sent.len());
        }
    }
}
