"""Notebook 07's dashboard: the parameter server, the ring all-reduce and ZeRO-1/2/3 on one
clock, with N, the link bandwidth and the model size on sliders.

A change runs the clock only (`numerics=False`) and redraws the timeline (the bytes of each
mode show in its makespan) and the memory per GPU of every stage at this N and model size (the
mode shown outlined); when the sliders rest the run is repeated with the arithmetic: its loss
and accuracy curves (beside the previous run's) and the numbers under them say its accuracy,
the same in every mode (ZeRO's weights are sync's), reached sooner or later. The slider plumbing (debounce, status, fade, `set`, layout) is
`pslab.notebook.dashboard.DashboardBase`'s; this module says what runs and what is drawn.

    from pslab.notebook.zero_dashboard import zero_dashboard
    zero_dashboard()              # ZeRO-3, 4 workers, 100 kB/s, hidden 32 (the figures' model)
"""
from __future__ import annotations

import html
import math
from typing import Any

import ipywidgets as W
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ..collectives import bytes_per_worker
from ..drawing.dataflow_plot import fmt_bytes
from ..drawing.sizes import CELL_IN
from ..drawing.timeline_plot import TimelinePlot, legend_handles, shard_label
from ..model import single_thread
from ..result import Run
from ..layout import owner_layout
from ..training import train
from ..zero import worker_memory
from .browser_figure import BrowserFigure
from .browser_memory import memory_layout, memory_legend, memory_panel
from .browser_plots import (CURVES_LAYOUT, curves, timeline_layout, timeline_legend,
                            timeline_panel, timeline_rows)
from .controls import BANDWIDTHS, _options, check_settle_delay, dress
from .dashboard import TEXT_STYLE, DashboardBase, count, show_faded
from .dashboard_settings import bytes_per_s
from .livefigure import nice_ceiling, png_bytes
from .zero_settings import HIDDENS, MODES, WORKERS, ZeroSettings, model_bytes

DPI = 80
HELP = {"mode": "sync: a parameter server (2 shards); allreduce: a ring, no server; ZeRO-k: the "
                "ring's collectives, each worker owning 1/N of the states of stage k",
        "workers": "N workers (GPUs)", "bandwidth": "bytes per second of every link",
        "hidden": "the model's fp32 bytes 4Ψ, set by the MLP's hidden width (16 to 1024)"}


def _png(fig: Figure) -> bytes:
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return png_bytes(canvas)


