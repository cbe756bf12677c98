"""Memory a run adds: peak RSS of a fresh, warmed process before and after one run.

The peak (VmHWM, the process's high-water resident set) is what a shared JupyterHub server
feels, not what is left after the run; a fresh subprocess per measure, so one run's peak cannot
hide another's. Not ru_maxrss: a child inherits its parent's maximum through fork and exec, so
inside the bench it read the bench's own peak.
"""
from __future__ import annotations

import json
import subprocess
import sys

SCRIPT = """
import json, pslab
def peak():
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
cluster = pslab.Cluster(jitter=0.3, links="one-at-a-time")  # the links fastloop runs
kw = dict(mode="async", steps={steps}, numerics=False, cluster=cluster, seed=0)
pslab.train(workers=8, **kw)  # warm: imports, first-call caches
before = peak()
run = pslab.train(workers={workers}, **kw)
after = peak()
print(json.dumps({{"before_mb": before / 1024, "after_mb": after / 1024,
                  "spans": len(run.timeline)}}))
"""


def added_peak_mb(workers: int, steps: int) -> dict[str, float]:
    """{before_mb, after_mb, added_mb, spans} of one timing-only async run in a fresh process."""
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(workers=workers, steps=steps)],
                         capture_output=True, text=True, check=True, timeout=300)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    got["added_mb"] = got["after_mb"] - got["before_mb"]
    return got
