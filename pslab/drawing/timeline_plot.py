"""Timelines of figures 000 and 001: one row per GPU and per server shard, time across.

Every block is one `Span` of `run.timeline`, filled with its kind's colour from `pslab.palette`
("ps": F blue, minibatch orange, P red, Update grey; "accumulation": forward/backward green,
gradient sync blue, idle white). `TimelinePlot` keeps one collection per kind (one compound
path of rectangles) and only moves its vertices on `.update(run)`, so a notebook slider
redraws in milliseconds.
"""
from __future__ import annotations

import textwrap
from typing import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.collections import Collection
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.path import Path

from ..checks import flag, number, run_labels, text as a_text
from .blocks import blocks
from .palette import EVERY_KIND, KINDS, LABELS, PALETTES
from .sizes import CELL_IN, ROW_MIN_IN, SCREEN_IN
from .training_plot import check_ax
from ..result import Run, as_runs

HEIGHT = 0.8  # of a row; the gap keeps rows apart (figure 001's rows touch: there it is 1.0)
ZORDER = {"idle": 1, "compute": 2, "fetch": 2.5, "push": 2.5, "update": 3,  # sync column on top;
          "reduce-scatter": 2.5, "all-gather": 2.5, "forward": 2, "backward": 2,
          "backward-input": 2, "backward-weight": 2, "send": 1.5, "recv": 1.5}  # a
# pipeline's send/recv overlap its compute (an isend): compute stays on top
# F and P over a minibatch: a short one widened to min_px stays in view (see _visible)
# (no "mb": a narrow minibatch block stays unlabelled rather than say a word nobody taught)
SHORT = {"Update": "Upd.", "minibatch": "", "forward/backward": "f/b", "gradient sync": "sync"}
MAX_TEXTS = 80  # block labels beyond this many would be unreadable anyway (and slow)
TEXT_PT = 9  # block labels; rows, legend and titles are larger (a projector's back row)


def worker_label(w: int, palette: str = "ps") -> str:
    """'G0' as in figure 000, 'GPU0' as in figure 001: numbered from 0, as the ranks a
    student passes (`kill={1: 5}`, `speeds[2]`, `Span.worker`) are."""
    return f"{'GPU' if palette == 'accumulation' else 'G'}{w}"


def shard_label(run: Run, s: int) -> str:
    names = run.shards[s] if s < len(run.shards) else []
    if len(names) > 2:  # a key range across layers: its ends keep the row label short
        names = [names[0], "…", names[-1]]
    inside = ", ".join(n if n == "…" else f"${n}$" for n in names)  # W_o: W, subscript o
    return f"{'server' if len(run.shards) == 1 else f'S{s}'}: {inside}"


def legend_handles(palette: str = "ps", runs: Sequence[Run] = ()) -> list[Patch]:
    """One patch per distinct colour; kinds sharing a colour (the blue 'gradient sync' of figure
    001) get the label of the last of them, which is the one the figure names. The collectives
    (ZeRO's reduce-scatter, all-gather) are listed only when one of `runs` has them, and then
    beside only the kinds the runs have (no server: no F, P, Update), so the legend fits a cell."""
    return [Patch(facecolor=PALETTES[palette][k], edgecolor="black", linewidth=0.6,
                  label=legend_label(k, palette)) for k in legend_kinds(palette, runs)]


def legend_kinds(palette: str = "ps", runs: Sequence[Run] = ()) -> list[str]:
    """The kinds `legend_handles` names, in order (the browser's legend reads them too)."""
    kinds, extra = KINDS, extras_in(runs)
    if extra:
        found = {s.kind for r in runs for s in r.timeline}
        kinds = tuple(k for k in KINDS if k in found) + extra
    last = {PALETTES[palette][k]: k for k in kinds}  # colour -> the last kind that has it
    return [k for k in kinds if last[PALETTES[palette][k]] == k]


def extras_in(runs: Sequence[Run]) -> tuple[str, ...]:
    """The kinds beyond the parameter server's (the collectives, a pipeline's) some span of
    `runs` has."""
    extra = EVERY_KIND[len(KINDS):]
    found = {s.kind for r in runs for s in r.timeline if s.kind in extra}
    return tuple(k for k in extra if k in found)


def legend_label(kind: str, palette: str) -> str:
    text = LABELS[palette][kind]
    return f"{kind} ({text})" if len(text) <= 2 else text  # "fetch (F)", "minibatch"


def title_text(run: Run, label: str | None = None, column: bool = False) -> str:
    """'label' over 'makespan …, … updates, idle …': the numbers the seeds are about.
    column: split the idle time as figure 001 draws it, white waits + the gradient-sync column."""
    diverged = " — DIVERGED (the loss blew up: see the loss curve)" if run.diverged else ""
    return f"{label or run.mode}{diverged}\n{numbers_line(run, column)}"


