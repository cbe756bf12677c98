"""The dashboards' plots drawn by matplotlib: settings -> runs (`LiveRuns`) -> PNGs.

The live dashboards are drawn by the browser (`pslab.notebook.browser_plots`); this module
draws the same runs as PNGs, fast enough to follow a slider in a script or a test, and makes the
static picture a notebook keeps for readers without a kernel (`snapshot_of`):

- `Settings` (pslab.dashboard_settings, re-exported here) is what the controls say, turned
  into one `pslab.train` call;
- `LiveFigure` (pslab.livefigure) is ONE reused Agg figure per plot that renders to PNG bytes
  by blitting: frame, axes and legend are cached bitmaps, and a change redraws only the artists
  the `pslab.plot` objects move (blocks, bars, lines) unless limits or tick labels change;
- `View` (a `LiveRuns`: the runs on show and a cache of them) keeps the three plots (timeline,
  loss and accuracy against time, and a side panel: the staleness histogram, or in sync mode,
  where staleness is always 0, each worker's split of compute, transfer and idle time).
"""
from __future__ import annotations

import io
import math
from typing import Any, Callable

import numpy as np
from matplotlib.artist import Artist
from PIL import Image

from ..drawing.busy_plot import BusyPlot
from ..drawing.sizes import CELL_IN
from .dashboard_settings import Settings
from .livefigure import LiveFigure, nice_ceiling
from .liveruns import LiveRuns, RunCache
from ..drawing.plot import StalenessPlot, TimelinePlot, TrainingPlot, legend_handles
from ..result import Run

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


class View(LiveRuns):
    """The three live plots of a dashboard, fed from settings.

    `show(settings)` is the fast path (timing-only run, timeline and staleness redrawn; nothing
    at all when only the learning rate moved, since the clock does not depend on it);
    `settle()` adds the arithmetic for the same settings (loss and accuracy against time),
    keeping the previous settled run on the loss plot for comparison. The plots' titles are
    not drawn into the PNGs (text is the slowest thing Agg draws): `captions()` gives them, for
    the dashboard to show as HTML above each image.
    """

    def __init__(self, settings: Settings | None = None, palette: str | None = None,
                 cache: RunCache | None = None):
        super().__init__(settings, cache)
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
        self.show(self.settings)  # a View is never blank: its timeline is there from the start

    def show(self, settings: Settings) -> dict[str, bytes]:
        """Fast path: timing-only run (or a cached one), timeline + staleness redrawn."""
        if not self.step(settings):  # only lr moved: same clock, same pictures
            return {"timeline": self.timeline.png, "staleness": self.staleness.png}
        run = self.run
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
        if not super().settle(progress) and self.training.png:
            return self.training.png
        self.training_plot.update(*self.curves())
        return self.training.render(_training_artists(self.training_plot))

    def pngs(self) -> dict[str, bytes]:
        return {"timeline": self.timeline.png, "training": self.training.png,
                "staleness": self.staleness.png}

    def snapshot(self) -> bytes:
        """One PNG of all three plots, each under its title: the static picture a notebook keeps
        for readers without a kernel (drawn the slow way, once, when the dashboard is shown).
        The titles are written above the plots, wrapped to their width, so none runs into a
        legend or off the picture."""
        parts = []
        for live, plot in ((self.timeline, self.timeline_plot),
                           (self.training, self.training_plot),
                           (self.staleness, self.side_plot)):
            animated = [a for a in live.figure.findobj() if a.get_animated()]
            for a in animated:
                a.set_animated(False)
            try:
                live.figure.canvas.draw()
                picture = Image.fromarray(np.asarray(live.figure.canvas.buffer_rgba())[..., :3])
            finally:
                for a in animated:
                    a.set_animated(True)
                live.invalidate()
            parts.append(_under_caption(plot.title.get_text(), picture))
        top, left, right = parts
        sheet = Image.new("RGB", (max(top.width, left.width + right.width),
                                  top.height + max(left.height, right.height)), "white")
        sheet.paste(top, (0, 0))
        sheet.paste(left, (0, top.height))
        sheet.paste(right, (left.width, top.height))
        out = io.BytesIO()
        sheet.save(out, format="png", compress_level=6)
        return out.getvalue()


def _under_caption(text: str, picture: Image.Image, px: int = 13) -> Image.Image:
    """`picture` with `text` above it, left-aligned, wrapped between words to its width."""
    from matplotlib import font_manager
    from PIL import ImageDraw, ImageFont

    font = ImageFont.truetype(font_manager.findfont("DejaVu Sans"), px)
    lines: list[str] = []
    for paragraph in text.splitlines():
        line = ""
        for word in paragraph.split(" "):
            if line and font.getlength(f"{line} {word}") > picture.width - 16:
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        lines.append(line)
    band = (px + 4) * len(lines) + 6
    out = Image.new("RGB", (picture.width, picture.height + band), "white")
    draw = ImageDraw.Draw(out)
    for i, line in enumerate(lines):
        draw.text((8, 4 + i * (px + 4)), line, fill="black", font=font)
    out.paste(picture, (0, band))
    return out


def summary(run: Run) -> dict[str, Any]:
    """The numbers a dashboard prints under its plots (the same a test can compare exactly)."""
    st = run.staleness
    return dict(mode=run.mode, workers=run.workers, makespan=run.makespan,
                idle_fraction=run.idle_fraction, idle_time=run.idle_time, updates=run.updates,
                minibatches=run.workers * run.settings.steps * run.settings.accumulate,
                mean_staleness=float(np.mean(st)) if st else 0.0, max_staleness=max(st, default=0),
                final_accuracy=run.final_accuracy)


def snapshot_of(live: LiveRuns) -> bytes:
    """`View.snapshot` of what a browser-drawn dashboard shows now: matplotlib draws the same
    runs once (the static picture a saved notebook keeps for a reader without a kernel)."""
    view = View(live.settings, cache=live.cache)  # the runs are cached: nothing re-simulated
    view.settled, view.previous, view._settled_for = live.settled, live.previous, live._settled_for
    runs, labels = view.curves()
    if runs:
        view.training_plot.update(runs, labels)
    return view.snapshot()
