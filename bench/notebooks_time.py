"""Section 4 of `python -m bench`: each notebook's top-to-bottom run under nbval, timed.

Each notebook runs in its own `pytest --nbval` process (a fresh kernel, as in CI), so the time
includes starting the kernel and importing pslab: what a reader pressing "Run all" waits for.
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GOAL = 20.0  # seconds per notebook


def run_one(path: Path) -> tuple[float, bool]:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval",
           "--nbval-sanitize-with", str(ROOT / "notebooks" / "sanitize.cfg"), str(path)]
    t0 = time.perf_counter()
    ok = subprocess.run(cmd, cwd=ROOT, capture_output=True, timeout=600).returncode == 0
    return time.perf_counter() - t0, ok


def rows(quick: bool) -> list[dict[str, Any]]:
    out = []
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        seconds, ok = run_one(path)
        out.append({"section": "notebooks", "name": f"{path.name} under nbval",
                    "median": seconds, "min": seconds, "max": seconds, "runs": 1,
                    "goal": f"<= {GOAL:g} s" + ("" if ok else "; FAILED nbval"),
                    "met": ok and seconds <= GOAL})
    return out