def numbers_line(run: Run, column: bool = False) -> str:
    """'makespan 14.73 s, 2 updates, idle 17.18 GPU-seconds (38.9%), 1.50 queued at
    shards' (shared by plots, dashboards and the TikZ export). Idle time is summed over the
    workers, so it is in GPU-seconds (it can exceed the makespan); the share is of every
    worker's whole run."""
    plural = "" if run.updates == 1 else "s"
    idle_time = run.idle_time
    wait = run.sync_wait if column else 0.0  # each walks the timeline: read them once
    # the blue column is a gradient sync only in sync mode; elsewhere it is the server's updates
    during = "in sync" if run.mode == "sync" else "during server updates"
    idle = (f"{idle_time - wait:.2f} GPU-seconds + {wait:.2f} {during}" if wait > 0
            else f"{idle_time:.2f} GPU-seconds")
    queue = run.queue_time  # idle noted "queue": not waiting for workers (pslab.timeline.NOTES)
    queued = f", {queue:.2f} queued at shards" if queue > 0 else ""
    return (f"makespan {run.makespan:.2f} s, {run.updates} update{plural}, "
            f"idle {idle} ({run.idle_fraction:.1%}){queued}")


class TimelinePlot:
    """A timeline drawn once and then updated in place (no `ax.clear()`, no new collections).

    palette: "ps" (figure 000) or "accumulation" (figure 001). column: draw server updates as a
    column across all GPU rows, like figure 001's sync block, instead of on server rows (default:
    True for "accumulation"). text: write labels ("label"), durations ("duration") or nothing
    (None) inside blocks wide enough (default: label for "ps", duration for "accumulation").
    """

    def __init__(self, ax: Axes, palette: str = "ps", column: bool | None = None,
                 text: str | None = "auto", label: str | None = None, legend: bool = True):
        if palette not in PALETTES:
            raise ValueError(f"palette must be one of {sorted(PALETTES)} (got {palette!r})")
        column, legend = flag("column", column, none=True), flag("legend", legend)
        self.ax, self.palette, self.label = ax, palette, a_text("label", label)
        self.column = palette == "accumulation" if column is None else column
        self.height = 1.0 if self.column else HEIGHT  # a sync column then reads as one block
        self.text = ({"ps": "label", "accumulation": "duration"}[palette] if text == "auto"
                     else text)
        self.collections: dict[str, Collection] = {}
        for kind in EVERY_KIND:
            # a plain Collection: set_paths takes our one compound path as it is
            coll = Collection(facecolors=PALETTES[palette][kind], edgecolors="black",
                              linewidths=0.6, zorder=ZORDER[kind], label="_" + kind)
            coll.set_paths([])
            self.collections[kind] = ax.add_collection(coll, autolim=False)
        self.texts = [ax.text(0, 0, "", ha="center", va="center", fontsize=TEXT_PT, zorder=4,
                              visible=False, clip_on=True) for _ in range(MAX_TEXTS)]
        self.end_line = ax.axvline(0, color="0.3", linestyle="--", linewidth=0.8, zorder=5)
        self.title = ax.set_title("", fontsize=10)
        ax.set_xlabel("virtual time (s)")
        ax.invert_yaxis()  # G0 on top, as in the seeds
        ax.tick_params(axis="y", length=0)
        if ax.yaxis.get_major_ticks()[0].label1.get_fontsize() < 10:  # rows a class can read
            ax.tick_params(axis="y", labelsize=10)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        self.legend, self._legend_for = legend, ()  # the collectives the legend lists
        if legend:
            self._draw_legend()
        self.rows: list[str] = []
        self.min_px = 0.0  # see _visible; the live dashboards set it
        self.label_every = 1  # a short live timeline with many rows names every k-th row
        self.narrow = False  # compare() side by side sets it: the title wraps

    def _draw_legend(self, runs: Sequence[Run] = ()) -> None:
        self._legend_for = extras_in(runs)
        self.ax.legend(handles=legend_handles(self.palette, runs), loc="upper left",
                       bbox_to_anchor=(1.01, 1), fontsize=10, frameon=False)

    def update(self, run: Run, xmax: float | None = None) -> None:
        """Show `run`: move every block, relabel rows, retitle; xmax fixes the time axis."""
        if self.legend and extras_in([run]) != self._legend_for:  # ZeRO's kinds come/go
            self._draw_legend([run])
        shard_rows = 0 if self.column else len(run.shard_bytes)
        self.rows = [worker_label(w, self.palette) for w in range(run.workers)]
        self.rows += [shard_label(run, s) for s in range(shard_rows)]
        kinds, start, end, y0, y1 = self._boxes(run)
        right = xmax if xmax is not None else (run.makespan or 1.0) * 1.02
        shown = self._visible(kinds, start, end, right)
        for kind, coll in self.collections.items():
            mine = kinds == kind
            coll.set_paths([_rectangles(start[mine], shown[mine], y0[mine], y1[mine])]
                           if mine.any() else [])
        self.ax.set_xlim(0, right)
        self.ax.set_ylim(len(self.rows) - 0.5, -0.5)  # inverted: first row on top
        ticks = range(0, len(self.rows), max(1, self.label_every))
        labels = [self.rows[i] for i in ticks]
        if [t.get_text() for t in self.ax.get_yticklabels()] != labels:  # ticks cost ~1 ms
            self.ax.set_yticks(ticks, labels)  # size: the axes' tick_params
        self.end_line.set_xdata([run.makespan, run.makespan])
        self.ax.set_xlabel(time_axis(run))
        title = title_text(run, self.label, self.column)
        if self.narrow:  # half a cell wide: the numbers wrap over as many lines as they need
            head, numbers = title.rsplit("\n", 1)
            title = head + "\n" + textwrap.fill(numbers, 40)
        self.title.set_text(title)
        self._write(list(zip(start, end, (y0 + y1) / 2, kinds)), right)

    def _visible(self, kinds: np.ndarray, start: np.ndarray, end: np.ndarray,
                 right: float) -> np.ndarray:
        """Ends of the blocks as drawn: a fetch, push or update narrower than `min_px` pixels
        is drawn `min_px` wide, so that a short F or P on a long timeline is a coloured block,
        not a black hairline (the spans and every printed number stay exact)."""
        if not self.min_px or not len(end):
            return end
        fig = self.ax.figure
        seconds = self.min_px * right / (self.ax.get_position().width * fig.get_figwidth()
                                         * fig.dpi)
        short = (kinds != "idle") & (kinds != "compute") & (end - start < seconds)
        return np.where(short, start + seconds, end)

    def _boxes(self, run: Run) -> tuple[np.ndarray, ...]:
        """Kind, start, end, top and bottom y of every visible span, as arrays (no Python loop
        per span beyond the transpose: a 10^4-span timeline still redraws in milliseconds)."""
        b = blocks(run, self.column, self.height)
        return b["kind"], b["start"], b["end"], b["y0"], b["y1"]

    def _write(self, blocks: list, right: float) -> None:
        """Put text inside the blocks it fits in; the rest of the pool is hidden."""
        used = 0
        if self.text and len(blocks) <= 4 * MAX_TEXTS:
            width_pt = self.ax.get_position().width * self.ax.figure.get_figwidth() * 72
            pt_per_s = width_pt / right
            for start, end, y, kind in blocks:
                if used == MAX_TEXTS:
                    break
                text = self._fit(kind, end - start, (end - start) * pt_per_s)
                if text:
                    t = self.texts[used]
                    t.set_text(text)
                    t.set_position(((start + end) / 2, y))
                    t.set_rotation(90 if self.column and kind == "update" else 0)
                    t.set_visible(True)
                    used += 1
        for t in self.texts[used:]:
            t.set_visible(False)

    def _fit(self, kind: str, seconds: float, points: float) -> str | None:
        if self.column and kind == "update":  # written upright along the column, like 001
            return SHORT.get(LABELS[self.palette][kind], "sync") if points >= 10 else None
        if self.text == "duration":
            cands = [] if kind == "idle" else [f"{seconds:.1f}"]
        else:
            full = LABELS[self.palette][kind]
            cands = [full, SHORT.get(full, "")]
        for c in cands:
            # ~0.6 em per character, plus a little margin
            if c and len(c) * 0.6 * TEXT_PT + 3 <= points:
                return c
        return None

    def bars(self, kind: str) -> list[tuple[float, float, float, float]]:
        """The blocks drawn for `kind` as (start, end, y_low, y_high), read back from the artist."""
        out = []
        for path in self.collections[kind].get_paths():
            for v in np.asarray(path.vertices).reshape(-1, 5, 2):
                out.append((v[:, 0].min(), v[:, 0].max(), v[:, 1].min(), v[:, 1].max()))
        return out


