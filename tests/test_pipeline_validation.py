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


def test_a_run_beyond_the_machine_is_named_by_what_was_typed(monkeypatch):
    """The message gives the pipeline's own settings as typed (not the sizes derived from
    them: hidden times layers, three spans a micro-batch) and says which to make smaller."""
    monkeypatch.setenv("PSLAB_MEMORY_LIMIT", "1M")
    with pytest.raises(ValueError) as refused:
        pslab.train(mode=pslab.Pipeline(stages=4, microbatches=6), steps=7, batch=5, hidden=300)
    text = str(refused.value)
    assert "(stages=4, replicas=1, microbatches=6, layers=4, steps=7, batch=5, hidden=300, " \
        "numerics=True)" in text
    assert "make stages, replicas, microbatches, layers, steps, batch or hidden smaller" in text


def test_speeds_make_a_slow_stage():
    """cluster.speeds: one per stage; a rank of speed 1/2 takes twice as long."""
    fast = pslab.train(mode=pslab.Pipeline(stages=2, microbatches=4, times=(1, 1, 0)),
                       numerics=False, steps=1, cluster=pslab.Cluster.free())
    slow = pslab.train(mode=pslab.Pipeline(stages=2, microbatches=4, times=(1, 1, 0)),
                       numerics=False, steps=1, cluster=pslab.Cluster.free(speeds=[1, 0.5]))
    assert fast.busy() == [8, 8] and slow.busy() == [8, 16]


def test_settings_take_a_pipeline_and_check_it_in_one_place():
    """A Pipeline's run is a Settings as every mode's: workers are its ranks (stages x
    replicas), accumulate its micro-batches; a changed copy is checked again."""
    import dataclasses

    from pslab.settings import Settings

    pipe = pslab.Pipeline(stages=4, microbatches=8)
    s = Settings.build(mode=pipe, workers=3, lr=0.1, steps=5)
    assert (s.workers, s.accumulate, s.updates, s.backend) == (4, 8, 5, "simulated")
    assert s.to_dict()["pipeline"] == pipe.plain() and s.to_dict()["mode"] == pipe.name
    with pytest.raises(ValueError, match="lr"):
        dataclasses.replace(s, lr=0.0)
    with pytest.raises(ValueError, match="speeds"):
        Settings(mode=pipe, cluster=pslab.Cluster(speeds=[1.0] * 3))  # one per rank: 4
    Settings(mode=pipe, cluster=pslab.Cluster(speeds=[1.0] * 4))
    run = pslab.train(mode=pslab.Pipeline(stages=2, microbatches=2), steps=1, numerics=False)
    assert isinstance(run.settings, Settings) and run.settings.mode.stages == 2


@pytest.mark.parametrize("kwargs,named", [
    (dict(address="10.0.0.1"), "address"), (dict(time_scale=0.5), "time_scale"),
    (dict(transfers="wire"), "transfers"), (dict(cluster=pslab.Cluster()), "cluster"),
    (dict(kill={5: 1}), "kill"), (dict(hang={0: 99}), "hang"), (dict(steps=10**5 + 1), "steps"),
    (dict(numerics=False), "numerics"), (dict(timeout=-1.0), "timeout"),
    (dict(mode=pslab.Pipeline(stages=17, microbatches=17)), "stages"),
    (dict(mode=pslab.Pipeline(stages=2, microbatches=4, schedule="zb-h2")),
     r"schedule 'zb-h2' runs on the virtual clock only: torch.distributed.pipelining "
     r"\(torch [0-9.]+\) has no such schedule class.*\(on processes: 'gpipe', '1f1b', "
     r"'interleaved-1f1b', 'looped-bfs', 'zb-h1', 'zbv'\)"),
])
def test_a_pipeline_on_processes_is_refused_by_name_before_any_process(kwargs, named):
    given = dict(mode=pslab.Pipeline(stages=2, microbatches=4), steps=3, backend="processes")
    given.update(kwargs)
    with pytest.raises(ValueError, match=named):
        pslab.train(**given)


def test_zb_h2_across_hosts_is_refused_by_name_before_any_host_is_used():
    """train_across's hosts are namespace names; these do not exist, and are never reached."""
    from pslab.pipeline.processes import train_across

    mode = pslab.Pipeline(stages=2, microbatches=4, schedule="zb-h2", times=(1, 2, 1))
    with pytest.raises(ValueError, match=r"schedule 'zb-h2' runs on the virtual clock only.*"
                                         r"on processes: 'gpipe'"):
        train_across(mode, ["no-such-host-a", "no-such-host-b"])


def test_a_checkpoint_is_refused_for_a_pipeline(tmp_path):
    with pytest.raises(ValueError, match="checkpoint does not apply"):
        pslab.train(mode=pslab.Pipeline(stages=2, microbatches=4), steps=2,
                    checkpoint=pslab.Checkpoint(tmp_path / "c", at=1.0))
