"""The kernel comparison's plan (the runs themselves need root and the testbed)."""

from __future__ import annotations

from longhaul.sim.validation import against_kernel


def test_the_kernel_comparison_adds_lossy_circuits_the_simulator_sees_alike():
    plans = against_kernel.kernel_plans()
    lossy = [plan for plan in plans if plan.loss]
    assert {plan.cc for plan in lossy} == set(against_kernel.KERNEL_CC)
    assert {(plan.cc, plan.loss) for plan in lossy} == {
        (cc, loss) for cc in against_kernel.KERNEL_CC for loss in (1e-4, 1e-3)
    }
    assert all(plan.rtts_ms == (26.8,) for plan in lossy)
    assert {plan.streams for plan in lossy} == {(1,), (8,)}
    scenario = against_kernel.kernel_scenario("reno", 8, 26.8, loss=1e-4, seed=3)
    assert scenario["path"]["loss"] == {"random": 1e-4} and scenario["seed"] == 3
    assert scenario["duration_s"] == against_kernel.KERNEL_LOSS_DURATION_S
    assert against_kernel.kernel_scenario("reno", 1, 163.0)["path"]["loss"] == {"random": 0.0}


def test_one_lossy_flow_runs_on_five_loss_patterns_and_eight_flows_on_one():
    lossy = [plan for plan in against_kernel.kernel_plans() if plan.loss]
    for plan in lossy:
        iperf3 = [case for case in plan.cases() if case.test == "iperf3"]
        seeds = sorted(case.loss_seed for case in iperf3)
        want = [1, 2, 3, 4, 5] if plan.streams == (1,) else [1]
        assert seeds == want, (plan.streams, seeds)
        assert sum(case.test == "ping" for case in plan.cases()) == 1
        # Each seed is a circuit of its own.
        assert len({case.circuit_key for case in iperf3}) == len(want)


def test_the_kernels_side_is_the_mean_over_its_loss_seeds():
    def measured(seed: int, gbps: float) -> dict:
        return {"cc": "reno", "streams": 1, "rtt_ms": 26.8, "loss": 1e-4,
                "loss_seed": seed, "goodput_gbps": gbps}  # fmt: skip

    rows = against_kernel._by_case([measured(1, 0.05), measured(2, 0.06), measured(3, 0.04)])
    assert len(rows) == 1
    assert rows[0]["kernel_seeds"] == 3
    assert abs(rows[0]["goodput_gbps"] - 0.05) < 1e-12
