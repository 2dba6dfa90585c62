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
    assert all(plan.streams == (1, 8) and plan.rtts_ms == (26.8,) for plan in lossy)
    scenario = against_kernel.kernel_scenario("reno", 8, 26.8, loss=1e-4, seed=3)
    assert scenario["path"]["loss"] == {"random": 1e-4} and scenario["seed"] == 3
    assert scenario["duration_s"] == against_kernel.KERNEL_LOSS_DURATION_S
    assert against_kernel.kernel_scenario("reno", 1, 163.0)["path"]["loss"] == {"random": 0.0}
