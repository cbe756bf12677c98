"""Figure 003's dashboard: sliders for S, K, m, rounds and the controller's learning rate in
front of a live search, its three-tier timeline and its learning curve.

While a slider moves, each value runs the clock only (`numerics=False`: the children are drawn
from the initial, uniform policy and nothing trains), so the timeline follows at once. When
the sliders rest for `settle_delay` seconds, the real search runs (children trained, cached)
with a random search at the same budget, and the timeline and the reward curves are redrawn
from it. Without a running event loop (tests, scripts) that happens at once.

Both plots are drawn by the browser from the search's data (`pslab.notebook.nas_browser_tiers`, the
core dashboards' `BrowserFigure`): a slider step sends the blocks, not a PNG; a hover on a
child's block says which architecture it was and how it did; a busy region zooms (drag, wheel;
double-click: the whole search). Matplotlib draws the static picture a saved notebook keeps
(`Dashboard.snapshot`).

    pslab.notebook.nas_live.dashboard()          # S=2, K=3, m=2, 10 rounds, lr 2
"""
from __future__ import annotations

import html
import io
from typing import Any

import ipywidgets as W
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image

from ..checks import integer
from ..drawing.sizes import CELL_IN
from .browser_figure import BrowserFigure
from .livefigure import png_bytes
from .controls import check_settle_delay, dress, within
from .dashboard import TEXT_STYLE, DashboardBase, count
from .nas_browser_tiers import (REWARDS_LAYOUT, REWARDS_LEGEND, TIERS_LAYOUT, TIERS_LEGEND,
                            rewards_panel, tiers_panel)
from ..nas.front import random_search, search
from ..nas.result import Search
from ..drawing.nas_tiers_plot import TiersPlot
from ..nas.scale import server_busy

LRS = (0.2, 0.5, 1.0, 2.0, 4.0, 10.0)
RANGES = {"servers": (1, 8), "controllers": (1, 8), "children": (1, 4), "rounds": (2, 20)}
START = dict(servers=2, controllers=3, children=2, rounds=10, lr=2.0, mode="async")
HELP = {"servers": "S: shards of the parameter server that holds the controllers' weights",
        "controllers": "K: controllers (the server's workers), each a replica of the search",
        "children": "m: child networks each controller samples and trains per round",
        "rounds": "rounds of sampling, training and pushing",
        "lr": "the controllers' REINFORCE learning rate",
        "mode": "sync: the controllers' pushes averaged once per round; async: each applied "
                "as it comes"}
DPI = 80


def _render(fig: Figure) -> bytes:
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return png_bytes(canvas)


def describe_search(result: Search) -> str:
    """The numbers a dashboard prints (exact: they compare between runs)."""
    text = (f"S={result.servers}, K={result.controllers}, m={result.children}, "
            f"{result.rounds} rounds: makespan {result.makespan:.1f} s, busiest shard busy "
            f"{server_busy(result):.0%}, max staleness {max(result.staleness, default=0)}")
    return text + "; " + result.headline()


def plot_curves(result: Search, baseline: Search | None = None) -> Figure:
    """Mean accuracy of the children per round: each replica thin, the mean thick, random
    search at the same budget grey."""
    fig = Figure(figsize=(CELL_IN, 1.85), dpi=DPI, layout="constrained")
    ax = fig.add_subplot()
    x = np.arange(result.rounds)  # rounds count from 0, as in the hover
    for k, row in enumerate(result.rewards):
        ax.plot(x, row, color="#2E7D32", alpha=0.35, lw=1.2)
    ax.plot(x, result.curve, color="#2E7D32", lw=3, label="REINFORCE, mean of the replicas")
    if baseline is not None:
        ax.plot(x, baseline.curve, color="0.45", lw=3, ls="--",
                label="random search, same budget")
    ax.set_ylim(0, 1)
    ax.set_xlabel("round", fontsize=12)
    ax.set_ylabel("held-out accuracy R", fontsize=12)
    ax.tick_params(labelsize=11)
    ax.grid(alpha=0.3)
    return fig  # its title, CURVES_TITLE, is the dashboard's caption (a short picture)


CURVES_TITLE = ("held-out accuracy of the children sampled each round: REINFORCE green (each "
                "replica thin, their mean thick), random search at the same budget grey dashed")


