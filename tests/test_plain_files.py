"""Files pslab reads back are plain data, and writes never lose the last good copy:
a crafted torchrun run folder runs no code when loaded; a process run whose checkpoint cannot be
written stops at once with an OSError naming the path; a trace is written whole or not at all."""
import json
import os
import pickle
import time

import pytest

import pslab
from pslab.processes.report import Report, start_file
from pslab.processes.rankfile import read_rank
from pslab.processes.torchrun import load_run
from pslab.timeline import Span


class Planted:
    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.makedirs, (self.marker,))


def test_a_crafted_run_folder_runs_no_code(tmp_path):
    marker = tmp_path / "pwned"
    (tmp_path / "job.pkl").write_bytes(pickle.dumps(Planted(marker)))  # the old format
    with pytest.raises(ValueError, match="not a pslab torchrun run folder: it has no job.json"):
        load_run(tmp_path)
    (tmp_path / "job.json").write_bytes(pickle.dumps(Planted(marker)))
    with pytest.raises(ValueError, match="job.json is not a pslab torchrun job"):
        load_run(tmp_path)
    (tmp_path / "job.json").write_text(json.dumps(
        dict(format="pslab-torchrun-job-2", argv=["--mode", "bogus", "--out", "x"], run="r")))
    with pytest.raises(ValueError, match="names no|mode must be|command line pslab cannot run"):
        load_run(tmp_path)
    (tmp_path / "rank0.jsonl").write_bytes(pickle.dumps(Planted(marker)) + b"\n")
    with pytest.raises(ValueError, match="rank0.jsonl line 1"):  # not JSON: refused by name
        read_rank(tmp_path / "rank0.jsonl", job(), 0, "r")
    assert not marker.exists()


def job():
    from pslab.processes.torchrun import parse
    return parse(["--shards", "1", "--workers", "1", "--out", "x"])[0]


def test_a_rank_report_file_round_trips_as_json_lines(tmp_path):
    import numpy as np

    path = tmp_path / "rank0.jsonl"
    start_file(path, ("start", dict(rank=0, run="r")))
    report = Report(path=path)
    report("ready", dict(rank=0, pid=1, role="shard", index=0, job="0123456789ab"))
    keys = np.arange(2410, dtype=np.float32)  # shard 0 of one: the whole model
    report.hold("spans", [Span(None, 0, "fetch", 0.5, 1.25, 1)])
    report("update", dict(shard=0, version=1, start=1.0, time=1.5, staleness=0, step=0,
                          keys=keys, worker=None))
    report("done", dict(rank=0))
    report.close()
    with open(path, "a") as f:
        f.write('["spans", [[1, 0, "push"')  # a killed rank's half-written last line
    got = read_rank(path, job(), 0, "r")
    assert [k for k, _ in got] == ["ready", "spans", "update", "done"]
    assert got[1][1] == [Span(None, 0, "fetch", 0.5, 1.25, 1)]
    assert got[2][1]["keys"].dtype == np.float32 and (got[2][1]["keys"] == keys).all()
    with open(path, "a") as f:  # once another line follows, the half line is refused
        f.write("\n")
    with pytest.raises(ValueError, match="rank0.jsonl line 5"):
        read_rank(path, job(), 0, "r")
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:4] + [json.dumps(  # an array of objects: refused
        ["update", dict(shard=0, version=2, start=1.0, time=1.5, staleness=0, step=0,
                        worker=None, keys={"array": "", "dtype": "|O", "shape": [0]})])]) + "\n")
    with pytest.raises(ValueError, match="rank0.jsonl line 5: field update.keys.dtype"):
        read_rank(path, job(), 0, "r")


@pytest.mark.processes
def test_a_process_checkpoint_that_cannot_be_written_stops_the_run_at_once(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "server.ckpt"
    checkpoint = pslab.Checkpoint(path)
    folder.chmod(0o500)  # no writing here any more (root ignores this: make it a folder instead)
    if os.geteuid() == 0:
        folder.chmod(0o700)
        path.mkdir()
    started = time.perf_counter()
    try:
        with pytest.raises(OSError, match="could not write .*server.ckpt"):
            pslab.train(mode="sync", workers=2, steps=4, backend="processes", timeout=5,
                        checkpoint=checkpoint)
    finally:
        folder.chmod(0o700)
    assert time.perf_counter() - started < 20  # not after a 2x timeout as a 'lost worker'
    assert sorted(p.name for p in folder.iterdir()) == (["server.ckpt"] if os.geteuid() == 0
                                                        else [])


def test_a_trace_is_written_whole_and_its_path_checked(tmp_path):
    run = pslab.train(steps=3, numerics=False)
    with pytest.raises(TypeError, match="path must be a file name"):
        run.to_chrome_trace(None)
    with pytest.raises(ValueError, match="is a folder"):
        run.to_chrome_trace(tmp_path)
    out = run.to_chrome_trace(tmp_path / "run.json")
    assert json.loads(out.read_text())["traceEvents"] and os.listdir(tmp_path) == ["run.json"]


def test_a_figure_export_that_fails_keeps_the_previous_picture(tmp_path):
    """python -m pslab figures writes each picture whole: a drawing that fails half way leaves
    the previous file byte for byte, and no temporary file beside it."""
    import matplotlib.pyplot as plt

    from pslab.cli import save

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    target = tmp_path / "figure.png"
    save(fig, target)
    good = target.read_bytes()
    assert good.startswith(b"\x89PNG")

    def broken(renderer):  # the artist fails while the PNG is being drawn
        raise OSError(28, "No space left on device")

    ax.lines[0].draw = broken
    with pytest.raises(OSError, match=str(target)):
        save(fig, target)
    plt.close(fig)
    assert target.read_bytes() == good
    assert sorted(p.name for p in tmp_path.iterdir()) == ["figure.png"]


def test_written_files_get_the_usual_permissions(tmp_path):
    from pslab.files import write_atomic

    before = os.umask(0o022)
    try:
        write_atomic(tmp_path / "new.txt", b"x")
        assert (tmp_path / "new.txt").stat().st_mode & 0o777 == 0o644
        os.umask(0o077)
        write_atomic(tmp_path / "private.txt", b"x")
        assert (tmp_path / "private.txt").stat().st_mode & 0o777 == 0o600
        (tmp_path / "new.txt").chmod(0o640)
        write_atomic(tmp_path / "new.txt", b"y")  # a replaced file keeps its mode
        assert (tmp_path / "new.txt").stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(before)
