"""Notebook 08's dashboard: a pipeline schedule on the clock, with the schedule, p, m, v, the
F:B:W ratio, the link bandwidth and d data-parallel replicas on controls.

A change runs the clock only and redraws one step's timeline (drawn by the browser: hover a
block for its rank, kind and micro-batch), the bubble under both definitions and the
activations each rank holds at its peak; when the controls rest, the run is repeated with the
arithmetic and the loss and accuracy curves (beside the previous run's) are drawn; a line
says when the two runs' losses are the same (a schedule reorders work, not the gradient). With
d replicas each rank's row stands for its d copies (they run alike), and the all-reduce of each
stage's gradient at the flush is drawn at the row's end, its cost said in a line. A
combination a schedule refuses (1F1B with m < p, chunks it does not take) shows its reason in
the status and leaves the last run on screen. The plumbing is `DashboardBase`'s.

    from pslab.notebook.pipeline_dashboard import PipelineDashboard
    PipelineDashboard()          # 1F1B, p = 4, m = 8, F:B:W = 1:2:1, 1 MB/s links
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

import ipywidgets as W
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg

from ..cluster import Cluster
from ..drawing.palette import PALETTES
from ..drawing.pipeline_plot import BUBBLE, NAMES, PIPELINE, plot_pipeline, shade
from ..model import single_thread
from ..pipeline import Pipeline, PipelineRun
from ..pipeline.schedules import SCHEDULES
from ..training import train
from .browser_figure import BrowserFigure
from .browser_plots import CURVES_LAYOUT, CURVES_PX, FONT, curves, packed
from .controls import BANDWIDTHS, _options, check_settle_delay, dress
from .dashboard import TEXT_STYLE, DashboardBase
from .dashboard_settings import bytes_per_s
from .livefigure import png_bytes

RATIOS = {"1:2:1 (FLOPs)": (1.0, 2.0, 1.0), "1:1:0.5": (1.0, 1.0, 0.5),
          "1:3:1.5": (1.0, 3.0, 1.5), "1:2:0.5": (1.0, 2.0, 0.5)}
HELP = {"schedule": "the order each rank runs its forwards and backwards in",
        "stages": "p ranks, each a stage of the model", "microbatches": "m micro-batches a step",
        "chunks": "v model chunks per rank (interleaved, looped-bfs, zb-h1, zbv)",
        "ratio": "seconds of a rank's forward : whole backward : weight-gradient half",
        "bandwidth": "bytes per second of the links between ranks",
        "replicas": "d copies of the pipeline, each on its own m micro-batches; each stage's "
                    "gradient is all-reduced across them at the flush"}
STEPS, BATCH, HIDDEN = 30, 16, 32


@dataclass(frozen=True)
class PipeSettings:
    """What the controls say; `mode()` checks it (a ValueError names what a schedule refuses)."""

    schedule: str = "1f1b"
    stages: int = 4
    microbatches: int = 8
    chunks: int = 1
    ratio: str = "1:2:1 (FLOPs)"
    bandwidth: float = 1e6
    replicas: int = 1

    def mode(self) -> Pipeline:
        if self.ratio not in RATIOS:
            raise ValueError(f"ratio must be one of {', '.join(map(repr, RATIOS))} "
                             f"(got {self.ratio!r})")
        return Pipeline(stages=self.stages, microbatches=self.microbatches,
                        schedule=self.schedule, chunks=self.chunks, times=RATIOS[self.ratio],
                        replicas=self.replicas)

    def cluster(self) -> Cluster:
        return Cluster(latency=0.01, bandwidth=self.bandwidth, update_time=0.0)

    def code(self) -> str:
        """The run on show as one line of Python."""
        return (f"pslab.train(mode=pslab.Pipeline(stages={self.stages}, "
                f"microbatches={self.microbatches}, schedule={self.schedule!r}, "
                f"chunks={self.chunks}, times={RATIOS[self.ratio]}"
                + (f", replicas={self.replicas}" if self.replicas > 1 else "")
                + f"), steps={STEPS}, "
                f"batch={BATCH}, cluster=pslab.Cluster(latency=0.01, "
                f"bandwidth={self.bandwidth:g}, update_time=0))")


TIMELINE_LAYOUT = {"height": 150, "font": FONT, "panels": [dict(
    share=1.0, left=64, right=10, top=26, bottom=40, xlabel="virtual time (s), one step",
    yinvert=True, zoom=True)]}
MEMORY_LAYOUT = {"height": CURVES_PX, "font": FONT, "panels": [dict(  # beside the loss curve
    share=1.0, left=48, right=8, top=22, bottom=34, ylabel="kB held", xlabel="rank")]}
KINDS = ("F", "B", "I", "W")
RING = ("reduce-scatter", "all-gather")  # the flush's all-reduce, with replicas


def timeline_panel(run: PipelineRun) -> tuple[list[dict], list[dict]]:
    """(panels, legend) of one step: bubbles under the blocks, each block's hover its rank,
    kind and micro-batch (columns packed with numpy: a slider step draws thousands). With d
    replicas, replica 0's rows (the others run alike) and each rank's all-reduce at the flush."""
    p, v = run.pipeline.stages, run.pipeline.chunks
    palette = PALETTES["ps"]
    colours = [BUBBLE] + ["#%02x%02x%02x" % tuple(int(255 * c) for c in shade(PIPELINE[k], j, v))
                          for k in KINDS for j in range(v)] + [palette[k] for k in RING]
    rank, stage, kinds, micro, start, end = (np.array(f) for f in zip(*run.ops))
    mine = rank < p
    rank, stage, kinds = rank[mine], stage[mine], kinds[mine]
    micro, start, end = micro[mine], start[mine], end[mine]
    kind = np.array([KINDS.index(k) for k in kinds.tolist()])
    chunk = stage // p if run.pipeline.schedule != "zbv" else (stage >= p).astype(int)
    c = 1 + kind * v + chunk
    ring = [s for s in run.timeline if s.kind in RING and s.step == 0 and s.worker < p]
    if ring:  # appended as blocks of their own kinds (hover: "reduce-scatter", no micro)
        rank = np.concatenate([rank, [s.worker for s in ring]])
        start = np.concatenate([start, [s.start for s in ring]])
        end = np.concatenate([end, [s.end for s in ring]])
        kind = np.concatenate([kind, [len(KINDS) + 1 + RING.index(s.kind) for s in ring]])
        micro = np.concatenate([micro, [-1] * len(ring)])
        c = np.concatenate([c, [1 + len(KINDS) * v + RING.index(s.kind) for s in ring]])
    right = max(run.span, max((s.end for s in ring), default=0.0))
    lanes = np.arange(p)
    x0 = np.concatenate([np.zeros(p), start])
    x1 = np.concatenate([np.full(p, right), end])
    y = np.concatenate([lanes, rank]).astype(float)
    c = np.concatenate([np.zeros(p, int), c])
    widen = np.concatenate([np.zeros(p + len(start) - len(ring), int), np.ones(len(ring), int)])
    d = run.pipeline.replicas
    panel = dict(xlim=[0.0, right], ylim=[-0.5, p - 0.5],
                 yticks=[[r, f"rank {r}" + (f" ×{d}" if d > 1 else "")] for r in range(p)],
                 colours=colours,
                 rects=dict(x0=packed(x0, "f4"), x1=packed(x1, "f4"), y0=packed(y - 0.42, "f4"),
                            y1=packed(y + 0.42, "f4"), c=packed(c, "int"),
                            widen=packed(widen, "int")),
                 hover=dict(lines=["GPU {who} (rank {who}): {kind:kinds}, step 1",
                                   "micro-batch {micro:micros}", "start {x0} s, end {x1} s"],
                            cols=dict(who=packed(np.concatenate([lanes, rank]), "int"),
                                      kind=packed(np.concatenate([np.full(p, 4), kind]),
                                                  "int"),
                                      micro=packed(np.concatenate([np.zeros(p, int),
                                                                   micro + 1]), "int")),
                            tables=dict(kinds=[NAMES[k] for k in KINDS] + ["bubble"]
                                        + [f"{k} of the gradient among the {d} replicas"
                                           for k in RING],
                                        micros=["none"] + [
                                            str(i) for i in range(run.pipeline.microbatches)])))
    used = [k for k in KINDS if k in set(kinds.tolist())]
    legend = [{"colour": PIPELINE[k], "label": NAMES[k]} for k in used]
    legend += [{"colour": palette[k], "label": k} for k in RING if ring]  # the all-reduce
    return [panel], legend + [{"colour": BUBBLE, "label": "bubble"}]


def memory_panel(run: PipelineRun) -> tuple[list[dict], list[dict]]:
    """Bars of each rank's peak activation bytes."""
    p = run.pipeline.stages  # replica 0's ranks: the others hold the same
    peak = [b / 1e3 for b in run.activation_peak_bytes[:p]]
    held = run.activations[:p]
    n = len(peak)
    panel = dict(xlim=[-0.6, n - 0.4], ylim=[0.0, max(peak) * 1.15 or 1.0],
                 xticks=[[r, str(r)] for r in range(n)], colours=[PIPELINE["F"]],
                 rects=dict(x0=[r - 0.35 for r in range(n)], x1=[r + 0.35 for r in range(n)],
                            y0=[0.0] * n, y1=[round(b, 3) for b in peak], c=[0] * n),
                 lines=[], hover=dict(lines=["rank {r}: {held} micro-batches held"],
                                      cols=dict(r=list(range(n)), held=held), tables={}))
    return [panel], [{"colour": PIPELINE["F"], "label": "activations held at the peak"}]


