"""Widget update latency of the notebook dashboards, in the kernel.

    python bench/widget_latency.py [--changes 20] [--presets default 000 001 002]

For each dashboard preset (at 8 workers x 30 steps, the size the goal is stated for) and each
control, make `--changes` changes exactly as a slider move does (set the widget's value) and
time what the kernel does before the new plot data is on its way to the browser: the
timing-only run, the plot data (`pslab.notebook.browser_plots`) and the messages, encoded as
the kernel encodes them (JSON plus binary buffers: every widget gets a comm that does that
work; without a front end ipywidgets would skip it). Goal: median <= 40 ms. The loss curve
that follows when the sliders rest (the arithmetic, `settle`: until the loss curve and the
numbers are drawn) is timed once per control and reported apart, and so is "ready": until
the why-lines are written too (a diverged run's learning-rate search: each of its runs is made
in parts, one per turn of the event loop, and the longest turn is how long a slider moved
meanwhile waits).
Runs are not served from the dashboard's cache (it is emptied before each change), so every
change really re-simulates. Prints wall-clock and CPU medians: on a busy machine the CPU
time shows what the code costs, the wall time what a reader would feel.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time

import ipywidgets
import torch

from pslab.notebook.dashboard_settings import PRESETS
from pslab.notebook.liveview import View
from pslab.notebook.widgets import Dashboard


class EncodingComm:
    """Stands in for a kernel's comm: encodes each message as the kernel does (JSON, binary
    buffers apart) and counts the bytes; sends nothing."""

    kernel = True  # ipywidgets sends only through a comm that has a kernel
    comm_id = "bench"

    def __init__(self):
        self.sent = 0

    def close(self, *args, **kwargs):
        pass

    def on_msg(self, callback):
        pass

    def send(self, data=None, buffers=None, **_):
        self.sent += len(json.dumps(data, separators=(",", ":")).encode())
        self.sent += sum(len(memoryview(b).cast("B")) for b in buffers or ())


def encode_messages(dash: Dashboard) -> EncodingComm:
    """Give every widget of `dash` an EncodingComm (one, shared, to count all bytes)."""
    comm = EncodingComm()
    stack = [dash.widget]
    while stack:
        w = stack.pop()
        stack.extend(getattr(w, "children", ()))
        for part in ("layout", "style"):
            if isinstance(getattr(w, part, None), ipywidgets.Widget):
                getattr(w, part).comm = comm
        w.comm = comm
    return comm

# Values a reader would drag through; each change goes to the next one (cycling).
SWEEPS = {
    "workers": [7, 8, 9, 10, 9, 8],
    "slowdown": [1.0 + 0.25 * k for k in range(13)],
    "bandwidth": [m * 10.0 ** e for e in (4, 5, 6, 7) for m in (1, 2, 5)],
    "accumulate": [1, 2, 3, 2],
    "shards": [1, 2, 3, 4, 3, 2],
    "mode": ["sync", "async", "SSP"],
    "lr": [0.05, 0.1, 0.2, 0.5, 1.0],
}


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


async def measure(preset: str, changes: int) -> dict[str, dict[str, float]]:
    # settle_delay: the longest a dashboard allows (a minute, far beyond a sweep), so a sweep
    # is all fast path (as while dragging); the settle is then timed on its own.
    dash = Dashboard(preset, settle_delay=60, workers=8, steps=30)
    comm = encode_messages(dash)
    out = {}
    for control, values in SWEEPS.items():
        start = dash.controls[control].value
        wall, cpu = [], []
        sent = []
        for k in range(changes):
            value = values[k % len(values)]
            if value == dash.controls[control].value:
                value = values[(k + 1) % len(values)]
            dash.view.cache._runs.clear()
            before = comm.sent
            t0, c0 = time.perf_counter(), time.process_time()
            dash.controls[control].value = value
            wall.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
            sent.append(comm.sent - before)
        if dash.controls[control].value == start:  # time the settle of new settings
            dash.controls[control].value = next(v for v in values if v != start)
        turns = len(dash.finish_ms)
        t0 = time.perf_counter()
        dash.settle()
        settle = (time.perf_counter() - t0) * 1000
        while dash.pending and time.perf_counter() - t0 < 60:  # the why-lines' runs
            await asyncio.sleep(0)
        ready = (time.perf_counter() - t0) * 1000
        dash.set(**{control: start})
        dash.settle()
        while dash.pending and time.perf_counter() - t0 < 60:
            await asyncio.sleep(0)
        if dash.errors or dash.pending:
            raise RuntimeError(dash.errors or "the dashboard never got ready")
        out[control] = dict(median=statistics.median(wall), p90=percentile(wall, 0.9),
                            cpu=statistics.median(cpu), settle=settle, ready=ready,
                            turn=max(dash.finish_ms[turns:], default=0.0),
                            kb=statistics.median(sent) / 1000)
    return out


def png_redraws(preset: str, changes: int) -> list[float]:
    """Seconds per slider change when the plots are matplotlib PNGs (`pslab.liveview.View`,
    what a dashboard sent before the browser drew it), the same changes, caches emptied."""
    view = View(PRESETS[preset].changed(workers=8, steps=30))
    out = []
    for control, values in SWEEPS.items():
        if control == "lr":
            continue
        for k in range(changes):
            value = values[k % len(values)]
            if value == getattr(view.settings, control):  # a real change, as a slider sends
                value = values[(k + 1) % len(values)]
            settings = view.settings.changed(**{control: value})
            view.cache._runs.clear()
            t0 = time.perf_counter()
            view.show(settings)
            out.append(time.perf_counter() - t0)
    return out


def rows(quick: bool) -> list[dict]:
    """Section 3 of `python -m bench`: per dashboard, the median kernel latency of a change."""
    torch.set_num_threads(1)
    changes = 5 if quick else 20
    out = []
    for preset in ("default", "000", "001", "002"):
        res = asyncio.run(measure(preset, changes))
        redraw = [r for c, r in res.items() if c != "lr"]  # lr never moves the clock
        wall = [r["median"] / 1000 for r in redraw]
        settle = statistics.median(r["settle"] for r in res.values()) / 1000
        out.append({"section": "dashboards", "name": f"dashboard {preset}: a slider change",
                    "median": statistics.median(wall), "min": min(wall), "max": max(wall),
                    "runs": changes * len(redraw), "goal": "<= 40 ms",
                    "met": statistics.median(wall) <= 0.040,
                    "kB_sent": statistics.median(r["kb"] for r in redraw)})
        if preset == "default":  # the same changes drawn as PNGs, as the dashboards did
            png = png_redraws(preset, changes)
            out.append({"section": "dashboards", "name": "dashboard default: PNG redraw (before)",
                        "median": statistics.median(png), "min": min(png), "max": max(png),
                        "runs": len(png), "ratio": statistics.median(wall) / statistics.median(png),
                        "goal": "ratio: browser-drawn step / PNG step"})
        out.append({"section": "dashboards", "name": f"dashboard {preset}: loss curve, settled",
                    "median": settle, "min": min(r["settle"] for r in res.values()) / 1000,
                    "max": max(r["settle"] for r in res.values()) / 1000, "runs": len(res),
                    "goal": "<= 300 ms", "met": settle <= 0.300})
        ready = [r["ready"] / 1000 for r in res.values()]
        turn = max(r["turn"] for r in res.values()) / 1000
        out.append({"section": "dashboards", "name": f"dashboard {preset}: ready (why-lines too)",
                    "median": statistics.median(ready), "min": min(ready), "max": max(ready),
                    "runs": len(res), "longest_turn_s": turn,
                    "goal": "reported; a slider moved meanwhile waits one turn: longest <= 300 ms",
                    "met": turn <= 0.300})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--changes", type=int, default=20)
    ap.add_argument("--presets", nargs="+", default=["default", "000", "001", "002"])
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    print(f"widget update latency, kernel side, median over {args.changes} changes "
          f"(8 workers x 30 steps; ms)")
    print(f"{'preset':8} {'control':11} {'median':>7} {'p90':>7} {'cpu':>7} {'settle':>7} "
          f"{'ready':>7} {'turn':>7} {'kB sent':>7}")
    everything = []
    for preset in args.presets:
        res = asyncio.run(measure(preset, args.changes))
        for control, r in res.items():
            print(f"{preset:8} {control:11} {r['median']:7.1f} {r['p90']:7.1f} {r['cpu']:7.1f} "
                  f"{r['settle']:7.0f} {r['ready']:7.0f} {r['turn']:7.0f} {r['kb']:7.1f}")
            if control != "lr":  # lr never moves the clock: no redraw at all
                everything.append(r["median"])
    overall = statistics.median(everything)
    print(f"median of the medians (sliders that redraw): {overall:.1f} ms "
          f"(goal <= 40 ms); 'settle' = the loss curve after the sliders rest, 'ready' = the "
          f"why-lines too, 'turn' = the longest of their turns")
    return 0


if __name__ == "__main__":
    sys.exit(main())
