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
from .run import Run


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
    out = []
    for w in range(run.workers):
        mine = [s for s in run.timeline if s.worker == w]
        mb = sum(1 for s in mine if s.kind == "compute")
        push = [s for s in mine if s.kind == "push"]
        pull = [s for s in mine if s.kind == "fetch"]
        out.append(Flow(
            w, mb, mb * run.config["batch"],
            len({s.step for s in push}), sum(run.shard_bytes[s.shard] for s in push),
            len({s.step for s in pull}), sum(run.shard_bytes[s.shard] for s in pull)))
    return out


def fmt_bytes(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"  # unreachable; keeps type checkers happy


def _box(ax: Axes, x: float, y: float, w: float, h: float, role: str, text: str) -> None:
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.02,rounding_size=0.1",
                                facecolor=ROLES[role], edgecolor="black", linewidth=1.2))
    ax.text(x, y, text, ha="center", va="center", fontsize=8.5)


def _arrow(ax: Axes, a: tuple, b: tuple, colour: str, rad: float = 0.0, dashed: bool = False) -> None:
    ax.add_patch(FancyArrowPatch(a, b, arrowstyle="-|>", mutation_scale=12, color=colour, lw=1.6,
                                 linestyle="--" if dashed else "-",
                                 connectionstyle=f"arc3,rad={rad}", shrinkA=2, shrinkB=2))


def plot_dataflow(run: Run, ax: Axes | None = None) -> Figure:
    """The data-parallel diagram of figure 002 with every edge labelled from `run`."""
    n = run.workers
    if ax is None:
        ax = Figure(figsize=(10, max(3.6, 1.25 * n + 1.4)), layout="constrained").add_subplot()
    ax.set_axis_off()
    height = max(n * 1.4, 3.0)
    ys = [height / 2 - (i + 0.5) * height / n for i in range(n)]  # worker 1 on top
    data_x, work_x, ps_x = 0.9, 4.6, 8.6
    ax.set_xlim(-0.1, 10.1)
    ax.set_ylim(-height / 2 - 0.5, height / 2 + 0.3)
    cfg = run.config
    _box(ax, data_x, 0, 1.6, 1.1, "data",
         f"{ROLE_LABELS['data']}\n{cfg['steps']} steps x {n} workers\nx {cfg['accumulate']} x "
         f"{cfg['batch']} rows")
    shard_text = "\n".join("{" + ", ".join(f"${p}$" for p in names) + "}" for names in run.shards)
    _box(ax, ps_x, 0, 2.0, max(1.1, 0.35 * len(run.shards) + 0.7), "server",
         f"{ROLE_LABELS['server']}\n{shard_text}")
    for f, y in zip(flows(run), ys):
        _box(ax, work_x, y, 1.5, 0.75, "worker", f"Worker {f.worker + 1}\n(GPU{f.worker + 1})")
        _arrow(ax, (data_x + 0.82, 0), (work_x - 0.77, y), "0.35")
        ax.text((data_x + work_x) / 2 + 0.1, y / 2 + 0.12, f"{f.minibatches} batches\n{f.rows} rows",
                ha="center", va="bottom", fontsize=7.5, color="0.25")
        # gradients up (above the straight line), weights back (below): the arcs keep them apart
        _arrow(ax, (work_x + 0.77, y + 0.12), (ps_x - 1.02, 0.12), ROLES["gradient"], rad=-0.12)
        _arrow(ax, (ps_x - 1.02, -0.12), (work_x + 0.77, y - 0.12), ROLES["weight"], rad=-0.12,
               dashed=True)
        mid = (work_x + ps_x) / 2 - 0.45
        ax.text(mid, y * 0.55 + 0.22, f"{f.pushes} pushes ∇θ, {fmt_bytes(f.push_bytes)}",
                ha="center", va="bottom", fontsize=7.5, color=ROLES["gradient"])
        ax.text(mid, y * 0.55 - 0.22, f"{f.pulls} pulls θ, {fmt_bytes(f.pull_bytes)}",
                ha="center", va="top", fontsize=7.5, color=ROLES["weight"])
    ax.set_title(f"Distributed data-parallel training ({run.mode}, {n} workers): "
                 f"{run.updates} updates in {run.makespan:.2f} s", fontsize=10)
    return ax.figure
