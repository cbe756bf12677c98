"""Figure 003 live: servers -> controller replicas -> child replicas, drawn from a finished
search, with what flowed on every edge counted from its timeline and samples.

As figure 002's diagram (`pslab.dataflow_plot`) does for data parallelism: Θ pulls and
gradient pushes (and their bytes, and the worst staleness) between the servers and each
replica; architectures handed down and accuracies R returned between a replica and each of its
children. Wide tiers are drawn as the seed draws them: the first two replicas, dots, the last.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch

from .dataflow_plot import _arrow, fmt_bytes
from .palette import ROLES
from .sizes import CELL_IN, LESSON_PT
from ..nas.result import Search

FONT = LESSON_PT  # box text: 12 px in a 590-px notebook cell, as the dashboards (pslab.drawing.sizes)
SMALL = LESSON_PT  # edge labels: they carry the lesson too
HEIGHT_IN = 5.4  # the diagram's height at a cell's width


class Flow(NamedTuple):
    """What one controller replica exchanged during a search."""

    controller: int
    pulls: int  # rounds in which it fetched Θ (from all S shards)
    pull_bytes: int
    pushes: int  # gradients pushed (to all S shards)
    push_bytes: int
    max_staleness: int  # of its applied gradients
    handed_out: list[int]  # architectures given to each child
    mean_accuracy: list[float]  # mean R each child returned


def flows(result: Search) -> list[Flow]:
    """Per-replica counts, read off `result.timeline`, `.samples` and `.history`."""
    if not isinstance(result, Search):
        raise ValueError(f"result must be a pslab.nas.Search (what pslab.nas.search returns) "
                         f"(got {type(result).__name__})")
    nbytes = result.shard_bytes
    out = []
    for k in range(result.controllers):
        mine = [s for s in result.timeline if s.worker == k and s.shard is not None]
        pulls = [s for s in mine if s.kind == "fetch"]
        pushes = [s for s in mine if s.kind == "push"]
        stale = [u.staleness for u in result.history if u.controller == k]
        kids = [[s.accuracy for s in result.samples if s.controller == k and s.child == j]
                for j in range(result.children)]
        out.append(Flow(k, len({s.step for s in pulls}), sum(nbytes[s.shard] for s in pulls),
                        len({s.step for s in pushes}), sum(nbytes[s.shard] for s in pushes),
                        max(stale, default=0), [len(a) for a in kids],
                        [float(np.mean(a)) if a else float("nan") for a in kids]))
    return out


def shown(n: int, most: int = 3) -> list[int | None]:
    """Which replicas to draw: all when few, else the first two, None (dots) and the last."""
    return list(range(n)) if n <= most else [0, 1, None, n - 1]


DOTS = 0.4  # the width of a "···" column, in columns of boxes


def columns(items: list[int | None], left: float, right: float) -> tuple[list[float], float]:
    """The centres of `items` spread over [left, right], a dots column (None) DOTS as wide as
    a box's; and the width of a box's column."""
    widths = [DOTS if i is None else 1.0 for i in items]
    unit = (right - left) / sum(widths)
    edges = np.cumsum([0.0, *widths]) * unit + left
    return [float(a + b) / 2 for a, b in zip(edges[:-1], edges[1:])], unit


def _box(ax: Axes, x: float, y: float, w: float, h: float, role: str, text: str) -> None:
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h,
                                boxstyle="round,pad=0.02,rounding_size=0.08",
                                facecolor=ROLES[role], edgecolor="black", linewidth=1.2))
    ax.text(x, y, text, ha="center", va="center", fontsize=FONT)


def plot_hierarchy(result: Search, ax: Axes | None = None) -> Figure:
    """The three tiers of figure 003 with every edge labelled from `result`."""
    found = flows(result)
    if ax is None:
        ax = Figure(figsize=(CELL_IN, HEIGHT_IN), layout="constrained").add_subplot()
    ax.set_axis_off()
    ax.set_xlim(0, 13)
    ax.set_ylim(-0.2, 6.9)
    y_srv, y_ctl, y_kid = 5.7, 3.3, 0.6
    servers = shown(result.servers, 4)
    xs, _ = columns(servers, 1.9, 11.1)
    for s, x in zip(servers, xs):
        if s is None:
            ax.text(x, y_srv, "···", ha="center", va="center", fontsize=16)
        else:
            _box(ax, x, y_srv, 2.2, 0.8, "server",
                 f"Server {s}\n{_plural(result.layout.keys(s), 'key')} of Θ")
    ax.add_patch(FancyBboxPatch((1.6, y_srv - 0.55), 9.8, 1.1, boxstyle="round,pad=0.02",
                                fill=False, linestyle="--", edgecolor="0.4"))
    mode = "async" if result.settings.mode == "async" else "sync rounds"
    # over the servers' box, not beside it: the diagram keeps a cell's width
    ax.text(6.5, y_srv + 0.62, f"S = {result.servers} shards hold Θ ({result.layout.size} keys): "
            f"{len(result.history)} updates ({mode})", ha="center", va="bottom", fontsize=SMALL)
    # the first, dots and the last replica when more than three: each keeps the room its
    # flow labels need on either side of its arrows (as the seed draws K - 1 after the dots)
    ctl = list(range(result.controllers)) if result.controllers <= 3 else \
        [0, None, result.controllers - 1]
    centres, pitch = columns(ctl, 0.0, 13.0)
    for cx, k in zip(centres, ctl):
        if k is None:
            ax.text(cx, y_ctl, "···", ha="center", va="center", fontsize=16)
            continue
        f = found[k]
        _box(ax, cx, y_ctl, 2.3, 0.8, "controller", f"Controller {k}\n{f.pushes} gradients")
        # where its arrows meet the servers' box: straight above it where the box reaches
        # (its flow labels then sit clear of the arrows on either side)
        dock = float(np.clip(cx, 1.9, 11.1))
        _arrow(ax, (dock + 0.15, y_srv - 0.57), (cx + 0.15, y_ctl + 0.42), ROLES["weight"],
               dashed=True)
        _arrow(ax, (cx - 0.15, y_ctl + 0.42), (dock - 0.15, y_srv - 0.57), ROLES["gradient"])
        mid = ((dock + cx) / 2, (y_srv + y_ctl) / 2)
        ax.text(mid[0] + 0.55, mid[1] + 0.1, f"{f.pulls} pulls\nof Θ\n{fmt_bytes(f.pull_bytes)}",
                ha="left", va="center", fontsize=SMALL, color=ROLES["weight"])
        ax.text(mid[0] - 0.55, mid[1] - 0.1, f"{f.pushes} pushes\nof ∇Θ\nstale ≤ "
                f"{f.max_staleness}", ha="right", va="center", fontsize=SMALL,
                color=ROLES["gradient"])
        _children(ax, result, f, cx, pitch, y_ctl, y_kid)
    ax.set_title(_title(result), fontsize=FONT)
    return ax.figure


def _children(ax: Axes, result: Search, f: Flow, cx: float, pitch: float, y_ctl: float,
              y_kid: float) -> None:
    kids = list(range(result.children)) if result.children <= 3 else \
        [0, None, result.children - 1]
    xs, unit = columns(kids, cx - pitch * 0.46, cx + pitch * 0.46)
    width = min(1.25, 0.85 * unit)
    for i, (x, j) in enumerate(zip(xs, kids)):
        if j is None:
            ax.text(x, y_kid, "···", ha="center", va="center", fontsize=14)
            continue
        acc = f.mean_accuracy[j]
        r_text = "R = –" if np.isnan(acc) else f"R̄ = {acc:.0%}"
        _box(ax, x, y_kid, width, 0.8, "child", f"Child {j}\n{r_text}")
        dock = cx + (x - cx) * 0.3
        # an architecture down (the child's blue, darker), its accuracy R back up (black)
        _arrow(ax, (dock - 0.08, y_ctl - 0.42), (x - 0.08, y_kid + 0.42), "#3D6F99")
        _arrow(ax, (x + 0.08, y_kid + 0.42), (dock + 0.08, y_ctl - 0.42), "0.1")
        if i == 0:
            ax.text((dock + x) / 2 - 0.3, (y_ctl + y_kid) / 2,
                    f"{f.handed_out[j]} nets ↓\n{f.handed_out[j]} × R ↑", ha="right",
                    va="center", fontsize=SMALL, color="0.2")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _title(result: Search) -> str:
    head = (f"Figure 003: S = {result.servers} servers, K = {result.controllers} controller "
            f"replicas, m = {result.children} children each, {result.rounds} rounds")
    if not result.settings.numerics:
        return head + f"\ntiming only: makespan {result.makespan:.0f} s"
    best = result.best[0]
    return (head + f"\n{len(result.samples)} children trained, mean R {result.curve[0]:.0%} "
            f"(round 0) → {result.curve[-1]:.0%} (round {result.rounds - 1})\nbest child {best}")


def plot_figure(result: Search) -> Figure:
    """Figure 003 replayed: the three tiers with their flows, above their timeline."""
    from .nas_tiers_plot import plot_tiers, rows

    n_rows = len(rows(result, min(result.controllers, 4)))
    tiers = 0.3 * n_rows + 2.2
    fig = Figure(figsize=(CELL_IN, HEIGHT_IN + tiers), layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[HEIGHT_IN, tiers])
    plot_hierarchy(result, top.add_subplot())
    plot_tiers(result, bottom.add_subplot(), replicas=min(result.controllers, 4))
    return fig
