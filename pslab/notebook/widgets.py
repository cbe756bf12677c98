"""The notebook dashboards: sliders in front of a live pslab run, plots that follow in place.

    import pslab.widgets as pw
    pw.setup()                  # once per notebook: inline plots, fixed threads, fixed hashes
    pw.dashboard("000")         # figure 000's set-up: sync / async / SSP on a straggler

A dashboard has a control for the number of workers (1-16), accumulation steps (1-8), the
learning rate (log scale), the update mode (sync / async / SSP and its s), the straggler's
slowdown, the server shards and the network bandwidth (`pslab.notebook.controls`). Its plots
(timeline, loss and accuracy against time, staleness or, in sync mode, each worker's time
split) are drawn by the browser from the runs' data (`BrowserFigure`): a slider step sends a
few kB of numbers, not a PNG, and a hover on a block shows its worker, kind, step, start, end,
shard and why it waited; a busy region zooms (drag or wheel; double-click: the whole run).
At 1024x768 with the file browser open the controls (two columns), the timeline and the loss
curve share one screen, the captions and numbers under them. While a slider moves, each value
runs the clock only (`numerics=False`) and redraws the timeline at once; the loss curve and the
numbers fade until the sliders have been still for `settle_delay` seconds and the run is
repeated with the arithmetic; "ready" shows only when everything shown is of the controls'
values. Without a running event loop (tests, scripts) that happens at once. Matplotlib draws
the static picture a saved notebook keeps (`pslab.liveview.snapshot_of`).
"""
from __future__ import annotations

import asyncio
import base64
import html
import math
import time
from contextlib import contextmanager
from typing import Any, Iterator

import ipywidgets as W

from .browser_figure import BrowserFigure
from .browser_plots import (CURVES_LAYOUT, curves, side_layout, side_legend, side_panel,
                            timeline_layout, timeline_legend, timeline_panel, timeline_rows)
from .livefigure import nice_ceiling
from .liveruns import LiveRuns
from .liveview import (MODES, PRESETS, RANGES, SLOWDOWN, Settings, View, bytes_per_s, preset,
                       single_thread, snapshot_of, summary)  # noqa: F401 - public here too
from ..drawing.timeline_plot import shard_label
from .progress import Progress, sweep, table, widget_bundle  # noqa: F401 - public here too
from .controls import (BANDWIDTHS, CONTROLS, HELP, LR_VALUES, check_settle_delay,  # noqa: F401
                       dress, within)  # (public here too: pslab.nas.live and the tests use them)
from ..result import Run
from .explain import why_html
from .prefetch import KEYED, Ahead, key_of

_widget_bundle = widget_bundle  # its old name here (pslab.nas.live imports it)

__all__ = ["Dashboard", "dashboard", "setup", "Progress", "sweep", "PRESETS"]

PLOTS = ("timeline", "training", "staleness")


