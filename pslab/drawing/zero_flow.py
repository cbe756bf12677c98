"""Figure 000's two server shards redrawn as ZeRO's per-worker shards, in figure 002's style.

No server: worker i holds shard i (key range i of the flattened parameters) and the workers
pass chunks round a ring, each to the next (the last to the first). Every edge is labelled with
what flowed on it in the run, counted from its timeline: the batches from the data to each
worker, and each worker's reduce-scatters (gradients, red) and all-gathers (weights, blue) to
its neighbour, a collective moving (N − 1)/N of the model's bytes per worker. A ring
all-reduce run draws the same ring, every worker holding the whole model: its reduce phase is
its "push" spans, its gather phase its "fetch" spans.
"""
from __future__ import annotations

from typing import NamedTuple

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..layout import BYTES_PER_VALUE
from ..result import Run, as_runs
from ..zero import stage_of
from .dataflow_plot import _arrow, _box, fmt_bytes
from .palette import ROLE_LABELS, ROLES
from .sizes import CELL_IN, LESSON_PT
from .training_plot import check_ax

# span kinds of each phase: ZeRO's own, or the ring all-reduce's two halves
PHASES = {"reduce-scatter": ("reduce-scatter", "push"), "all-gather": ("all-gather", "fetch")}
# what a worker keeps (the paper's P_os, P_os+g, P_os+g+p); pslab's SGD has no optimizer state
HOLDS = {0: "keeps whole θ, ∇θ", 1: "whole θ, ∇θ; its opt. state", 2: "whole θ; its ∇θ, opt. state",
         3: "only its θ, ∇θ, opt. state"}


class RingFlow(NamedTuple):
    """What one worker sent to the next worker of the ring during a run."""

    worker: int
    minibatches: int  # compute spans: batches read from the data
    to: int
    reduce_scatters: int
    reduce_scatter_bytes: float
    all_gathers: int
    all_gather_bytes: float


def ring_flows(run: Run) -> list[RingFlow]:
    """Per worker, its collectives and the bytes it sent to its ring neighbour: each one
    (N − 1) chunks of M/N bytes, M the model's bytes."""
    as_runs(run, many=False)
    if run.settings.backend == "processes" or run.settings.mode.schedule == "server":
        raise ValueError(f"run must be a simulated ZeRO(stage) or 'allreduce' run (got "
                         f"mode={run.mode}, backend={run.settings.backend}); "
                         f"pslab.plot.plot_dataflow draws a parameter server's")
    n, model = run.workers, run.layout.size * BYTES_PER_VALUE
    chunk = (n - 1) * model / n
    out = []
    for w in range(n):
        mine = [s.kind for s in run.timeline if s.worker == w]
        count = {phase: sum(1 for k in mine if k in kinds) for phase, kinds in PHASES.items()}
        out.append(RingFlow(w, mine.count("compute"), (w + 1) % n, count["reduce-scatter"],
                            count["reduce-scatter"] * chunk, count["all-gather"],
                            count["all-gather"] * chunk))
    return out


def plot_zero_flow(run: Run, ax: Axes | None = None) -> Figure:
    """The ring of a ZeRO (or all-reduce) run: data -> workers, each worker's shard, and what
    every worker sent to the next, from `run`'s timeline."""
    found = ring_flows(run)
    check_ax(ax)
    n, stage = run.workers, stage_of(run.mode)
    if ax is None:
        ax = Figure(figsize=(CELL_IN, 1.05 * n + 1.5), layout="constrained").add_subplot()
    ax.set_axis_off()
    height = 1.05 * n
    ys = [height / 2 - (i + 0.5) * 1.05 for i in range(n)]  # worker 0 on top
    data_x, work_x, half_w, half_h, bracket = 0.3, 4.45, 1.65, 0.4, 6.3
    ax.set_xlim(-0.1, 10.1)
    ax.set_ylim(-height / 2 - 0.05, height / 2 + 0.05)
    batch = run.settings.batch
    # the data as tall as the column of workers, so every arrow from it is horizontal and its
    # label never crosses another arrow (the server of figure 002 does the same)
    _box(ax, data_x, 0, 0.6, ys[0] - ys[-1] + 2 * half_h, "data", "")
    ax.text(data_x, 0, f"{ROLE_LABELS['data']}: {sum(f.minibatches for f in found) * batch} "
            f"rows, batch {batch}", rotation=90, ha="center", va="center",
            fontsize=LESSON_PT)
    for f, y in zip(found, ys):
        layout = run.layout
        keys = (f"shard {f.worker}: keys {layout.ranges[f.worker][0]}–"
                f"{layout.ranges[f.worker][1] - 1}" if stage else "no shard")
        _box(ax, work_x, y, 2 * half_w, 2 * half_h, "worker",
             f"Worker {f.worker} (GPU{f.worker})\n{keys}\n{HOLDS[stage]}")
        x0, x1 = data_x + 0.32, work_x - half_w - 0.02
        _arrow(ax, (x0, y), (x1, y), "0.35")
        ax.text((x0 + x1) / 2, y + 0.06, f"{f.minibatches} batches", ha="center", va="bottom",
                fontsize=LESSON_PT, color="0.25")
        if f.to == f.worker + 1:  # down to the next box, in the gap between the two
            _arrow(ax, (work_x, y - half_h), (work_x, y - 1.05 + half_h), "black")
        ax.text(bracket + 0.2, y + 0.05, f"{f.reduce_scatters} reduce-scatters to W{f.to}: "
                f"{fmt_bytes(f.reduce_scatter_bytes)}", ha="left", va="bottom",
                fontsize=LESSON_PT, color=ROLES["gradient"])
        ax.text(bracket + 0.2, y - 0.05, f"{f.all_gathers} all-gathers to W{f.to}: "
                f"{fmt_bytes(f.all_gather_bytes)}", ha="left", va="top", fontsize=LESSON_PT,
                color=ROLES["weight"])
    if n > 1:  # the ring closes: the last worker sends to worker 0, up the right side
        right = work_x + half_w
        ax.plot([right, bracket, bracket], [ys[-1], ys[-1], ys[0]], color="black", lw=1.6)
        _arrow(ax, (bracket, ys[0]), (right, ys[0]), "black")
    model, rounds = run.layout.size * BYTES_PER_VALUE, 3 if stage == 3 else 2
    ax.set_title(f"{run.mode}, {n} workers, no server: each sends to the next round the ring\n"
                 f"per worker per step: {rounds}·Ψ·(N−1)/N = {rounds} × {fmt_bytes(model)} × "
                 f"{n - 1}/{n} = {fmt_bytes(rounds * model * (n - 1) / n)}", fontsize=LESSON_PT)
    return ax.figure
