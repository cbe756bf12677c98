"""Every file pslab reads back, mutated field by field: real checkpoints and a real torchrun run
folder made by pslab here, then one field at a time given another type, NaN or an infinity, a
negative or huge number, removed, joined by an extra key, nested 100,000 deep; tensors given
another dtype or shape, removed or added. Every load either gives a valid run or raises a
ValueError naming the file, within a second of CPU time, with bounded memory (untrusted.py)."""
import json
import math
import shutil

import pytest
import torch
from hypothesis import HealthCheck, event, given, settings, strategies as st

import pslab
from pslab.checkpoint import Checkpoint
from pslab.processes.torchrun import load_run
from untrusted import nested, read_checkpoint, refused_or_valid

DEEP = "@@deep@@"  # a value replaced by JSON nested 100,000 deep once written
NASTY = [None, True, False, "8", "", "sync", math.nan, math.inf, -math.inf, -1, 0, 1, 7, 99,
         10**9, 2**63, -2**63, 1e308, 0.5, -0.0, [], {}, [1, 2], [[1, 2]], {"x": 1}, DEEP]
RUNS = [dict(mode="sync", workers=3, steps=4),
        dict(mode=pslab.SSP(1), workers=3, steps=4, shards=3,
             cluster=pslab.Cluster(speeds=[1, 0.5, 0.3])),
        dict(mode="allreduce", workers=2, steps=4, accumulate=2),
        dict(mode="async", workers=2, steps=4, numerics=False)]
