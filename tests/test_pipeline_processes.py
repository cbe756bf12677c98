"""Pipelines on real processes: PyTorch's torch.distributed.pipelining (PipelineStage and its
schedule classes) on gloo, one process per rank, ends every schedule with the simulation's
weights (to float round-off: autograd's and torch.nn.Linear's kernels sum in their own
order; 3e-8 seen, 1e-6 tested); a killed rank is named in a ProcessFailure whose .run holds
the steps finished, and nothing (process or file) is left behind."""
import time

import pytest
import torch

import pslab
from pslab.processes import ProcessFailure

dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("torch.distributed with gloo is needed", allow_module_level=True)


@pytest.mark.processes
@pytest.mark.parametrize("schedule,p,m,v", [
    ("gpipe", 2, 4, 1), ("1f1b", 3, 6, 1), ("interleaved-1f1b", 2, 4, 2),
    ("looped-bfs", 2, 3, 2), ("zb-h1", 2, 4, 1), ("zbv", 2, 4, 2)])
def test_pytorchs_pipelining_ends_with_the_simulations_weights(schedule, p, m, v, private_tmp,
                                                               nothing_left):
    mode = pslab.Pipeline(stages=p, microbatches=m, schedule=schedule, chunks=v)
    kw = dict(steps=3, batch=8, hidden=16, lr=0.3, seed=5)
    real = pslab.train(mode=mode, backend="processes", timeout=60, **kw)
    sim = pslab.train(mode=mode, **kw)
    assert real.complete and list(real.weights) == list(sim.weights)
    for name, w in sim.weights.items():
        torch.testing.assert_close(real.weights[name], w, rtol=0, atol=1e-6)
    assert [r.step for r in real.history] == [0, 1, 2]
    for a, b in zip(real.history, sim.history):
        assert a.loss == pytest.approx(b.loss, abs=1e-5)
    # the measured timeline: every action of every step, timed on its rank, and the waits
    # for sends and receives between them (never overlapping a rank's compute)
    kinds = {"forward", "backward-input", "backward-weight"} if schedule in ("zb-h1", "zbv") \
        else {"forward", "backward"}
    computes = [s for s in real.timeline if s.kind not in ("send", "recv")]
    assert {s.kind for s in computes} == kinds and "recv" in {s.kind for s in real.timeline}
    assert len(computes) == 3 * sum(len(r) for r in _lists(schedule, p, m, v))
    assert all(0 <= s.start <= s.end <= real.makespan for s in real.timeline)
    for rank in range(p):
        mine = sorted((s for s in real.timeline if s.worker == rank), key=lambda s: s.start)
        assert all(a.end <= b.start for a, b in zip(mine, mine[1:]))
    # its last step as ops: each rank's list in time order, the bubbles read off as simulated
    lists = _lists(schedule, p, m, v)
    for rank in range(p):
        mine = sorted((o for o in real.ops if o.rank == rank), key=lambda o: o.start)
        assert [f"{o.stage}{o.kind}{o.micro}" for o in mine] == [str(a) for a in lists[rank]]
    assert 0 < real.bubble_share < 1 and real.bubble_ratio > 0
    assert real.activations == sim.activations  # the same order holds the same activations
    nothing_left(private_tmp)


def _lists(schedule, p, m, v):
    from pslab.pipeline.schedules import orders

    return orders(schedule, p, m, v)


@pytest.mark.processes
def test_the_measured_order_is_the_schedules(private_tmp, nothing_left):
    """Each rank's measured actions, in time order, are its list (1F1B's last rank included:
    PyTorch's runtime runs F0, B0, F1, ...)."""
    mode = pslab.Pipeline(stages=3, microbatches=5, schedule="1f1b")
    real = pslab.train(mode=mode, backend="processes", steps=1, batch=8, hidden=16,
                       timeout=60)
    short = {"forward": "F", "backward": "B"}
    for rank, want in enumerate(_lists("1f1b", 3, 5, 1)):
        got = [f"{rank}{short[s.kind]}{s.micro}" for s in
               sorted((s for s in real.timeline if s.worker == rank and s.kind in short),
                      key=lambda s: s.start)]
        assert got == [str(a) for a in want]
    nothing_left(private_tmp)


@pytest.mark.processes
def test_a_killed_stage_is_named_and_nothing_is_left(private_tmp, nothing_left):
    t0 = time.monotonic()
    mode = pslab.Pipeline(stages=3, microbatches=3, schedule="1f1b")
    with pytest.raises(ProcessFailure) as failure:
        pslab.train(mode=mode, backend="processes", steps=4, batch=8, hidden=16,
                    kill={1: 2}, timeout=30)
    text = str(failure.value)
    assert "Pipeline(1f1b, p=3, m=3)" in text and "worker 1 (pid " in text
    assert "killed by signal SIGKILL after 2 steps" in text
    assert time.monotonic() - t0 < 120  # the others are stopped, not waited for
    partial = failure.value.run
    assert not partial.complete and [r.step for r in partial.history] == [0, 1]
    sim = pslab.train(mode=mode, steps=2, batch=8, hidden=16)
    for name, w in sim.weights.items():
        torch.testing.assert_close(partial.weights[name], w, rtol=0, atol=1e-6)
    nothing_left(private_tmp)


@pytest.mark.processes
def test_a_silent_stage_is_named_after_the_timeout(private_tmp, nothing_left):
    mode = pslab.Pipeline(stages=2, microbatches=2, schedule="gpipe")
    with pytest.raises(ProcessFailure, match=r"stopped answering after 1 step"):
        pslab.train(mode=mode, backend="processes", steps=3, batch=8, hidden=16,
                    hang={0: 1}, timeout=3)
    nothing_left(private_tmp)


@pytest.mark.parametrize("kwargs,named", [
    (dict(numerics=False), "numerics"), (dict(time_scale=0.1), "time_scale"),
    (dict(kill={5: 0}), "kill worker"), (dict(timeout=0), "timeout"),
])
def test_process_settings_are_refused_before_any_process(kwargs, named, private_tmp, nothing_left):
    with pytest.raises(ValueError, match=named):
        pslab.train(mode=pslab.Pipeline(stages=2, microbatches=2), backend="processes",
                    steps=2, **kwargs)
    nothing_left(private_tmp)


def test_more_stages_than_processes_allowed_are_refused():
    with pytest.raises(ValueError, match="stages"):
        pslab.train(mode=pslab.Pipeline(stages=17, microbatches=17), backend="processes")
