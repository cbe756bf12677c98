"""A checkpoint is untrusted input: every case a careful student or a hostile co-user tries is
refused with a ValueError naming the file and the field, within a second, memory bounded, and
before any process starts or anything sized by the file is allocated."""
import math
import os
import stat
import struct
import time

import pytest
import torch

import pslab
from pslab.checkpoint import Checkpoint, load
from untrusted import nested, no_processes, read_checkpoint, refused_or_valid, write_checkpoint

no_processes = no_processes  # the fixture, used by name below


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A real mid-run checkpoint (sync, 3 workers, 2 shards) and the run it resumes to."""
    path = tmp_path_factory.mktemp("made") / "run.ckpt"
    full = pslab.train(mode="sync", workers=3, steps=6)
    pslab.train(mode="sync", workers=3, steps=6, checkpoint=Checkpoint(path, at=full.makespan / 2))
    return path, full


def edited(made, tmp_path, change_meta=None, change_tensors=None):
    meta, tensors = read_checkpoint(made[0])
    if change_meta:
        change_meta(meta)
    if change_tensors:
        change_tensors(tensors)
    path = tmp_path / "edited.ckpt"
    write_checkpoint(path, meta, tensors)
    return path


def refused(path, *words):
    error = refused_or_valid(lambda: pslab.resume(path), path)
    assert error is not None, "accepted"
    for word in words:
        assert word in str(error), str(error)
    return error


def event(i, **values):
    def change(meta):
        e = meta["state"]["events"][i]
        for k, v in values.items():
            if k == "time":
                e[0] = v
            elif k == "rank":
                e[3][0] = v
    return change


def test_the_unedited_checkpoint_resumes_to_the_same_run(made):
    run = pslab.resume(made[0])
    assert run.history == made[1].history


@pytest.mark.parametrize("rank", [99, -1])
def test_an_event_for_a_worker_that_does_not_exist(made, tmp_path, rank):
    refused(edited(made, tmp_path, event(0, rank=rank)), "events[0]")


@pytest.mark.parametrize("key", ["events", "server"])
def test_a_missing_part_of_the_state(made, tmp_path, key):
    refused(edited(made, tmp_path, lambda m: m["state"].pop(key)), key)


def test_a_missing_tensor(made, tmp_path):
    refused(edited(made, tmp_path, change_tensors=lambda t: t.pop("server.0")), "server.0")


@pytest.mark.parametrize("when", [math.nan, math.inf, -1.0])
def test_event_times_not_finite_or_negative(made, tmp_path, when):
    refused(edited(made, tmp_path, event(0, time=when)), "events")


def test_an_event_before_the_checkpoints_clock(made, tmp_path):
    def change(meta):
        meta["state"]["now"] = meta["time"] = meta["state"]["events"][0][0] + 0.5
    refused(edited(made, tmp_path, change), "events[0]", "before the saved clock")


@pytest.mark.parametrize("field,value,word", [
    ("seq", "8", "seq"), ("mode", ["sync"], "settings.mode"), ("timeline", [[1, 2]], "timeline"),
    ("workers", True, "settings.workers")])
def test_values_of_the_wrong_type(made, tmp_path, field, value, word):
    def change(meta):
        part = "settings" if word.startswith("settings") else "state"
        meta[part][field] = value
    refused(edited(made, tmp_path, change), word)


def test_the_file_never_sets_an_attribute_outside_the_fixed_list(made, tmp_path):
    plain = lambda m: m["state"]["actors"]["plain"].update(run=1)  # noqa: E731
    refused(edited(made, tmp_path, plain), "plain", "run")


def test_resumed_under_other_settings(made, tmp_path):
    def workers(meta):
        meta["settings"]["workers"] = 4
        meta["settings"]["cluster"] = None  # the default timing model, any workers
    refused(edited(made, tmp_path, workers), "edited.ckpt")

    def steps(meta):  # fewer steps than the updates already made
        meta["settings"]["steps"] = 1
    refused(edited(made, tmp_path, steps), "edited.ckpt")

    def hidden(meta):
        meta["settings"]["hidden"] = 16
    refused(edited(made, tmp_path, hidden), "shape")


@pytest.mark.parametrize("dtype", [torch.int32, torch.float64, torch.float16])
def test_a_tensor_that_is_not_float32(made, tmp_path, dtype):
    def change(tensors):
        tensors["server.0"] = tensors["server.0"].to(dtype)
    refused(edited(made, tmp_path, change_tensors=change), "server.0", "float32")


def test_pslab_header_nested_100000_deep(made, tmp_path):
    meta, tensors = read_checkpoint(made[0])
    from safetensors.torch import save
    path = tmp_path / "deep.ckpt"
    path.write_bytes(save(tensors, metadata={"pslab": nested(100_000)}))
    refused(path, "nested")


def test_safetensors_header_nested_100000_deep(tmp_path):
    body = ('{"__metadata__": {"pslab": "{}"}, "x": ' + nested(100_000) + "}").encode()
    path = tmp_path / "deep.ckpt"
    path.write_bytes(struct.pack("<Q", len(body)) + body)
    refused(path, "nested")


def test_a_sparse_4_gib_file_declaring_a_4_gib_tensor(made, tmp_path):
    meta, _ = read_checkpoint(made[0])
    import json
    big = 2**30  # float32 values: 4 GiB
    header = json.dumps({"__metadata__": {"pslab": json.dumps(meta, allow_nan=True)},
                         "server.0": {"dtype": "F32", "shape": [big],
                                      "data_offsets": [0, 4 * big]}}).encode()
    path = tmp_path / "sparse.ckpt"
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header)
        f.truncate(8 + len(header) + 4 * big)  # sparse: a few kB on disk
    assert os.stat(path).st_blocks * 512 < 2**20
    refused(path, "tensors")


def test_a_named_pipe_is_refused_at_once_never_opened(tmp_path):
    path = tmp_path / "run.ckpt"
    os.mkfifo(path)
    started = time.perf_counter()
    with pytest.raises(ValueError, match="run.ckpt is a named pipe"):
        load(path)
    with pytest.raises(ValueError, match="other.ckpt does not exist"):
        load(tmp_path / "other.ckpt")
    assert time.perf_counter() - started < 1


def on_processes(meta, address="127.0.0.1"):
    """A simulated checkpoint's header edited to say it was written on processes."""
    meta.pop("state"), meta.pop("time")
    meta.update(backend="processes", step=1, updates=1)
    meta["settings"]["processes"] = dict(
        time_scale=0.01, timeout=10.0, address=address, start_method="forkserver",
        kill={}, hang={}, transfers="model")


