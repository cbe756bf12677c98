"""Notebook 08's dashboard: a pipeline schedule on the clock, with the schedule, p, m, v, the
F:B:W ratio and the link bandwidth on controls.

A change runs the clock only and redraws one step's timeline (drawn by the browser: hover a
block for its rank, kind and micro-batch), the bubble under both definitions and the
activations each rank holds at its peak; when the controls rest, the run is repeated with the
arithmetic and the loss and accuracy curves (beside the previous run's) are drawn. A
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
from ..drawing.pipeline_plot import BUBBLE, NAMES, PIPELINE, plot_pipeline, shade
from ..model import single_thread
from ..pipeline import Pipeline, PipelineRun
from ..pipeline.schedules import SCHEDULES
from ..training import train
from .browser_figure import BrowserFigure
from .browser_plots import CURVES_LAYOUT, FONT, curves, packed
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
        "bandwidth": "bytes per second of the links between ranks"}
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

    def mode(self) -> Pipeline:
        if self.ratio not in RATIOS:
            raise ValueError(f"ratio must be one of {', '.join(map(repr, RATIOS))} "
                             f"(got {self.ratio!r})")
        return Pipeline(stages=self.stages, microbatches=self.microbatches,
                        schedule=self.schedule, chunks=self.chunks, times=RATIOS[self.ratio])

    def cluster(self) -> Cluster:
        return Cluster(latency=0.01, bandwidth=self.bandwidth, update_time=0.0)

    def code(self) -> str:
        """The run on show as one line of Python."""
        return (f"pslab.train(mode=pslab.Pipeline(stages={self.stages}, "
                f"microbatches={self.microbatches}, schedule={self.schedule!r}, "
                f"chunks={self.chunks}, times={RATIOS[self.ratio]}), steps={STEPS}, "
                f"batch={BATCH}, cluster=pslab.Cluster(latency=0.01, "
                f"bandwidth={self.bandwidth:g}, update_time=0))")


TIMELINE_LAYOUT = {"height": 150, "font": FONT, "panels": [dict(
    share=1.0, left=64, right=10, top=26, bottom=40, xlabel="virtual time (s), one step",
    yinvert=True, zoom=True)]}
MEMORY_LAYOUT = {"height": 150, "font": FONT, "panels": [dict(
    share=1.0, left=58, right=12, top=26, bottom=40, ylabel="kB of activations",
    xlabel="rank (its peak: micro-batches held from forward to backward)")]}
KINDS = ("F", "B", "I", "W")


def timeline_panel(run: PipelineRun) -> tuple[list[dict], list[dict]]:
    """(panels, legend) of one step: bubbles under the blocks, each block's hover its rank,
    kind and micro-batch (columns packed with numpy: a slider step draws thousands)."""
    p, v, rows = run.pipeline.stages, run.pipeline.chunks, run.workers
    colours = [BUBBLE] + ["#%02x%02x%02x" % tuple(int(255 * c) for c in shade(PIPELINE[k], j, v))
                          for k in KINDS for j in range(v)]
    rank, stage, kinds, micro, start, end = (np.array(f) for f in zip(*run.ops))
    kind = np.array([KINDS.index(k) for k in kinds.tolist()])
    chunk = stage // p if run.pipeline.schedule != "zbv" else (stage >= p).astype(int)
    lanes = np.arange(rows)
    x0 = np.concatenate([np.zeros(rows), start])
    x1 = np.concatenate([np.full(rows, run.span), end])
    y = np.concatenate([lanes, rank]).astype(float)
    c = np.concatenate([np.zeros(rows, int), 1 + kind * v + chunk])
    panel = dict(xlim=[0.0, run.span], ylim=[-0.5, rows - 0.5],
                 yticks=[[r, f"rank {r}"] for r in range(rows)], colours=colours,
                 rects=dict(x0=packed(x0, "f4"), x1=packed(x1, "f4"), y0=packed(y - 0.42, "f4"),
                            y1=packed(y + 0.42, "f4"), c=packed(c, "int"),
                            widen=packed(np.zeros(len(c), int), "int")),
                 hover=dict(lines=["GPU {who} (rank {who}): {kind:kinds}, step 1",
                                   "micro-batch {micro:micros}", "start {x0} s, end {x1} s"],
                            cols=dict(who=packed(np.concatenate([lanes, rank]), "int"),
                                      kind=packed(np.concatenate([np.full(rows, 4), kind]),
                                                  "int"),
                                      micro=packed(np.concatenate([np.zeros(rows, int),
                                                                   micro + 1]), "int")),
                            tables=dict(kinds=[NAMES[k] for k in KINDS] + ["bubble"],
                                        micros=["none (idle)"] + [
                                            str(i) for i in range(run.pipeline.microbatches)])))
    used = [k for k in KINDS if k in set(kinds.tolist())]
    legend = [{"colour": PIPELINE[k], "label": NAMES[k]} for k in used]
    return [panel], legend + [{"colour": BUBBLE, "label": "bubble"}]


def memory_panel(run: PipelineRun) -> tuple[list[dict], list[dict]]:
    """Bars of each rank's peak activation bytes."""
    peak = [b / 1e3 for b in run.activation_peak_bytes]
    held = run.activations
    n = len(peak)
    panel = dict(xlim=[-0.6, n - 0.4], ylim=[0.0, max(peak) * 1.15 or 1.0],
                 xticks=[[r, str(r)] for r in range(n)], colours=[PIPELINE["F"]],
                 rects=dict(x0=[r - 0.35 for r in range(n)], x1=[r + 0.35 for r in range(n)],
                            y0=[0.0] * n, y1=[round(b, 3) for b in peak], c=[0] * n),
                 lines=[], hover=dict(lines=["rank {r}: {held} micro-batches held"],
                                      cols=dict(r=list(range(n)), held=held), tables={}))
    return [panel], [{"colour": PIPELINE["F"], "label": "activations held at the peak"}]


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
        super().__init__(controls, figures, settle_delay=settle_delay, preset="08",
                         extra=(figures["memory"],))

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
        run = self._train(s, numerics=False)  # a refused combination: its reason in the
        self.shown = run  # status (DashboardBase.fail), the last run left on screen
        self.figures["timeline"].show(*timeline_panel(run))
        self.figures["memory"].show(*memory_panel(run))
        self._numbers(s, run)

    def compute(self) -> PipeSettings:
        s = self.settings
        run = self._train(s, numerics=True)
        self.shown = run
        runs, labels = [run], [f"now: {s.schedule}, p={s.stages}, m={s.microbatches}"]
        if self._previous is not None and self._previous[0] != s:
            runs.append(self._previous[1])
            p = self._previous[0]
            labels.append(f"before: {p.schedule}, p={p.stages}, m={p.microbatches}")
        self.figures["training"].show(*curves(runs, labels))
        self._previous = (s, run)
        self._numbers(s, run)
        return s

    def _numbers(self, s: PipeSettings, run: PipelineRun) -> None:
        self.numbers.value = (f"<div style='{TEXT_STYLE}'><b>{html.escape(self.describe())}"
                              f"</b></div>")
        self.why.value = (f"<div style='{TEXT_STYLE}'>GPipe: idle share (p−1)/(m+p−1); "
                          f"Megatron: idle over ideal, (p−1)/m. Activations held: "
                          f"{run.activations}</div>")

    def describe(self) -> str:
        run = self.shown
        if run is None:
            return "no run yet"
        return (f"{run.mode} on {run.workers} workers: step {run.step_time:.3g} s; bubble {run.bubble_share:.1%} of the "
                f"ranks' time (GPipe), {run.bubble_ratio:.1%} of the ideal time (Megatron)")

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
