"""Checkpoint and resume: a resumed simulated run equals the uninterrupted one bit for bit; the
file is plain data (loading a crafted one runs no code), written whole or not at all."""
import os
import pickle
import shutil
import subprocess
import sys

import pytest
import torch

import pslab
from pslab import resume
from pslab import worker as worker_module
from pslab.checkpoint import FORMAT, Checkpoint, load

MODES = ["sync", "async", pslab.SSP(1), pslab.Backup(1), pslab.SoftSync(3), "allreduce",
         pslab.ZeRO(1), pslab.ZeRO(3)]


def settings(mode):
    return dict(mode=mode, workers=3, steps=12, accumulate=2,
                cluster=pslab.Cluster(speeds=[1, 0.5, 1], jitter=0.3))


@pytest.mark.parametrize("mode", MODES, ids=str)
def test_a_resumed_run_equals_the_uninterrupted_one(mode, tmp_path):
    full = pslab.train(**settings(mode))
    path = tmp_path / "run.ckpt"
    written = pslab.train(**settings(mode), checkpoint=Checkpoint(path, at=full.makespan / 2))
    saved = load(path)
    assert 0 < saved["updates"] < full.updates and saved["time"] <= full.makespan / 2
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
    done = sum(s[2] == "push" and s[1] == 0 for s in load(path)["state"]["timeline"])
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
    with pytest.raises(ValueError, match="missing.ckpt does not exist"):
        resume(tmp_path / "missing.ckpt")
    with pytest.raises(ValueError, match="is a folder"):  # at once, before any run
        Checkpoint(tmp_path, at=1.0)
    with pytest.raises(ValueError, match="does not exist"):
        Checkpoint(tmp_path / "no-such-folder" / "x.ckpt", at=1.0)
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
    with pytest.raises(ValueError, match="junk is not a pslab checkpoint"):
        resume(tmp_path / "junk")


class Planted:
    """Unpickling this object creates a marker file: what a crafted checkpoint could do."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.makedirs, (self.marker,))


@pytest.mark.parametrize("fmt", ["pslab-checkpoint-2", None])
def test_a_crafted_pickle_runs_no_code_and_is_refused_by_name(tmp_path, fmt):
    marker = tmp_path / "pwned"
    crafted = tmp_path / "crafted.ckpt"
    crafted.write_bytes(pickle.dumps(dict(format=fmt, settings={}, simulation=Planted(marker))))
    expected = f"{fmt}, a pickle; this one reads {FORMAT}" if fmt else "is not a pslab checkpoint"
    with pytest.raises(ValueError, match=expected) as refused:
        resume(crafted)
    assert "crafted.ckpt" in str(refused.value) and not marker.exists()
    crafted.write_bytes(pickle.dumps(Planted(marker)))  # no format at all
    with pytest.raises(ValueError, match="crafted.ckpt is not a pslab checkpoint"):
        resume(crafted)
    assert not marker.exists()


def bad_files(tmp_path):
    good = tmp_path / "good.ckpt"
    pslab.train(steps=4, checkpoint=Checkpoint(good, at=2.0))
    blob = good.read_bytes()
    torch.save({"w": torch.ones(3)}, tmp_path / "torch.pt")
    files = {"empty": b"", "truncated": blob[: len(blob) // 2], "header only": blob[:60],
             "random": os.urandom(4096), "torch.pt": (tmp_path / "torch.pt").read_bytes()}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    return list(files)


def test_a_file_that_is_not_a_checkpoint_is_refused_naming_it(tmp_path):
    for name in bad_files(tmp_path):
        with pytest.raises(ValueError, match=f"{name} is not a pslab checkpoint"):
            resume(tmp_path / name)
    with pytest.raises(ValueError, match="is a folder, not a pslab checkpoint"):
        resume(tmp_path)
    with pytest.raises(TypeError, match="checkpoint path"):
        resume(None)


def test_the_checkpoint_file_is_plain_data(tmp_path):
    from safetensors import safe_open

    path = tmp_path / "run.ckpt"
    pslab.train(mode="async", steps=6, checkpoint=Checkpoint(path, at=4.0))
    with safe_open(path, framework="pt") as f:  # an ordinary safetensors file
        assert "pslab" in f.metadata() and "server.0" in f.keys()
    assert b"\x80\x04" not in path.read_bytes()[:8]  # no pickle protocol header


def test_a_checkpoint_beyond_the_end_changes_nothing_and_writes_nothing(tmp_path):
    full = pslab.train(steps=6)
    path = tmp_path / "late.ckpt"
    with pytest.warns(UserWarning, match="before the checkpoint's at=1e.06: no checkpoint"):
        late = pslab.train(steps=6, checkpoint=Checkpoint(path, at=1e6))
    assert late.makespan == full.makespan and late.timeline == full.timeline
    assert late.history == full.history and not path.exists()


def test_rewriting_a_checkpoint_never_leaves_half_a_file(tmp_path, monkeypatch):
    from pslab import files

    path = tmp_path / "run.ckpt"
    pslab.train(steps=6, checkpoint=Checkpoint(path, at=3.0))
    good = path.read_bytes()

    def full_disk(fd, data):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(files.os, "fsync", lambda fd: full_disk(fd, None))
    with pytest.raises(OSError, match=f"could not write {path}"):
        pslab.train(steps=6, checkpoint=Checkpoint(path, at=4.0))
    assert path.read_bytes() == good and os.listdir(tmp_path) == ["run.ckpt"]
    assert resume(path).updates == 6


FULL_DISK = """
import os, pslab, sys
d = sys.argv[1]
path = os.path.join(d, "run.ckpt")
pslab.train(steps=6, checkpoint=pslab.Checkpoint(path, at=3.0))
good = open(path, "rb").read()
try:  # fill the disk to its last block
    with open(os.path.join(d, "filler"), "wb", buffering=0) as f:
        while True:
            f.write(b"x" * 1024)
except OSError:
    pass
try:
    pslab.train(steps=6, checkpoint=pslab.Checkpoint(path, at=4.0))
    print("WROTE")
except OSError as e:
    print("REFUSED", e)
print("INTACT" if open(path, "rb").read() == good else "DAMAGED")
print(sorted(os.listdir(d)))
"""


@pytest.mark.processes
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                    reason="a full disk is a tiny tmpfs in a private mount namespace: needs root "
                           "and unshare")
def test_a_full_disk_keeps_the_last_good_checkpoint(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    script = tmp_path / "full_disk.py"
    script.write_text(FULL_DISK)
    shell = (f"mount -t tmpfs -o size=192k tmpfs {mount} && "
             f"{sys.executable} {script} {mount}")
    out = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", shell],
                         capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONWARNINGS="ignore"))
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert lines[0].startswith("REFUSED") and "run.ckpt" in lines[0], out.stdout
    assert lines[1] == "INTACT" and lines[2] == "['filler', 'run.ckpt']", out.stdout
