"""A classic result's sweep drawn (notebook 05): lines over a numeric knob, grouped bars over
named cases."""
from __future__ import annotations

from matplotlib.figure import Figure

from ..classic.result import Result


def plot_result(result: Result, figsize: tuple[float, float] = (7.0, 3.6)) -> Figure:
    """The sweep: lines over a numeric knob, grouped bars over named cases."""
    fig = Figure(figsize=figsize, layout="constrained")
    ax = fig.add_subplot()
    numeric = all(isinstance(x, (int, float)) for x in result.xs)
    for i, (label, ys) in enumerate(result.series.items()):
        if numeric:
            on = ax.twinx() if label == result.twin else ax
            on.plot(result.xs, ys, marker="o", label=label, color=f"C{i}")
            if on is not ax:
                on.set_ylabel(label, color=f"C{i}")
                on.set_ylim(bottom=0)
        else:
            width = 0.8 / len(result.series)
            pos = [j + (i - (len(result.series) - 1) / 2) * width for j in range(len(result.xs))]
            bars = ax.bar(pos, ys, width, label=label)
            ax.bar_label(bars, fmt="%.3g", fontsize=9)
    if result.scale == "log":
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
    if not numeric:
        ax.set_xticks(range(len(result.xs)), [str(x) for x in result.xs], fontsize=9)
    ax.set_xlabel(result.x)
    ax.set_ylabel(result.ylabel)
    ax.set_title(result.title, fontsize=10)
    ax.grid(alpha=0.3)
    if len(result.series) > 1 and result.twin is None:
        ax.legend(fontsize=9, frameon=False)
    return fig