class Dashboard(DashboardBase):
    """Controls + the live timeline and reward curves of figure 003. Display it as the last
    line of a cell. Headless: `dash.set(controllers=5)`, then `dash.result`, `dash.figures`
    (the data the browser draws), `dash.snapshot()` (the same as a PNG).

    The slider plumbing (debounce, status, fade, `set`, layout) is `DashboardBase`'s; this
    class says what runs on each path and what is drawn."""

    def __init__(self, *, settle_delay: float | None = 0.4, seed: int = 0, **start: Any):
        unknown = set(start) - set(START)
        if unknown:
            raise ValueError(f"no control named {', '.join(sorted(unknown))}; the controls "
                             f"are {', '.join(START)}")
        check_settle_delay(settle_delay)
        self.seed = integer("seed", seed, low=0, high=2**64 - 1)
        controls: dict[str, W.ValueWidget] = {
            n: W.IntSlider(START[n], min=lo, max=hi, description=n)
            for n, (lo, hi) in RANGES.items()}
        controls["lr"] = W.SelectionSlider(options=[(f"{v:g}", v) for v in LRS],
                                           value=START["lr"], description="lr")
        controls["mode"] = W.Dropdown(options=["async", "sync"], value=START["mode"],
                                      description="mode")
        for name, value in start.items():  # the rule `set` checks by: no clamp, no TraitError
            within(name, controls[name], value)
            controls[name].value = value
        for name, c in controls.items():
            dress(name, c, HELP[name])
        # the browser test moves the `pslab-workers` slider: the controllers are the workers
        # of figure 003's parameter server
        controls["controllers"].add_class("pslab-workers")
        # drawn by the browser from the search's data (hover, zoom), a cell wide
        figures = {"timeline": BrowserFigure(TIERS_LAYOUT),
                   "rewards": BrowserFigure(REWARDS_LAYOUT)}
        self.caption = W.HTML()
        self.result: Search | None = None
        self.baseline: Search | None = None
        super().__init__(controls, figures, settle_delay=settle_delay, preset="003",
                         extra=(self.caption,))

    @property
    def settings(self) -> dict[str, Any]:
        return {n: c.value for n, c in self.controls.items()}

    @property
    def run(self) -> Search | None:
        return self.result

    def _search(self, numerics: bool) -> Search:
        return search(seed=self.seed, numerics=numerics, **self.settings)

    def refresh(self) -> None:
        """The fast path: the clock only, the timeline redrawn; the reward curve and the
        numbers (of the last settled values) fade until the search is redone."""
        self.result = self._search(numerics=False)
        self._show_timeline()

    def _show_timeline(self) -> None:
        r = self.result
        self.caption.value = (f"<div style='{TEXT_STYLE}'>Timeline (rows: S shards of the "
                              "server, C controllers, Ck.j controller k's children; a hover "
                              "on a block says what it is): " + html.escape(self._title())
                              + ".<br>Curves: " + CURVES_TITLE + ".</div>")
        self.figures["timeline"].show([tiers_panel(r, replicas=4)], TIERS_LEGEND)

    def _title(self) -> str:
        r = self.result
        when = ("the search, children trained" if r.settings.numerics else
                "clock only while the sliders move (children from the initial policy)")
        return (f"{when}: makespan {r.makespan:.1f} s, busiest shard busy "
                f"{server_busy(r):.0%}" + (f" (first 4 of {r.controllers} replicas shown)"
                                          if r.controllers > 4 else ""))

    def compute(self) -> dict[str, Any]:
        """The slow path: the real search and random search; every plot redrawn."""
        self.set_status("busy", "training the children…")
        s = self.settings
        self.result = self._search(numerics=True)
        self.baseline = random_search(controllers=s["controllers"], children=s["children"],
                                      rounds=s["rounds"], seed=self.seed)
        self._show_timeline()
        self.figures["rewards"].show([rewards_panel(self.result, self.baseline)],
                                     REWARDS_LEGEND)
        self.numbers.value = (f"<div style='{TEXT_STYLE}'><b>"
                              + html.escape(describe_search(self.result)) + "</b></div>")
        self.why.value = self._why(s)
        return s

    def ready_text(self) -> str:
        return f"ready ({self.result.trained} children trained now, the rest from the cache)"

    def describe(self) -> str:
        return describe_search(self.result)

    def plain(self) -> str:
        return "pslab NAS dashboard: " + self.describe()

    def _why(self, s: dict[str, Any]) -> str:
        """Why async ends later than sync, when it does: sync's search at the same values,
        children trained as in the run shown (their architectures set the clock; the trained
        children are cached, so this costs a fraction of the search)."""
        if s["mode"] != "async":
            return ""
        sync = search(seed=self.seed, numerics=True, **dict(s, mode="sync"))
        if self.result.makespan <= sync.makespan:
            return ""
        return (f"<div style='{TEXT_STYLE};color:#444'>"
                f"Why async ends later than sync ({self.result.makespan:.1f} s vs "
                f"{sync.makespan:.1f} s): every replica's pushes are applied one at a time and "
                f"queue at the {count(s['servers'], 'shard')} behind the other replicas' "
                "pushes.</div>")

    def snapshot_figures(self) -> tuple[Figure, Figure]:
        """The timeline and the reward curves drawn by matplotlib (what `snapshot` saves)."""
        height = 2.9  # inches: the rows, the time axis and the legend (two rows) below them
        fig = Figure(figsize=(CELL_IN, height), dpi=DPI)
        ax = fig.add_axes((1.05 / CELL_IN, 1.0 / height, 0.985 - 1.05 / CELL_IN,
                           1 - 1.08 / height))
        tiers = TiersPlot(ax, legend_below=-0.45 / (height - 1.08), legend_rows=2)
        tiers.row_px = 13  # many rows: every k-th named, the labels never overlap
        tiers.tier_names = False  # said in the caption: S shards, C controllers, Ck.j
        tiers.update(self.result, replicas=4, title=self._title())
        tiers.title.set_visible(False)
        curves = plot_curves(self.result, self.baseline) if self.baseline is not None \
            and self.result.settings.numerics else None
        return fig, curves

    def snapshot(self) -> bytes:
        """One PNG of the timeline over the reward curves: the static picture a saved notebook
        keeps for readers without a kernel (drawn once, when the dashboard is shown)."""
        parts = [Image.open(io.BytesIO(_render(f))).convert("RGB")
                 for f in self.snapshot_figures() if f is not None]
        sheet = Image.new("RGB", (max(p.width for p in parts), sum(p.height for p in parts)),
                          "white")
        top = 0
        for p in parts:
            sheet.paste(p, (0, top))
            top += p.height
        out = io.BytesIO()
        sheet.save(out, format="png", compress_level=6)
        return out.getvalue()

    def __repr__(self) -> str:
        return f"pslab.notebook.nas_live.Dashboard({self.settings})"


def dashboard(**start: Any) -> Dashboard:
    """Figure 003's dashboard; keyword arguments set the controls' starting values."""
    return Dashboard(**start)