def test_a_process_checkpoint_is_resumed_only_on_processes_asked_for(made, tmp_path,
                                                                     no_processes):
    def processes(meta):  # a simulated checkpoint edited to say it ran on processes
        on_processes(meta, address="10.1.2.3")
    path = edited(made, tmp_path, processes)
    refused(path, "backend='processes'")


@pytest.mark.parametrize("option,value", [
    ("address", "0.0.0.0"), ("start_method", "fork"), ("timeout", math.nan),
    ("time_scale", -1.0), ("bogus", 1)])
def test_a_process_checkpoint_with_options_train_refuses(made, tmp_path, no_processes,
                                                          option, value):
    def processes(meta):
        on_processes(meta)
        meta["settings"]["processes"][option] = value
    path = edited(made, tmp_path, processes,
                  lambda t: t.clear() or t.update({"shard.0": torch.zeros(330),
                                                   "shard.1": torch.zeros(2080)}))
    error = refused_or_valid(lambda: pslab.resume(path, backend="processes"), path)
    assert error is not None and (option in str(error) or "address" in str(error)), error


@pytest.mark.parametrize("setting,value,tensor", [
    ("workers", 100, None), ("steps", 10**9, None), (None, None, 7)])
def test_a_process_checkpoint_too_big_or_misshapen(made, tmp_path, no_processes,
                                                    setting, value, tensor):
    def processes(meta):
        on_processes(meta)
        meta["settings"]["cluster"] = None  # the default timing model, any workers
        if setting:
            meta["settings"][setting] = value
    sizes = (330, 2080) if tensor is None else (tensor, 2080)
    path = edited(made, tmp_path, processes, lambda t: t.clear() or t.update(
        {f"shard.{s}": torch.zeros(n) for s, n in enumerate(sizes)}))
    error = refused_or_valid(lambda: pslab.resume(path, backend="processes"), path,
                             seconds=3)
    assert error is not None


