"""One reused matplotlib figure, rendered to PNG in milliseconds: the canvas of the dashboards.

A notebook dashboard shows plots as PNGs in an `ipywidgets.Image` (no front-end extension
needed). Drawing a whole figure with Agg costs tens of milliseconds, most of it text (tick
labels, legend); a slider move changes the data and, now and then, a limit. `LiveFigure` keeps
the parts that did not change as cached bitmaps and redraws only the rest (Agg blitting).
"""
from __future__ import annotations

import io
import math
from collections import OrderedDict
from typing import Any, Iterable

from matplotlib.artist import Artist
from matplotlib.axis import Axis
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image

DPI = 80  # PNG pixels per inch of the live figures (fixed: the same bytes on every machine)


def nice_ceiling(x: float) -> float:
    """The smallest of 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 (x 10^k) at or above x.

    The live timeline's time axis ends there, so most slider moves leave the axis (and the
    cached background) unchanged and only the blocks are redrawn.
    """
    if not x > 0 or not math.isfinite(x):
        return 1.0
    k = math.floor(math.log10(x))
    for m in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if m * 10 ** k >= x * (1 - 1e-12):
            return m * 10 ** k
    return 10.0 ** (k + 1)


def png_bytes(canvas: FigureCanvasAgg) -> bytes:
    """The canvas as PNG: 256 colours, fast zlib level, no metadata (no dates: same bytes
    every time). A plot has a few hundred colours, mostly antialiasing shades; the palette
    keeps them within a few levels and halves the encoding time and the bytes sent."""
    width, height = canvas.get_width_height(physical=True)
    rgb = Image.frombuffer("RGBA", (width, height), canvas.buffer_rgba(), "raw", "RGBA", 0,
                           1).convert("RGB")
    out = io.BytesIO()
    rgb.quantize(256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE).save(
        out, format="png", compress_level=1)
    return out.getvalue()


def readable(ax: Any, size: float) -> None:
    """Tick labels and axis labels at `size` points: 12 pt at 80 dpi is 13 px, still 12 px
    when a 1024 px screen with the file browser open shrinks the picture to its cell (a
    projector's back row); set on the axes, so ticks made later keep it."""
    ax.tick_params(labelsize=size)
    ax.xaxis.label.set_fontsize(size)
    ax.yaxis.label.set_fontsize(size)


class LiveFigure:
    """One reused matplotlib figure (Agg) that renders to PNG, redrawing only what moved.

    The canvas is built in layers, each cached as a bitmap of the whole canvas:
    0. the frame: axes background, spines, legend; drawn once (again only if a legend changes);
    1. the x axes (ticks, tick labels, axis label), drawn on the frame;
    2. the y axes, drawn on that (a timeline's row labels change with the number of workers,
       its time axis far less often: so a workers slider redraws only the y axis);
    3. the `animated` artists (blocks, bars, lines, title): drawn on every render.
    A layer is redrawn, from the cached one below it, only when one of its axes changed limits,
    ticks or tick labels. The finished layers 0-2 are also kept for the last `memory` axis
    states (an LRU), so a slider dragged back and forth, or a mode toggled, finds its axes
    already drawn. `draws[i]` counts redraws of layer i, `blits` renders that redrew nothing
    but layer 3.
    """

    def __init__(self, figsize: tuple[float, float], margins: dict[str, float], dpi: int = DPI,
                 memory: int = 16, ncols: int = 1, font: float = 12):
        self.figure = Figure(figsize=figsize, dpi=dpi)
        FigureCanvasAgg(self.figure)
        self.figure.subplots_adjust(**margins)
        self.axes = [self.figure.add_subplot(1, ncols, i + 1) for i in range(ncols)]
        self.ax = self.axes[0]
        for ax in self.axes:
            readable(ax, font)
        self._cache: list[Any] = [None, None, None]  # bitmap after layer 0, 1, 2
        self._keys: list[tuple | None] = [None, None, None]
        self._done: OrderedDict[tuple, Any] = OrderedDict()  # layers 0-2 by their keys
        self._in_frame: set[int] = set()  # ids of the artists the cached frame was drawn with
        self.memory = memory
        self.draws = [0, 0, 0]
        self.blits = 0
        self.png = b""

    @staticmethod
    def _axis_key(axis: Axis) -> tuple:
        lim = axis.axes.get_xlim() if axis.axis_name == "x" else axis.axes.get_ylim()
        return (axis.get_visible(), lim, tuple(axis.get_majorticklocs()),
                tuple(getattr(axis.get_major_formatter(), "seq", ()) or ()))

    def _frame_key(self) -> tuple:
        key: list[Any] = []
        for ax in self.figure.axes:
            legend = ax.get_legend()
            key += [ax.get_visible(), None if legend is None else
                    (id(legend), tuple(t.get_text() for t in legend.get_texts()))]
        return tuple(key)

    def invalidate(self) -> None:
        """Force a full redraw next time (after changing anything the layer keys do not see)."""
        self._keys = [None, None, None]
        self._done.clear()

    def render(self, animated: Iterable[Artist]) -> bytes:
        """The figure as PNG bytes, with `animated` drawn fresh on the cached layers."""
        animated = list(animated)
        xaxes = [ax.xaxis for ax in self.figure.axes]
        yaxes = [ax.yaxis for ax in self.figure.axes]
        for a in (*animated, *xaxes, *yaxes):
            if not a.get_animated():
                a.set_animated(True)
                if id(a) in self._in_frame:  # it was drawn into the cached layers until now
                    self.invalidate()
        keys = [self._frame_key(), tuple(map(self._axis_key, xaxes)),
                tuple(map(self._axis_key, yaxes))]
        canvas = self.figure.canvas
        done = tuple(keys)
        first = next((i for i in range(3) if keys[i] != self._keys[i]), 3)
        if first < 3 and done in self._done:  # these axes were drawn before: reuse them
            self._done.move_to_end(done)
            canvas.restore_region(self._done[done])
            first = 4
        renderer = canvas.get_renderer()
        for layer in range(first, 3):
            if layer == 0:
                canvas.draw()  # everything but the animated artists and the axes
                renderer = canvas.get_renderer()
                self._in_frame = {id(c) for ax in self.figure.axes for c in ax.get_children()}
            else:
                canvas.restore_region(self._cache[layer - 1])
                for axis in (xaxes if layer == 1 else yaxes):
                    if axis.get_visible() and axis.axes.get_visible():
                        axis.draw(renderer)
            self._cache[layer] = canvas.copy_from_bbox(self.figure.bbox)
            self._keys[layer] = keys[layer]
            self.draws[layer] += 1
        if first == 3:
            canvas.restore_region(self._cache[2])
        if first >= 3:
            self.blits += 1
        else:
            self._done[done] = self._cache[2]
            if len(self._done) > self.memory:
                self._done.popitem(last=False)
        for a in sorted(animated, key=lambda a: a.get_zorder()):
            if a.get_visible():
                a.draw(renderer)
        self.png = png_bytes(canvas)
        return self.png
