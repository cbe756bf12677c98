"""Figure 003's three-tier timeline: server shards on top, controller replicas, their children.

A shard's row shows every job it served (Θ pulls blue, gradient pushes red, updates grey), so
a loaded server is a solid bar; a replica's row shows its own pulls and pushes and, white, the
time it waits for its slowest child (or for a busy shard); a child's row shows its training
(orange, as long as its FLOPs) and, white, the wait for its siblings. Colours are figure 000's
(`pslab.palette`). Large searches show the first `replicas` controllers and their children.
"""
from __future__ import annotations

import math
from typing import Iterator

import numpy as np
from matplotlib.axes import Axes
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from .palette import PALETTES
from .sizes import CELL_IN, MIN_PT
from .timeline_plot import fit_screen
from ..timeline import Span
from ..nas.scale import server_busy
from ..nas.result import Search

FIXED_IN = 2.0  # inches: three title lines, the time axis and a two-row legend
LEGEND_IN = 0.45  # inches from the axis' bottom to the legend's top (under the time axis)
NAMES = {"fetch": "Θ pull", "push": "gradient push", "update": "update of Θ",
         "compute": "child training", "idle": "waiting"}
HEIGHT = 0.8


def rows(result: Search, replicas: int | None = None) -> list[tuple[str, str, int]]:
    """(tier, label, key) top to bottom; key is the shard for servers, else `Span.worker`."""
    shown = result.controllers if replicas is None else min(replicas, result.controllers)
    out = [("servers", f"S{s}", s) for s in range(result.servers)]
    out += [("controllers", result.row_label(k), k) for k in range(shown)]
    m = result.children
    out += [("children", result.row_label(result.controllers + k * m + j),
             result.controllers + k * m + j) for k in range(shown) for j in range(m)]
    return out


def placed(result: Search, replicas: int | None = None) -> Iterator[tuple[Span, int]]:
    """(span, row) for every block one can see: a pull or push is drawn on its replica's row
    and on its shard's row (both are busy with it); a hidden replica's spans only on shards.
    Read by both renderers: matplotlib (`blocks`) and the browser (`pslab.notebook.nas_browser_tiers`)."""
    index = {(t == "servers", key): i for i, (t, _, key) in enumerate(rows(result, replicas))}
    for sp in result.timeline:
        if sp.end <= sp.start:
            continue
        if sp.shard is not None:
            yield sp, index[(True, sp.shard)]
        i = None if sp.worker is None else index.get((False, sp.worker))
        if i is not None:
            yield sp, i


def blocks(result: Search, replicas: int | None = None) -> dict[str, list[tuple]]:
    """(start, end, row) per kind (see `placed`)."""
    out: dict[str, list[tuple]] = {k: [] for k in NAMES}
    for sp, row in placed(result, replicas):
        out[sp.kind].append((sp.start, sp.end, row))
    return out


class TiersPlot:
    """A three-tier timeline drawn once and then moved in place by `update(result)`: one
    collection per kind of block, so a dashboard slider only changes vertices and labels
    (`artists()` are what changes, for `pslab.livefigure.LiveFigure` to redraw)."""

    def __init__(self, ax: Axes, legend_below: float = -0.13, legend_rows: int = 1):
        self.ax = ax
        self.collections = {k: PolyCollection([], facecolors=PALETTES["ps"][k],
                                              edgecolors="black", linewidths=0.4,
                                              zorder=3 if k == "update" else 2)
                            for k in NAMES}
        for coll in self.collections.values():
            ax.add_collection(coll, autolim=False)
        self.title = ax.set_title("", fontsize=12)
        self.row_px = 0.0  # a short live timeline sets it: then only every k-th row is named
        self.tier_names = True  # the names left of the rows (a short live timeline: caption)
        self.bands: list = []  # tier separators and names: they move with the rows
        ax.tick_params(axis="x", labelsize=11)
        ax.set_xlabel("virtual time (s)", fontsize=12)
        # the legend under the axis, in one row: the time axis keeps the figure's whole width
        ax.legend(handles=[Patch(facecolor=PALETTES["ps"][k], edgecolor="black", label=v)
                           for k, v in NAMES.items()], loc="upper center",
                  bbox_to_anchor=(0.5, legend_below), ncol=-(-len(NAMES) // legend_rows),
                  fontsize=11,
                  frameon=False)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)

    def update(self, result: Search, replicas: int | None = None,
               title: str | None = None) -> None:
        table = rows(result, replicas)
        for kind, found in blocks(result, replicas).items():
            coll = self.collections[kind]
            a = np.array(found).reshape(-1, 3)
            x0, x1, y = a[:, 0], a[:, 1], a[:, 2]
            y0, y1 = y - HEIGHT / 2, y + HEIGHT / 2
            coll.set_verts(np.stack([np.stack(p, -1) for p in
                                     ((x0, y0), (x0, y1), (x1, y1), (x1, y0))], 1))
            coll.set_linewidth(0.4 if len(found) < 3000 else 0.0)  # else edges are all we see
        ax = self.ax
        ax.set_xlim(0, result.makespan * 1.01 or 1.0)
        ax.set_ylim(len(table) - 0.5, -0.5)
        every = math.ceil(len(table) * self.row_px / ax.bbox.height) if self.row_px else 1
        ticks = range(0, len(table), max(1, every))
        labels = [table[i][1] for i in ticks]
        if [t.get_text() for t in ax.get_yticklabels()] != labels:
            ax.set_yticks(ticks, labels, fontsize=11 if len(table) <= 30 else MIN_PT)
        for artist in self.bands:
            artist.remove()
        self.bands = _tier_bands(ax, table, self.tier_names)
        self.title.set_text(title or _caption(result, len(table)))

    def artists(self) -> list:
        return [*self.collections.values(), self.title, *self.bands]


