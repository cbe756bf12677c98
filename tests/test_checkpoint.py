"""Checkpoint and resume: a resumed simulated run equals the uninterrupted one bit for bit."""
import pytest
import torch

import pslab
from pslab import worker as worker_module
from pslab.checkpoint import Checkpoint, load, resume

MODES = ["sync", "async", pslab.SSP(1), pslab.Backup(1), pslab.SoftSync(3), "allreduce"]


def settings(mode):
    return dict(mode=mode, workers=3, steps=12, accumulate=2,
                cluster=pslab.Cluster(speeds=[1, 0.5, 1], jitter=0.3))


@pytest.mark.parametrize("mode", MODES, ids=str)
def test_a_resumed_run_equals_the_uninterrupted_one(mode, tmp_path):
    full = pslab.train(**settings(mode))
    path = tmp_path / "run.ckpt"
    written = pslab.train(**settings(mode), checkpoint=Checkpoint(path, at=full.makespan / 2))
    saved = load(path)
    assert 0 < saved["updates"] < full.updates and saved["time"] == full.makespan / 2
    resumed = resume(path)
    for run in (written, resumed):  # writing a checkpoint changes nothing either
        assert all(torch.equal(run.weights[n], full.weights[n]) for n in full.weights)
        assert run.timeline == full.timeline and run.history == full.history
        assert run.push_staleness == full.push_staleness and run.makespan == full.makespan


def test_resume_computes_only_what_was_left(tmp_path, monkeypatch):
    full = pslab.train(**settings("async"))
    path = tmp_path / "run.ckpt"
    pslab.train(**settings("async"), checkpoint=Checkpoint(path, at=full.makespan / 2))
    # a push span is written when its gradient is computed: these were done before the save
    done = sum(s.kind == "push" and s.shard == 0 for s in load(path)["simulation"].timeline)
    calls = []
    compute = worker_module.Worker.compute
    monkeypatch.setattr(worker_module.Worker, "compute",
                        lambda self, step: (calls.append(step), compute(self, step))[1])
    resume(path)
    assert 0 < done < 36 and len(calls) == 36 - done


def test_checkpoint_refuses_what_it_cannot_do(tmp_path):
    with pytest.raises(ValueError, match="checkpoint"):
        pslab.train(steps=3, checkpoint=str(tmp_path / "x"))
    with pytest.raises(ValueError, match="checkpoint at"):
        Checkpoint(tmp_path / "x", at=-1)
    with pytest.raises(ValueError, match="does not exist"):
        resume(tmp_path / "missing.ckpt")
    for mode, at in (("sync", 1.0), ("async", None)):  # processes: rounds, so a barrier mode
        with pytest.raises(ValueError, match="after each complete round"):
            pslab.train(mode=mode, steps=3, backend="processes",
                        checkpoint=Checkpoint(tmp_path / "x", at=at))
    with pytest.raises(ValueError, match="at a virtual time"):
        pslab.train(steps=3, checkpoint=Checkpoint(tmp_path / "x"))
    path = tmp_path / "run.ckpt"
    pslab.train(steps=4, checkpoint=Checkpoint(path, at=2.0))
    other = Checkpoint(path)
    other.resuming = True  # what resume() hands train: the file must match train's settings
    with pytest.raises(ValueError, match="other settings"):
        pslab.train(steps=5, checkpoint=other)
    (tmp_path / "junk").write_bytes(b"\x80\x04K\x01.")
    with pytest.raises(ValueError, match="not a pslab checkpoint"):
        resume(tmp_path / "junk")


def test_a_checkpoint_of_another_format_is_refused_by_name(tmp_path):
    import pickle

    from pslab.checkpoint import FORMAT

    old = tmp_path / "old.ckpt"
    old.write_bytes(pickle.dumps(dict(format="pslab-checkpoint-1", settings={}, simulation=None)))
    with pytest.raises(ValueError, match=f"pslab-checkpoint-1; this one reads {FORMAT}"):
        pslab.resume(old)
