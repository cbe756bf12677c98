"""Data parallelism around the pipeline: d replicas, each running m micro-batches of its own,
their gradients ring-all-reduced at the flush over the Cluster's links.

Weights, after every step: one worker accumulating the step's d·m micro-batches, to float
round-off (the all-reduce adds the d replicas' sums, one worker adds d·m terms in a row: another
grouping),
tested at rtol 1e-6 / atol 1e-7 and shown not to be bit for bit; bit for bit when m = 1 (the
grouping is then the one worker's own order). Time: each replica's pipeline as alone, then per
stage the replicas meet, 2(d−1)·(latency + bytes/(d·bandwidth)) of ring, then the update."""
from __future__ import annotations

import random

import pytest
import torch

import pslab
from pslab.allreduce import ring_time
from test_pipeline_sgd import cases as sgd_cases
from test_pipeline_sgd import one_worker


def cases():
    """test_pipeline_sgd's seeded (schedule, p, m, v, layers), each with a seeded d of 2-4."""
    rng = random.Random(30)
    return [(schedule, p, m, v, layers, rng.randint(2, 4))
            for schedule, p, m, v, layers in sgd_cases()]


def run_of(schedule, p, m, v, d, layers=None, steps=3, **kw):
    layers = layers or max(2, p * v)
    mode = pslab.Pipeline(stages=p, microbatches=m, schedule=schedule, chunks=v, layers=layers,
                          replicas=d)
    return pslab.train(mode=mode, steps=steps, batch=6, hidden=12, lr=0.3, seed=11, **kw), layers


@pytest.mark.parametrize("schedule,p,m,v,layers,d", cases())
def test_weights_after_each_step_equal_one_worker_accumulating_d_times_m(schedule, p, m, v,
                                                                         layers, d):
    """After step t = 1, 2, 3 (a run of t steps: each step's micro-batches come from the seed
    and the step's number only, so a shorter run is a longer one's start)."""
    for steps in (1, 2, 3):
        run, layers = run_of(schedule, p, m, v, d, layers, steps)
        want, scores = one_worker(layers, 12, d * m, 6, steps, 0.3, 11)
        assert list(run.weights) == list(want) and run.workers == d * p
        for k in want:
            torch.testing.assert_close(run.weights[k], want[k], rtol=1e-6, atol=1e-7)
        if m == 1:
            assert all(torch.equal(run.weights[k], want[k]) for k in want), steps
            assert [(r.loss, r.accuracy) for r in run.history] == scores
        fewer, _ = one_worker(layers, 12, m, 6, steps, 0.3, 11)  # one replica's m: far off
        assert any(not torch.allclose(run.weights[k], fewer[k], rtol=1e-4, atol=1e-5)
                   for k in want)


def test_the_grouping_is_round_off_not_bits():
    run, layers = run_of("1f1b", 2, 4, 1, 2)
    want, _ = one_worker(layers, 12, 8, 6, 3, 0.3, 11)
    assert not all(torch.equal(run.weights[k], want[k]) for k in want)


@pytest.mark.parametrize("schedule,p,m,v,layers,d", cases())
def test_on_free_links_replicas_keep_the_pipelines_step_and_bubbles(schedule, p, m, v, layers,
                                                                    d):
    mode = dict(stages=p, microbatches=m, schedule=schedule, chunks=v, layers=layers,
                times=(1.0, 2.0, 1.0))
    one = pslab.train(mode=pslab.Pipeline(**mode), steps=1, numerics=False,
                      cluster=pslab.Cluster.free())
    many = pslab.train(mode=pslab.Pipeline(**mode, replicas=d), steps=1, numerics=False,
                       cluster=pslab.Cluster.free())
    assert many.step_time == one.step_time and many.span == one.span
    assert many.bubble_share == pytest.approx(one.bubble_share, abs=1e-12)
    assert many.activations == one.activations * d
    assert not {s.kind for s in many.timeline} & {"reduce-scatter", "all-gather"}


def test_the_flush_all_reduces_each_stage_over_the_links_exactly():
    """Unit times, latency L and bandwidth B: the step is the pipeline's span, then the
    slowest stage's ring 2(d−1)(L + bytes/(d·B)), then its update."""
    p, m, d = 4, 8, 3
    cluster = pslab.Cluster(compute_time=1.0, latency=0.01, bandwidth=2e5, update_time=0.0)
    one = pslab.train(mode=pslab.Pipeline(stages=p, microbatches=m, times=(1, 2, 1)),
                      steps=2, numerics=False, cluster=cluster)
    run = pslab.train(mode=pslab.Pipeline(stages=p, microbatches=m, times=(1, 2, 1),
                                          replicas=d), steps=2, numerics=False, cluster=cluster)
    ends = [max(o.end for o in one.ops if o.rank == r) for r in range(p)]
    rings = [2 * (d - 1) * (0.01 + b / d / 2e5) for b in run.param_bytes]
    assert rings == [ring_time(cluster, d, b) for b in run.param_bytes]
    assert run.step_time == pytest.approx(max(e + g for e, g in zip(ends, rings)), rel=1e-12)
    for w in range(d * p):
        spans = [s for s in run.timeline if s.worker == w and s.step == 0]
        rs = [s for s in spans if s.kind == "reduce-scatter"]
        ag = [s for s in spans if s.kind == "all-gather"]
        assert len(rs) == len(ag) == 1
        assert rs[0].start == pytest.approx(ends[w % p]) and \
            ag[0].end - rs[0].start == pytest.approx(rings[w % p])
    assert run.makespan == pytest.approx(2 * run.step_time)


def test_a_slow_replica_makes_the_others_wait_at_the_barrier():
    p, d = 2, 2
    speeds = [1.0, 1.0, 0.5, 0.5]  # replica 1 (workers 2, 3) at half speed
    run = pslab.train(mode=pslab.Pipeline(stages=p, microbatches=4, times=(1, 2, 1),
                                          replicas=d), steps=1, numerics=False,
                      cluster=pslab.Cluster.free(speeds=speeds))
    busy = run.busy()
    assert busy[2] == 2 * busy[0] and busy[3] == 2 * busy[1]
    waits = [sum(s.duration for s in run.timeline if s.worker == w and s.note == "barrier")
             for w in range(d * p)]
    assert waits[0] > 0 and waits[1] > 0 and waits[2] == waits[3] == 0
    for w in range(d * p):  # every worker's time adds up to the step
        assert sum(s.duration for s in run.timeline if s.worker == w) == \
            pytest.approx(run.step_time)


def test_replicas_are_checked_by_name():
    with pytest.raises(ValueError, match="replicas"):
        pslab.Pipeline(stages=2, microbatches=2, replicas=0)
    with pytest.raises(ValueError, match="replicas"):
        pslab.Pipeline(stages=2, microbatches=2, replicas=65)
    with pytest.raises(ValueError, match="speeds"):
        pslab.train(mode=pslab.Pipeline(stages=2, microbatches=2, replicas=2), steps=1,
                    cluster=pslab.Cluster(speeds=[1, 1]))
