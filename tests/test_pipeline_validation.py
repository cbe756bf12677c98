"""Bad pipeline input is refused at the entry, with the parameter named, before any work."""
from __future__ import annotations

import pytest

import pslab


@pytest.mark.parametrize("kwargs,named", [
    (dict(stages=0, microbatches=4), "stages"),
    (dict(stages=65, microbatches=4), "stages"),
    (dict(stages=True, microbatches=4), "stages"),
    (dict(stages=2, microbatches=0), "microbatches"),
    (dict(stages=4, microbatches=2, schedule="1f1b"), "microbatches must be >= stages"),
    (dict(stages=4, microbatches=9, schedule="interleaved-1f1b", chunks=2), "microbatches"),
    (dict(stages=2, microbatches=4, schedule="pipedream"), "schedule"),
    (dict(stages=2, microbatches=4, schedule="gpipe", chunks=2), "chunks must be 1"),
    (dict(stages=2, microbatches=4, schedule="zbv", chunks=3), "chunks must be 2"),
    (dict(stages=2, microbatches=4, schedule="interleaved-1f1b", chunks=5), "chunks"),
    (dict(stages=3, microbatches=4, layers=4), "layers must be a multiple of stages * chunks"),
    (dict(stages=2, microbatches=4, chunks=2, schedule="looped-bfs", layers=6), "layers"),
    (dict(stages=2, microbatches=4, layers=1000), "layers"),
    (dict(stages=2, microbatches=4, times=(1, 1)), "times"),
    (dict(stages=2, microbatches=4, times=(1, 1, 2)), "times[2] (W)"),
    (dict(stages=2, microbatches=4, schedule="zb-h1", times=(1, 1, 0)), "times[2] (W)"),
    (dict(stages=2, microbatches=4, times=(0, 1, 0)), "times[0] (F)"),
])
def test_pipeline_refuses_by_name(kwargs, named):
    with pytest.raises(ValueError, match=named.replace("(", r"\(").replace(")", r"\)")
                       .replace("*", r"\*").replace("[", r"\[").replace("]", r"\]")):
        pslab.Pipeline(**kwargs)


@pytest.mark.parametrize("kwargs,named", [
    (dict(batch=0), "batch"), (dict(steps=0), "steps"), (dict(lr=-1.0), "lr"),
    (dict(hidden=0), "hidden"), (dict(backend="threads"), "backend"),
    (dict(cluster=pslab.Cluster(jitter=0.5)), "jitter"),
    (dict(cluster=pslab.Cluster(speeds=[1, 1, 1])), "speeds"),
    (dict(time_scale=0.1), "time_scale"), (dict(kill={0: 1}), "kill"),
    (dict(staleness_lr=True), "staleness_lr"), (dict(numerics="yes"), "numerics"),
])
def test_train_refuses_a_pipelines_bad_arguments(kwargs, named):
    with pytest.raises(ValueError, match=named):
        pslab.train(mode=pslab.Pipeline(stages=2, microbatches=4), **kwargs)


def test_a_run_beyond_the_machine_is_refused(monkeypatch):
    monkeypatch.setenv("PSLAB_MEMORY_LIMIT", "1M")
    with pytest.raises(ValueError, match="memory"):
        pslab.train(mode=pslab.Pipeline(stages=8, microbatches=64), steps=1000, hidden=512)


def test_speeds_make_a_slow_stage():
    """cluster.speeds: one per stage; a rank of speed 1/2 takes twice as long."""
    fast = pslab.train(mode=pslab.Pipeline(stages=2, microbatches=4, times=(1, 1, 0)),
                       numerics=False, steps=1, cluster=pslab.Cluster.free())
    slow = pslab.train(mode=pslab.Pipeline(stages=2, microbatches=4, times=(1, 1, 0)),
                       numerics=False, steps=1, cluster=pslab.Cluster.free(speeds=[1, 0.5]))
    assert fast.busy() == [8, 8] and slow.busy() == [8, 16]
