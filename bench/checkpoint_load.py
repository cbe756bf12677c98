"""Reading back the largest checkpoint header its settings allow to be long: every file read
back is untrusted, so all of it is checked, and a load must still answer within about a second.

The case: a timing-only async run, 16 workers x 3000 steps, 6 shards, accumulate 2 (about a
million spans, a ~72 MB header), checkpointed just before its end. Measured: `load_file`
(the header decoded by msgspec into its declared types and checked), wall seconds, in this
process; and the resident memory a load adds at its peak, in a fresh process (VmHWM before
and after).
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pslab

from .timing import measure, row

SECTION = "files"
GOAL = 1.0  # seconds: any load answers within about a second
SETTINGS = dict(mode="async", workers=16, steps=3000, numerics=False, accumulate=2, shards=6)

PEAK = """
import json, sys
from pslab.checkpoint import load_file
def peak():
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
before = peak()
load_file(sys.argv[1])
print(json.dumps({"added_mb": (peak() - before) / 1024}))
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
        peak = subprocess.run([sys.executable, "-c", PEAK, str(path)], capture_output=True,
                              text=True, check=True, timeout=300)
        added = json.loads(peak.stdout.strip().splitlines()[-1])["added_mb"]
    # the name fits the table's column: the header's size, the resident memory the load adds
    return [row(SECTION, f"load 16x3000 ckpt header {size:.0f} MB, +{added:.0f} MB RSS", t,
                goal=f"<= {GOAL:g} s", met=t["median"] <= GOAL, added_mb=round(added))]
