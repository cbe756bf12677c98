"""The engine behind the notebook dashboards, with no widgets in it: settings -> runs -> PNGs.

A dashboard change must feel instant (the goal: <= 40 ms in the kernel for 8 workers x 30
steps), so this module does three things and nothing else:

- `Settings` (pslab.dashboard_settings, re-exported here) is what the controls say, turned
  into one `pslab.train` call;
- `LiveFigure` (pslab.livefigure) is ONE reused Agg figure per plot that renders to PNG bytes
  by blitting: frame, axes and legend are cached bitmaps, and a change redraws only the artists
  the `pslab.plot` objects move (blocks, bars, lines) unless limits or tick labels change;
- `View` keeps the three live plots (timeline, loss and accuracy against time, and a side panel:
  the staleness histogram, or in sync mode, where staleness is always 0, each worker's split of
  compute, transfer and idle time) and a small cache of runs: a slider drag runs timing-only
  (`numerics=False`, a few ms) and updates the timeline and side panel; the loss curve needs
  the arithmetic and is brought up to date by `View.settle`.

`pslab.widgets.Dashboard` puts ipywidgets in front of a `View`; tests and the benchmark drive a
`View` (or a Dashboard) headlessly.
"""
from __future__ import annotations

import io
import math
from collections import OrderedDict
from typing import Any, Callable

import numpy as np
from matplotlib.artist import Artist
from PIL import Image

from ..drawing.busy_plot import BusyPlot
from ..drawing.sizes import CELL_IN
# the settings are re-exported: `from pslab.liveview import PRESETS, Settings, ...` keeps working
from .dashboard_settings import (MODES, PRESETS, RANGES, SLOWDOWN, Settings,  # noqa: F401
                                 bytes_per_s, describe_change, preset, value_text)
from .livefigure import LiveFigure, nice_ceiling
from ..drawing.plot import StalenessPlot, TimelinePlot, TrainingPlot, legend_handles
from ..model import single_thread
from ..result import Run
from ..training import train

# A dashboard's controls, timeline and loss curve share one screen at 1024x768 with the file
# browser open (a cell ~575 px wide, ~500 px of notebook under JupyterLab's bars): the plots are drawn a cell wide
# (pslab.drawing.sizes) and short; the side panel sits beside the loss curve on a wide page.
TIMELINE_SIZE = (CELL_IN, 2.3)  # inches
TRAINING_SIZE = (CELL_IN, 2.05)  # loss and accuracy panels, under the timeline
SIDE_SIZE = (4.6, 2.8)  # staleness or time split, beside them (or under them on a narrow page)
ROW_PX = 12  # px a timeline row label needs (10-11 pt at 80 dpi); more rows: every k-th named
MAX_LABELLED_BLOCKS = 32  # compute blocks up to which the timeline writes numbers in them


def _timeline_artists(plot: TimelinePlot) -> list[Artist]:
    return [*plot.collections.values(), *plot.texts, plot.end_line, plot.title]


def _staleness_artists(plot: StalenessPlot) -> list[Artist]:
    return [*plot.bars, plot.title]


def _training_artists(plot: TrainingPlot) -> list[Artist]:
    return [*plot.loss_lines, *plot.acc_lines, plot.title]


class RunCache:
    """The last `size` runs by settings (an LRU): moving a slider back is free."""

    def __init__(self, size: int = 64):
        self.size = size
        self._runs: OrderedDict[tuple, Run] = OrderedDict()
        self.hits = self.misses = 0

    @staticmethod
    def key(settings: Settings, numerics: bool) -> tuple:
        # lr changes the arithmetic, never the clock: timing-only runs ignore it
        return (settings if numerics else settings.changed(lr=1.0), numerics)

    def has(self, settings: Settings, numerics: bool) -> bool:
        return self.key(settings, numerics) in self._runs

    def get(self, settings: Settings, numerics: bool) -> Run:
        key = self.key(settings, numerics)
        run = self._runs.get(key)
        if run is not None:
            self._runs.move_to_end(key)
            self.hits += 1
            return run
        self.misses += 1
        with single_thread():
            run = train(numerics=numerics, **settings.train_kwargs())
        self._runs[key] = run
        if len(self._runs) > self.size:
            self._runs.popitem(last=False)
        return run