FAST = settings(max_examples=120, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


def paths(value, at=()):
    """Every path into a JSON value (of a long list: its first two and its last item)."""
    yield at
    if isinstance(value, dict):
        for k, v in value.items():
            yield from paths(v, at + (k,))
    elif isinstance(value, list):
        for i in sorted({0, 1, len(value) - 1} & set(range(len(value)))):
            yield from paths(value[i], at + (i,))


def mutate(value, path, how, new):
    """`value` with the item at `path` replaced by `new`, removed, given an extra key or
    duplicated (how); returns the changed copy."""
    value = json.loads(json.dumps(value, allow_nan=True))
    if not path:
        return new if how == "replace" else value
    parent = value
    for k in path[:-1]:
        parent = parent[k]
    last = path[-1]
    if how == "replace":
        parent[last] = new
    elif how == "remove":
        del parent[last]
    elif how == "extra" and isinstance(parent[last], dict):
        parent[last]["extra"] = new
    elif how == "duplicate" and isinstance(parent, list):
        parent.insert(last, parent[last])
    return value


def dumps(value):
    return json.dumps(value, allow_nan=True).replace(json.dumps(DEEP), nested(100_000))


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    folder = tmp_path_factory.mktemp("made")
    out = []
    for i, kwargs in enumerate(RUNS):
        full = pslab.train(**kwargs)
        path = folder / f"{i}.ckpt"
        pslab.train(**kwargs, checkpoint=Checkpoint(path, at=full.makespan / 2))
        meta, tensors = read_checkpoint(path)
        out.append((meta, tensors, sorted(set(paths(meta)))))
    return out


TENSOR_CHANGES = ["float16", "float64", "int32", "longer", "shorter", "2d", "remove", "extra"]


def change_tensor(tensors, name, how):
    tensors = dict(tensors)
    t = tensors[name]
    if how in ("float16", "float64", "int32"):
        tensors[name] = t.to(getattr(torch, how))
    elif how == "longer":
        tensors[name] = torch.cat([t.flatten(), torch.zeros(1)])
    elif how == "shorter":
        tensors[name] = t.flatten()[:-1].clone()
    elif how == "2d":
        tensors[name] = t.reshape(1, -1).clone()
    elif how == "remove":
        del tensors[name]
    else:
        tensors[name + ".x"] = t.clone()
    return tensors


def resumed_or_refused(path):
    run = []
    error = refused_or_valid(lambda: run.append(pslab.resume(path)), path)
    event("refused" if error else "a valid run")
    if error is None:  # a valid run: its numbers are numbers
        assert math.isfinite(run[0].makespan) and all(math.isfinite(r.time)
                                                      for r in run[0].history)


@FAST
@given(data=st.data())
def test_a_checkpoint_mutated_field_by_field(checkpoints, tmp_path, data):
    from safetensors.torch import save

    meta, tensors, where = data.draw(st.sampled_from(checkpoints))
    path_ = data.draw(st.sampled_from(where))
    how = data.draw(st.sampled_from(["replace", "replace", "remove", "extra", "duplicate"]))
    new = data.draw(st.sampled_from(NASTY))
    path = tmp_path / "mutated.ckpt"
    path.write_bytes(save(tensors, metadata={"pslab": dumps(mutate(meta, path_, how, new))}))
    resumed_or_refused(path)


@FAST
@given(data=st.data())
def test_a_checkpoints_tensors_mutated(checkpoints, tmp_path, data):
    from safetensors.torch import save

    meta, tensors, _ = data.draw(st.sampled_from(checkpoints[:3]))  # those with tensors
    name = data.draw(st.sampled_from(sorted(tensors)))
    how = data.draw(st.sampled_from(TENSOR_CHANGES))
    path = tmp_path / "mutated.ckpt"
    path.write_bytes(save(change_tensor(tensors, name, how),
                          metadata={"pslab": json.dumps(meta, allow_nan=True)}))
    resumed_or_refused(path)


@pytest.fixture(scope="module")
def folder(torchrun):
    """A real torchrun run folder (async: updates carry a worker), and its messages' paths."""
    out = torchrun(3, "--shards", "1", "--workers", "2", "--steps", "3", "--mode", "async")
    files = {p.name: p.read_text() for p in out.iterdir()}
    where = []
    for name, text in files.items():
        rows = [json.loads(text)] if name == "job.json" else \
            [json.loads(line) for line in text.splitlines()]
        for i, row in enumerate(rows):
            where += [(name, i, p) for p in sorted(set(paths(row)))]
    return out, files, where


@pytest.mark.processes
@FAST
@given(data=st.data())
def test_a_run_folder_mutated_field_by_field(folder, tmp_path, data):
    made, files, where = folder
    name, line, path_ = data.draw(st.sampled_from(where))
    how = data.draw(st.sampled_from(["replace", "replace", "remove", "extra", "duplicate"]))
    new = data.draw(st.sampled_from(NASTY))
    out = tmp_path / "run"
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(made, out)
    if name == "job.json":
        text = dumps(mutate(json.loads(files[name]), path_, how, new))
    else:
        rows = [json.loads(x) for x in files[name].splitlines()]
        lines = [json.dumps(r, allow_nan=True) for r in rows]
        lines[line] = dumps(mutate(rows[line], path_, how, new))
        text = "\n".join(lines) + "\n"
    (out / name).write_text(text)
    error = refused_or_valid(lambda: load_run(out), out / name)
    event("refused" if error else "a valid run")


class Started(Exception):
    """The resumed run got as far as starting its processes: every check passed."""


@pytest.fixture(scope="module")
def process_checkpoint(tmp_path_factory):
    """A real process checkpoint: sync rounds on 2 shards and 2 workers, written every round."""
    path = tmp_path_factory.mktemp("made") / "server.ckpt"
    pslab.train(mode="sync", workers=2, steps=3, backend="processes", timeout=30,
                checkpoint=Checkpoint(path))
    meta, tensors = read_checkpoint(path)
    meta["step"] = meta["updates"] = 1  # as if stopped after round 0: resumable
    return meta, tensors, sorted(set(paths(meta)))


@pytest.mark.processes
@FAST
@given(data=st.data())
def test_a_process_checkpoint_mutated_field_by_field(process_checkpoint, tmp_path, monkeypatch,
                                                     data):
    from safetensors.torch import save

    from pslab.processes import launcher

    def started(self):
        raise Started

    monkeypatch.setattr(launcher.Launch, "run", started)
    meta, tensors, where = process_checkpoint
    if data.draw(st.booleans()):
        meta = mutate(meta, data.draw(st.sampled_from(where)),
                      data.draw(st.sampled_from(["replace", "replace", "remove", "extra"])),
                      data.draw(st.sampled_from(NASTY)))
    else:
        tensors = change_tensor(tensors, data.draw(st.sampled_from(sorted(tensors))),
                                data.draw(st.sampled_from(TENSOR_CHANGES)))
    path = tmp_path / "server.ckpt"
    path.write_bytes(save(tensors, metadata={"pslab": dumps(meta)}))

    def resume():
        try:
            pslab.resume(path, backend="processes")
        except Started:
            event("passed every check")
    if refused_or_valid(resume, path):
        event("refused")
