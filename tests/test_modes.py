"""The classic papers' modes keep the backbone equivalences: Backup(0) == sync, SoftSync(1) ==
async, all-reduce == sync's weights, SSP(0) == BSP (sync's timeline, sync's weights at N·lr),
staleness_lr with one worker == plain; and each refuses bad values by name."""
import warnings

import pytest
import torch

import pslab
from test_equivalences import FREE, assert_same_weights

STRAGGLY = pslab.Cluster(speeds=[1.0, 0.5, 1.0, 0.8], jitter=0.3)
KW = dict(workers=4, steps=20, seed=3, cluster=STRAGGLY)


def test_backup_zero_is_sync_bit_for_bit():
    s, b = pslab.train(mode="sync", **KW), pslab.train(mode=pslab.Backup(0), **KW)
    assert_same_weights(s, b, exact=True)
    assert s.timeline == b.timeline and s.history == b.history and b.dropped == 0


def test_softsync_one_is_async_bit_for_bit():
    a, c = pslab.train(mode="async", **KW), pslab.train(mode=pslab.SoftSync(1), **KW)
    assert_same_weights(a, c, exact=True)
    assert a.timeline == c.timeline and a.history == c.history


def test_softsync_n_is_sync_when_every_worker_is_equal():
    """On equal workers with no network, the N pushes of a step arrive together: SoftSync(N)
    averages exactly sync's groups (without the barrier, which then costs nothing)."""
    s = pslab.train(mode="sync", workers=3, steps=15, seed=1, cluster=FREE)
    c = pslab.train(mode=pslab.SoftSync(3), workers=3, steps=15, seed=1, cluster=FREE)
    assert_same_weights(s, c, exact=True)
    assert c.updates == 15


def test_allreduce_ends_with_sync_weights_and_no_server_rows():
    s, r = pslab.train(mode="sync", **KW), pslab.train(mode="allreduce", **KW)
    assert_same_weights(s, r)  # float tolerance: the gradients are summed in arrival order
    assert r.shard_bytes == [] and r.shards == [] and r.updates == 20
    assert all(sp.worker is not None for sp in r.timeline)  # nothing on a server row
    assert {sp.kind for sp in r.timeline} == {"compute", "push", "fetch", "idle"}


def test_allreduce_time_is_the_ring_formula():
    """Each worker sends 2(N-1)/N of the model in 2(N-1) steps: 2(N-1)(latency + M/(N B))."""
    net = pslab.Cluster(compute_time=1.0, latency=0.001, bandwidth=1e5, update_time=0.5)
    for n in (1, 2, 5):
        run = pslab.train(mode="allreduce", workers=n, steps=3, cluster=net, numerics=False)
        ring = 2 * (n - 1) * (0.001 + 9640 / n / 1e5)
        assert run.makespan == pytest.approx(3 * (1.0 + ring))
        pushes = [sp.duration for sp in run.timeline if sp.kind == "push"]
        assert pushes == pytest.approx([ring / 2] * 3 * n)


def test_ssp_zero_is_bsp_sync_timeline_and_sync_weights_at_n_times_the_lr():
    z = pslab.train(mode=pslab.SSP(0), lr=0.1, **KW)
    s = pslab.train(mode="sync", lr=0.1 * 4, **KW)
    assert_same_weights(z, s, exact=True)
    assert z.timeline == s.timeline and z.updates == 20
    # and SSP(1) applies each push on its own, at the same full lr per gradient
    assert pslab.train(mode=pslab.SSP(1), lr=0.1, **KW).updates == 80


def test_staleness_lr_with_one_worker_is_plain_sgd():
    plain = pslab.train(mode="async", workers=1, steps=30, seed=2)
    aware = pslab.train(mode="async", workers=1, steps=30, seed=2, staleness_lr=True)
    assert_same_weights(plain, aware, exact=True)


def test_staleness_lr_divides_each_push_by_its_staleness():
    """Replay the first stale push by hand: w - lr/τ·g equals the server's step."""
    kw = dict(mode="async", workers=3, steps=4, lr=0.3, shards=1, seed=0,
              cluster=pslab.Cluster(speeds=[1.0, 0.4, 0.7]))
    plain, aware = pslab.train(**kw), pslab.train(staleness_lr=True, **kw)
    assert aware.history[:3] != [] and max(aware.staleness) >= 2
    assert [r.staleness for r in plain.history] == [r.staleness for r in aware.history]
    assert not torch.equal(plain.weights["W_h"], aware.weights["W_h"])


def test_backup_drops_the_late_pushes_and_the_late_workers_go_on():
    run = pslab.train(mode=pslab.Backup(1), **KW)
    dropped = [sp for sp in run.timeline if sp.kind == "push" and sp.note == "dropped"]
    assert run.dropped == 20  # one late push per round
    assert run.updates == 20 and all(r.staleness == 0 for r in run.history)
    # a dropped push is never applied: it ends after its round closed, and its worker idles
    # for nothing: its next fetch starts when the push ends
    for sp in dropped:
        closed = min(u.start for u in run.timeline if u.kind == "update" and u.step == sp.step)
        assert sp.start >= closed - 1e-12
        nxt = [f.start for f in run.timeline if f.kind == "fetch" and f.worker == sp.worker
               and f.step == sp.step + 1]
        assert all(t >= sp.end - 1e-12 for t in nxt)


