"""The notebook dashboards: sliders in front of a live pslab run, plots that follow in place.

    from pslab import widgets as pw
    pw.setup()                  # once per notebook: inline plots, fixed threads, fixed hashes
    pw.dashboard("000")         # figure 000's set-up: sync / async / SSP on a straggler

A dashboard has a control for the number of workers (1-16), accumulation steps (1-8), the
learning rate (log scale), the update mode (sync / async / SSP and its s), the straggler's
slowdown, the server shards, the network bandwidth and how a link carries transfers (duplex,
or one at a time as in the seed figures; `pslab.notebook.controls`). Its plots
(timeline, loss and accuracy against time, staleness or, in sync mode, each worker's time
split) are drawn by the browser from the runs' data (`BrowserFigure`): a slider step sends a
few kB of numbers, not a PNG, and a hover on a block shows its worker, kind, step, start, end,
shard and why it waited; a busy region zooms (drag or wheel; double-click: the whole run).
At 1024x768 with the file browser open the controls (two columns), the timeline and the loss
curve share one screen, the captions and numbers under them. While a slider moves, each value
runs the clock only (`numerics=False`) and redraws the timeline at once; the loss curve and the
numbers fade until the sliders have been still for `settle_delay` seconds and the run is
repeated with the arithmetic; where a diverged run's line names the largest learning rate
that trains, the runs that find it follow, a part of a run per turn of the kernel's event loop
(a slider moved meanwhile is answered at once after one part); "ready" shows only when everything
shown is of the controls' values. Without a running event loop (tests, scripts) that happens
at once. Matplotlib draws the static picture a saved notebook keeps
(`pslab.notebook.liveview.snapshot_of`).
"""
from __future__ import annotations

import html
import math
from typing import Any, Generator, Iterator

import ipywidgets as W

from .browser_figure import BrowserFigure
from .browser_plots import (CURVES_LAYOUT, curves, side_layout, side_legend, side_panel,
                            timeline_layout, timeline_legend, timeline_panel, timeline_rows)
from .livefigure import nice_ceiling
from .liveruns import LiveRuns
from .dashboard_settings import PRESETS, Settings, preset
from .liveview import snapshot_of, summary
from ..drawing.timeline_plot import shard_label
from .progress import Progress, sweep, table  # a notebook's tools beside its dashboard
from .controls import CONTROLS, HELP, LR_VALUES, check_settle_delay, dress
from ..result import Run
from .explain import why_html
from .dashboard import TEXT_STYLE, DashboardBase, count
from .prefetch import KEYED, key_of

__all__ = ["Dashboard", "dashboard", "setup", "Progress", "sweep", "table", "PRESETS", "preset"]

PLOTS = ("timeline", "training", "staleness")


