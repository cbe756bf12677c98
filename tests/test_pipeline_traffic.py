"""Two claims of notebook 08 and docs/pipelines.md: without `times` each stage's compute is its
share of the MLP's forward FLOPs (in·out per layer) of the Cluster's compute_time, with
F : B : W = 1 : 2 : 1; and a step's bytes per rank are 2·m·b·h·4 for a pipeline against
(2m + 1)·4Ψ·(N − 1)/N for ZeRO-3, whose clock gathers the weights twice per micro-batch.
Sums of a few floats: equal to round-off (rel 1e-12), the byte counts exactly."""
from __future__ import annotations

import random

import pytest

import pslab
from pslab.pipeline.simulated import durations
from pslab.pipeline.traffic import compare


def cases():
    rng = random.Random(308)
    out = []
    while len(out) < 12:
        p, v = rng.randint(1, 4), rng.choice([1, 2])
        out.append((p, v, p * v * rng.randint(1, 3), rng.choice([8, 32, 100])))
    return out


@pytest.mark.parametrize("p,v,layers,hidden", cases())
def test_each_stage_computes_its_share_of_the_flops(p, v, layers, hidden):
    schedule = "interleaved-1f1b" if v > 1 else "1f1b"
    pipe = pslab.Pipeline(stages=p, microbatches=2 * p, schedule=schedule, chunks=v,
                          layers=max(layers, 2))
    cluster = pslab.Cluster(compute_time=0.3)
    got = durations(pipe, cluster, hidden)
    widths = [64] + [hidden] * (pipe.layers - 1) + [10]
    flops = [a * b for a, b in zip(widths, widths[1:])]
    per = pipe.layers // (p * v)
    for k in range(p * v):
        share = sum(flops[k * per:(k + 1) * per]) / sum(flops)
        f = got[(k, "F")]
        assert f == pytest.approx(0.3 * share / 3, rel=1e-12)
        assert (got[(k, "B")], got[(k, "W")], got[(k, "I")]) == (2 * f, f, f)
    assert sum(got[(k, "F")] + got[(k, "B")] for k in range(p * v)) == \
        pytest.approx(0.3, rel=1e-12)


def test_the_first_stage_costs_the_most_and_a_run_spends_it():
    """64 pixels in, 32 wide: layer 0 is 64·32, the others 32·32 and 32·10, so rank 0 of a
    2-stage, 4-layer MLP is busy longest; a timing-only step over free links spends m·(F + B)
    on each rank."""
    pipe = pslab.Pipeline(stages=2, microbatches=4, layers=4)
    run = pslab.train(mode=pipe, steps=1, numerics=False, hidden=32,
                      cluster=pslab.Cluster.free(compute_time=0.3))
    got = durations(pipe, pslab.Cluster(compute_time=0.3), 32)
    assert got[(0, "F")] > got[(1, "F")]
    want = [4 * (got[(k, "F")] + got[(k, "B")]) for k in range(2)]
    assert run.busy() == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("m,ranks", [(1, 2), (4, 4), (8, 4), (3, 8)])
def test_the_bytes_a_step_against_zero3(m, ranks):
    psi, rows, width = 1_000_003, 96, 40
    pp, z3 = compare(params=psi, ranks=ranks, micro=m, rows=rows, width=width, bandwidth=1e9)
    assert pp.sent == 2 * m * rows * width * 4
    assert z3.sent == (2 * m + 1) * 4 * psi * (ranks - 1) / ranks
    assert pp.seconds == pp.sent / 1e9 and z3.seconds == z3.sent / 1e9


@pytest.mark.parametrize("m", [1, 3, 8])
def test_zero3_on_the_clock_gathers_twice_per_micro_batch(m):
    run = pslab.train(mode=pslab.ZeRO(3), workers=4, accumulate=m, steps=2, numerics=False)
    for worker in range(4):
        gathers = [s for s in run.timeline if s.worker == worker and s.kind == "all-gather"]
        assert len(gathers) == 2 * 2 * m