def _rectangles(x0: np.ndarray, x1: np.ndarray, y0: np.ndarray, y1: np.ndarray) -> Path:
    """All the blocks of one kind as one compound path: one Path object instead of thousands
    (a Path per block would dominate the update time)."""
    verts = np.stack([np.stack(p, axis=-1) for p in
                      ((x0, y0), (x0, y1), (x1, y1), (x1, y0), (x0, y0))], axis=1)
    return Path(verts.reshape(-1, 2), np.tile(_CODES, len(x0)))


_CODES = np.array([Path.MOVETO, Path.LINETO, Path.LINETO, Path.LINETO, Path.CLOSEPOLY],
                  dtype=Path.code_type)


def _row_count(run: Run, palette: str, column: bool | None) -> int:
    column = palette == "accumulation" if column is None else column
    return run.workers + (0 if column else len(run.shard_bytes))


def plot_timeline(run: Run, ax: Axes | None = None, palette: str = "ps",
                  column: bool | None = None, label: str | None = None,
                  legend: bool = True) -> Figure:
    """Draw one run's timeline; returns the figure (its `pslab_plots` holds the TimelinePlot)."""
    as_runs(run, many=False)
    check_ax(ax)
    legend, own = flag("legend", legend), ax is None
    if own:  # a cell's width; the legend below the axes, where it costs no width
        fig = Figure(figsize=(CELL_IN, fit_screen(1.8, _row_count(run, palette, column), 0.45)),
                     layout="constrained")
        ax = fig.add_subplot()
    plot = TimelinePlot(ax, palette, column=column, label=label, legend=legend and not own)
    plot.update(run)
    if own and legend:
        _legend_below(ax.figure, palette, [run])
    ax.figure.pslab_plots = [plot]
    return ax.figure


