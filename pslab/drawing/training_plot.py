"""Training curves and staleness of figure 000's two modes: what async buys and what it costs.

Loss and test accuracy are drawn against *virtual time*, not only against steps: async makes
more updates per second (no worker waits for the straggler), each on staler weights. Loss and
accuracy get a panel each, the loss on a log axis: a diverging run (loss 50) and a converging
one (loss 0.2) then both stay readable, and neither curve can be mistaken for the other. The
staleness histogram shows how stale. Both plots update in place for the notebook widgets.
"""
from __future__ import annotations

import textwrap
from collections import Counter
from typing import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle
from matplotlib.ticker import (FixedLocator, FuncFormatter, LogLocator, MaxNLocator,
                               PercentFormatter)

from ..checks import run_labels
from ..result import Run, as_runs
from .palette import RUN_COLOURS  # one colour per run (the browser's curves read it too)
from .sizes import CELL_IN

LOG_SUBS = (1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8)  # minor ticks of the log loss axis (x 10^k)
X_AXES = {"time": "virtual time (s)", "update": "server updates", "step": "step"}


def _minor_label(ax: Axes, v: float) -> str:
    """A log axis's minor tick label (x 10^k): every one on a range narrower than 4x, 2, 3, 5
    up to 20x, 2 and 5 up to 200x (where one or no power of ten is in view); else none."""
    low, high = ax.get_ylim()
    if not (0 < low < high) or high / low > 200 or v <= 0:
        return ""
    mantissa = round(float(v / 10 ** np.floor(np.log10(v))), 6)
    ratio = high / low  # the narrower the range, the more of its minor ticks are labelled
    shown = LOG_SUBS if ratio < 4 else (2, 3, 5) if ratio < 20 else (2, 5)
    return f"{v:g}" if mantissa in shown else ""


def _runs(runs: Run | Sequence[Run]) -> list[Run]:
    return as_runs(runs, "runs")


def _x(run: Run, x: str) -> np.ndarray:
    if x == "time":
        return np.array([r.time for r in run.history], dtype=float)
    if x == "update":
        return np.array([r.version for r in run.history], dtype=float)
    return np.array([r.step + 1 for r in run.history], dtype=float)


class TrainingPlot:
    """Loss (log axis) and test accuracy, each in its own panel, of one or more runs.

    ax: the loss panel; acc_ax: the accuracy panel (default: a new panel to the right of ax).
    x: "time" (virtual seconds, the default), "update" (server version) or "step".
    The legend sits above the loss panel, off the data.
    """

    def __init__(self, ax: Axes, x: str = "time", acc_ax: Axes | None = None):
        if x not in X_AXES:
            raise ValueError(f"x must be one of {sorted(X_AXES)} (got {x!r})")
        self.ax, self.x = ax, x
        if acc_ax is None:
            from mpl_toolkits.axes_grid1 import make_axes_locatable

            acc_ax = make_axes_locatable(ax).append_axes("right", size="100%", pad=0.8)
        self.acc_ax = acc_ax
        self.loss_lines: list[Line2D] = []
        self.acc_lines: list[Line2D] = []
        for a in (ax, acc_ax):
            a.set_xlabel(X_AXES[x])
        ax.set_ylabel("training loss (log)")
        ax.set_yscale("log")
        # plain numbers (0.5, 1, 2), and on a range narrower than a decade its 2s, 3s and 5s
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_locator(LogLocator(subs=LOG_SUBS))
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: _minor_label(ax, v)))
        acc_ax.set_ylabel("test accuracy")
        acc_ax.set_ylim(0, 1)
        acc_ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        self.title = acc_ax.set_title("", fontsize=9, loc="left")  # the legend is over `ax`
        self._labels: list[str] = []

    def _lines(self, n: int) -> None:
        while len(self.loss_lines) < n:  # grow the pool; never rebuilt on plain updates
            c = RUN_COLOURS[len(self.loss_lines) % len(RUN_COLOURS)]
            self.loss_lines.append(self.ax.plot([], [], color=c, lw=2, marker=".", ms=4)[0])
            self.acc_lines.append(self.acc_ax.plot([], [], color=c, lw=2, marker=".", ms=4)[0])

    def update(self, runs: Run | Sequence[Run], labels: Sequence[str] | None = None) -> None:
        runs = _runs(runs)
        labels = list(labels) if labels is not None else [r.mode for r in runs]
        self._lines(len(runs))
        right = 0.0
        for i, (loss_line, acc_line) in enumerate(zip(self.loss_lines, self.acc_lines)):
            if i < len(runs):
                xs = _x(runs[i], self.x)
                loss_line.set_data(xs, [r.loss for r in runs[i].history])
                acc_line.set_data(xs, [r.accuracy for r in runs[i].history])
                loss_line.set_label(labels[i])
                right = max(right, xs.max() if len(xs) else 0.0)
            loss_line.set_visible(i < len(runs))
            acc_line.set_visible(i < len(runs))
        for a in (self.ax, self.acc_ax):
            a.set_xlim(0, right * 1.02 or 1.0)
        self.ax.relim(visible_only=True)
        self.ax.autoscale_view(scalex=False)
        if labels != self._labels:  # a legend rebuild costs ~1 ms: only when the names change
            self.ax.legend(handles=self.loss_lines[:len(runs)], fontsize=11, loc="lower left",
                           bbox_to_anchor=(0, 1.0), ncol=2, frameon=False, borderaxespad=0.2)
            self._labels = labels
        self.title.set_text(curves_title(runs, labels))


