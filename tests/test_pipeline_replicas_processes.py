"""Data-parallel pipelines on real processes: d replicas of a p-rank pipeline, p·d processes
(worker j·p + r is replica j's rank r), each replica a gloo group running PyTorch's schedule on
its own m micro-batches, then each stage's d copies all-reduce their gradients.

Weights: the clock's, and one worker accumulating the step's d·m micro-batches, to float
round-off, weight by weight after every step (a run of t steps: each step's micro-batches come
from the seed and the step's number only) and every step's loss to 1e-5. Not bit for bit: gloo
sums the d replicas' means, the clock the d sums, one worker d·m terms in a row (three
groupings), and even one replica on processes differs in the last bits (PyTorch's autograd
and its division by m are not the clock's arithmetic); 3e-8 seen, tested at 1e-6 as the
one-pipeline processes test. A killed replica's rank is named by its worker number; stages *
replicas beyond the processes allowed is refused by name before any process; SIGTERM ends the
caller as asked with no process or folder left."""
import os
import random
import signal
import subprocess
import sys
import time
import uuid

import pytest
import torch

import pslab
from pslab.processes import ProcessFailure
from marked import marked
from test_pipeline_sgd import one_worker

dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("torch.distributed with gloo is needed", allow_module_level=True)


@pytest.mark.processes
@pytest.mark.parametrize("schedule,p,m,v,d", [
    ("1f1b", 2, 3, 1, 2), ("interleaved-1f1b", 2, 4, 2, 2), ("gpipe", 2, 2, 1, 3)])
def test_replicas_on_processes_end_with_the_clocks_weights(schedule, p, m, v, d, private_tmp,
                                                           nothing_left):
    mode = pslab.Pipeline(stages=p, microbatches=m, schedule=schedule, chunks=v, replicas=d)
    kw = dict(batch=8, hidden=16, lr=0.3, seed=5)
    for steps in (1, 2, 3):  # the weights after each step: a run of that many steps
        real = pslab.train(mode=mode, backend="processes", timeout=60, steps=steps, **kw)
        sim = pslab.train(mode=mode, steps=steps, **kw)
        want, scores = one_worker(mode.layers, 16, d * m, 8, steps, 0.3, 5)
        assert real.complete and real.workers == p * d and list(real.weights) == list(want)
        for name in want:
            torch.testing.assert_close(real.weights[name], sim.weights[name], rtol=0,
                                       atol=1e-6)
            torch.testing.assert_close(real.weights[name], want[name], rtol=0, atol=1e-6)
        assert [r.step for r in real.history] == list(range(steps))
        for a, b, (loss, _) in zip(real.history, sim.history, scores):
            assert a.loss == pytest.approx(b.loss, abs=1e-5) == loss
        fewer, _ = one_worker(mode.layers, 16, m, 8, steps, 0.3, 5)  # one replica's m: far off
        assert any(not torch.allclose(real.weights[k], fewer[k], atol=1e-4) for k in want)
    # every worker ran its replica's list, then its stage's all-reduce ("push"), each step
    assert {s.worker for s in real.timeline} == set(range(p * d))
    pushes = [s for s in real.timeline if s.kind == "push"]
    assert sorted((s.worker, s.step) for s in pushes) == \
        [(w, t) for w in range(p * d) for t in range(3)]
    assert real.activations == sim.activations
    nothing_left(private_tmp)


@pytest.mark.processes
def test_a_killed_replica_rank_is_named_by_its_worker(private_tmp, nothing_left):
    mode = pslab.Pipeline(stages=2, microbatches=2, schedule="1f1b", replicas=2)
    with pytest.raises(ProcessFailure) as failure:
        pslab.train(mode=mode, backend="processes", steps=4, batch=8, hidden=16,
                    kill={3: 2}, timeout=30)
    text = str(failure.value)
    assert "worker 3 (pid " in text and "killed by signal SIGKILL after 2 steps" in text
    partial = failure.value.run
    sim = pslab.train(mode=mode, steps=2, batch=8, hidden=16)
    assert [r.step for r in partial.history] == [0, 1]
    for name, w in sim.weights.items():
        torch.testing.assert_close(partial.weights[name], w, rtol=0, atol=1e-6)
    nothing_left(private_tmp)


def test_more_processes_than_allowed_are_refused_by_name(private_tmp, nothing_left):
    with pytest.raises(ValueError, match=r"stages \* replicas must be at most 16.*got 4 \* "
                                         r"replicas=5"):
        pslab.train(mode=pslab.Pipeline(stages=4, microbatches=4, replicas=5),
                    backend="processes")
    nothing_left(private_tmp)


SCRIPT = """
import pslab
mode = pslab.Pipeline(stages=2, microbatches=2, schedule="1f1b", replicas=2)
pslab.train(mode=mode, backend="processes", steps=1, batch=8, hidden=16, timeout=30)  # warm
print("training", flush=True)
pslab.train(mode=mode, backend="processes", steps=100000, batch=8, hidden=16, timeout=30)
"""


@pytest.mark.processes
def test_sigterm_ends_the_caller_and_leaves_nothing(tmp_path):
    """SIGTERM at seeded moments (while the run's processes start, and mid-run; the
    forkserver warm from a first run): the caller ends by the signal, and no process of its
    run (found by a mark in their environment) nor any folder in its temporary folder is left
    (torch's own compile cache aside)."""
    rng = random.Random(30)
    for delay in [rng.uniform(0.0, 1.0), rng.uniform(3.0, 8.0)]:
        mark = uuid.uuid4().hex
        env = dict(os.environ, TMPDIR=str(tmp_path), PSLAB_TEST_MARK=mark)
        script = subprocess.Popen([sys.executable, "-c", SCRIPT], env=env, text=True,
                                  stdout=subprocess.PIPE)
        assert script.stdout.readline() == "training\n"
        time.sleep(delay)
        script.send_signal(signal.SIGTERM)
        assert script.wait(60) == -signal.SIGTERM, delay
        # the forkserver ends once it sees its caller gone, then the resource tracker (its pipe
        # is open in the server): 5.5-7 s at load 11 (torch torn down), past 10 s at load 15
        deadline = time.monotonic() + 60
        while marked(mark) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert marked(mark) == [], delay
        assert [p.name for p in tmp_path.iterdir() if not p.name.startswith("torchinductor")] \
            == [], delay