def test_softsync_groups_c_pushes_per_update():
    run = pslab.train(mode=pslab.SoftSync(2), **KW)
    assert run.updates == 4 * 20 // 2 and len(run.push_staleness) == 80
    assert run.barrier_time == 0.0  # no barrier


def test_two_kinds_of_waiting_are_told_apart():
    busy = pslab.Cluster(latency=0.01, bandwidth=2e4, update_time=0.0)
    a = pslab.train(mode="async", workers=8, steps=5, shards=1, cluster=busy, numerics=False)
    assert a.queue_time > 0 and a.barrier_time == 0.0  # async never waits for a worker
    assert a.queue_time == pytest.approx(a.idle_time)
    s = pslab.train(mode="sync", workers=3, steps=5, numerics=False,
                    cluster=pslab.Cluster.free(speeds=[1, 1, 0.5]))
    assert s.idle_time > 0 and s.queue_time == 0.0
    assert s.barrier_time == pytest.approx(s.idle_time)
    assert {sp.note for sp in a.timeline + s.timeline if sp.kind == "idle"} <= {"queue", "barrier"}


def test_model_bytes_changes_the_timing_not_the_numbers():
    big = pslab.Cluster(model_bytes=160e6, bandwidth=16e9, latency=0.0, update_time=0.0)
    run = pslab.train(mode="sync", workers=1, steps=3, shards=4, cluster=big)
    ref = pslab.train(mode="sync", workers=1, steps=3, shards=4, cluster=FREE)
    assert_same_weights(run, ref, exact=True)
    assert sum(run.shard_bytes) == pytest.approx(160e6, abs=4)
    fetch = [sp.duration for sp in run.timeline if sp.kind == "fetch" and sp.step == 0]
    assert fetch == pytest.approx([b / 16e9 for b in run.shard_bytes])


def test_colocated_shard_moves_nothing_for_its_own_worker():
    net = pslab.Cluster(latency=0.0, bandwidth=1e4, update_time=0.0, colocated=True)
    run = pslab.train(mode="sync", workers=3, steps=1, shards=1, cluster=net, numerics=False)
    fetch = {sp.worker: sp.duration for sp in run.timeline if sp.kind == "fetch"}
    assert fetch[0] == 0.0 and fetch[1] == pytest.approx(9640 / 1e4)


def test_a_diverged_run_says_so_once_and_still_returns():
    with pytest.warns(RuntimeWarning, match="diverged.*learning rate 0.5 is too large for this "
                                            "much staleness") as caught:
        run = pslab.train(mode="async", workers=8, steps=50)
    assert len(caught) == 1
    assert run.diverged and "DIVERGED" in repr(run) and "grew to" in run.divergence
    assert run.complete and run.weights
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a healthy run warns nothing
        ok = pslab.train(mode="async", workers=8, steps=50, staleness_lr=True)
    assert not ok.diverged and "DIVERGED" not in repr(ok)
    assert not pslab.train(mode="async", workers=8, steps=5, numerics=False).diverged


@pytest.mark.parametrize("make, match", [
    (lambda: pslab.train(mode=pslab.Backup(3), workers=3, steps=1), "b < workers"),
    (lambda: pslab.Backup(-1), "b"),
    (lambda: pslab.SoftSync(0), "c"),
    (lambda: pslab.SoftSync(1.5), "c"),
    (lambda: pslab.train(mode=pslab.SoftSync(4), workers=3, steps=1), "c to divide"),
    (lambda: pslab.Cluster(model_bytes=-1), "model_bytes"),
    (lambda: pslab.Cluster(model_bytes=0), "model_bytes"),
    (lambda: pslab.Cluster(colocated=1), "colocated"),
    (lambda: pslab.train(staleness_lr=1, steps=1), "staleness_lr"),
    (lambda: pslab.train(mode="ring", steps=1), "allreduce"),
])
def test_bad_values_are_refused_by_name(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_allreduce_timeline_draws_with_the_same_plots():
    from pslab.drawing.export import tikz
    from pslab.drawing.timeline_plot import plot_timeline

    run = pslab.train(mode="allreduce", workers=3, steps=4, numerics=False,
                      cluster=pslab.Cluster(speeds=[1.0, 0.5, 1.0]))
    fig = plot_timeline(run)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == ["G0", "G1", "G2"]  # no server rows: there is no server
    assert run.barrier_time > 0 and run.queue_time == 0.0  # the fast wait for G2, no queue
    assert "\\draw" in tikz(run)


@pytest.mark.parametrize("make, name", [(pslab.SSP, "s"), (pslab.Backup, "b"),
                                        (pslab.SoftSync, "c")])
def test_a_mode_checks_its_own_bound_when_made(make, name):
    """One place per rule: a bound beyond any run is refused by the mode itself, before train;
    what needs the run (b < workers, c dividing the pushes) is checked when train has it."""
    with pytest.raises(ValueError, match=f"^{name} .* from [01] to 1000000000"):
        make(10**30)
    assert make(10**9).name == f"{make.__name__}({10**9})"