class View:
    """The three live plots of a dashboard, fed from settings.

    `show(settings)` is the fast path (timing-only run, timeline and staleness redrawn; nothing
    at all when only the learning rate moved, since the clock does not depend on it);
    `settle()` adds the arithmetic for the same settings (loss and accuracy against time),
    keeping the previous settled run on the loss plot for comparison. The plots' titles are
    not drawn into the PNGs (text is the slowest thing Agg draws): `captions()` gives them, for
    the dashboard to show as HTML above each image.
    """

    def __init__(self, settings: Settings | None = None, palette: str | None = None):
        self.settings = settings or PRESETS["default"]
        palette = palette or self.settings.palette
        # shard rows ("S1 {W_o, …, W_h}") need a wider margin than GPU rows (figure 001 has none)
        width, height = TIMELINE_SIZE
        left = (0.8 if palette == "accumulation" else 1.55) / width  # inches of row labels
        self.timeline = LiveFigure(TIMELINE_SIZE, dict(left=left, right=0.98,
                                                       bottom=0.46 / height,
                                                       top=1 - 0.28 / height))
        # block labels ("minibatch", "F") crowd a dense timeline: only figure 001's durations
        self.timeline_plot = TimelinePlot(self.timeline.ax, palette=palette,
                                          text="auto" if palette == "accumulation" else None,
                                          legend=False)
        handles = legend_handles(palette)  # above the rows: the full width is for the blocks
        self.timeline.ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0, 1.0),
                                ncol=len(handles), frameon=False, fontsize=11,
                                borderaxespad=0.2, columnspacing=1.0, handlelength=1.4)
        self._block_text = self.timeline_plot.text
        self.timeline_plot.min_px = 4.0  # F and P stay visible on a long run
        height = TRAINING_SIZE[1]  # margins in inches: axis labels below, the legend above
        self.training = LiveFigure(TRAINING_SIZE, dict(left=0.12, right=0.98,
                                                       bottom=0.55 / height,
                                                       top=1 - 0.42 / height, wspace=0.32),
                                   ncols=2)
        self.training_plot = TrainingPlot(self.training.ax, acc_ax=self.training.axes[1])
        # the side panel: staleness, or in sync mode (always staleness 0) the time split
        self.staleness = LiveFigure(SIDE_SIZE, dict(left=0.15, right=0.96,
                                                    bottom=0.55 / SIDE_SIZE[1],
                                                    top=1 - 0.42 / SIDE_SIZE[1]))
        self.staleness_plot = StalenessPlot(self.staleness.ax)
        busy_ax = self.staleness.figure.add_axes(self.staleness.ax.get_position())
        self.busy_plot = BusyPlot(busy_ax, palette=palette)
        for plot in (self.timeline_plot, self.training_plot, self.staleness_plot,
                     self.busy_plot):
            plot.title.set_visible(False)
        self.cache = RunCache()
        self.run: Run | None = None  # what the timeline shows (timing-only until settled)
        self.settled: Run | None = None  # the latest run with numerics
        self.previous: tuple[Settings, Run] | None = None  # the one before, for comparison
        self._settled_for: Settings | None = None
        self._shown_key: tuple | None = None
        self.show(self.settings)  # a View is never blank: its timeline is there from the start

    @property
    def pending(self) -> bool:
        """True while the loss plot still shows other settings than the timeline."""
        return self._settled_for != self.settings

    def show(self, settings: Settings) -> dict[str, bytes]:
        """Fast path: timing-only run (or a cached one), timeline + staleness redrawn."""
        self.settings = settings
        key = self.cache.key(settings, False)
        if key == self._shown_key:  # only lr moved: same clock, same pictures
            if self.cache.has(settings, True):
                self.run = self.cache.get(settings, True)
            return {"timeline": self.timeline.png, "staleness": self.staleness.png}
        numerics = self.cache.has(settings, True)
        run = self.cache.get(settings, numerics)
        self.run, self._shown_key = run, key
        # numbers written in the blocks (figure 001's durations) cost ~0.4 ms each to draw:
        # only while there are few blocks, where they are also readable
        blocks = settings.workers * settings.steps * settings.accumulate
        self.timeline_plot.text = self._block_text if blocks <= MAX_LABELLED_BLOCKS else None
        rows = settings.workers + (0 if self.timeline_plot.column else settings.shards)
        size = 11 if rows <= 10 else 10  # many rows: smaller labels, and only every k-th
        self.timeline_plot.label_every = math.ceil(rows * ROW_PX / self._rows_px())
        if self.timeline.ax.yaxis.get_major_ticks()[0].label1.get_fontsize() != size:
            self.timeline.ax.tick_params(axis="y", labelsize=size)
        self.timeline_plot.update(run, xmax=nice_ceiling(run.makespan * 1.02))
        return {"timeline": self.timeline.render(_timeline_artists(self.timeline_plot)),
                "staleness": self._side(run)}

    def _rows_px(self) -> float:
        """The timeline's height for rows, in pixels."""
        fig = self.timeline.figure
        return self.timeline.ax.get_position().height * fig.get_figheight() * fig.dpi

    @property
    def side_plot(self) -> StalenessPlot | BusyPlot:
        """What the side panel shows now: staleness, or the time split in sync mode."""
        return self.busy_plot if self.settings.mode == "sync" else self.staleness_plot

    def _side(self, run: Run) -> bytes:
        busy = self.settings.mode == "sync"
        self.staleness.ax.set_visible(not busy)
        self.busy_plot.ax.set_visible(busy)
        if busy:
            self.busy_plot.update(run)
        else:
            self.staleness_plot.update(run)
            self.staleness.ax.set_ylim(0, nice_ceiling(max(self.staleness.ax.get_ylim()[1], 1)))
        return self.staleness.render(self.side_artists())

    def side_artists(self) -> list[Artist]:
        """The side panel's moving parts (bars and title) for `LiveFigure.render`."""
        if self.side_plot is self.busy_plot:
            return self.busy_plot.artists()
        return _staleness_artists(self.staleness_plot)

    def settle(self, progress: Callable[[str], None] | None = None) -> bytes:
        """Slow path: the run with numerics for the current settings; loss plot redrawn."""
        settings = self.settings
        if self._settled_for == settings and self.training.png:
            return self.training.png
        if progress is not None and not self.cache.has(settings, True):
            progress(f"training: {settings.workers} workers x {settings.run_steps} steps x "
                     f"{settings.accumulate} minibatch(es)")
        run = self.cache.get(settings, True)
        if self.settled is not None and self._settled_for is not None:
            self.previous = (self._settled_for, self.settled)
        self.settled, self._settled_for, self.run = run, settings, run
        runs, labels = [run], ["now"]
        if self.previous is not None and self.previous[0] != settings:
            runs.append(self.previous[1])
            labels.append("before: " + describe_change(settings, self.previous[0]))
        self.training_plot.update(runs, labels=labels)
        return self.training.render(_training_artists(self.training_plot))

    def current(self, settings: Settings) -> bool:
        """True when the timeline, the loss curve and `run` are all of `settings`."""
        return self.settings == settings and self._settled_for == settings \
            and self.run is self.settled

    def sync_twin(self) -> Run:
        """The same settings in sync mode, clock only (cached): what a mode is compared to."""
        return self.cache.get(self.settings.changed(mode="sync"), False)

    def pngs(self) -> dict[str, bytes]:
        return {"timeline": self.timeline.png, "training": self.training.png,
                "staleness": self.staleness.png}

    def captions(self) -> dict[str, str]:
        """The titles the plots computed (drawn as HTML by the dashboard, not into the PNGs)."""
        return {"timeline": self.timeline_plot.title.get_text(),
                "training": self.training_plot.title.get_text(),
                "staleness": self.side_plot.title.get_text()}

    def snapshot(self) -> bytes:
        """One PNG of all three plots with their titles: the static picture a notebook keeps
        for readers without a kernel (drawn the slow way, once, when the dashboard is shown)."""
        parts = []
        for live, plot in ((self.timeline, self.timeline_plot),
                           (self.training, self.training_plot),
                           (self.staleness, self.side_plot)):
            animated = [a for a in live.figure.findobj() if a.get_animated()]
            for a in animated:
                a.set_animated(False)
            plot.title.set_visible(True)
            top = live.figure.subplotpars.top
            lines = plot.title.get_text().count("\n") + 1
            live.figure.subplots_adjust(top=top - (0.06 if live is self.timeline else 0.08) * lines)
            try:
                live.figure.canvas.draw()
                parts.append(Image.fromarray(np.asarray(live.figure.canvas.buffer_rgba())[..., :3]))
            finally:
                live.figure.subplots_adjust(top=top)
                plot.title.set_visible(False)
                for a in animated:
                    a.set_animated(True)
                live.invalidate()
        top, left, right = parts
        sheet = Image.new("RGB", (max(top.width, left.width + right.width),
                                  top.height + max(left.height, right.height)), "white")
        sheet.paste(top, (0, 0))
        sheet.paste(left, (0, top.height))
        sheet.paste(right, (left.width, top.height))
        out = io.BytesIO()
        sheet.save(out, format="png", compress_level=6)
        return out.getvalue()


def summary(run: Run) -> dict[str, Any]:
    """The numbers a dashboard prints under its plots (the same a test can compare exactly)."""
    st = run.staleness
    return dict(mode=run.mode, workers=run.workers, makespan=run.makespan,
                idle_fraction=run.idle_fraction, idle_time=run.idle_time, updates=run.updates,
                minibatches=run.workers * run.config["steps"] * run.config["accumulate"],
                mean_staleness=float(np.mean(st)) if st else 0.0, max_staleness=max(st, default=0),
                final_accuracy=run.final_accuracy)