def test_a_write_over_a_planted_link_takes_the_umask_mode(made, tmp_path):
    target = tmp_path / "ckpt"
    os.symlink("/dev/null", target)
    old = os.umask(0o022)
    try:
        pslab.train(mode="sync", workers=2, steps=4, checkpoint=Checkpoint(target, at=1.0))
        run = pslab.train(steps=2)
        os.symlink("/dev/null", tmp_path / "trace2")
        run.to_chrome_trace(tmp_path / "trace2")
        os.symlink("/dev/null", tmp_path / "fig.tex")
        pslab.tikz(run, tmp_path / "fig.tex")
    finally:
        os.umask(old)
    for name in ("ckpt", "trace2", "fig.tex"):
        found = os.lstat(tmp_path / name)
        assert stat.S_ISREG(found.st_mode) and found.st_mode & 0o777 == 0o644, name
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)  # the link's target untouched


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_only_a_regular_file_the_user_owns_passes_its_mode_on(tmp_path):
    from pslab.files import write_atomic
    old = os.umask(0o022)
    try:
        mine, theirs = tmp_path / "mine", tmp_path / "theirs"
        mine.write_text("old")
        mine.chmod(0o600)
        theirs.write_text("old")
        theirs.chmod(0o666)
        os.chown(theirs, 65534, 65534)
        write_atomic(mine, b"new")
        write_atomic(theirs, b"new")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.lstat(mine).st_mode) == 0o600  # a private file stays private
    assert stat.S_IMODE(os.lstat(theirs).st_mode) == 0o644  # the umask's, not 0666
    assert os.lstat(theirs).st_uid == os.geteuid()


def test_a_header_longer_than_its_settings_allow_is_refused_before_it_is_parsed(made, tmp_path):
    meta, tensors = read_checkpoint(made[0])
    meta["state"]["history"] = [[0.0] * 7] * 400_000  # 15 MB of state under 3 workers x 6 steps
    path = tmp_path / "long.ckpt"
    write_checkpoint(path, meta, tensors)
    refused(path, "more than a run of its settings writes")


def test_a_header_not_begun_by_pslab_s_own_is_refused_before_it_is_decoded(tmp_path):
    body = b'{"__metadata__": {"pslab": "{}"}, "x": [' + b"0," * 5_000_000 + b"0]}"
    path = tmp_path / "table.ckpt"
    path.write_bytes(struct.pack("<Q", len(body)) + body)
    refused(path, "does not begin with pslab's header")


def header_file(path, meta, table):
    """A checkpoint whose safetensors header is pslab's `meta`, then the rows `table` (bytes),
    declaring no tensor bytes: refused, if at all, by its header alone."""
    import json
    body = (b'{"__metadata__":{"pslab":' + json.dumps(json.dumps(meta)).encode() + b"}" +
            table + b"}")
    path.write_bytes(struct.pack("<Q", len(body)) + body)
    return len(body)


@pytest.mark.parametrize("rows, why", [(1_000_000, "more than a run of its settings writes"),
                                       (1_000, "its tensor table is 60004 bytes, more than 20")])
def test_a_long_tensor_table_is_refused_by_the_settings_before_it_is_decoded(made, tmp_path,
                                                                               rows, why):
    """60 MB of well-formed rows (a million tensors) or a thousand: 3 workers and 2 shards have
    20 tensors at most, so the table is refused from its length, within refused's second."""
    meta, _ = read_checkpoint(made[0])
    row = b',"t%07d":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}'
    size = header_file(tmp_path / "table.ckpt", meta, b"".join(row % i for i in range(rows)))
    assert size > rows * 60
    refused(tmp_path / "table.ckpt", why)


