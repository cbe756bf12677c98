"""What a notebook run's processes send the launcher is untrusted bytes: one JSON line per message
(never unpickled), no longer than a rank of the job sends, checked against the job as a torchrun
rank's file is; and nothing in pslab unpickles anything it reads back."""
import ast
import json
import pickle
import threading
from multiprocessing import Pipe
from pathlib import Path

import numpy as np
import pytest

import pslab
from pslab.options import ProcessOptions
from pslab.processes.job import make_job
from pslab.processes.launcher import Launch
from pslab.processes.rankfile import line_limit
from pslab.processes.report import Report
from pslab.settings import Settings

JOB = make_job(Settings(mode="sync", workers=2, steps=3, processes=ProcessOptions()))


class Planted:
    """Unpickling this runs code: it must never happen."""

    def __reduce__(self):
        return (pytest.fail, ("a message was unpickled",))


def read(*sent, rank=0):
    """What Launch.read makes of `sent` (bytes, or messages a Report sends) on rank's pipe,
    written by a thread (a pipe holds 64 kB: a longer message waits for its reader)."""
    launch = Launch(JOB)
    reader, writer = Pipe(duplex=False)

    def send():
        report = Report(conn=writer)
        try:
            for message in sent:
                writer.send_bytes(message) if isinstance(message, bytes) else report(*message)
        except OSError:  # the reader refused the message and closed the pipe
            pass
        finally:
            writer.close()

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    launch.pipes[rank] = reader
    try:
        while rank in launch.pipes:  # until the pipe ends (EOF: the reader lets it go)
            reader.poll(1.0)
            launch.read(rank)
    finally:
        reader.close()
        thread.join(10)
    assert not thread.is_alive()
    return launch


def update(**changed):
    keys = JOB.layout().keys(0)
    return ("update", dict(dict(shard=0, version=1, start=0.1, time=0.2, staleness=0, step=0,
                                keys=np.arange(keys, dtype=np.float32), worker=None), **changed))


READY = dict(rank=0, pid=7, role="shard", index=0, job="0123456789ab")


def test_what_a_process_sends_arrives_checked():
    got = read(("ready", READY), update(), ("done", {"rank": 0}))
    assert got.ready == {0: READY} and got.done == {0}
    assert np.array_equal(got.updates[0]["keys"], np.arange(JOB.layout().keys(0)))
    assert got.updates[0]["keys"].dtype == np.float32


def test_a_pickle_on_the_pipe_is_refused_never_unpickled():
    with pytest.raises(ValueError, match="rank 0's message: not JSON"):
        read(pickle.dumps(("ready", Planted())))


def test_a_message_longer_than_the_job_s_longest_is_refused_unread():
    with pytest.raises(ValueError, match=f"rank 0's message: longer than {line_limit(JOB)} bytes"):
        read(b" " * (line_limit(JOB) + 1))


@pytest.mark.parametrize("message, field", [
    (update(shard=1), "field update.shard: 1 in rank 0's file"),
    (update(step=99), "field update.step"),
    (update(time=float("nan")), "update.time"),
    (update(keys=np.zeros(3, np.float32)), "field update.keys"),
    (update(keys=np.zeros(JOB.layout().keys(0), np.float64)), "update.keys.dtype"),
    (("ready", dict(READY, rank=1)), "field ready.rank"),
    (("spans", [[1, 1, "compute", 0.0, 1.0, 0, 0, None]]), "field spans.[0]"),
    (("start", dict(rank=0, run="x")), "a second 'start' line"),
    (("order", {}), "invalid enum value 'order'"),
])
def test_a_message_out_of_the_job_is_refused_by_field(message, field):
    with pytest.raises(ValueError, match="rank 0's message") as caught:
        read(message)
    assert field in str(caught.value)


def test_deep_json_on_the_pipe_is_refused_before_parsing():
    with pytest.raises(ValueError, match="nested deeper"):
        read(json.dumps(["spans", []]).encode()[:-1] + b"," + b"[" * 100_000 + b"]" * 100_001)


def calls(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            owner = getattr(f.value, "id", "") if isinstance(f, ast.Attribute) else ""
            yield owner, name, node


def test_nothing_in_pslab_unpickles():
    """No pickle/marshal/shelve loads, no Connection.recv() (it unpickles), no torch.load
    without weights_only=True, no numpy load with allow_pickle, anywhere in pslab."""
    found = []
    for path in Path(pslab.__file__).parent.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for owner, name, node in calls(tree):
            keywords = {k.arg: getattr(k.value, "value", None) for k in node.keywords}
            where = f"{path.name}:{node.lineno}"
            if owner in ("pickle", "marshal", "shelve", "dill", "cloudpickle") and \
                    name in ("load", "loads", "open", "Unpickler"):
                found.append(where)
            elif name == "recv" and not node.args and owner != "dist":
                found.append(where)
            elif owner == "torch" and name == "load" and keywords.get("weights_only") is not True:
                found.append(where)
            elif owner == "np" and name == "load" and keywords.get("allow_pickle") is not False:
                found.append(where)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] + [getattr(node, "module", "") or ""]
                if any(n.split(".")[0] in ("pickle", "marshal", "shelve", "dill") for n in names):
                    found.append(f"{path.name}:{node.lineno} imports {names}")
    assert found == []


def group_read(blob):
    """What the collective modes' group (processes/group.py) makes of `blob` on rank 0's pipe."""
    from pslab.processes.group import Watch
    watch = Watch(workers=2, mode="allreduce", timeout=5)
    reader, writer = Pipe(duplex=False)
    thread = threading.Thread(target=lambda: (writer.send_bytes(blob), writer.close())
                              if len(blob) < 60_000 else writer.close(), daemon=True)
    thread.start()
    thread.join(10)
    watch.readers[reader] = 0
    try:
        watch._read(reader)
    finally:
        reader.close()
    return watch


@pytest.mark.parametrize("blob, why", [
    (pickle.dumps({"kind": "done", "x": Planted()}), "rank 0's message: not JSON"),
    (b'{"kind": "step", "step": -1, "spans": []}', "field step"),
    (b'{"kind": "step", "step": 1, "spans": [[{"a": 1}]]}', "field spans[0][0]"),
    (b'{"kind": "order"}', "field kind"),
    (b'[' * 100 + b']' * 100, "nested deeper"),
])
def test_the_collective_group_s_messages_are_checked_never_unpickled(blob, why):
    with pytest.raises(ValueError, match="rank 0's message") as caught:
        group_read(blob)
    assert why in str(caught.value)


def test_the_collective_group_takes_what_its_processes_say():
    watch = group_read(json.dumps(dict(kind="step", step=1, spans=[["compute", 0.5, 1.0, 1]]))
                       .encode())
    assert watch.steps[0] == 2 and watch.spans[0] == [["compute", 0.5, 1.0, 1]]
