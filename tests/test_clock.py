"""Virtual time: figure 001 from its table, queueing on shards, determinism, timing-only runs."""
import math

import pytest
import torch

import pslab

# Figure 001's table: compute durations of GPU0..GPU3, step 1 and step 2.
TABLE = [[2.8, 3.7], [4.0, 2.8], [3.2, 3.2], [3.0, 4.0]]


def figure001(update_time: float = 0.0) -> tuple[pslab.Run, pslab.Run]:
    cluster = pslab.Cluster.free(durations=TABLE) if update_time == 0 else pslab.Cluster(
        durations=TABLE, latency=0, bandwidth=math.inf, update_time=update_time)
    # one shard: the whole model is updated in one block, as the figure draws it
    every = pslab.train(mode="sync", workers=4, steps=2, accumulate=1, shards=1, cluster=cluster)
    twice = pslab.train(mode="sync", workers=4, steps=1, accumulate=2, shards=1, cluster=cluster)
    return every, twice


def test_figure001_makespan_and_idle_are_what_the_table_implies():
    every, twice = figure001()
    steps = list(zip(*TABLE))
    # update every step: each step waits for its slowest GPU
    assert every.makespan == pytest.approx(sum(max(s) for s in steps))  # 4.0 + 4.0
    assert every.idle_time == pytest.approx(sum(max(s) - d for s in steps for d in s))  # 5.3
    # accumulate two steps: one wait, for the slowest sum
    sums = [sum(row) for row in TABLE]
    assert twice.makespan == pytest.approx(max(sums))  # 7.0
    assert twice.idle_time == pytest.approx(sum(max(sums) - s for s in sums))  # 1.3
    assert (every.makespan, round(every.idle_time, 9)) == (8.0, 5.3)
    assert (twice.makespan, round(twice.idle_time, 9)) == (7.0, 1.3)
    assert every.updates == 2 and twice.updates == 1


def test_figure001_with_the_drawn_sync_block():
    every, twice = figure001(update_time=1.0)
    assert every.makespan == pytest.approx(10.0) and twice.makespan == pytest.approx(8.0)
    # step 2 starts on every GPU when the first sync (4.0 .. 5.0) ends
    second = sorted(s.start for s in every.timeline if s.kind == "compute" and s.step == 1)
    assert second == pytest.approx([5.0] * 4)
    # the accumulating GPUs run their two minibatches back to back, no fetch in between
    gpu1 = [t for s in twice.timeline if s.kind == "compute" and s.worker == 0
            for t in (s.start, s.end)]
    assert gpu1 == pytest.approx([0.0, 2.8, 2.8, 6.5])


def test_timeline_covers_every_worker_without_overlap():
    run = pslab.train(mode="sync", workers=3, steps=5, cluster=pslab.Cluster(jitter=0.2))
    for w in range(3):
        # a worker's own blocks (compute, idle) never overlap; its transfers may run in parallel
        spans = sorted((s.start, s.end) for s in run.timeline
                       if s.worker == w and s.kind in ("compute", "idle"))
        assert all(a[1] <= b[0] + 1e-12 for a, b in zip(spans, spans[1:]))
    assert {s.kind for s in run.timeline} == set(pslab.KINDS)
    assert run.makespan == max(s.end for s in run.timeline)
    times = [r.time for r in run.history]
    assert times == sorted(times) and times[-1] == run.makespan


@pytest.mark.parametrize("links", ["duplex", "one-at-a-time"])
def test_shards_queue_transfers_so_their_number_matters(links):
    """Many workers pushing at once queue on a shard: more shards, shorter sync rounds."""
    slow_net = pslab.Cluster(latency=0.01, bandwidth=2e4, update_time=0.0, links=links)
    one = pslab.train(mode="sync", workers=8, steps=3, shards=1, cluster=slow_net, numerics=False)
    four = pslab.train(mode="sync", workers=8, steps=3, shards=4, cluster=slow_net,
                       numerics=False)
    assert four.makespan < one.makespan
    # on one shard, no two transfers ever overlap: either way (one at a time), or in one
    # direction (duplex: the fetches apart, the pushes apart)
    lines = ["fetch", "push"] if links == "duplex" else [("fetch", "push", "update")]
    for kinds in lines:
        jobs = sorted((s.start, s.end) for s in one.timeline if s.shard == 0 and s.kind in kinds)
        assert all(a[1] <= b[0] + 1e-12 for a, b in zip(jobs, jobs[1:]))
    both = sorted((s.start, s.end) for s in one.timeline if s.shard == 0 and s.kind != "update")
    overlapped = any(a[1] > b[0] + 1e-12 for a, b in zip(both, both[1:]))
    assert overlapped == (links == "duplex")  # a fetch and a push at once: duplex only
    # a model transfer costs latency + bytes / bandwidth
    fetch = next(s for s in one.timeline if s.kind == "fetch")
    assert fetch.duration == pytest.approx(0.01 + one.shard_bytes[0] / 2e4)