def curves_title(runs: Sequence[Run], labels: Sequence[str]) -> str:
    """One line per run (a caption never wraps in the middle of a number): its final test
    accuracy and makespan."""
    return "\n".join(f"{lab}: test accuracy {r.final_accuracy:.1%} at {r.makespan:.1f} s"
                     f"{' — DIVERGED' if r.diverged else ''}" for lab, r in zip(labels, runs))


def staleness_title(run: Run) -> str:
    """'async: 240 updates, mean staleness 2.31, max 7'."""
    st = run.staleness
    mean = float(np.mean(st)) if st else 0.0
    return (f"{run.mode}: {run.updates} updates, mean staleness {mean:.2f}, "
            f"max {max(st, default=0)}")


class StalenessPlot:
    """Histogram of the staleness of every applied update: bars whose heights are updated."""

    def __init__(self, ax: Axes, colour: str = RUN_COLOURS[1]):
        self.ax, self.colour = ax, colour
        self.bars: list[Rectangle] = []
        ax.set_xlabel("staleness (versions behind when applied)")
        ax.set_ylabel("updates")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True, nbins=6))  # counts: whole
        self.title = ax.set_title("", fontsize=10)

    def update(self, run: Run) -> None:
        counts = Counter(run.staleness)
        top = max(counts, default=0)
        while len(self.bars) <= top:  # one bar per value; new ones only when staleness grows
            self.bars.append(self.ax.add_patch(Rectangle(
                (len(self.bars) - 0.4, 0), 0.8, 0, facecolor=self.colour, edgecolor="black",
                linewidth=0.6)))
        for value, bar in enumerate(self.bars):
            bar.set_height(counts.get(value, 0))
            bar.set_visible(value <= top)
        self.ax.set_xlim(-0.6, top + 0.6)
        # versions: whole numbers; a tick under every bar while they are few (staleness 0
        # alone is one tick, 0, not -0.6 ... 0.6)
        self.ax.xaxis.set_major_locator(FixedLocator(range(top + 1)) if top < 8
                                        else MaxNLocator(integer=True, nbins=6))
        self.ax.set_ylim(0, max(counts.values(), default=1) * 1.1)
        self.title.set_text(staleness_title(run))

    def heights(self) -> dict[int, float]:
        """Bar height per staleness value, read back from the drawn bars."""
        return {i: b.get_height() for i, b in enumerate(self.bars) if b.get_visible()}


def plot_training(runs: Run | Sequence[Run], ax: Axes | None = None,
                  labels: Sequence[str] | None = None, x: str = "time") -> Figure:
    """Loss and test accuracy of one or more runs against virtual time (or x="update"/"step");
    returns the figure (its `pslab_plots` holds the TrainingPlot)."""
    given = run_labels(labels, len(as_runs(runs, "runs")))
    labels = None if labels is None else given
    check_ax(ax)
    acc_ax = None
    if ax is None:
        # the accuracy panel a little wider: its title holds one line per run
        ax, acc_ax = Figure(figsize=(CELL_IN, 3.6), layout="constrained").subplots(
            1, 2, width_ratios=(1, 1.3))
    plot = TrainingPlot(ax, x=x, acc_ax=acc_ax)
    plot.update(runs, labels)
    if acc_ax is not None:  # our own figure, a cell wide: long run names wrap over the panel
        plot.title.set_text("\n".join(textwrap.fill(line, 48, subsequent_indent="  ")
                                      for line in plot.title.get_text().splitlines()))
    ax.figure.pslab_plots = [plot]
    return ax.figure


def plot_staleness(run: Run, ax: Axes | None = None) -> Figure:
    """Histogram of how many versions behind each update's gradient was; returns the figure."""
    as_runs(run, many=False)
    check_ax(ax)
    if ax is None:
        ax = Figure(figsize=(min(5, CELL_IN), 3.2), layout="constrained").add_subplot()
    plot = StalenessPlot(ax)
    plot.update(run)
    ax.figure.pslab_plots = [plot]
    return ax.figure


def check_ax(ax: object) -> None:
    """A drawing entry draws into a matplotlib Axes it is given, or into a new figure."""
    if ax is not None and not isinstance(ax, Axes):
        raise ValueError(f"ax must be a matplotlib Axes or None (got {type(ax).__name__})")
