"""Reading back the largest checkpoint header its settings allow to be long: every file read
back is untrusted, so all of it is checked, and a load must still answer within about a second.

The case: a timing-only async run, 16 workers x 3000 steps, 6 shards, accumulate 2 (about a
million spans, a ~72 MB header), checkpointed just before its end. Measured: `load_file`
(the header decoded by msgspec into its declared types and checked), wall seconds, in this
process; and the resident memory a load adds at its peak, in a fresh process (VmHWM before
and after).

And the largest torchrun folder of the same size: 16 ranks (2 shards, 14 workers) x 3000
async steps, made by a real torchrun launch on loopback (minutes: not in --quick); measured the
same way, `pslab.processes.load_run` (every rank file checked line by line, then assembled).
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pslab

from .timing import measure, row

SECTION = "files"
GOAL = 1.0  # seconds: any load answers within about a second
SETTINGS = dict(mode="async", workers=16, steps=3000, numerics=False, accumulate=2, shards=6)

FOLDER_ARGS = ["--shards", "2", "--workers", "14", "--steps", "3000", "--mode", "async",
               "--time-scale", "0.001", "--timeout", "60"]

PEAK = """
import json, sys, time
from pslab.checkpoint import load_file
from pslab.processes import torchrun
def peak():
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
before, started = peak(), time.perf_counter()
(torchrun.load_run if sys.argv[2] == "folder" else load_file)(sys.argv[1])
print(json.dumps({"added_mb": (peak() - before) / 1024, "s": time.perf_counter() - started}))
"""


def rows(quick: bool) -> list[dict[str, Any]]:
    from pslab.checkpoint import load_file

    with tempfile.TemporaryDirectory(prefix="pslab-bench-ckpt-") as folder:
        path = Path(folder) / "big.ckpt"
        end = pslab.train(**SETTINGS).makespan
        pslab.train(**SETTINGS, checkpoint=pslab.Checkpoint(path, at=end * 0.999))
        size = path.stat().st_size / 1e6
        repeat = 3 if quick else 7
        t = measure(lambda: load_file(path), repeat)
        added = _fresh_load(path, "file")["added_mb"]
    # the name fits the table's column: the header's size, the resident memory the load adds
    rows = [row(SECTION, f"load 16x3000 ckpt header {size:.0f} MB, +{added:.0f} MB RSS", t,
                goal=f"<= {GOAL:g} s", met=t["median"] <= GOAL, added_mb=round(added))]
    return rows if quick else rows + [folder_row()]


def _fresh_load(path: Path, kind: str) -> dict[str, float]:
    """Loading `path` in a fresh process: the resident memory it adds at its peak (added_mb)
    and its wall seconds (s)."""
    peak = subprocess.run([sys.executable, "-c", PEAK, str(path), kind], capture_output=True,
                          text=True, check=True, timeout=3600)
    return json.loads(peak.stdout.strip().splitlines()[-1])


def folder_row() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="pslab-bench-folder-") as folder:
        out = Path(folder) / "run"
        torchrun = Path(sys.executable).with_name("torchrun")
        started = time.perf_counter()
        subprocess.run([str(torchrun), "--standalone", "--log-dir", str(Path(folder) / "logs"),
                        "--nproc-per-node", "16", "-m", "pslab.processes", *FOLDER_ARGS,
                        "--out", str(out)], capture_output=True, check=True, timeout=3600)
        launch = time.perf_counter() - started
        size = sum(p.stat().st_size for p in out.iterdir()) / 1e6
        load = _fresh_load(out, "folder")  # one load: about 90 s of CPU
    t, added = dict(median=load["s"], min=load["s"], max=load["s"], runs=1), load["added_mb"]
    return row(SECTION, f"load_run 16x3000 torchrun folder {size:.0f} MB, +{added:.0f} MB RSS",
               t, goal=f"<= {GOAL:g} s", met=t["median"] <= GOAL, added_mb=round(added),
               launch_s=round(launch))
