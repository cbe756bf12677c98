"""Figure 003: NAS by REINFORCE on the parameter server — determinism, the K=1, m=1
equivalence with a hand-written REINFORCE loop, the three tiers' timing, validation."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import pslab
from pslab.nas import child, controller
from pslab.nas.space import Space

SMALL = dict(steps=20)  # children train 20 minibatches: the tests' searches take a second


def _same(a, b) -> bool:
    return (a.timeline == b.timeline and a.samples == b.samples and a.history == b.history
            and torch.equal(a.theta, b.theta))


def test_same_seed_same_search_bit_for_bit_and_the_cache_changes_nothing():
    child.clear_cache()
    first = pslab.nas.search(seed=3, rounds=4, **SMALL)
    assert first.trained > 0
    child.clear_cache()
    fresh = pslab.nas.search(seed=3, rounds=4, **SMALL)  # every child trained again
    cached = pslab.nas.search(seed=3, rounds=4, **SMALL)  # every child from the cache
    assert cached.trained == 0 and fresh.trained == first.trained
    assert _same(first, fresh) and _same(first, cached)
    other = pslab.nas.search(seed=4, rounds=4, **SMALL)
    assert [s.arch for s in other.samples] != [s.arch for s in first.samples]
    assert not torch.equal(other.theta, first.theta)


def _log_policy(theta: dict, space: Space, choices) -> torch.Tensor:
    """log π(child) written directly with log_softmax (autograd does the gradient)."""
    names = ["depth"] + [f"{kind}{layer}" for layer in range(1, space.depths[choices[0]] + 1)
                         for kind in ("width", "act")]
    return sum(torch.log_softmax(theta[n], 0)[c] for n, c in zip(names, choices))


@pytest.mark.parametrize("cube", [True, False])
def test_one_controller_one_child_is_a_plain_sequential_reinforce_loop(cube):
    lr, rounds, seed, decay = 1.5, 8, 5, 0.8
    result = pslab.nas.search(servers=3, controllers=1, children=1, rounds=rounds, seed=seed,
                              lr=lr, cube=cube, decay=decay, **SMALL)
    space, budget = Space(), child.Budget(steps=20)  # batch 96, lr 0.3: the defaults
    theta = {n: torch.zeros(shape) for n, shape in space.shapes.items()}
    baseline, archs = None, []
    for r in range(rounds):
        rng = np.random.default_rng([seed, 11, 0, r])  # the replica's stream for round r
        choices = controller.sample(controller.cdfs(theta, space), space, rng)
        arch = space.arch(choices)
        archs.append(arch)
        acc = child.train(arch, seed, budget)  # no cache
        reward = acc ** 3 if cube else acc
        baseline = reward if baseline is None else baseline
        advantage = reward - baseline
        baseline = decay * baseline + (1 - decay) * reward
        leaves = {n: t.clone().requires_grad_() for n, t in theta.items()}
        (-advantage * _log_policy(leaves, space, choices)).backward()
        theta = {n: (t - lr * t.grad).detach() if t.grad is not None else t.detach()
                 for n, t in leaves.items()}  # decisions not made get no gradient
    assert [s.arch for s in result.samples] == archs
    flat = torch.cat([theta[n] for n in space.shapes])
    assert torch.allclose(result.theta, flat, atol=1e-6), (result.theta - flat).abs().max()
    assert result.staleness == [0] * rounds  # one replica never works on stale Θ
    assert not torch.equal(flat, torch.zeros_like(flat))  # it did learn something


@pytest.mark.parametrize("kwargs, name", [
    (dict(servers=0), "servers"), (dict(servers=34), "servers"), (dict(controllers=0),
                                                                   "controllers"),
    (dict(children=0), "children"), (dict(rounds=0), "rounds"), (dict(rounds=2.5), "rounds"),
    (dict(lr=float("nan")), "lr"), (dict(lr=float("inf")), "lr"), (dict(lr=-1.0), "lr"),
    (dict(seed=-1), "seed"), (dict(mode="bsp"), "mode"), (dict(numerics="yes"), "numerics"),
    (dict(space={"widths": []}), "widths"),
    (dict(space={"depths": [0]}), "depths"), (dict(space={"activations": ["gelu"]}),
                                               "activations"),
    (dict(space={"width": [2]}), "space"), (dict(space=[1, 2]), "space"),
    (dict(steps=0), "steps"), (dict(batch=10 ** 6), "batch"), (dict(decay=1.0), "decay"),
    (dict(cluster="fast"), "cluster"), (dict(policy="gru"), "policy"),
    (dict(policy="lstm", servers=3218), "servers"), (dict(cluster=pslab.Cluster(speeds=[1, 2])), "speeds"),
])
def test_bad_arguments_raise_before_any_work(kwargs, name):
    trained = child.stats["trained"]
    with pytest.raises(ValueError, match=name):
        pslab.nas.search(**kwargs)
    assert child.stats["trained"] == trained


def test_random_search_rejects_bad_arguments_too():
    with pytest.raises(ValueError, match="controllers"):
        pslab.nas.random_search(controllers=0)
    with pytest.raises(ValueError, match="children"):
        pslab.nas.random_search(children=-2)


def test_timing_only_trains_nothing_and_keeps_the_three_tiers():
    trained = child.stats["trained"]
    r = pslab.nas.search(servers=4, controllers=5, children=3, rounds=3, numerics=False)
    assert child.stats["trained"] == trained and r.theta is None and r.best == []
    assert np.isnan(r.rewards).all() and r.rewards.shape == (5, 3)
    assert len(r.samples) == 5 * 3 * 3 and len(r.history) == 5 * 3
    assert {r.tier(s) for s in r.timeline} == {"servers", "controllers", "children"}
    assert r.makespan == max(s.end for s in r.timeline)


def test_children_take_time_by_size_and_each_replica_waits_for_all_its_children():
    cluster = pslab.Cluster(compute_time=0.01, latency=0.0, bandwidth=float("inf"),
                            update_time=0.0)
    r = pslab.nas.search(controllers=2, children=3, rounds=3, cluster=cluster, numerics=False)
    for s in r.samples:  # steps x seconds per reference step x relative FLOPs
        assert math.isclose(s.end - s.start, 50 * 0.01 * child.relative_cost(s.arch))
    assert child.relative_cost(((64, "relu"), (64, "relu"))) > child.relative_cost(
        ((8, "relu"),))
    for k in range(2):
        for rnd in range(3):
            last = max(s.end for s in r.samples if s.controller == k and s.round == rnd)
            push = min(s.start for s in r.timeline if s.worker == k and s.kind == "push"
                       and s.step == rnd)
            assert push == last  # the gradient leaves when the slowest child is done


def test_shards_serve_one_job_at_a_time_and_hold_theta_by_key_range():
    r = pslab.nas.search(servers=3, controllers=4, children=2, rounds=3, numerics=False)
    assert r.layout.ranges == ((0, 11), (11, 22), (22, 33))  # 33 logits, near-equal ranges
    for s in range(3):
        jobs = sorted((sp.start, sp.end) for sp in r.timeline if sp.shard == s)
        # every replica pulls and pushes every shard once per round; each push is one update
        assert len(jobs) == 4 * 3 * 3
        assert all(b0 >= a1 - 1e-12 for (_, a1), (b0, _) in zip(jobs, jobs[1:]))


def test_async_replicas_work_on_stale_theta_and_sync_rounds_do_not():
    cluster = pslab.Cluster(jitter=0.3)
    a = pslab.nas.search(controllers=4, rounds=4, cluster=cluster, **SMALL)
    s = pslab.nas.search(controllers=4, rounds=4, cluster=cluster, mode="sync", **SMALL)
    assert len(a.history) == 16 and max(a.staleness) > 0
    assert [u.version for u in a.history] == list(range(1, 17))
    assert len(s.history) == 4 and s.staleness == [0] * 4
    for rnd in range(1, 4):  # all replicas start a sync round together, after the update
        starts = {sp.start for sp in s.timeline if sp.kind == "fetch" and sp.step == rnd
                  and sp.shard == 0 and sp.worker is not None}
        assert min(starts) == s.history[rnd - 1].time


def test_more_shards_relieve_a_loaded_server():
    slow = pslab.Cluster(compute_time=0.01, latency=0.001, bandwidth=1e3, update_time=1.0)
    spans = [pslab.nas.search(servers=S, controllers=20, children=2, rounds=3, cluster=slow,
                              numerics=False).makespan for S in (1, 4, 16)]
    assert spans[0] > spans[1] > spans[2]


def test_random_search_spends_the_same_budget_and_starts_where_reinforce_starts():
    r = pslab.nas.search(seed=1, rounds=3, **SMALL)
    b = pslab.nas.random_search(seed=1, rounds=3, **SMALL)
    assert len(b.samples) == len(r.samples) == 3 * 2 * 3
    first = lambda res: [s.arch for s in res.samples if s.round == 0]  # noqa: E731
    assert first(b) == first(r)  # round 0 of REINFORCE samples the uniform policy too
    assert b.history == [] and b.theta is None and b.method == "random"


def test_reinforce_raises_the_mean_reward_over_seeds():
    rises = []
    for seed in range(3):
        c = pslab.nas.search(seed=seed, rounds=10).curve
        rises.append(c[-3:].mean() - c[:3].mean())
    assert all(x > 0 for x in rises), rises
    assert np.mean(rises) > 0.1


def test_best_lists_distinct_architectures_best_first():
    r = pslab.nas.search(seed=2, rounds=5, **SMALL)
    accs = [f.accuracy for f in r.best]
    assert accs == sorted(accs, reverse=True)
    assert len({f.arch for f in r.best}) == len(r.best)
    assert sum(f.times for f in r.best) == len(r.samples)
    assert r.best[0].accuracy == max(s.accuracy for s in r.samples)


def test_each_child_replica_has_its_own_speed():
    speeds = [1.0, 0.5, 1.0, 1.0]  # K=2 x m=2 child replicas; C0.1 computes at half speed
    cluster = pslab.Cluster(compute_time=0.01, speeds=speeds, latency=0.0,
                            bandwidth=float("inf"), update_time=0.0)
    r = pslab.nas.search(controllers=2, children=2, rounds=3, cluster=cluster, numerics=False)
    for s in r.samples:
        slow = 2.0 if (s.controller, s.child) == (0, 1) else 1.0
        assert math.isclose(s.end - s.start, slow * 50 * 0.01 * child.relative_cost(s.arch))


def test_one_lstm_controller_one_child_is_reinforce_through_torch_lstmcell():
    """The paper's controller, checked against torch.nn.LSTMCell run on Θ's weights: the same
    children sampled, the same Θ after 6 sequential REINFORCE steps."""
    from torch.func import functional_call

    from pslab.nas import lstm

    lr, rounds, seed, decay, hidden = 3.0, 6, 2, 0.8, lstm.HIDDEN
    result = pslab.nas.search(servers=4, controllers=1, children=1, rounds=rounds, seed=seed,
                              lr=lr, decay=decay, policy="lstm", **SMALL)
    space, budget = Space(), child.Budget(steps=20)
    theta = lstm.init(space, seed)
    cell = torch.nn.LSTMCell(hidden, hidden)  # gates in torch's order i, f, g, o
    baseline, archs = None, []
    for r in range(rounds):
        rng = np.random.default_rng([seed, 11, 0, r])
        leaves = {n: t.clone().requires_grad_() for n, t in theta.items()}
        weights = {"weight_ih": leaves["W_ih"], "weight_hh": leaves["W_hh"],
                   "bias_ih": leaves["b"], "bias_hh": torch.zeros(4 * hidden)}
        state = (torch.zeros(1, hidden), torch.zeros(1, hidden))
        x, names, choices, logp = leaves["start"], ["depth"], [], 0.0
        while names:
            name = names.pop(0)
            state = functional_call(cell, weights, (x.unsqueeze(0), state))
            logits = leaves[f"{name}.W"] @ state[0][0] + leaves[f"{name}.b"]
            cdf = np.cumsum(torch.softmax(logits, 0).detach().double().numpy())
            token = int(min(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"),
                            len(cdf) - 1))
            choices.append(token)
            logp = logp + torch.log_softmax(logits, 0)[token]
            x = leaves[f"{name}.embed"][token]
            if name == "depth":
                names = space.decisions(space.depths[token])[1:]
        archs.append(space.arch(choices))
        reward = child.train(archs[-1], seed, budget) ** 3
        baseline = reward if baseline is None else baseline
        advantage = reward - baseline
        baseline = decay * baseline + (1 - decay) * reward
        grads = torch.autograd.grad(-advantage * logp, list(leaves.values()),
                                    allow_unused=True)
        theta = {n: t.detach() - lr * g if g is not None else t.detach()
                 for (n, t), g in zip(leaves.items(), grads)}
    assert [s.arch for s in result.samples] == archs
    flat = torch.cat([theta[n].reshape(-1) for n in lstm.shapes(space)])
    assert torch.allclose(result.theta, flat, atol=1e-5), (result.theta - flat).abs().max()
    assert result.favourite() == lstm.greedy(result.parameters(), space)
    start = torch.cat([t.reshape(-1) for t in lstm.init(space, seed).values()])
    assert (flat - start).abs().max() > 1e-3  # the controller did move


def test_search_and_random_search_take_the_same_arguments():
    import inspect

    from pslab import nas

    params = inspect.signature(nas.search).parameters
    assert params.keys() == inspect.signature(nas.random_search).parameters.keys()
    # and the same defaults: a call that leaves one out means the same to both
    assert {k: p.default for k, p in params.items()} == \
        {k: p.default for k, p in inspect.signature(nas.random_search).parameters.items()}
    kw = dict(servers=3, controllers=2, children=2, rounds=2, seed=1, lr=2.0, mode="sync",
              numerics=False, cube=True, decay=0.5, policy="lstm")
    assert nas.random_search(**kw).settings.servers == nas.search(**kw).settings.servers == 3
    with pytest.raises(ValueError, match="mode"):  # checked the same way too
        nas.random_search(mode="bogus")


def test_random_search_is_uniform_whatever_controller_it_stands_beside():
    """The learning controller's arguments are kept in the config but change nothing a random
    search does (as its docstring says): the same children, the same timeline; with
    policy="lstm" too (it samples uniformly, not from the LSTM's random initial policy)."""
    base = pslab.nas.random_search(seed=0, rounds=2)
    for kw in (dict(servers=3), dict(mode="sync"), dict(lr=2.0, cube=True, decay=0.8),
               dict(policy="lstm")):
        other = pslab.nas.random_search(seed=0, rounds=2, **kw)
        assert other.samples == base.samples and other.timeline == base.timeline, kw
        assert all(getattr(other.settings, k) == v for k, v in kw.items())
