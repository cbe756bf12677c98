"""The benchmarks compare like with like: the SimPy model runs pslab's schedule span for span,
and the plain torch loops end with pslab's weights. (Speeds are printed by `python -m bench`,
never asserted: the machines are noisy.)"""
import pytest
import torch

pytest.importorskip("simpy")
from bench import clock_vs_simpy, numerics_vs_torch  # noqa: E402


@pytest.mark.parametrize("workers", [1, 8, 40])
def test_simpy_model_gives_pslabs_makespan_and_spans(workers):
    run = clock_vs_simpy.same_schedule(workers)  # raises if makespan or spans differ
    assert run.makespan > 0 and len(run.timeline) >= workers * clock_vs_simpy.STEPS * 4


def test_simpy_model_would_notice_another_schedule():
    run = clock_vs_simpy.same_schedule(4)
    durations = clock_vs_simpy.CLUSTER.compute_durations(4, 100, 2).tolist()  # another seed
    makespan, _ = clock_vs_simpy.simulate(durations, *clock_vs_simpy.costs(run), 100)
    assert makespan != pytest.approx(run.makespan, rel=1e-9)


@pytest.mark.parametrize("loop", ["plain_loop", "same_arithmetic"])
def test_plain_torch_loops_end_with_pslabs_weights(loop):
    ours = numerics_vs_torch.pslab_run().weights
    theirs = getattr(numerics_vs_torch, loop)()
    for name, w in ours.items():
        torch.testing.assert_close(theirs[name], w, rtol=1e-4, atol=1e-5)
    assert not torch.equal(ours["W_h"], numerics_vs_torch.init_params(64, 32, 10, 0)["W_h"])
