"""The simulator against the kernel: iperf3 reno and cubic through emulated circuits
(root), and the simulator on the same circuits."""

from __future__ import annotations

import statistics
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from longhaul.sim import runner
from longhaul.sim.validation.common import Progress

if TYPE_CHECKING:
    from longhaul.bench.wan import Plan

KERNEL_CC = ("reno", "cubic")
KERNEL_RATE_GBPS = 1.0
KERNEL_RTTS_MS = (26.8, 163.0)
KERNEL_STREAMS = (1, 8)
KERNEL_DURATION_S = 15.0
KERNEL_WARMUP_S = 4.0
KERNEL_TOLERANCE = 0.10
KERNEL_LOSSES = (1e-4, 1e-3)
"""Random loss per packet of the lossy cases, as in the ns-3 part's random-loss group: at
26.8 ms 1e-4 holds a Reno flow near 50 Mb/s with a loss every two seconds or so, 1e-3
near 17 Mb/s, so that congestion avoidance, not the first slow start, sets what 60 s
deliver. (1e-5, or 163 ms, leaves a flow a handful of losses: a coin toss, not a rate.)"""
KERNEL_LOSS_RTT_MS = 26.8
KERNEL_LOSS_STREAMS = (1, 8)
"""One flow, where the ns-3 part has a miss to explain, and eight independent flows,
which average their luck with the losses in one run."""
KERNEL_LOSS_DURATION_S = 60.0
KERNEL_LOSS_SEEDS = 5
"""The simulator's side of a lossy case is the mean over this many seeds, and so is the
kernel's side of a one-flow lossy case (the emulator's `--seed`, one circuit each): one
flow's 60 s hold a few hundred losses at 1e-4, so one pattern decides its rate to about
10 % (over 20 seeds the simulator's single reno at 1e-4 ranged 48.8-64.5 Mb/s). Eight
flows average their luck in one run: the kernel runs them on one seed."""


def kernel_scenario(
    cc: str, streams: int, rtt_ms: float, loss: float = 0.0, seed: int = 1
) -> dict[str, Any]:
    """The testbed's circuit as the simulator sees it: the emulator's rate on IP bytes and
    its default queue (one bandwidth-delay product), Linux hosts with auto-tuning up to the
    testbed's buffers (four BDPs, at least 16 MiB), 10 initial segments, MTU 1500."""
    rate_bps = KERNEL_RATE_GBPS * 1e9
    bdp_bytes = round(rate_bps / 8 * rtt_ms / 1000)
    buffer = max(16 << 20, 4 * bdp_bytes)
    host = {
        "mtu_bytes": 1500,
        "auto_tuning": True,
        "snd_buf_max_bytes": buffer,
        "rcv_buf_max_bytes": buffer,
        "initial_cwnd_segments": 10,
    }
    return {
        "duration_s": KERNEL_LOSS_DURATION_S if loss else KERNEL_DURATION_S,
        "omit_s": KERNEL_WARMUP_S,
        "cc": cc,
        "streams": streams,
        "seed": seed,
        # longhaul-wan's rate counts IP bytes only: no Ethernet framing on the line.
        "path": {
            "rate_bps": rate_bps,
            "rtt_ms": rtt_ms,
            "queue_bytes": bdp_bytes,
            "frame_overhead_bytes": 0,
            "loss": {"random": loss},
        },
        "hosts": {"sender": host, "receiver": host},
    }


def kernel_plans() -> list[Plan]:
    """What iperf3 measures: each variant on the loss-free circuits, then on the lossy
    ones."""
    from longhaul.bench.wan import Plan  # noqa: PLC0415

    plans = []
    for cc in KERNEL_CC:
        loss_free = Plan(
            rates_gbps=(KERNEL_RATE_GBPS,),
            rtts_ms=KERNEL_RTTS_MS,
            streams=KERNEL_STREAMS,
            cc=cc,
            duration_s=KERNEL_DURATION_S,
            omit_s=KERNEL_WARMUP_S,
            pings=10,
        )
        lossy = [
            replace(
                loss_free,
                rtts_ms=(KERNEL_LOSS_RTT_MS,),
                streams=(streams,),
                duration_s=KERNEL_LOSS_DURATION_S,
                loss=loss,
                loss_seeds=tuple(range(1, _loss_seeds(streams) + 1)),
            )
            for loss in KERNEL_LOSSES
            for streams in KERNEL_LOSS_STREAMS
        ]
        plans += [loss_free, *lossy]
    return plans


def _loss_seeds(streams: int) -> int:
    """The emulator's loss seeds of a lossy case of `streams` flows."""
    return KERNEL_LOSS_SEEDS if streams == 1 else 1


def _by_case(measured: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per case, the kernel's goodput the mean over its loss seeds."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for c in measured:
        groups.setdefault((c["cc"], c["streams"], c["rtt_ms"], c["loss"]), []).append(c)
    return [
        {
            **runs[0],
            "goodput_gbps": statistics.fmean(r["goodput_gbps"] for r in runs),
            "kernel_seeds": len(runs),
        }
        for runs in groups.values()
    ]


def validate_kernel(progress: Progress | None = None) -> dict[str, Any]:
    """iperf3 reno and cubic through emulated 1 Gb/s circuits, loss-free and lossy, against
    the simulator on the same circuits (root)."""
    from longhaul.bench import wan as wan_bench  # noqa: PLC0415

    measured = []
    for plan in kernel_plans():

        def step(what: str, done: float, total: float, plan: Plan = plan) -> None:
            if progress:
                progress(f"kernel {plan.cc}, loss {plan.loss:g}: {what}", round(done), round(total))

        measured += [c for c in wan_bench.run(plan, step)["cases"] if c["cc"] != "ping"]
    measured = _by_case(measured)
    seeds = [range(1, KERNEL_LOSS_SEEDS + 1) if c["loss"] else (1,) for c in measured]
    scenarios = [
        kernel_scenario(c["cc"], c["streams"], c["rtt_ms"], c["loss"], seed)
        for c, chosen in zip(measured, seeds, strict=True)
        for seed in chosen
    ]
    simulated = iter(runner.run_many(scenarios))
    rows = []
    for case, chosen in zip(measured, seeds, strict=True):
        runs = [float(next(simulated)["end"]["sum_received"]["bits_per_second"]) for _ in chosen]
        sim_gbps = statistics.fmean(runs) / 1e9
        ratio = sim_gbps / case["goodput_gbps"]
        rows.append(
            {
                "cc": case["cc"],
                "streams": case["streams"],
                "rtt_ms": case["rtt_ms"],
                "loss": case["loss"],
                "kernel_gbps": round(case["goodput_gbps"], 4),
                "kernel_seeds": case["kernel_seeds"],
                "sim_gbps": round(sim_gbps, 4),
                "sim_seeds": len(runs),
                "ratio": round(ratio, 3),
                "within": abs(ratio - 1) <= KERNEL_TOLERANCE,
            }
        )
    return {
        "tolerance": KERNEL_TOLERANCE,
        "cases": rows,
        "within": sum(r["within"] for r in rows),
        "compared": len(rows),
    }