def plot_tiers(result: Search, ax: Axes | None = None, replicas: int | None = None,
               title: str | None = None) -> Figure:
    """Draw the three-tier timeline of `result` (see the module docstring)."""
    if not isinstance(result, Search):
        raise ValueError(f"result must be a pslab.nas.Search (what pslab.nas.search returns) "
                         f"(got {type(result).__name__})")
    n_rows = len(rows(result, replicas))
    if ax is None:
        # the rows thin to keep the figure within one screen (sizes.SCREEN_IN): the title,
        # the time axis and the legend take FIXED_IN; hundreds of rows scroll, up to 12 in
        height = min(fit_screen(FIXED_IN, n_rows, 0.32), 12.0)
        fig = Figure(figsize=(CELL_IN, height), layout="constrained")
        ax = fig.add_subplot()
        below = -LEGEND_IN / (height - FIXED_IN)  # the legend a fixed distance under the axis
    else:
        below = -0.13 if n_rows < 20 else -0.06
    TiersPlot(ax, legend_below=below, legend_rows=2).update(result, replicas, title)
    return ax.figure


def _tier_bands(ax: Axes, table: list[tuple[str, str, int]], names: bool = True) -> list:
    """A line between the tiers and the tier's name at its middle, left of the row labels;
    returns the artists."""
    tiers, out = [t for t, _, _ in table], []
    # points per row, roughly (before the layout settles): a tier's name shrinks to its band
    fig = ax.figure  # a Figure, or a SubFigure of figure 003's two panels
    row_pt = 0.7 * fig.bbox.height * 72 / fig.dpi / len(table)
    for name in ("servers", "controllers", "children"):
        idx = [i for i, t in enumerate(tiers) if t == name]
        if not idx:
            continue
        if idx[0] > 0:
            out.append(ax.axhline(idx[0] - 0.5, color="0.35", linewidth=1.0))
        if not names:
            continue
        size = min(11.0, len(idx) * row_pt / (0.65 * len(name)))
        # a fixed distance in points left of the axis: clear of the row labels at any width;
        # a tier too short for its name upright (one or two rows) has it written across
        upright = size >= MIN_PT
        out.append(ax.annotate(name, (0, (idx[0] + idx[-1]) / 2),
                               xycoords=ax.get_yaxis_transform(), xytext=(-40, 0),
                               textcoords="offset points", rotation=90 if upright else 0,
                               ha="right", va="center", fontsize=size if upright else MIN_PT,
                               weight="bold"))
    return out


def _caption(result: Search, n_rows: int) -> str:
    busy = server_busy(result)
    text = (f"{result.method}: S = {result.servers}, K = {result.controllers}, m = "
            f"{result.children}, {result.rounds} rounds\nmakespan {result.makespan:.0f} s, "
            f"busiest shard busy {busy:.0%} of the time")
    hidden = result.controllers - (n_rows - result.servers) // (1 + result.children)
    return text + (f"\n(first {result.controllers - hidden} of {result.controllers} replicas "
                   "shown)" if hidden > 0 else "")
