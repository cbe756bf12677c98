"""What an event loop written in C would give: figure 000's async timing-only schedule in C.

`bench/c_clock.c` is pslab's async timing-only loop (a heap of events, Lindley's recursion per
shard, idle spans for the holes, three doubles per span) in about 130 lines of C. This module
compiles it with the machine's C compiler into a temporary folder, loads it with ctypes, checks
that it gives pslab's makespan bit for bit and pslab's span count, then times it. It is a
measurement, not a backend: no pslab run uses it, and without a C compiler the row says so.
"""
from __future__ import annotations

import ctypes
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

import pslab
from pslab import compiled, fastloop

from .simpy_model import costs
from .timing import measure, row

SOURCE = Path(__file__).resolve().with_name("c_clock.c")


def compile_loop(folder: Path) -> ctypes.CDLL | None:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    lib = folder / "c_clock.so"
    subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", str(lib), str(SOURCE)], check=True,
                   capture_output=True, timeout=120)
    dll = ctypes.CDLL(str(lib))
    dll.run_async.restype = ctypes.c_double
    return dll


def run_c(dll: ctypes.CDLL, durations: np.ndarray, transfer: list[float], update: list[float],
          rows: np.ndarray) -> tuple[float, int]:
    """(makespan, spans) of the schedule in C; `rows` is room for the spans."""
    workers, steps = durations.shape
    doubles = ctypes.POINTER(ctypes.c_double)
    tr, up = (np.asarray(v, dtype=np.float64) for v in (transfer, update))
    spans = ctypes.c_long(0)
    makespan = dll.run_async(workers, len(transfer), steps, durations.ctypes.data_as(doubles),
                             tr.ctypes.data_as(doubles), up.ctypes.data_as(doubles),
                             rows.ctypes.data_as(doubles), ctypes.byref(spans))
    return makespan, spans.value


def rows(quick: bool, workers: int = 800, steps: int = 100, seed: int = 1) -> list[dict[str, Any]]:
    cluster = pslab.Cluster(jitter=0.3, links="one-at-a-time")  # c_clock.c's one line a shard
    kw = dict(mode="async", workers=workers, steps=steps, numerics=False, cluster=cluster,
              seed=seed)
    run = pslab.train(**kw)
    durations = np.ascontiguousarray(cluster.compute_durations(workers, steps, seed),
                                     dtype=np.float64)
    transfer, update = costs(run)
    name = f"C event loop, async {workers}x{steps} (bench/c_clock.c)"
    with tempfile.TemporaryDirectory() as folder:
        dll = compile_loop(Path(folder))
        if dll is None:
            return [{"section": "clock vs SimPy", "name": f"{name}: no C compiler here"}]
        room = np.empty(3 * workers * steps * (5 * len(transfer) + 1))
        makespan, spans = run_c(dll, durations, transfer, update, room)
        if makespan != run.makespan or spans != len(run.timeline):
            raise AssertionError(f"C loop: makespan {makespan!r}, {spans} spans; pslab: "
                                 f"{run.makespan!r}, {len(run.timeline)} spans")
        ours = measure(lambda: pslab.train(**kw), 3)
        theirs = measure(lambda: run_c(dll, durations, transfer, update, room), 5 if quick else 20)
    loop = "Cython-compiled" if compiled.in_use(fastloop) else "Python"
    return [row("clock vs SimPy", name, theirs, spans=spans, makespan=makespan,
                ratio=ours["median"] / theirs["median"],
                goal=f"what a loop written in C gives: pslab ({loop} loop) / C, same makespan "
                     "and spans")]
