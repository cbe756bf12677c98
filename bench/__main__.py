"""`python -m bench [--quick] [--only SECTION ...]`: pslab against what users would pick instead.

Sections: clock (pslab's clock vs SimPy), numerics (vs a plain torch loop), dashboards (kernel
latency), notebooks (nbval run times; left out of a plain --quick), processes (one sync step
vs DDP), nas (the live and the paper-scale search), network (measured across hosts vs
simulated, root only; left out of a plain --quick), browser (key press -> pixels in real
JupyterLab and headless Chromium; left out of a plain --quick), pipeline (timing-only
pipelined runs and a slider step's clock), files (loading the longest checkpoint header).
Prints one table and writes it as JSON under bench/results/ with the machine's CPU, Python,
torch and Python speed.
Every figure is a median of repeated runs after a warm-up, with min and max; ratios are taken
within the same invocation. Goals are printed beside the figures; nothing here asserts a speed.
"""
from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from pslab.files import write_atomic

SECTIONS = {  # name -> module under bench/ that has rows(quick) -> list of rows
    "clock": "clock_vs_simpy", "numerics": "numerics_vs_torch", "dashboards": "widget_latency",
    "notebooks": "notebooks_time", "processes": "processes_vs_ddp", "nas": "nas_speed",
    "network": "network", "browser": "browser_latency", "pipeline": "pipeline_speed",
    "files": "checkpoint_load",
}
RESULTS = Path(__file__).resolve().parent / "results"
# Left out of a plain --quick (it prints no ratio, and would take it past 3 minutes); run it
# with --only. Value: why, in the table.
SLOW = {"notebooks": "each notebook under nbval, about 2 minutes",
        "network": "hosts with shaped links (root), 42 drawn cases, ~8.5 min at load 12-20",
        "browser": "JupyterLab in headless Chromium, 20 key presses a dashboard, ~3 minutes"}


def machine() -> dict[str, Any]:
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
            "torch": torch.__version__, "platform": platform.platform(),
            "python_loop_1e7_s": python_speed()}


def python_speed() -> float:
    """Seconds for a bare 10^7-step Python loop (best of 3): the yardstick for the absolute
    times, since the clock's speed is Python's speed and machines differ by 2-3x in it."""
    best = float("inf")
    for _ in range(3):
        t0, x = time.perf_counter(), 0
        for i in range(10**7):
            x += i
        best = min(best, time.perf_counter() - t0)
    return best


def _load() -> str:
    """The 1, 5 and 15 minute load averages ('' where the system does not say)."""
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return ""


def run_section(name: str, quick: bool, seed: int | None = None) -> list[dict[str, Any]]:
    try:
        module = importlib.import_module(f"bench.{SECTIONS[name]}")
    except ModuleNotFoundError as err:
        if err.name != f"bench.{SECTIONS[name]}":
            raise
        return [{"section": name, "name": "not measured: no bench/" f"{SECTIONS[name]}.py yet"}]
    if not hasattr(module, "rows"):
        return [{"section": name, "name": f"not measured: bench/{SECTIONS[name]}.py has no rows()"}]
    if seed is not None and "seed" in inspect.signature(module.rows).parameters:
        return module.rows(quick, seed=seed)  # a section that draws its cases (network)
    return module.rows(quick)


def _time(seconds: float | None) -> str:
    if seconds is None:
        return ""
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def print_table(rows: list[dict[str, Any]]) -> None:
    print(f"{'section':18} {'what':48} {'median':>10} {'min':>10} {'max':>10} {'ratio':>7}  goal")
    for r in rows:
        ratio = f"{r['ratio']:.2f}x" if "ratio" in r else ""
        met = {True: " (met)", False: " (NOT met)"}.get(r.get("met"), "")
        print(f"{r['section']:18} {r['name'][:48]:48} {_time(r.get('median')):>10} "
              f"{_time(r.get('min')):>10} {_time(r.get('max')):>10} {ratio:>7}  "
              f"{r.get('goal', '')}{met if r.get('goal') else ''}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="fewer repeats, and no notebooks section unless --only names it "
                         "(under 3 minutes)")
    ap.add_argument("--only", nargs="+", choices=sorted(SECTIONS), metavar="SECTION",
                    help=f"run only these sections: {', '.join(SECTIONS)}")
    ap.add_argument("--seed", type=int, default=None,
                    help="the seed of a section that draws its cases at random (network); "
                         "default: a new one, printed")
    ap.add_argument("--out", type=Path, default=None, help="JSON file (default: bench/results/)")
    args = ap.parse_args(argv)
    rows: list[dict[str, Any]] = []
    before = python_speed()  # the yardstick before and after: on a shared machine it moves
    for name in args.only or list(SECTIONS):
        if name in SLOW and args.quick and not args.only:
            rows.append({"section": name, "name": f"not run by --quick: --only {name}",
                         "goal": SLOW[name]})
            continue
        print(f"... {name}", end="", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        rows += run_section(name, args.quick, args.seed)
        print(f" {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    print_table(rows)
    about = machine()
    about["python_loop_1e7_s_before"] = before
    print(f"machine: {about['cpu']}, {about['cores']} cores, Python {about['python']}, torch "
          f"{about['torch']}; a bare 10^7-step Python loop takes {before:.2f} s before the "
          f"sections, {about['python_loop_1e7_s']:.2f} s after; load average "
          f"{_load()} at the end")
    about["load_average"] = _load()
    out = args.out or RESULTS / time.strftime("bench-%Y%m%d-%H%M%S.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, json.dumps({"machine": about, "quick": args.quick, "rows": rows},
                                 indent=1, default=str).encode("utf-8"))
    print(f"written: {out} (docs/benchmarks.md's table from it: python -m bench.table {out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
