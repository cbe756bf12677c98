"""Figure 002 live: training data -> workers -> parameter server, drawn from a finished run.

Every edge is labelled with what actually flowed in that run, counted from its timeline:
batches and rows from the data to each worker, gradient pushes (and bytes) up to the server,
weight pulls (and bytes) back down. Nothing is typed in; change the run and the labels follow.
"""
from __future__ import annotations

from typing import NamedTuple

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from .palette import ROLE_LABELS, ROLES
from .sizes import CELL_IN, LESSON_PT
from ..result import Run, as_runs
from .training_plot import check_ax


class Flow(NamedTuple):
    """What one worker exchanged during a run."""

    worker: int
    minibatches: int  # compute spans: batches read from the data
    rows: int  # minibatches x batch
    pushes: int  # gradient pushes (one per step, all shards)
    push_bytes: int  # bytes of gradient sent, summed over shards
    pulls: int  # weight fetches (one per step, all shards)
    pull_bytes: int


def flows(run: Run) -> list[Flow]:
    """Per-worker counts of batches, pushes, pulls and bytes, read off `run.timeline`."""
    as_runs(run, many=False)
    out = []
    for w in range(run.workers):
        mine = [s for s in run.timeline if s.worker == w]
        mb = sum(1 for s in mine if s.kind == "compute")
        push = [s for s in mine if s.kind == "push"]
        pull = [s for s in mine if s.kind == "fetch"]
        out.append(Flow(
            w, mb, mb * run.settings.batch,
            len({s.step for s in push}), sum(run.shard_bytes[s.shard] for s in push),
            len({s.step for s in pull}), sum(run.shard_bytes[s.shard] for s in pull)))
    return out


def fmt_bytes(n: float) -> str:
    """1320 -> '1.3 kB' (decimal units, as network links are quoted)."""
    for unit in ("B", "kB", "MB"):
        if n < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


def _box(ax: Axes, x: float, y: float, w: float, h: float, role: str, text: str) -> None:
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h,
                                boxstyle="round,pad=0.02,rounding_size=0.1",
                                facecolor=ROLES[role], edgecolor="black", linewidth=1.2))
    ax.text(x, y, text, ha="center", va="center", fontsize=LESSON_PT)


def _arrow(ax: Axes, a: tuple, b: tuple, colour: str, dashed: bool = False) -> None:
    ax.add_patch(FancyArrowPatch(a, b, arrowstyle="-|>", mutation_scale=12, color=colour, lw=1.6,
                                 linestyle="--" if dashed else "-",
                                 shrinkA=2, shrinkB=2))


def plot_dataflow(run: Run, ax: Axes | None = None) -> Figure:
    """The data-parallel diagram of figure 002 with every edge labelled from `run`."""
    as_runs(run, many=False)
    check_ax(ax)
    n = run.workers
    if ax is None:
        ax = Figure(figsize=(CELL_IN, max(4.0, 1.3 * n + 1.4)), layout="constrained").add_subplot()
    ax.set_axis_off()
    height = max(n * 1.4, 3.0)
    ys = [height / 2 - (i + 0.5) * height / n for i in range(n)]  # worker 0 on top
    # the server starts where the push and pull labels (~3 units at LESSON_PT) end, clear of them
    data_x, work_x, ps_left, ps_right = 1.0, 4.0, 7.95, 10.2
    ax.set_xlim(-0.1, 10.25)
    ax.set_ylim(-height / 2 - 0.1, height / 2 + 0.1)
    cfg, found = run.settings, flows(run)
    _box(ax, data_x, 0, 2.0, 1.5, "data",
         f"{ROLE_LABELS['data']}\n{sum(f.rows for f in found)} rows\n"
         f"batch {cfg.batch}\naccumulate {cfg.accumulate}")
    # The server is as tall as the column of workers, so every arrow to it is horizontal and
    # its labels never cross another arrow (figure 000 does the same with its processors).
    top, bottom = ys[0] + 0.5, ys[-1] - 0.5
    _box(ax, (ps_left + ps_right) / 2, (top + bottom) / 2, ps_right - ps_left, top - bottom,
         "server", "")
    ax.text((ps_left + ps_right) / 2, top - 0.12, ROLE_LABELS["server"], ha="center", va="top",
            fontsize=LESSON_PT, weight="bold")
    for s, (names, nbytes) in enumerate(zip(run.shards, run.shard_bytes)):
        y = top - 0.75 - s * (top - bottom - 0.6) / max(len(run.shards), 1)
        inside = ", ".join(f"${p}$" for p in names)
        ax.text((ps_left + ps_right) / 2, y, f"shard {s}: {inside}\n{fmt_bytes(nbytes)}",
                ha="center", va="top", fontsize=LESSON_PT,
                bbox=dict(boxstyle="round,pad=0.3", facecolor="white", edgecolor="0.3"))
    for f, y in zip(found, ys):
        _box(ax, work_x, y, 1.5, 0.75, "worker", f"Worker {f.worker}\n(GPU{f.worker})")
        x0, x1 = data_x + 1.02, work_x - 0.77
        _arrow(ax, (x0, 0), (x1, y), "0.35")
        # the label's corner touches the arrow at 60 % of its length, the text on the outer side
        lx, ly = x0 + 0.6 * (x1 - x0), 0.6 * y
        ha, va = ("center", "bottom") if abs(y) < 1e-9 else ("right", "bottom" if y > 0 else "top")
        # (on a white ground: where the arrows fan out they pass under it, not through it)
        ax.text(lx, ly + (0.08 if ha == "center" else 0), f"{f.minibatches} batches\n{f.rows} rows",
                ha=ha, va=va, fontsize=LESSON_PT, color="0.25", zorder=5,
                bbox=dict(boxstyle="square,pad=0.1", facecolor="white", edgecolor="none"))
        # gradients up to the server above, weights back below: two parallel arrows per worker
        a, b = work_x + 0.77, ps_left - 0.02
        _arrow(ax, (a, y + 0.12), (b, y + 0.12), ROLES["gradient"])
        _arrow(ax, (b, y - 0.12), (a, y - 0.12), ROLES["weight"], dashed=True)
        ax.text((a + b) / 2, y + 0.2,
                f"{f.pushes} pushes of \u2207\u03b8, {fmt_bytes(f.push_bytes)}",
                ha="center", va="bottom", fontsize=LESSON_PT, color=ROLES["gradient"])
        ax.text((a + b) / 2, y - 0.2, f"{f.pulls} pulls of \u03b8, {fmt_bytes(f.pull_bytes)}",
                ha="center", va="top", fontsize=LESSON_PT, color=ROLES["weight"])
    ax.set_title(f"Distributed data-parallel training ({run.mode}, {n} workers): "
                 f"{run.updates} updates in {run.makespan:.2f} s", fontsize=LESSON_PT)
    return ax.figure