class Dashboard(DashboardBase):
    """Controls + three live plots for one set-up. Display it as the last line of a cell.

    preset: "000", "001", "002" or "default" (see `pslab.notebook.dashboard_settings.PRESETS`); keyword
    overrides change any `Settings` field (e.g. steps=50). settle_delay: seconds of quiet
    before the loss curve is recomputed with the arithmetic (None: after every change).

    Headless use (tests): `dash.controls["workers"].value = 5` re-simulates at once;
    `dash.run`, `dash.settings`, `dash.figures[...]` (the data drawn) and `dash.view` show the
    result.
    """

    def __init__(self, preset_name: str = "default", *, settle_delay: float | None = 0.1,
                 **overrides: Any):
        check_settle_delay(settle_delay)
        start = preset(preset_name, **overrides)
        self._fixed = start  # the fields no control changes
        self.view = LiveRuns(start)
        controls = {name: dress(name, make(start), HELP[name]) for name, make in CONTROLS.items()}
        # Drawn by the browser from the runs' data (hover: a block's details; drag or wheel:
        # zoom), as wide as their boxes; their heights fit one screen at 1024x768.
        figures = {"timeline": BrowserFigure(timeline_layout(start.palette)),
                   "training": BrowserFigure(CURVES_LAYOUT),
                   "staleness": BrowserFigure(side_layout(start.mode == "sync"))}
        # the timeline's frames are keyed by these controls' values (pslab.notebook.prefetch)
        figures["timeline"].keyed = [controls[n].model_id for n in KEYED]
        self.captions = {n: W.HTML() for n in PLOTS}
        # under the two main plots: their captions, then the side panel with its own
        side = W.VBox([self.captions["staleness"], figures["staleness"]], layout=W.Layout(
            flex="1 1 360px", min_width="0", margin="0 4px 0 0", max_width="560px",
            overflow="hidden"))
        texts = W.VBox([self.captions["timeline"], self.captions["training"]],
                       layout=W.Layout(flex="1 1 300px", min_width="0", margin="0 4px 0 0"))
        below = W.HBox([texts, side], layout=W.Layout(flex_flow="row wrap", width="100%",
                                                      align_items="flex-start"))
        super().__init__(controls, figures, settle_delay=settle_delay, preset=preset_name,
                         extra=(below,))

    # ---- state ---------------------------------------------------------------------------
    @property
    def settings(self) -> Settings:
        """What the controls say now (plus the preset's fixed fields)."""
        return self._fixed.changed(**{n: c.value for n, c in self.controls.items()})

    @property
    def run(self) -> Run | None:
        """The run on show: timing-only while the loss curve is pending, else with numerics."""
        return self.view.run

    @property
    def pending(self) -> bool:
        return super().pending or self.view.pending

    def check(self, values: dict[str, Any]) -> None:
        self.settings.changed(**values)  # the rule a dashboard is built by

    def place(self, name: str, value: Any) -> None:
        control = self.controls[name]
        if isinstance(control, W.SelectionSlider):  # off the grid joins it
            control.options = CONTROLS[name](self.settings.changed(**{name: value})).options
        control.value = value

    # ---- the two paths --------------------------------------------------------------------
    def refresh(self) -> None:
        s = self.settings
        self.controls["ssp"].disabled = s.mode != "SSP"
        if self.view.step(s):  # the clock moved (not only lr): new timeline and side panel
            run, palette = self.view.run, s.palette
            self.figures["timeline"].show(self._timeline(run), timeline_legend(palette, [run]),
                                          key_of(self.controls))
            side = self.figures["staleness"]
            layout = side_layout(run.mode == "sync")
            if side.layout_spec != layout:
                side.layout_spec = layout
            split = self.view.shares() if run.mode == "sync" else None
            side.show([side_panel(run, palette, split)], side_legend(run.mode == "sync", palette))
        self._write_captions(settled=False)

    def _timeline(self, run: Run) -> list[dict[str, Any]]:
        """The timeline's panels for `run` (a slider step's and a frame sent ahead alike)."""
        palette = self._fixed.palette
        rows = timeline_rows(run, palette, shard_label)
        return [timeline_panel(run, palette, rows, nice_ceiling(run.makespan * 1.02))]

    def compute(self) -> Settings:
        """Run the arithmetic for the current settings; the loss curve and numbers."""
        settings = self.settings
        if self.view.settle(progress=lambda text: self.set_status("busy", text + "…")):
            self.figures["training"].show(*curves(*self.view.curves()))
        self._write_captions(settled=True)
        self.numbers.value = (f"<div style='{TEXT_STYLE}'><b>"
                              + html.escape(describe(self.view.run)) + "</b></div>")
        return settings

    def finish(self) -> Iterator[str]:
        """The why-lines, after the runs of a diverged run's learning-rate search."""
        return self._write_why(self.settings)

    def current(self, drawn: Settings) -> bool:
        return drawn == self.settings and self.view.current(drawn)

    def describe(self) -> str:
        return describe(self.view.run)

    def code_text(self) -> str:
        return self.settings.code()

    def snapshot(self) -> bytes:
        return snapshot_of(self.view)

    # ---- text around the plots --------------------------------------------------------------
    def _write_captions(self, settled: bool) -> None:
        caps = self.view.captions()
        for name in PLOTS:
            text = caps[name] if settled or name != "training" else (
                caps[name] + "\n(previous settings; recomputing…)")
            # one caption line per line of the plot's title; a line wraps between words only
            self.captions[name].value = (
                f"<div style='{TEXT_STYLE};overflow-wrap:normal;word-break:keep-all'>"
                + html.escape(text).replace("\n", "<br>") + "</div>")

    def _write_why(self, settings: Settings) -> Iterator[str]:
        """Write the lines under the numbers that explain a surprise between modes (empty if
        none); yields a status line before each run the learning-rate search needs."""
        run = self.view.run
        if run is None:
            self.why.value = ""
            return
        trains = (yield from self._trains(settings)) if run.diverged else None
        self.why.value = why_html(run, self.view.sync_twin(), settings.lr, settings.slowdown > 1,
                                  LR_VALUES, settings.links, trains, settings.palette)

    def _trains(self, settings: Settings) -> Generator[str, None, float | None]:
        """The largest grid learning rate below `settings.lr` at which this mode does not
        diverge (None if none does): the next one down first (most often it trains: one run),
        else bisected over the rest, as divergence comes with a larger lr (5 runs at most, each
        cached; each made in parts, a status line yielded before each: `RunCache.make`); the
        one named has been run and trains."""
        below = sorted(v for v in LR_VALUES if v < settings.lr)
        trains, diverges = -1, len(below)
        while diverges - trains > 1:
            mid = diverges - 1 if diverges == len(below) else (trains + diverges) // 2
            candidate = settings.changed(lr=below[mid])
            yield from self.view.cache.make(candidate, (
                f"diverged: finding the largest learning rate that trains "
                f"(trying {below[mid]:g})…"))
            if self.view.cache.get(candidate, True).diverged:
                diverges = mid
            else:
                trains = mid
        return below[trains] if trains >= 0 else None

    def __repr__(self) -> str:
        return f"Dashboard({self.preset!r}, {self.settings.code()})"