PALE = "#B8C7E0"  # the previous run's curve, drawn wide under the current one


def same_losses(now: PipelineRun, before: PipelineRun) -> str | None:
    """A line when both runs trained the same steps to the same losses (to round-off: every
    schedule gives one worker's weights, looped-bfs to round-off), else None."""
    a = [r.loss for r in now.history]
    b = [r.loss for r in before.history]
    if len(a) != len(b) or any(abs(x - y) > 1e-6 * max(1.0, abs(y)) for x, y in zip(a, b)):
        return None
    stretch = ("" if now.step_time == before.step_time else
               f"; only time stretches (a step {now.step_time:.3g} s, "
               f"{before.step_time:.3g} s before)")
    return (f"Same loss at every step as before (pale): a schedule reorders work, it does not "
            f"change the gradient{stretch}.")


def replicas_line(run: PipelineRun) -> str:
    """What d replicas do to this step: the all-reduce's seconds at the flush, and the batch."""
    p, d, m = run.pipeline.stages, run.pipeline.replicas, run.pipeline.microbatches
    ring = [s for s in run.timeline if s.kind in RING and s.step == 0 and s.worker < p]
    ends = {}
    for s in ring:
        ends[s.worker] = ends.get(s.worker, 0.0) + s.duration
    longest = max(ends.values(), default=0.0)
    return (f"d = {d}: a row is {d} copies; at the flush each stage's {d} copies all-reduce its "
            f"gradient (lilac, teal: {longest:.3g} s, {longest / run.step_time:.1%} of the "
            f"step); a step learns from d·m = {d * m} micro-batches.")