class Dashboard(Ahead):
    """Controls + three live plots for one set-up. Display it as the last line of a cell.

    preset: "000", "001", "002" or "default" (see `pslab.liveview.PRESETS`); keyword
    overrides change any `Settings` field (e.g. steps=50). settle_delay: seconds of quiet
    before the loss curve is recomputed with the arithmetic (None: after every change).

    Headless use (tests): `dash.controls["workers"].value = 5` re-simulates at once;
    `dash.run`, `dash.settings`, `dash.figures[...]` (the data drawn) and `dash.view` show the
    result.
    """

    latest: "Dashboard | None" = None  # the dashboard made last (for a look from outside)

    def __init__(self, preset_name: str = "default", *, settle_delay: float | None = 0.1,
                 **overrides: Any):
        check_settle_delay(settle_delay)
        start = preset(preset_name, **overrides)
        self.preset = preset_name
        self._fixed = start  # the fields no control changes
        self.settle_delay = settle_delay
        self.view = LiveRuns(start)
        self.controls: dict[str, W.ValueWidget] = {}
        for name, make in CONTROLS.items():
            self.controls[name] = dress(name, make(start), HELP[name])
        # Drawn by the browser from the runs' data (hover: a block's details; drag or wheel:
        # zoom), as wide as their boxes; their heights fit one screen at 1024x768.
        self.figures = {"timeline": BrowserFigure(timeline_layout(start.palette)),
                        "training": BrowserFigure(CURVES_LAYOUT),
                        "staleness": BrowserFigure(side_layout(start.mode == "sync"))}
        for n, fig in self.figures.items():
            fig.layout = W.Layout(width="auto", min_width="0", margin="0")
            fig.add_class(f"pslab-{n}")
        # the timeline's frames are keyed by these controls' values (pslab.notebook.prefetch)
        self.figures["timeline"].keyed = [self.controls[n].model_id for n in KEYED]
        self.captions = {n: W.HTML() for n in PLOTS}
        self.status = W.HTML()
        self.status.add_class("pslab-status")
        self.numbers = W.HTML()
        self.numbers.add_class("pslab-numbers")
        self.why = W.HTML()  # a surprise in the numbers, explained where it shows
        self.why.add_class("pslab-why")
        self.code = W.HTML()
        # One screen at 1024x768 with the file browser open: the controls in two columns of
        # four, the status under them, then the timeline and the loss curve (the side panel
        # beside the loss curve where the page is wide, under it where not).
        column = W.Layout(flex="1 1 260px", min_width="0", overflow="hidden")
        left = W.VBox([self.controls[n] for n in ("workers", "accumulate", "lr", "mode")],
                      layout=column)
        right = W.VBox([self.controls[n] for n in ("ssp", "slowdown", "shards", "bandwidth")],
                       layout=column)
        # The timeline and the loss curve straight under the controls, their captions under
        # them: ~500 px of notebook at 1024x768 hold controls + timeline + loss curve. The side
        # panel (caption above it) sits beside the loss curve where the page is wide.
        side = W.VBox([self.captions["staleness"], self.figures["staleness"]], layout=W.Layout(
            flex="1 1 360px", min_width="0", margin="0 4px 0 0", max_width="560px",
            overflow="hidden"))
        wrap = W.Layout(flex_flow="row wrap", width="100%", align_items="flex-start")
        # one under the other in a projector's cell, side by side on a page twice as wide
        for n in ("timeline", "training"):
            self.figures[n].layout.flex = "1 1 480px"
        plots = W.HBox([self.figures["timeline"], self.figures["training"]],
                       layout=W.Layout(flex_flow="row wrap", width="100%",
                                       align_items="flex-start"))
        texts = W.VBox([self.captions["timeline"], self.captions["training"], self.numbers,
                        self.why], layout=W.Layout(flex="1 1 300px", min_width="0",
                                                   margin="0 4px 0 0"))
        self.widget = W.VBox([W.HBox([left, right], layout=wrap), self.status, plots,
                              W.HBox([texts, side], layout=wrap), self.code],
                             layout=W.Layout(width="100%", max_width="1200px"))
        self.widget.add_class("pslab-dashboard")
        self.settle_ms: list[float] = []  # slow path (arithmetic + loss plot) per settle
        self._start()

    def _start(self) -> None:
        """Listen to the controls and draw the first picture (the NAS dashboard does too)."""
        self.latencies_ms: list[float] = []  # fast path (clock only) per change
        self.errors: list[str] = []
        self._handle: asyncio.TimerHandle | None = None
        self._holding = False
        for c in self.controls.values():
            c.observe(self._changed, names="value")
        self._refresh()
        self.settle()
        Dashboard.latest = self  # what the notebook tests read the latencies from

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
        return self._handle is not None or self.view.pending

    def set(self, **values: Any) -> "Dashboard":
        """Set several controls and re-simulate once: `dash.set(workers=5, mode="async")`."""
        unknown = set(values) - set(self.controls)
        if unknown:
            raise ValueError(f"no control named {', '.join(sorted(unknown))}; "
                             f"the controls are {', '.join(self.controls)}")
        settings = self.settings
        if isinstance(settings, Settings):
            new = settings.changed(**values)  # the rule a dashboard is built by
        else:  # another dashboard (NAS): its controls' own ranges
            for name, value in values.items():
                within(name, self.controls[name], value)
        with self._hold():
            for name, value in values.items():
                control = self.controls[name]
                if isinstance(control, W.SelectionSlider) and isinstance(settings, Settings):
                    control.options = CONTROLS[name](new).options  # off the grid joins it
                control.value = value
        self._changed(None)
        return self

    @contextmanager
    def _hold(self) -> Iterator[None]:
        self._holding = True
        try:
            yield
        finally:
            self._holding = False

    # ---- the two paths --------------------------------------------------------------------
    def _changed(self, change: Any) -> None:
        if self._holding:
            return
        self._stop_ahead()
        try:
            t0 = time.perf_counter()
            self._refresh()
            self.latencies_ms.append((time.perf_counter() - t0) * 1000)
        except Exception as exc:  # a callback must never die silently in the kernel
            self._fail(exc)
            return
        self._schedule_settle()
        self._start_ahead(self._moved(change))  # a held key's next values, while it is held

    def _refresh(self) -> None:
        s = self.settings
        self.controls["ssp"].disabled = s.mode != "SSP"
        if self.view.step(s):  # the clock moved (not only lr): new timeline and side panel
            run, palette = self.view.run, s.palette
            self.figures["timeline"].show(self._timeline(run), timeline_legend(palette),
                                          key_of(self.controls))
            side = self.figures["staleness"]
            layout = side_layout(run.mode == "sync")
            if side.layout_spec != layout:
                side.layout_spec = layout
            split = self.view.shares() if run.mode == "sync" else None
            side.show([side_panel(run, palette, split)], side_legend(run.mode == "sync", palette))
        self._write_text(settled=False)

    def _timeline(self, run: Run) -> list[dict[str, Any]]:
        """The timeline's panels for `run` (a slider step's and a frame sent ahead alike)."""
        palette = self._fixed.palette
        rows = timeline_rows(run, palette, shard_label)
        return [timeline_panel(run, palette, rows, nice_ceiling(run.makespan * 1.02))]

    def _cancel_settle(self) -> None:
        """Forget a settle that was waiting for the sliders to rest."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _schedule_settle(self) -> None:
        self._cancel_settle()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is None or self.settle_delay is None:
            self.settle()
            return
        self._set_status("busy", "loss curve: waiting for the sliders to rest…")
        self._handle = loop.call_later(self.settle_delay, self._settle_later)

    def _settle_later(self) -> None:
        self._handle = None
        self.settle()

    def settle(self) -> None:
        """Run the arithmetic for the current settings and redraw the loss curve now."""
        self._cancel_settle()
        try:
            t0 = time.perf_counter()
            if self.view.settle(progress=lambda text: self._set_status("busy", text + "…")):
                self.figures["training"].show(*curves(*self.view.curves()))
            self.settle_ms.append((time.perf_counter() - t0) * 1000)
            self._write_text(settled=True)
        except Exception as exc:
            self._fail(exc)

    flush = settle

    def _fail(self, exc: Exception) -> None:
        self.errors.append(f"{type(exc).__name__}: {exc}")
        self._set_status("error", html.escape(self.errors[-1]))

    # ---- text around the plots --------------------------------------------------------------
    def _set_status(self, state: str, text: str) -> None:
        colour = {"ready": "#2e7d32", "busy": "#b26a00", "error": "#c62828"}[state]
        self.status.value = (f'<span data-state="{state}" style="color:{colour}">'
                             f"{text}</span>")

    def _write_text(self, settled: bool) -> None:
        caps = self.view.captions()
        for name in PLOTS:
            text = caps[name] if settled or name != "training" else (
                caps[name] + "\n(previous settings; recomputing…)")
            # one caption line per line of the plot's title; a line wraps between words only
            self.captions[name].value = (
                "<div style='font-size:12px;line-height:1.25;text-align:left;"
                "overflow-wrap:normal;word-break:keep-all'>"
                + html.escape(text).replace("\n", "<br>") + "</div>")
        # the loss curve and the numbers fade while they show older settings than the timeline
        for part in (self.figures["training"], self.numbers, self.why):
            part.layout.opacity = "1" if settled else "0.45"
        if not settled:  # while a slider moves, send the browser only what it must redraw
            return
        settings = self.settings
        self.numbers.value = ("<div style='font-size:13px;line-height:1.3'><b>"
                              + html.escape(describe(self.view.run)) + "</b></div>")
        self.why.value = self._why(settings)
        self.numbers_for = settings  # what the bold numbers and the lines under them are of
        self.code.value = ("<details><summary>this run in one line of Python</summary><code>"
                           + html.escape(settings.code()) + "</code></details>")
        if self.view.current(settings):  # timeline, loss curve and numbers: all of these values
            self._set_status("ready", f"ready ({len(self.latencies_ms)} changes)")
            self._start_ahead()
        else:  # a control moved while this was drawn: not ready until it is drawn too
            self._refresh()
            self._schedule_settle()

    def _why(self, settings: Settings) -> str:
        """Lines under the numbers that explain a surprise between modes (empty if none)."""
        if self.view.run is None:
            return ""
        return why_html(self.view.run, self.view.sync_twin(), settings.lr,
                        settings.slowdown > 1, LR_VALUES)

    # ---- display ----------------------------------------------------------------------------
    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        bundle = widget_bundle(self.widget, include, exclude)
        # Deterministic text (nbval compares it) and a static picture for readers without a
        # kernel (GitHub, an untrusted notebook): the widget view is preferred where it works.
        bundle["text/plain"] = f"pslab dashboard ({self.preset}): {describe(self.view.run)}"
        bundle["image/png"] = base64.b64encode(snapshot_of(self.view)).decode("ascii")
        return bundle

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
    return (f"{s['mode']}, {s['workers']} workers, {s['minibatches']} minibatches: makespan "
            f"{s['makespan']:.2f} s, {s['updates']} updates, idle {s['idle_time']:.1f} "
            f"GPU-s ({s['idle_fraction']:.1%}){stale}{acc}")


def dashboard(preset_name: str = "default", **overrides: Any) -> Dashboard:
    """A dashboard for one of the figures: "000" (sync/async), "001" (accumulation),
    "002" (data parallel) or "default" (8 workers x 30 steps)."""
    return Dashboard(preset_name, **overrides)


def setup() -> None:
    """Once per notebook: inline PNG plots, deterministic files, one torch thread.

    Fixes `svg.hashsalt` (SVG ids) and drops the date from saved figures, so a re-run writes
    the same bytes; one torch thread makes every number independent of the machine's cores
    (see `pslab.liveview.single_thread`) and trains the small MLP faster.
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