def test_a_long_header_behind_a_short_window_is_measured_before_it_is_decoded(made, tmp_path):
    """pslab's JSON longer than the first window read (4 MB), under settings that allow 116 kB:
    refused from the header's length alone."""
    meta, _ = read_checkpoint(made[0])
    meta["state"]["timeline"] = [[0, None, "compute", 0.0, 1.0, 0, 0, None]] * 200_000
    header_file(tmp_path / "long.ckpt", meta, b"")
    refused(tmp_path / "long.ckpt", "more than a run of its settings writes")


@pytest.fixture(scope="module")
def zero3(tmp_path_factory):
    """A mid-run ZeRO(3) checkpoint with accumulation: its bookkeeping has each worker's
    minibatch (micro) and the workers done with the one being gathered (gathered)."""
    path = tmp_path_factory.mktemp("zero3") / "run.ckpt"
    given = dict(mode=pslab.ZeRO(3), workers=3, steps=6, accumulate=3)
    full = pslab.train(**given)
    pslab.train(**given, checkpoint=Checkpoint(path, at=full.makespan / 2))
    return path, full


def test_zero3_bookkeeping_resumes_and_is_checked(zero3, tmp_path):
    assert pslab.resume(zero3[0]).timeline == zero3[1].timeline

    def plain(**values):
        return lambda m: m["state"]["actors"]["plain"].update(values)
    refused(edited(zero3, tmp_path, plain(micro=[0, 3, 0])), "actors.plain.micro", "per worker")
    refused(edited(zero3, tmp_path, plain(micro=[0, 0])), "actors.plain.micro", "per worker")
    refused(edited(zero3, tmp_path, plain(micro=None)), "actors.plain.micro", "missing")
    refused(edited(zero3, tmp_path, plain(gathered=3)), "actors.plain.gathered")
    refused(edited(zero3, tmp_path, plain(gathered="1")), "gathered")
    # a ring field the ZeRO modes need (arrived) missing
    refused(edited(zero3, tmp_path, plain(arrived=None)), "arrived")


def test_zero_bookkeeping_in_a_mode_without_it(made, tmp_path):
    micro = lambda m: m["state"]["actors"]["plain"].update(micro=[0, 0, 0])  # noqa: E731
    refused(edited(made, tmp_path, micro), "actors.plain.micro", "present in a mode without it")


def _bare(value):
    """pslab's NOT_FINITE strings (how a loss not measured is written) as the floats that
    Python's json writes as the bare words NaN and Infinity (as an older pslab wrote them)."""
    if isinstance(value, list):
        return [_bare(v) for v in value]
    if isinstance(value, dict):
        return {k: _bare(v) for k, v in value.items()}
    return float(value) if value in ("NaN", "Infinity", "-Infinity") else value


def test_losses_not_measured_resume_bit_for_bit_written_either_way(tmp_path):
    """A timing-only run's losses are all nan: pslab writes them as strings; a file with
    the bare words NaN/Infinity in their place (Python's json) resumes to the same run."""
    full = pslab.train(mode="async", workers=3, steps=6, numerics=False)
    path = tmp_path / "timing.ckpt"
    pslab.train(mode="async", workers=3, steps=6, numerics=False,
                checkpoint=Checkpoint(path, at=full.makespan / 2))
    assert b'\\"NaN\\"' in path.read_bytes() and b"NaN," not in path.read_bytes()
    meta, tensors = read_checkpoint(path)
    assert math.isnan(load(path)["state"]["history"][0][1])  # load gives the float back
    bare = tmp_path / "bare.ckpt"
    write_checkpoint(bare, _bare(meta), tensors)
    assert b"NaN," in bare.read_bytes()
    for resumed in (pslab.resume(path), pslab.resume(bare)):
        assert repr(resumed.history) == repr(full.history)  # nan == nan as text
        assert list(resumed.timeline) == list(full.timeline)


@pytest.mark.parametrize("field", ["now", "events"])
@pytest.mark.parametrize("word", ["NaN", "Infinity", "-Infinity", math.nan, -math.inf])
def test_not_finite_where_only_a_time_may_stand(made, tmp_path, field, word):
    """NaN and the infinities pass only where a loss stands, as a string or a bare word."""
    def change(meta):
        if field == "now":
            meta["state"]["now"] = word
        else:
            meta["state"]["events"][0][0] = word
    refused(edited(made, tmp_path, change), field)