def test_same_seed_same_run_other_seed_differs():
    kw = dict(mode="async", workers=3, steps=8, cluster=pslab.Cluster(jitter=0.3))
    a, b, c = pslab.train(seed=5, **kw), pslab.train(seed=5, **kw), pslab.train(seed=6, **kw)
    assert a.timeline == b.timeline and a.history == b.history
    assert all(torch.equal(a.weights[n], b.weights[n]) for n in a.weights)
    assert a.timeline != c.timeline and a.history != c.history
    assert not torch.equal(a.weights["W_h"], c.weights["W_h"])


def test_timing_only_run_has_the_same_timeline():
    kw = dict(mode=pslab.SSP(1), workers=4, steps=6, cluster=pslab.Cluster(jitter=0.2, speeds=[1, 1, 0.5, 2]))
    real, fast = pslab.train(**kw), pslab.train(numerics=False, **kw)
    assert real.timeline == fast.timeline
    assert [r.staleness for r in real.history] == [r.staleness for r in fast.history]
    assert fast.weights == {} and all(math.isnan(r.loss) for r in fast.history)


def test_default_sync_training_learns_the_digits():
    run = pslab.train(mode="sync")
    assert run.final_accuracy >= 0.90
    assert run.history[-1].loss < run.history[0].loss / 2


def test_an_interrupted_run_keeps_what_it_computed(monkeypatch):
    from pslab import simulation

    real = simulation.Simulation.round_applied

    def stop_after_three(self, step):
        if step == 3:
            raise KeyboardInterrupt
        real(self, step)

    monkeypatch.setattr(simulation.Simulation, "round_applied", stop_after_three)
    with pytest.warns(UserWarning, match="interrupted"):
        run = pslab.train(mode="sync", workers=2, steps=10)
    assert not run.complete and run.updates == 4 and run.weights
    assert [r.step for r in run.history] == [0, 1, 2, 3]


def test_progress_bar_counts_updates(capsys):
    run = pslab.train(mode="async", workers=2, steps=5, progress=True, numerics=False)
    assert "10/10" in capsys.readouterr().err and run.complete


MODES = {"sync": "sync", "async": "async", "SSP(1)": pslab.SSP(1), "Backup(1)": pslab.Backup(1),
         "SoftSync(2)": pslab.SoftSync(2)}


@pytest.mark.parametrize("name", MODES)
@pytest.mark.parametrize("n", [1, 2, 5, 9])
def test_ctrl_c_right_after_an_update_leaves_a_consistent_run(monkeypatch, name, n,
                                                              ctrl_c_works):
    """The worst moment for Ctrl-C: the server has just changed the weights and the update is
    not yet in the timeline or the history. The run stops between events, so all three agree:
    as many updates in the timeline as in the history, and the weights are those the history
    scored last (their training loss is its last loss)."""
    import os
    import signal

    from pslab.data import Digits
    from pslab.model import evaluate
    from pslab.server import ParameterServer

    real = ParameterServer.push

    def push_then_ctrl_c(self, shard, grad, staleness=0):
        applied = real(self, shard, grad, staleness)
        if applied and shard == 0 and self.versions[0] == n:
            os.kill(os.getpid(), signal.SIGINT)
        return applied

    monkeypatch.setattr(ParameterServer, "push", push_then_ctrl_c)
    kw = dict(mode=MODES[name], workers=4, steps=10, seed=2, batch=16, lr=0.2,
              cluster=pslab.Cluster(jitter=0.3))
    with pytest.warns(UserWarning, match="interrupted"):
        run = pslab.train(**kw)
    assert not run.complete and run.updates == n
    assert sum(s.kind == "update" and s.shard == 0 for s in run.timeline) == n
    data = Digits.load(2)
    assert evaluate(run.weights, data.x_train, data.y_train)[0] == run.history[-1].loss
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handler put back
