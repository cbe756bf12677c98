"""Knobs for notebook 05: one slider per point a paper makes (τ, b, the lr rule), each redrawing
a live run. Timelines come from pslab's own plot; on top, this module marks what a plain
timeline cannot tell apart: dropped pushes (backup workers) and queueing at a busy shard, as
opposed to waiting for other workers (Span.note)."""
from __future__ import annotations

import textwrap
import warnings
from typing import Any, Callable

from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from ..cluster import Cluster
from ..drawing.sizes import SCREEN_IN, SLIDER_IN
from ..modes import SSP, Backup
from ..result import Run
from ..training import train
from ..classic.papers import BOUNDED_DELAY, STRAGGLERS, step_time, waiting
from .dashboard import show_faded, status_html

MARKS = {"dropped": dict(hatch="xxx", edgecolor="crimson", label="push dropped (late)"),
         "queue": dict(hatch="...", edgecolor="0.35", label="idle: queued at a busy shard")}


def mark_notes(fig: Figure, run: Run) -> Figure:
    """Hatch the spans whose note a timeline's colours do not show; add them to the legend."""
    ax = fig.axes[0]
    seen = set()
    for s in run.timeline:
        if s.note in MARKS and s.worker is not None and s.end > s.start:
            style = {k: v for k, v in MARKS[s.note].items() if k != "label"}
            ax.add_patch(Rectangle((s.start, s.worker - 0.4), s.end - s.start, 0.8,
                                   facecolor="none", linewidth=0.8, zorder=6, **style))
            seen.add(s.note)
    if seen:
        handles = [Patch(facecolor="white", **MARKS[n]) for n in sorted(seen)]
        ax.legend(handles=handles, loc="lower right", fontsize=9, framealpha=0.9)
    return fig


def delay_timeline(tau: int = 0, workers: int = 4, steps: int = 12) -> Figure:
    """SSP(τ) on Li et al.'s cluster: the white waiting blocks shrink as τ grows."""
    run = train(mode=SSP(tau), workers=workers, steps=steps, shards=4, batch=16,
                numerics=False, cluster=Cluster(**BOUNDED_DELAY))
    return _timeline(run, f"τ = {tau}, {workers} workers × {steps} steps: they wait "
                          f"{waiting(run):.1%} of their time, makespan {run.makespan:.1f} s")


def backup_run(b: int = 0, n: int = 4, steps: int = 8, latency: float = 0.1) -> Run:
    """The knob's run: N of N + b workers on Chen et al.'s uneven cluster, each message
    `latency` seconds (0.1: transfers wide enough to see the hatching)."""
    return train(mode=Backup(b), workers=n + b, steps=steps, numerics=False, seed=0,
                 cluster=Cluster(**{**STRAGGLERS, "latency": latency}))


def backup_timeline(b: int = 0, n: int = 4, steps: int = 8) -> Figure:
    """N of N + b: the late pushes are dropped (hatched) and the rounds close sooner."""
    run = backup_run(b, n, steps)
    return _timeline(run, f"{n} of {n + b} workers: {step_time(run):.2f} s per update, "
                          f"{run.dropped} pushes dropped")


def lr_rule(rule: str = "fixed lr", lr: float = 0.5, workers: int = 8) -> Figure:
    """Async with a fixed lr or lr/τ (staleness_lr): the loss, and whether it diverged."""
    from ..drawing.training_plot import plot_training

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the title says it instead
        run = train(mode="async", workers=workers, steps=30, lr=lr, seed=0,
                    staleness_lr=rule == "lr/τ")
    fig = plot_training(run, labels=[f"{rule}, lr {lr:.2g}"])
    verdict = (f"async, {workers} workers: " + ("DIVERGED: " + run.divergence if run.diverged
                                                 else f"no divergence: test accuracy "
                                                      f"{run.final_accuracy:.1%}"))
    fig.suptitle(textwrap.fill(verdict, 68), fontsize=9,  # wrapped: the cell's width
                 color="crimson" if run.diverged else "black")
    return fig


def _timeline(run: Run, title: str) -> Figure:
    from ..drawing.timeline_plot import plot_timeline

    fig = mark_notes(plot_timeline(run, legend=False), run)
    fig.axes[0].set_title(title, fontsize=10)
    # the knob's slider row is above it: the two fit one screen (rows thin, names still read)
    fig.set_figheight(min(fig.get_figheight(), SCREEN_IN - SLIDER_IN))
    return fig


class Knob:
    """An ipywidgets panel: `draw(**values)` redrawn whenever a control moves. While the next
    picture is drawn (1-2 s) the one before shows faded and the status beside the last control
    says "drawing…", then "ready" (as a dashboard's status). Saved with its notebook and opened
    before the notebook runs, it says so at its top (`LiveNote`) and shows no status."""

    def __init__(self, draw: Callable[..., Figure], **controls: Any):
        import html

        import ipywidgets as W
        from IPython.display import display

        from .live_note import LiveNote

        def show(**values: Any) -> None:
            self._drawing(True)
            try:
                display(draw(**values))
            except Exception as exc:  # shown under the controls by the Output widget too
                self.status.value = status_html("error", html.escape(
                    f"{type(exc).__name__}: {exc}"))
                raise
            self._drawing(False)

        self.names = list(controls)
        self.status = W.HTML(layout=W.Layout(margin="0 0 0 8px", width="auto"))
        self.status.add_class("pslab-status")  # hidden in a saved view (live_note.js)
        self.out: Any = None
        self.out = W.interactive_output(show, controls)
        *first, last = controls.values()
        row = W.HBox([last, self.status], layout=W.Layout(align_items="center"))
        self.panel = W.VBox([*first, row, self.out])
        self.widget = W.VBox([LiveNote(), self.panel])
        self.widget.add_class("pslab-knob")

    def _drawing(self, busy: bool) -> None:
        if self.out is not None:  # (none yet while the first picture is drawn)
            show_faded(self.out, busy)
        self.status.value = status_html(*(("busy", "drawing…") if busy else ("ready", "ready")))

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from .progress import widget_bundle

        bundle = widget_bundle(self.widget, include, exclude)
        bundle["text/plain"] = f"pslab knob: {', '.join(self.names)}"  # nbval compares it
        return bundle


def knob(draw: Callable[..., Figure], **controls: Any) -> Knob:
    """A `Knob`: `draw(**values)` redrawn whenever a control moves."""
    return Knob(draw, **controls)


def explore_delay() -> Knob:
    """τ from 0 to 16 (section 1 of notebook 05)."""
    import ipywidgets as W
    return knob(delay_timeline, tau=W.IntSlider(0, 0, 16, description="τ"))


def explore_backup() -> Knob:
    """b from 0 to 4 backup workers (section 4)."""
    import ipywidgets as W
    return knob(backup_timeline, b=W.IntSlider(0, 0, 4, description="backups b"))


def explore_lr_rule() -> Knob:
    """fixed lr or lr/τ, and the lr itself (section 2)."""
    import ipywidgets as W
    return knob(lr_rule, rule=W.ToggleButtons(options=["fixed lr", "lr/τ"], description="rule"),
                lr=W.FloatLogSlider(0.5, base=10, min=-2, max=0, description="lr",
                                    readout_format=".2g"))
