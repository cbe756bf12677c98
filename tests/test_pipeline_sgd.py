"""Real SGD through the pipeline: after every step the weights are those of one worker
accumulating the step's m micro-batches (the same rows, the same kernels), for every schedule.
Bit for bit where each stage adds its micro-batches' gradients in micro-batch order (every
schedule but looped-bfs); looped-bfs runs its backwards in reverse, so its sums are added in
another order: equal to float round-off, tested at that precision (and shown to differ)."""
from __future__ import annotations

import random

import pytest
import torch

import pslab
from pslab.data import Digits
from pslab.model import init_params, loss_and_grad, score, single_thread
from pslab.pipeline.schedules import CHUNKS, SCHEDULES, refusal


def one_worker(layers, hidden, m, batch, steps, lr, seed):
    """Gradient accumulation on one worker: the weights and the (loss, accuracy) after each
    step."""
    data = Digits.load(seed)
    p = init_params(64, hidden, 10, seed, layers=layers)
    scores = []
    with single_thread():
        for t in range(steps):
            total = None
            for i in range(m):
                x, y = data.minibatch(t, 0, i, 1, m, batch)
                _, g = loss_and_grad(p, x, y)
                total = g if total is None else {k: total[k] + g[k] for k in g}
            p = {k: p[k] - (total[k] / m if m > 1 else total[k]) * lr for k in p}
            scores.append(score(p, data))
    return p, scores


def cases():
    """Every schedule on seeded (p <= 8, m <= 32, v, layers per stage) it accepts."""
    rng = random.Random(4)
    out = []
    for schedule in SCHEDULES:
        found = 0
        while found < 5:
            p, m, v = rng.randint(1, 8), rng.randint(1, 32), rng.choice(CHUNKS[schedule])
            if refusal(schedule, p, m, v) is None:
                out.append((schedule, p, m, v, p * v * rng.randint(1, 2) if p * v > 1 else 2))
                found += 1
    return out


@pytest.mark.parametrize("schedule,p,m,v,layers", cases())
def test_weights_after_each_step_equal_one_worker_accumulating(schedule, p, m, v, layers):
    """Weight by weight after step t = 1, 2, 3 (a run of t steps: each step's micro-batches come
    from the seed and the step's number only), and every step's loss and accuracy."""
    hidden, batch, lr, seed = 12, 6, 0.3, 11
    mode = pslab.Pipeline(stages=p, microbatches=m, schedule=schedule, chunks=v, layers=layers)
    for steps in (1, 2, 3):
        run = pslab.train(mode=mode, steps=steps, batch=batch, hidden=hidden, lr=lr, seed=seed)
        want, scores = one_worker(max(layers, 2), hidden, m, batch, steps, lr, seed)
        assert list(run.weights) == list(want)
        got_scores = [(r.loss, r.accuracy) for r in run.history]
        if schedule != "looped-bfs" or m == 1:
            assert got_scores == scores  # every step's weights score the same bits
            for name in want:
                assert torch.equal(run.weights[name], want[name]), (name, steps)
        else:
            for (a, b), (c, d) in zip(got_scores, scores):
                assert a == pytest.approx(c, rel=1e-6) and b == pytest.approx(d, abs=1e-3)
            for name in want:
                torch.testing.assert_close(run.weights[name], want[name], rtol=1e-6,
                                           atol=1e-7)


def test_looped_bfs_sums_in_another_order():
    """Its weights do differ in the last bits from the in-order sum (so the tolerance above is
    needed, not slack): with 8 micro-batches some value differs."""
    mode = pslab.Pipeline(stages=2, microbatches=8, schedule="looped-bfs", chunks=2)
    run = pslab.train(mode=mode, steps=3, batch=6, hidden=12, lr=0.3, seed=11)
    want, _ = one_worker(4, 12, 8, 6, 3, 0.3, 11)
    assert any(not torch.equal(run.weights[k], want[k]) for k in want)


def test_two_layers_match_the_parameter_servers_one_worker():
    """At the default depth the pipeline's weights are pslab.train(mode="sync", workers=1,
    accumulate=m)'s, bit for bit: the parameter server's path through the same rows."""
    m, steps = 4, 5
    ps = pslab.train(mode="sync", workers=1, accumulate=m, steps=steps, batch=8, lr=0.4,
                     seed=3, hidden=16)
    for schedule in ("gpipe", "1f1b", "zb-h1"):
        pipe = pslab.train(mode=pslab.Pipeline(stages=2, microbatches=m, schedule=schedule),
                           steps=steps, batch=8, lr=0.4, seed=3, hidden=16)
        for name in ps.weights:
            assert torch.equal(pipe.weights[name], ps.weights[name]), (schedule, name)
        assert [r.loss for r in pipe.history] == [r.loss for r in ps.history]


def test_the_pipeline_learns():
    run = pslab.train(mode=pslab.Pipeline(stages=4, microbatches=8, schedule="1f1b"),
                      steps=30, batch=16, lr=0.5, seed=0)
    assert run.history[-1].loss < 0.6 * run.start_loss
    assert run.final_accuracy > 0.5