class ZeroDashboard(DashboardBase):
    """Controls + the live timeline and memory bars of notebook 07. Display it as the last
    line of a cell. Headless: `dash.set(workers=8, mode="sync")`, then `dash.run`,
    `dash.figures` (the data the browser draws), `dash.numbers.value`."""

    def __init__(self, *, settle_delay: float | None = 0.25, **start: Any):
        check_settle_delay(settle_delay)
        self._fixed = ZeroSettings(**start)  # checks every value by name
        s = self._fixed
        controls: dict[str, W.ValueWidget] = {
            "mode": W.Dropdown(options=list(MODES), value=s.mode, description="mode"),
            "workers": W.IntSlider(s.workers, min=WORKERS[0], max=WORKERS[1],
                                   description="workers N"),
            "bandwidth": W.SelectionSlider(
                options=_options(BANDWIDTHS, s.bandwidth, bytes_per_s),
                value=s.bandwidth, description="bandwidth"),
            "hidden": W.SelectionSlider(options=[(fmt_bytes(model_bytes(h)), h)
                                                 for h in HIDDENS],
                                        value=s.hidden, description="model size"),
        }
        for name, c in controls.items():
            dress(name, c, HELP[name])
        # drawn by the browser from the runs' data (hover, zoom), as the core dashboard's
        figures = {"timeline": BrowserFigure(timeline_layout("ps")),
                   "training": BrowserFigure(CURVES_LAYOUT),
                   "memory": BrowserFigure(memory_layout("kB"))}
        self.caption = W.HTML()
        self._runs: dict[tuple, Run] = {}
        self._memory_for: tuple | None = None
        self._previous: tuple[ZeroSettings, Run] | None = None  # the last settled, compared
        self.shown: Run | None = None
        super().__init__(controls, figures, settle_delay=settle_delay, preset="07",
                         extra=(self.caption, figures["memory"]))

    # ---- state ---------------------------------------------------------------------------
    @property
    def settings(self) -> ZeroSettings:
        return self._fixed.changed(**{n: c.value for n, c in self.controls.items()})

    @property
    def run(self) -> Run | None:
        return self.shown

    def _train(self, s: ZeroSettings, numerics: bool) -> Run:
        key = (s, numerics)
        if key not in self._runs:
            with single_thread():
                self._runs[key] = train(numerics=numerics, **s.train_kwargs())
        return self._runs[key]

    # ---- the two paths --------------------------------------------------------------------
    def refresh(self) -> None:
        """Fast path: the clock only; the timeline redrawn (the curves, the numbers and, if N,
        the size or the stage moved, the memory bars fade until the sliders rest)."""
        s = self.settings
        self.shown = self._train(s, numerics=False)
        run = self.shown
        rows = timeline_rows(run, "ps", shard_label)
        self.figures["timeline"].show(
            [timeline_panel(run, "ps", rows, nice_ceiling(run.makespan * 1.02))],
            timeline_legend("ps", [run]))
        self.caption.value = (f"<div style='{TEXT_STYLE}'>"
                              + html.escape(self._title(s, self.shown)) + "</div>")

    def faded(self) -> tuple[W.Widget, ...]:
        parts = (self.figures["training"], self.numbers, self.why)
        if self._memory_for != _memory_key(self.settings):
            parts += (self.figures["memory"],)
        return parts

    def fade(self, older: bool) -> None:
        if not older:  # settled: the memory bars are of these values too
            show_faded(self.figures["memory"], False)
        super().fade(older)

    def compute(self) -> ZeroSettings:
        """Slow path: the same run with the arithmetic; curves, numbers and memory bars."""
        s = self.settings
        self.shown = self._train(s, numerics=True)
        self.numbers.value = (f"<div style='{TEXT_STYLE}'><b>"
                              + html.escape(describe(s, self.shown)) + "</b></div>")
        runs, labels = [self.shown], [f"now: {s.mode}, N = {s.workers}"]
        if self._previous is not None and self._previous[0] != s:
            runs.append(self._previous[1])
            labels.append(f"before: {self._previous[0].mode}, N = "
                          f"{self._previous[0].workers}")
        self.figures["training"].show(*curves(runs, labels))
        self._previous = (s, self.shown)
        if self._memory_for != _memory_key(s):  # they change only with N, size, stage
            self._show_memory(s)
            self._memory_for = _memory_key(s)
        return s

    def describe(self) -> str:
        return describe(self.settings, self.shown)

    def plain(self) -> str:
        return "pslab ZeRO dashboard: " + self.describe()

    def code_text(self) -> str:
        return self.settings.code()

    # ---- pictures -------------------------------------------------------------------------
    def snapshot(self) -> bytes:
        """The timeline as a PNG (matplotlib): the picture a saved notebook keeps for readers
        without a kernel."""
        run = self.shown
        height = 2.5  # inches: the legend above the rows, the time axis below (margins in in.)
        fig = Figure(figsize=(CELL_IN, height), dpi=DPI)
        ax = fig.add_axes((1.55 / CELL_IN, 0.5 / height, 1 - 1.7 / CELL_IN, 1 - 0.85 / height))
        plot = TimelinePlot(ax, "ps", legend=False, text=None)
        # many rows: every k-th named, so the labels never overlap (the core dashboard's rule)
        plot.label_every = max(1, math.ceil((run.workers + len(run.shard_bytes)) / 9))
        plot.update(run, xmax=nice_ceiling(run.makespan * 1.02))
        plot.title.set_visible(False)
        ax.set_xlabel("virtual time (s)", fontsize=11)
        ax.legend(handles=legend_handles("ps", [run]), loc="lower left",
                  bbox_to_anchor=(-0.2, 1.0), ncol=5, frameon=False, fontsize=10,
                  columnspacing=0.8, handlelength=1.2, borderaxespad=0.2)
        return _png(fig)

    def _show_memory(self, s: ZeroSettings) -> None:
        """The memory bars of every stage at this N and model size, this mode's outlined."""
        layout = owner_layout(s.workers, s.hidden)
        mems = [worker_memory(layout, s.workers, k)[0] for k in range(4)]
        spec, panel = memory_panel(  # sync, allreduce: stage 0 outlined, nothing sharded
            mems, s.stage, f"our MLP (hidden {s.hidden}) on N = {s.workers}: worker 0's bytes "
                           "at each stage (this mode outlined)")
        figure = self.figures["memory"]
        if figure.layout_spec != spec:
            figure.layout_spec = spec
        figure.show([panel], memory_legend(mems))

    @staticmethod
    def _title(s: ZeroSettings, run: Run) -> str:
        return (f"{s.mode}, {count(s.workers, 'worker')}, {bytes_per_s(s.bandwidth)} links, model "
                f"{fmt_bytes(model_bytes(s.hidden))}: makespan {run.makespan:.2f} s for "
                f"{s.steps} steps (clock only while the sliders move)")

    def __repr__(self) -> str:
        return f"ZeroDashboard({self.settings.code()})"


def _memory_key(s: ZeroSettings) -> tuple[int, int, int]:
    """What the memory bars depend on: N, the model size, the stage outlined."""
    return (s.workers, s.hidden, s.stage)


def describe(s: ZeroSettings, run: Run) -> str:
    """The numbers a dashboard prints (exact: they compare between runs)."""
    psi = model_bytes(s.hidden)
    # a PS worker pushes its whole gradient (and fetches the weights); a ring worker sends
    # 2 (ZeRO-3: 3) collectives of (N - 1)/N of the model
    sent = psi if s.mode == "sync" else bytes_per_worker(s.stage or 1, psi, s.workers)
    mem = worker_memory(owner_layout(s.workers, s.hidden), s.workers, s.stage)[0].total
    acc = "" if math.isnan(run.final_accuracy) else (
        f", test accuracy {run.final_accuracy:.1%} (the same weights in every mode)")
    return (f"{s.mode}, {count(s.workers, 'worker')}: makespan {run.makespan:.2f} s, "
            f"{fmt_bytes(sent)} sent per worker per step, {fmt_bytes(mem)} of model states "
            f"per GPU{acc}")


def zero_dashboard(**start: Any) -> ZeroDashboard:
    """Notebook 07's dashboard; keyword arguments set the starting values (ZeroSettings)."""
    return ZeroDashboard(**start)