def compare(run_a: Run, run_b: Run, labels: Sequence[str] | None = ("a", "b"),
            palette: str = "ps",
            column: bool | None = None, stacked: bool = False,
            figsize: tuple[float, float] | None = None) -> Figure:
    """Two runs on one time scale: side by side (figure 001) or stacked (figure 000).

    The time axis is shared, so the shorter makespan is visibly shorter. The figure's
    `pslab_plots` attribute holds the two TimelinePlots (to update them in place).
    """
    as_runs(run_a, "run_a", many=False)
    as_runs(run_b, "run_b", many=False)
    labels = run_labels(labels, 2)
    stacked = flag("stacked", stacked)
    figsize = _figsize(figsize)
    rows = max(_row_count(r, palette, column) for r in (run_a, run_b))
    if figsize is None:  # a cell's width either way (side by side leaves less room per run)
        figsize = (CELL_IN, fit_screen(2.6, 2 * rows, 0.5) if stacked else 0.4 * rows + 2.6)
    fig = Figure(figsize=figsize, layout="constrained")
    axes = fig.subplots(2, 1, sharex=True) if stacked else fig.subplots(1, 2, sharex=True)
    plots = [TimelinePlot(ax, palette, column=column, label=lab, legend=False)
             for ax, lab in zip(axes, labels)]
    for p in plots:
        p.narrow = not stacked
    xmax = max(run_a.makespan, run_b.makespan, 1e-9) * 1.02
    for p, r in zip(plots, (run_a, run_b)):
        p.update(r, xmax=xmax)
    if stacked:
        axes[0].set_xlabel("")
    _legend_below(fig, palette, [run_a, run_b])
    fig.pslab_plots = plots
    return fig


def fit_screen(fixed: float, rows: int, row: float) -> float:
    """A figure's height in inches: `fixed` (titles, axis, legend) and `rows` rows of `row`
    inches, each thinner if that keeps the figure within one screen (SCREEN_IN), but never
    thinner than ROW_MIN_IN (its name must still read)."""
    fitted = min(row, (SCREEN_IN - fixed) / max(rows, 1))
    return fixed + max(fitted, ROW_MIN_IN) * rows


def _legend_below(fig: Figure, palette: str, runs: Sequence[Run] = ()) -> None:
    handles = legend_handles(palette, runs)
    rows = 1 if len(handles) <= 5 else 2  # a pipeline's seven kinds: two rows fit a cell
    fig.legend(handles=handles, loc="outside lower center", ncol=-(-len(handles) // rows),
               fontsize=10,
               frameon=False, columnspacing=1.2, handlelength=1.5)


def _figsize(value: object) -> tuple[float, float] | None:
    """(width, height) in inches, as matplotlib takes it, up to a wall's size."""
    if value is None:
        return None
    if isinstance(value, str) or not hasattr(value, "__len__") or len(value) != 2:
        raise ValueError(f"figsize must be None or (width, height) in inches (got {value!r})")
    return tuple(number("figsize (inches)", v, positive=True, high=1000) for v in value)


def time_axis(run: Run) -> str:
    """What the time axis measures: the virtual clock, or real seconds on processes."""
    if run.settings.backend == "processes":
        return "measured time (s, real processes)"
    return "virtual time (s)"
