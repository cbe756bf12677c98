"""ZeRO's two pictures (notebook 07): the modes' timelines one under the other on one time
axis, and the memory per GPU of each stage (the paper's Figure 1 beside our MLP's bytes)."""
from __future__ import annotations

from typing import Sequence

from matplotlib.figure import Figure

from ..checks import run_labels
from ..result import Run, as_runs
from ..zero import Memory
from .sizes import CELL_IN
from .timeline_plot import TimelinePlot, fit_screen, legend_handles

STATES = (("params", "parameters", "#7EA6E0"), ("grads", "gradients", "#E88A8A"),
          ("optimizer", "optimizer states", "#B6D7A8"), ("gathered", "a gathered layer",
                                                          "#F9CB9C"))


def stacked(runs: Sequence[Run], labels: Sequence[str] | None = None) -> Figure:
    """Several runs' timelines one under the other on one shared time axis, each titled with
    its makespan and idle share on one line; the rows thin (sizes.fit_screen) so that five
    runs of four workers fit one screen."""
    runs = as_runs(list(runs), "runs")
    labels = run_labels(labels, len(runs)) if labels is not None else [r.mode for r in runs]
    rows = [r.workers + len(r.shard_bytes) for r in runs]
    # a one-line title (0.2 in) a run; the time axis and a two-row legend under them (0.95 in)
    height = fit_screen(0.95 + 0.2 * len(runs), sum(rows), 0.42)
    fig = Figure(figsize=(CELL_IN, height), layout="constrained")
    fig.get_layout_engine().set(h_pad=0.02, hspace=0.0)
    axes = fig.subplots(len(runs), 1, sharex=True, height_ratios=rows)
    xmax = max(r.makespan for r in runs) * 1.02
    plots = []
    for ax, run, label in zip(axes, runs, labels):
        plot = TimelinePlot(ax, label=label, legend=False, text=None)
        plot.update(run, xmax=xmax)
        ax.set_xlabel("")
        ax.set_title(f"{label}: makespan {run.makespan:.2f} s, workers idle "
                     f"{run.idle_fraction:.1%}", fontsize=10, pad=2)
        plots.append(plot)
    axes[-1].set_xlabel("virtual time (s)")
    handles = legend_handles("ps", runs)  # up to 7 kinds: two rows fit a cell
    fig.legend(handles=handles, loc="outside lower center", ncol=4, fontsize=10, frameon=False)
    fig.pslab_plots = plots
    return fig


def memory_bars(groups: dict[str, Sequence[Memory]]) -> Figure:
    """Side-by-side panels of stacked bars, one bar per stage (0 = no ZeRO, 1, 2, 3):
    {panel title: [Memory per stage]}, each panel in its own unit (GB, MB, kB or bytes)."""
    if not groups or not all(1 <= len(m) <= 4 for m in groups.values()):
        raise ValueError("groups must map each panel's title to 1 to 4 Memory values "
                         "(stages 0..3)")
    fig = Figure(figsize=(CELL_IN, 3.4), layout="constrained")
    axes = fig.subplots(1, len(groups), squeeze=False)[0]
    for ax, (title, mems) in zip(axes, groups.items()):
        unit, unit_name = bytes_unit(max(m.total for m in mems))
        names = ["none", "ZeRO-1", "ZeRO-2", "ZeRO-3"][:len(mems)]
        bottom = [0.0] * len(mems)
        for key, label, colour in STATES:
            if not any(getattr(m, key) > 0 for g in groups.values() for m in g):
                continue  # held nowhere (plain SGD's optimizer state): no bar, no legend entry
            values = [getattr(m, key) / unit for m in mems]
            ax.bar(names, values, bottom=bottom, color=colour, edgecolor="black",
                   linewidth=0.6, label=label)
            bottom = [b + v for b, v in zip(bottom, values)]
        for x, total in enumerate(bottom):
            ax.text(x, total, f"{total:.3g}", ha="center", va="bottom", fontsize=10)
        ax.set_title(title, fontsize=10)
        ax.set_ylabel(f"{unit_name} per GPU", fontsize=10)
        ax.tick_params(labelsize=10)
        ax.set_ylim(0, max(bottom) * 1.18)
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="outside lower center", ncol=4, fontsize=10, frameon=False)
    return fig


def bytes_unit(most: float) -> tuple[float, str]:
    """(bytes per unit, its name): the largest of GB, MB, kB that `most` bytes reach."""
    for unit, name in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if most >= unit:
            return unit, name
    return 1.0, "bytes"
