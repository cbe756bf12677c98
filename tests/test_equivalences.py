"""The backbone of pslab's correctness: runs that must end with the same weights.

Two precisions, each tested as claimed (README, "Equivalences"): bit for bit (torch.equal) where
both runs do the same float operations in the same order (async or SSP(huge) with one worker vs
sync, all-reduce vs sync, a resumed run vs the uninterrupted one, processes vs the
simulation); to float round-off where the sums are grouped differently (N gradients of b rows
averaged vs one gradient of N·b rows; k accumulated minibatches vs one of k·b rows): then the
largest difference is within ROUND_OFF of the largest weight (measured: 3-4e-7 after 25-30
updates, a few float32 ulps)."""
import pytest
import torch

import pslab

FREE = pslab.Cluster.free()
ROUND_OFF = 2e-6  # relative to the tensor's largest magnitude; float32's ulp is 1.2e-7


def assert_same_weights(a: pslab.Run, b: pslab.Run, exact: bool = False) -> None:
    assert a.weights.keys() == b.weights.keys() == {"W_h", "b_h", "W_o", "b_o"}
    for name in a.weights:
        if exact:
            assert torch.equal(a.weights[name], b.weights[name]), name
        else:
            x, y = a.weights[name], b.weights[name]
            assert float((x - y).abs().max()) <= ROUND_OFF * float(y.abs().max()), name


@pytest.mark.parametrize("workers", [2, 3, 4])
def test_sync_n_workers_equals_one_worker_with_n_times_the_batch(workers):
    many = pslab.train(mode="sync", workers=workers, batch=16, steps=30, seed=1, cluster=FREE)
    one = pslab.train(mode="sync", workers=1, batch=16 * workers, steps=30, seed=1, cluster=FREE)
    assert_same_weights(many, one)
    # and the runs really trained: the weights moved away from their start
    start = pslab.train(mode="sync", workers=1, batch=16, steps=1, seed=1, lr=1e-12)
    assert not torch.allclose(many.weights["W_h"], start.weights["W_h"], atol=1e-3)


@pytest.mark.parametrize("k", [2, 4])
def test_accumulate_k_equals_batch_k_times_b(k):
    acc = pslab.train(mode="sync", workers=2, accumulate=k, batch=8, steps=25, seed=2)
    big = pslab.train(mode="sync", workers=2, accumulate=1, batch=8 * k, steps=25, seed=2)
    assert_same_weights(acc, big)


def test_async_with_one_worker_equals_sync_with_one_worker():
    a = pslab.train(mode="async", workers=1, steps=40, seed=3)
    s = pslab.train(mode="sync", workers=1, steps=40, seed=3)
    assert_same_weights(a, s, exact=True)
    assert a.makespan == pytest.approx(s.makespan)


def test_ssp_with_a_huge_bound_equals_async():
    cluster = pslab.Cluster(speeds=[1.0, 0.5, 0.8], jitter=0.3)
    a = pslab.train(mode="async", workers=3, steps=20, seed=4, cluster=cluster)
    s = pslab.train(mode=pslab.SSP(20), workers=3, steps=20, seed=4, cluster=cluster)
    assert_same_weights(a, s, exact=True)
    assert a.timeline == s.timeline
    assert a.history == s.history


def test_ssp_bound_is_enforced_and_sits_between_sync_and_async():
    cluster = pslab.Cluster.free(speeds=[1.0, 0.25])
    runs = {s: pslab.train(mode=pslab.SSP(s), workers=2, steps=12, cluster=cluster,
                           numerics=False) for s in (0, 2, 12)}
    for s, run in runs.items():
        # no worker starts push t+s+1 (1-based) before every worker has pushed t
        pushed = {}  # (worker, step) -> time its push ended
        for span in run.timeline:
            if span.kind == "push":
                pushed[span.worker, span.step] = max(span.end, pushed.get((span.worker, span.step), 0))
        for span in run.timeline:
            if span.kind == "fetch" and span.step > s:
                t = span.step - s - 1
                assert all(span.start >= pushed[w, t] - 1e-12 for w in range(2)), (s, span)
    idle = [runs[s].idle_time for s in (0, 2, 12)]
    assert idle[0] > idle[1] > idle[2] == 0.0


def test_async_straggler_gets_stale_sync_never():
    cluster = pslab.Cluster(speeds=[0.5, 1.0, 1.0])
    a = pslab.train(mode="async", workers=3, steps=10, cluster=cluster)
    s = pslab.train(mode="sync", workers=3, steps=10, cluster=cluster)
    # while the fast workers still push, every push of the slow one lands on a moved server
    fast_done = max(r.time for r in a.history if r.worker != 0)
    slow = [r.staleness for r in a.history if r.worker == 0 and r.time < fast_done]
    assert len(slow) >= 4 and min(slow) >= 1 and max(slow) >= 2
    # once it is alone (after the push it fetched for earlier), nothing moves under it
    alone = [r.staleness for r in a.history if r.time > fast_done]
    assert len(slow) + len(alone) == 10 and alone[1:] == [0] * (len(alone) - 1)
    assert s.staleness == [0] * 10
    # async updates once per push, sync once per round
    assert a.updates == 30 and s.updates == 10


def test_async_gradient_is_computed_on_the_weights_fetched():
    """Replaying the async run by hand, push by push, in the order the server applied them,
    each on the weights the worker fetched, gives the server's final weights."""
    from pslab.data import Digits
    from pslab.model import init_params, loss_and_grad

    run = pslab.train(mode="async", workers=2, steps=4, batch=8, lr=0.3, shards=1,
                      cluster=pslab.Cluster(speeds=[1.0, 0.4]))
    data = Digits.load(0)
    w = init_params(64, 32, 10, 0)
    # The server applied pushes in history order; a fetch (one shard, first come first served)
    # saw every update that ended before it started.
    order = [(r.worker, r.step) for r in run.history]
    fetch_version = {}
    for span in run.timeline:
        if span.kind == "fetch":
            done = [u for u in run.timeline if u.kind == "update" and u.end <= span.start]
            fetch_version[span.worker, span.step] = len(done)
    versions = [dict(w)]
    for worker, step in order:
        fetched = versions[fetch_version[worker, step]]
        x, y = data.minibatch(step, worker, 0, 2, 1, 8)
        _, g = loss_and_grad(fetched, x, y)
        current = versions[-1]
        versions.append({n: current[n] - 0.3 * g[n] for n in current})
    for n in w:
        torch.testing.assert_close(versions[-1][n], run.weights[n])
    assert any(fetch_version[k] < i for i, k in enumerate(order)), "no push was stale"