class PipelineDashboard(DashboardBase):
    """Controls + the live step timeline, loss curve and memory bars of notebook 08."""

    def __init__(self, *, settle_delay: float | None = 0.25, **start: Any):
        check_settle_delay(settle_delay)
        s = PipeSettings(**start)
        s.mode()  # checks the start by name
        controls: dict[str, W.ValueWidget] = {
            "schedule": W.Dropdown(options=list(SCHEDULES), value=s.schedule,
                                   description="schedule"),
            "stages": W.IntSlider(s.stages, min=1, max=8, description="stages p"),
            "microbatches": W.IntSlider(s.microbatches, min=1, max=32,
                                        description="micro m"),
            "chunks": W.IntSlider(s.chunks, min=1, max=4, description="chunks v"),
            "ratio": W.Dropdown(options=list(RATIOS), value=s.ratio, description="F:B:W"),
            "bandwidth": W.SelectionSlider(options=_options(BANDWIDTHS, s.bandwidth,
                                                            bytes_per_s),
                                           value=s.bandwidth, description="bandwidth"),
            "replicas": W.IntSlider(s.replicas, min=1, max=4, description="replicas d"),
        }
        for name, c in controls.items():
            dress(name, c, HELP[name])
        controls["stages"].add_class("pslab-workers")  # the ranks are the workers (browser test)
        figures = {"timeline": BrowserFigure(TIMELINE_LAYOUT),
                   "training": BrowserFigure(CURVES_LAYOUT),
                   "memory": BrowserFigure(MEMORY_LAYOUT)}
        self._runs: dict[tuple, PipelineRun] = {}
        self._previous: tuple[PipeSettings, PipelineRun] | None = None
        self.shown: PipelineRun | None = None
        self.same: str | None = None  # the line comparing the loss with the previous run's
        super().__init__(controls, figures, settle_delay=settle_delay, preset="08")

    def _layout(self, extra: tuple[W.Widget, ...]) -> W.VBox:
        """DashboardBase's, the memory bars in the plots' row after the loss curve: in a
        projector's cell (1024×768, the file browser open) the timeline takes the cell's
        width and the curve and the bars share the row under it, so all is on one screen;
        wide, the three stand side by side."""
        box = super()._layout(extra)
        timeline, training, memory = (self.figures[n] for n in ("timeline", "training", "memory"))
        training.layout.flex, memory.layout.flex = "2 1 330px", "1 1 170px"
        for part in box.children:
            if timeline in getattr(part, "children", ()):
                part.children = (*part.children, memory)
        return box

    @property
    def settings(self) -> PipeSettings:
        return PipeSettings(**{n: c.value for n, c in self.controls.items()})

    @property
    def run(self) -> PipelineRun | None:
        return self.shown

    def _train(self, s: PipeSettings, numerics: bool) -> PipelineRun:
        key = (s, numerics)
        if key not in self._runs:
            with single_thread():
                # clock only: one step (every step is alike), what the timeline draws
                self._runs[key] = train(mode=s.mode(), steps=STEPS if numerics else 1,
                                        batch=BATCH, hidden=HIDDEN,
                                        cluster=s.cluster(), numerics=numerics)
        return self._runs[key]

    def refresh(self) -> None:
        s = self.settings
        self.same = None  # said again once this run's losses are known (compute)
        run = self._train(s, numerics=False)  # a refused combination: its reason in the
        self.shown = run  # status (DashboardBase.fail), the last run left on screen
        self.figures["timeline"].show(*timeline_panel(run))
        self.figures["memory"].show(*memory_panel(run))
        self._numbers(s, run)

    def compute(self) -> PipeSettings:
        s = self.settings
        run = self._train(s, numerics=True)
        self.shown = run
        runs, labels = [run], [f"now: {s.schedule}, p={s.stages}, m={s.microbatches}"
                               + (f", d={s.replicas}" if s.replicas > 1 else "")]
        self.same = None
        if self._previous is not None and self._previous[0] != s:
            p, before = self._previous
            runs.append(before)
            labels.append(f"before: {p.schedule}, p={p.stages}, m={p.microbatches}"
                          + (f", d={p.replicas}" if p.replicas > 1 else ""))
            self.same = same_losses(run, before)
        panels, legend = curves(runs, labels)
        if len(runs) == 2:  # "before" wide and pale under "now": both seen where they agree
            for panel in panels:
                now, old = panel["lines"]
                old.update(width=6, colour=PALE)
                panel["lines"] = [old, now]
            legend[1].update(colour=PALE)
        self.figures["training"].show(panels, legend)
        self._previous = (s, run)
        self._numbers(s, run)
        return s

    def _numbers(self, s: PipeSettings, run: PipelineRun) -> None:
        self.numbers.value = (f"<div style='{TEXT_STYLE}'><b>{html.escape(self.describe())}"
                              f"</b></div>")
        pipe = run.pipeline
        held = ", ".join(f"rank {r}: {a}" for r, a in enumerate(run.activations[:pipe.stages]))
        lines = [f"GPipe: idle share (p−1)/(m+p−1); Megatron: idle over ideal, (p−1)/m. "
                 f"Micro-batches held at the peak: {held}.",
                 f"The model: {pipe.layers} layers, {pipe.layers // pipe.virtual} a stage "
                 f"(p·v stages, 2 layers at least): p and v change the model, and so the loss; "
                 f"the schedule does not."]
        if run.pipeline.replicas > 1:
            lines.append(replicas_line(run))
        if self.same is not None:
            lines.append(self.same)
        self.why.value = f"<div style='{TEXT_STYLE}'>" + "<br>".join(
            html.escape(x) for x in lines) + "</div>"

    def describe(self) -> str:
        run = self.shown
        if run is None:
            return "no run yet"
        pipe = run.pipeline
        p, d = pipe.stages, pipe.replicas
        what = f"{pipe.schedule}, p = {p}, m = {pipe.microbatches}" + (
            f", v = {pipe.chunks}" if pipe.chunks > 1 else "")
        who = f"{p} worker{'s' if p > 1 else ''}" if d == 1 else \
            f"{d} replicas × {p} = {d * p} workers"
        return (f"{what} on {who}: step {run.step_time:.3g} s; bubble "
                f"{run.bubble_share:.1%} of the ranks' time (GPipe), {run.bubble_ratio:.1%} of "
                f"the ideal time (Megatron)")

    def plain(self) -> str:
        return "pslab pipeline dashboard: " + self.describe()

    def code_text(self) -> str:
        return self.settings.code()

    def snapshot(self) -> bytes:
        fig = plot_pipeline(self.shown, width=7.2, numbers=self.shown.pipeline.microbatches <= 12)
        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        return png_bytes(canvas)

    def __repr__(self) -> str:
        return f"PipelineDashboard({self.settings})"


__all__ = ["PipelineDashboard", "PipeSettings"]
