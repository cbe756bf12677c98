"""Why the dashboards draw with a small anywidget canvas and not plotly's FigureWidget.

    pip install --target /tmp/plotly plotly narwhals   # not a pslab dependency
    PYTHONPATH=/tmp/plotly python -m bench.widget_choice

One timeline step of the default dashboard (8 workers x 30 steps, caches emptied), sent both
ways through a comm that encodes messages as a kernel does (bench/widget_latency.py): plotly's
FigureWidget (a horizontal bar trace with hover data, `batch_update`) and pslab's
BrowserFigure. Prints the kernel time, the bytes sent, and the size of each widget's browser
module, which a notebook saved with its widget state stores once per widget.
"""
from __future__ import annotations

import statistics
import sys
import time

import numpy as np
import torch

from bench.widget_latency import EncodingComm
from pslab.drawing.blocks import blocks
from pslab.drawing.palette import PALETTES
from pslab.drawing.timeline_plot import shard_label
from pslab.notebook.browser_figure import BrowserFigure
from pslab.notebook.browser_plots import timeline_layout, timeline_panel, timeline_rows
from pslab.notebook.dashboard_settings import preset
from pslab.notebook.liveruns import LiveRuns


def main(steps: int = 12) -> int:
    try:
        import plotly.graph_objects as go
    except ImportError:
        print("plotly is not installed (it is no pslab dependency): see this file's docstring")
        return 1
    torch.set_num_threads(1)
    live = LiveRuns(preset("default"))
    theirs, ours = go.FigureWidget(data=[go.Bar(orientation="h")]), BrowserFigure(
        timeline_layout("ps"))
    theirs.comm, ours.comm = EncodingComm(), EncodingComm()
    times: dict[str, list[float]] = {"plotly": [], "pslab": []}
    sent: dict[str, list[int]] = {"plotly": [], "pslab": []}
    for k in range(steps):
        live.cache._runs.clear()
        live.step(preset("default").changed(workers=7 + k % 4))
        run = live.run
        for name, fig, draw in (("plotly", theirs, _plotly), ("pslab", ours, _pslab)):
            before, t0 = fig.comm.sent, time.perf_counter()
            draw(fig, run)
            times[name].append(time.perf_counter() - t0)
            sent[name].append(fig.comm.sent - before)
    print(f"timeline step, {len(run.timeline)} spans, load {open('/proc/loadavg').read()[:4]}")
    for name, fig in (("plotly", theirs), ("pslab", ours)):
        module = fig._esm if isinstance(fig._esm, str) else open(fig._esm).read()
        print(f"{name:7} kernel median {statistics.median(times[name]) * 1e3:6.1f} ms, "
              f"{statistics.median(sent[name]) / 1e3:5.0f} kB sent per step, browser module "
              f"{len(module) / 1e3:7.1f} kB per widget")
    return 0


def _plotly(fig, run) -> None:
    b = blocks(run, False, 0.8)
    who = np.where(b["worker"] < 0, run.workers + b["shard"], b["worker"])
    with fig.batch_update():
        fig.data[0].update(base=b["start"], x=b["end"] - b["start"], y=who,
                           marker_color=[PALETTES["ps"][k] for k in b["kind"].tolist()],
                           customdata=np.stack([b["step"], b["shard"]], axis=1),
                           hovertemplate="%{y}: step %{customdata[0]}, shard %{customdata[1]}"
                                         "<br>start %{base} s, end %{x} s")


def _pslab(fig, run) -> None:
    rows = timeline_rows(run, "ps", shard_label)
    fig.show([timeline_panel(run, "ps", rows, 100.0)])


if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(prog="python -m bench.widget_choice", description=(
        "plotly's FigureWidget against pslab's canvas for one dashboard step (needs plotly: "
        "see this file's docstring)")).parse_args()
    sys.exit(main())
