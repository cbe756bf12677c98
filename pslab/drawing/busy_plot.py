"""Where each worker's time goes: compute, transfer and idle, one bar per worker.

The panel a synchronous dashboard shows beside its loss curve (figures 001 and 002): in sync
mode every update has staleness 0, so a staleness histogram is one bar and says nothing, while
the idle part of each bar is the figure's lesson (accumulation shrinks it; a straggler grows
everyone else's). Bars are updated in place for the live dashboards.
"""
from __future__ import annotations

from matplotlib.axes import Axes
from matplotlib.patches import Rectangle
from matplotlib.ticker import PercentFormatter

from .palette import share_colours
from ..result import Run
from ..timeline import SHARES
from .timeline_plot import worker_label


def busy_title(run: Run, split: list[dict[str, float]]) -> str:
    """The white parts of the bars, summed: 'idle 12.3 GPU-seconds (5.1% of 8 × 30.2 s), …'."""
    idle = sum(p["idle"] for p in split)
    share = idle / (run.workers * (run.makespan or 1.0))
    return (f"idle {idle:.1f} GPU-seconds ({share:.1%} of {run.workers} × "
            f"{run.makespan:.1f} s), {run.updates} updates")


class BusyPlot:
    """Horizontal stacked bars, one per worker: the share of the makespan in each part."""

    def __init__(self, ax: Axes, palette: str = "ps"):
        self.ax, self.palette = ax, palette
        colours = share_colours(palette)
        self.bars: dict[str, list[Rectangle]] = {part: [] for part in SHARES}
        self.colours = colours
        ax.set_xlim(0, 1)
        ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        ax.set_xlabel("share of the run's time")
        ax.invert_yaxis()
        ax.tick_params(axis="y", length=0)
        handles = [Rectangle((0, 0), 1, 1, facecolor=colours[p], edgecolor="black",
                             linewidth=0.6, label=p) for p in SHARES]
        ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=3,
                  frameon=False, fontsize=10, borderaxespad=0.2)
        self.title = ax.set_title("", fontsize=10)

    def update(self, run: Run) -> None:
        split = run.shares()  # transfers to several shards at once count once
        for part, bars in self.bars.items():
            while len(bars) < len(split):
                bars.append(self.ax.add_patch(Rectangle(
                    (0, len(bars) - 0.4), 0, 0.8, facecolor=self.colours[part],
                    edgecolor="black", linewidth=0.6)))
        total = run.makespan or 1.0
        for w, parts in enumerate(split):
            left = 0.0
            for part in SHARES:
                bar = self.bars[part][w]
                bar.set_x(left)
                bar.set_width(parts[part] / total)
                left += parts[part] / total
        for bars in self.bars.values():
            for w, bar in enumerate(bars):
                bar.set_visible(w < len(split))
        self.ax.set_ylim(len(split) - 0.5, -0.5)
        labels = [worker_label(w, self.palette) for w in range(len(split))]
        if [t.get_text() for t in self.ax.get_yticklabels()] != labels:
            self.ax.set_yticks(range(len(split)), labels)
        self.title.set_text(busy_title(run, split))

    def artists(self) -> list:
        return [b for bars in self.bars.values() for b in bars] + [self.title]

    def shares(self) -> list[dict[str, float]]:
        """Each worker's shares, read back from the drawn bars."""
        n = sum(b.get_visible() for b in self.bars["idle"])
        return [{p: self.bars[p][w].get_width() for p in SHARES} for w in range(n)]