def describe(run: Run | None) -> str:
    """One line of the numbers a dashboard prints (exact: comparable between runs)."""
    if run is None:
        return "no run yet"
    s = summary(run)
    acc = "" if math.isnan(s["final_accuracy"]) else f", test accuracy {s['final_accuracy']:.1%}"
    stale = ("" if s["mode"] == "sync" else f", staleness mean {s['mean_staleness']:.2f} / "
             f"max {s['max_staleness']}")
    return (f"{s['mode']}, {count(s['workers'], 'worker')}, {s['minibatches']} minibatches: makespan "
            f"{s['makespan']:.2f} s, {s['updates']} updates, idle {s['idle_time']:.1f} "
            f"GPU-seconds ({s['idle_fraction']:.1%}){stale}{acc}")


def dashboard(preset_name: str = "default", **overrides: Any) -> Dashboard:
    """A dashboard for one of the figures: "000" (sync/async), "001" (accumulation),
    "002" (data parallel) or "default" (8 workers x 30 steps)."""
    return Dashboard(preset_name, **overrides)


def setup() -> None:
    """Once per notebook: inline PNG plots, deterministic files, one torch thread.

    Fixes `svg.hashsalt` (SVG ids) and drops the date from saved figures, so a re-run writes
    the same bytes; one torch thread makes every number independent of the machine's cores
    (see `pslab.model.single_thread`) and trains the small MLP faster.
    """
    import matplotlib
    import torch

    matplotlib.rcParams["svg.hashsalt"] = "pslab"
    matplotlib.rcParams["figure.dpi"] = 80
    torch.set_num_threads(1)
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython ships with ipywidgets
        return
    shell = get_ipython()
    if shell is not None:
        shell.run_line_magic("matplotlib", "inline")
        from matplotlib_inline.backend_inline import set_matplotlib_formats

        set_matplotlib_formats("png", metadata={"Software": None})
