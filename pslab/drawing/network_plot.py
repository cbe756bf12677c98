"""Measured across hosts vs simulated, as a picture: each case's per-step error against how much
its link carries during one minibatch's compute (bandwidth x compute, in bits), one marker per
mode, the goal's bands (3 % and 8 %) shaded. Cases on the left are network-bound (the link is
slow beside the compute), on the right compute-bound."""
from __future__ import annotations

import textwrap
from typing import Any

from ..processes.comparison import MODE_NAMES
from .sizes import CELL_IN, MIN_PT

MARKERS = {"sync": "o", "async": "s", "ssp:1": "^", "backup:1": "v", "allreduce": "D",
           "zero3": "P"}



def errors_plot(comparison: Any, ax=None):
    """The figure of a `pslab.processes.Comparison` read from a bench file (its label as the
    title's second line). Returns the matplotlib Figure (not registered with pyplot)."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import NullFormatter

    if ax is None:  # no pyplot: the figure shows once, as the value of a notebook cell
        ax = Figure(figsize=(CELL_IN, 4.6)).subplots()  # a cell wide: its text at its own size
    cases = [c for c in comparison.cases if "bandwidth" in c]
    ax.axhspan(-8, 8, color="0.93", zorder=0, label="goal: worst 8 %")
    ax.axhspan(-3, 3, color="0.85", zorder=0, label="3 % (the median's goal)")
    for mode, marker in MARKERS.items():
        mine = [c for c in cases if c["mode"] == mode]
        if mine:
            ax.scatter([c["bandwidth"] * c["compute"] for c in mine],
                       [100 * c["error"] for c in mine], marker=marker, label=MODE_NAMES.get(mode, mode),
                       zorder=2)
    ax.axhline(0, color="0.4", lw=0.8)
    ax.set_xscale("log")
    ax.xaxis.set_minor_formatter(NullFormatter())  # decades only: minor labels collide
    ax.set_xlabel("bandwidth x compute\n(bits the link carries during one minibatch's compute)")
    ax.set_ylabel("error of the step time (%)\n(simulated / measured - 1)")
    # the long label within the cell: the machine on one line, when and which file on the next
    label = "\n".join(line for part in comparison.label.split("; ")
                       for line in textwrap.wrap(part, 80))
    ax.set_title(f"measured across hosts vs simulated, {len(cases)} cases\n{label}",
                 fontsize=MIN_PT)
    ax.legend(fontsize=MIN_PT, ncol=2, loc="best")
    ax.figure.tight_layout()
    return ax.figure
