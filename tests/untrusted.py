"""Helpers for the tests of files read back: real files made by pslab, then edited as a student
or a hostile co-user would, and the one rule every load must keep (`refused_or_valid`)."""
import json
import struct
import time
import tracemalloc

import pytest
from safetensors.torch import load as st_load, save as st_save


def read_checkpoint(path):
    """(pslab's header as plain values, tensors) of a checkpoint, read by the test's own means."""
    blob = path.read_bytes()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    return json.loads(header["__metadata__"]["pslab"]), st_load(blob)


def write_checkpoint(path, meta, tensors):
    path.write_bytes(st_save(tensors, metadata={"pslab": json.dumps(meta, allow_nan=True)}))


def refused_or_valid(load, path, seconds=1.0, megabytes=64, wall=10.0):
    """Run load(); it must return or raise a ValueError naming `path`'s file, within `seconds`
    of this process's CPU time (the machine may be loaded: CPU time is what the load costs) and
    `wall` seconds of wall time (a blocked read uses no CPU), with at most `megabytes` of new
    Python allocations at the peak (tracemalloc: bytes read from a file are counted).
    Returns the exception or None."""
    tracemalloc.start()
    started, cpu = time.perf_counter(), time.process_time()
    try:
        load()
        error = None
    except ValueError as caught:
        error = caught
    finally:
        took, used = time.perf_counter() - started, time.process_time() - cpu
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert used < seconds and took < wall, f"{used:.2f} s CPU, {took:.2f} s: {error}"
    assert peak < megabytes * 2**20, f"{peak / 2**20:.0f} MB: {error}"
    if error is not None:
        assert str(path.name) in str(error), f"does not name the file: {error}"
    return error


def nested(depth):
    return "[" * depth + "]" * depth


@pytest.fixture
def no_processes(monkeypatch):
    """Any attempt to start a process (or open a listening socket) fails the test at once."""
    import socket
    import subprocess

    def refuse(*args, **kwargs):
        raise AssertionError("a process or listener was started")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(socket.socket, "listen", refuse)
    import multiprocessing.context as mpc
    for kind in ("ForkServerProcess", "SpawnProcess", "ForkProcess"):
        monkeypatch.setattr(getattr(mpc, kind), "start", refuse, raising=False)
