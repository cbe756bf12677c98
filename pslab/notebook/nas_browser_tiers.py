"""Figure 003's dashboard drawn by the browser: the three-tier timeline and the reward curves as
the plain data `pslab.notebook.browser_figure.BrowserFigure` draws (a few kB a slider step, no
PNG drawn in the kernel).

The rows and the blocks are the matplotlib plot's (`pslab.drawing.nas_tiers_plot.rows`, `placed`), the
colours figure 000's. A hover on a block says its row, kind, round, start and end (and a pull's
or push's shard); on a child's training block also which architecture the controller sampled
and the held-out accuracy it reached (the reward). The curves are `plot_curves`'s: each replica
thin, their mean thick, random search at the same budget grey dashed.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..drawing.palette import PALETTES
from .browser_plots import BOTTOM, FONT, packed
from .livefigure import nice_ceiling
from ..nas.result import Search
from ..nas.space import describe
from ..drawing.nas_tiers_plot import HEIGHT, NAMES, placed, rows

KINDS = list(NAMES)  # fetch, push, update, compute, idle: a block's kind code
# matplotlib's z-order: the updates (zorder 3) over the rest, which are drawn in NAMES' order
DRAW_ORDER = {k: (1 if k == "update" else 0, i) for i, k in enumerate(KINDS)}
TIERS_PX, REWARDS_PX = 180, 124  # heights: controls, timeline and curve on one 1024x768 screen
REINFORCE, RANDOM, SEPARATOR = "#2E7D32", "#737373", "#595959"

# px of row names: close rows take turns in up to three columns ("C3.3", browser_figure.js)
TIERS_LAYOUT = {"height": TIERS_PX, "font": FONT, "panels": [dict(
    share=1.0, left=104, right=10, top=24, bottom=BOTTOM, xlabel="virtual time (s)",
    yinvert=True, zoom=True)]}
TIERS_LEGEND = [{"colour": PALETTES["ps"][k], "label": v} for k, v in NAMES.items()]
REWARDS_LAYOUT = {"height": REWARDS_PX, "font": FONT, "panels": [dict(
    share=1.0, left=58, right=12, top=24, bottom=BOTTOM, xlabel="round",
    ylabel="accuracy R", yfmt="pct", xname="round", yname="held-out accuracy")]}
REWARDS_LEGEND = [{"colour": REINFORCE, "label": "REINFORCE, mean of the replicas",
                   "line": True},
                  {"colour": RANDOM, "label": "random search, same budget", "line": True,
                   "dash": True}]


def tiers_panel(result: Search, replicas: int | None = 4) -> dict[str, Any]:
    """The timeline's one panel: every visible block (updates on top), the tier separators,
    and what a hover shows (see the module docstring)."""
    table = rows(result, replicas)
    found = sorted(placed(result, replicas), key=lambda f: DRAW_ORDER[f[0].kind])
    sampled = {(s.controller, s.round, s.child): s for s in result.samples}
    children: dict[str, int] = {}  # a child's hover text -> its number in the table
    cols: dict[str, list] = {k: [] for k in ("x0", "x1", "row", "kind", "step", "shard", "child")}
    for span, row in found:
        text = _child_text(result, span, sampled)
        for key, value in zip(cols, (span.start, span.end, row, DRAW_ORDER[span.kind][1],
                                     span.step, -1 if span.shard is None else span.shard,
                                     -1 if text is None else children.setdefault(
                                         text, len(children)))):
            cols[key].append(value)
    row = np.array(cols["row"], dtype=float)
    xmax = nice_ceiling(result.makespan * 1.02) if result.makespan > 0 else 1.0
    starts = [i for i, (tier, _, _) in enumerate(table) if i and tier != table[i - 1][0]]
    return dict(
        xlim=[0.0, xmax], ylim=[-0.5, len(table) - 0.5], vline=result.makespan,
        yticks=[[i, label] for i, (_, label, _) in enumerate(table)],
        note=(f"rows: the first {replicas} of {result.controllers} replicas"
              if replicas is not None and result.controllers > replicas else ""),
        colours=[PALETTES["ps"][k] for k in KINDS],
        rects=dict(x0=packed(cols["x0"], "f4"), x1=packed(cols["x1"], "f4"),
                   y0=packed(row - HEIGHT / 2, "f4"), y1=packed(row + HEIGHT / 2, "f4"),
                   c=packed(cols["kind"], "int"),
                   widen=packed(np.isin(cols["kind"], [0, 1, 2]), "int")),
        lines=[dict(x=[0.0, xmax], y=[i - 0.5, i - 0.5], colour=SEPARATOR, width=1,
                    hover=False) for i in starts],
        hover=dict(lines=["{who:rows}: {kind:kinds}, round {step}", "start {x0} s, end {x1} s",
                          "shard S{shard}", "child {child:children}"],
                   cols={name: packed(cols[key], "int") for name, key in (
                       ("who", "row"), ("kind", "kind"), ("step", "step"), ("shard", "shard"),
                       ("child", "child"))},
                   tables=dict(rows=[label for _, label, _ in table],
                               kinds=list(NAMES.values()), children=list(children))))


def _child_text(result: Search, span: Any, sampled: dict) -> str | None:
    """A child's training block: what it was and how it did; None for any other block."""
    if span.kind != "compute" or span.worker is None or span.worker < result.controllers:
        return None
    k, j = divmod(span.worker - result.controllers, result.children)
    sample = sampled.get((k, span.step, j))
    if sample is None:
        return None
    if math.isnan(sample.accuracy):
        return f"{describe(sample.arch)} (clock only: not trained)"
    return f"{describe(sample.arch)}, held-out accuracy {sample.accuracy:.1%}"


def rewards_panel(result: Search, baseline: Search | None = None) -> dict[str, Any]:
    """The reward curves' one panel: each replica's mean accuracy per round thin, the mean of
    the replicas thick, random search at the same budget grey dashed (rounds from 0)."""
    x = np.arange(result.rounds)
    lines = [_line(x, row, REINFORCE + "59", f"replica C{k}", 1.2)
             for k, row in enumerate(result.rewards)]
    lines.append(_line(x, result.curve, REINFORCE, "REINFORCE, mean of the replicas", 3))
    if baseline is not None:
        lines.append(_line(x, baseline.curve, RANDOM, "random search, same budget", 3,
                           dash=True))
    every = max(1, math.ceil(result.rounds / 10))
    return dict(xlim=[-0.4, result.rounds - 0.6], ylim=[0.0, 1.0],
                xticks=[[int(r), str(int(r))] for r in x[::every]], lines=lines)


def _line(x: np.ndarray, y: np.ndarray, colour: str, label: str, width: float,
          dash: bool = False) -> dict[str, Any]:
    """A curve's points where it has a value (a round not reached yet has none)."""
    keep = np.isfinite(y)
    return dict(x=x[keep].tolist(), y=np.round(y[keep], 4).tolist(), colour=colour,
                label=label, width=width, dash=dash)
