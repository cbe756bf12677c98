"""A pipelined step drawn as the papers draw it: one row per rank (rank 0 on top), a block per
forward (F), backward (B) or its input and weight halves (I, W) numbered by micro-batch, the
bubbles plain grey, the dashboard's BUBBLE (GPipe, Huang et al. 2019, Fig. 2; 1F1B,
Narayanan et al. 2021, Fig. 4; zero bubble, Qi et al. 2024, Fig. 3). Later chunks of an
interleaved rank are drawn darker."""
from __future__ import annotations

from typing import Any

from matplotlib.axes import Axes
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from ..result import Run
from .palette import PALETTES

# The palette's fills of the pipeline's kinds: forwards blue, backwards green, W mauve
PIPELINE: dict[str, str] = {a: PALETTES["ps"][k] for a, k in (
    ("F", "forward"), ("B", "backward"), ("I", "backward-input"), ("W", "backward-weight"))}
NAMES = {"F": "forward", "B": "backward", "I": "backward: input gradient (I)",
         "W": "backward: weight gradient (W)"}
BUBBLE = "#EEEEEE"


def shade(colour: str, chunk: int, chunks: int) -> tuple[float, float, float]:
    """The kind's colour, darker for each later chunk (the chunk count stays readable)."""
    f = 1.0 - 0.22 * chunk / max(1, chunks - 1) if chunks > 1 else 1.0
    return tuple(c * f for c in to_rgb(colour))


def draw_step(run: Run, ax: Axes, numbers: bool = True, legend: bool = True,
              fontsize: float = 10) -> Axes:
    """One step of a PipelineRun on `ax` (its first: every step is alike on the clock; of a
    measured run, its last, the first paying for PyTorch's set-up)."""
    pipe = run.pipeline
    p, v, rows = pipe.stages, pipe.chunks, run.workers  # d replicas: d·p rows
    ops = run.ops
    span = max(o.end for o in ops)
    for r in range(rows):
        ax.add_patch(Rectangle((0, r - 0.42), span, 0.84, facecolor=BUBBLE, edgecolor="none",
                               zorder=0))
    for o in ops:
        chunk = o.stage // p if pipe.schedule != "zbv" else (0 if o.stage < p else 1)
        ax.add_patch(Rectangle((o.start, o.rank - 0.42), o.end - o.start, 0.84,
                               facecolor=shade(PIPELINE[o.kind], chunk, v), edgecolor="black",
                               linewidth=0.5, zorder=2))
        if numbers and (o.end - o.start) >= span / 45:  # room for a 10-pt number
            ax.text((o.start + o.end) / 2, o.rank, str(o.micro), ha="center", va="center",
                    fontsize=fontsize, zorder=3)
    ax.set_xlim(0, span)
    ax.set_ylim(rows - 0.5, -0.5)
    ax.set_yticks(range(rows), [f"rank {r}" for r in range(rows)] if rows <= 8 else
                  [f"{r}" if r % 2 == 0 else "" for r in range(rows)])
    ax.set_xlabel("measured time (s)" if measured(run) else "virtual time (s)",
                  fontsize=fontsize)
    ax.tick_params(labelsize=fontsize)
    kinds = sorted({o.kind for o in ops}, key="FBIW".index)
    if legend:
        handles = [Patch(facecolor=PIPELINE[k], edgecolor="black", label=NAMES[k])
                   for k in kinds]
        handles.append(Patch(facecolor=BUBBLE, edgecolor="grey", label="bubble"))
        ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0, 1.0),
                  ncol=len(handles), frameon=False, fontsize=fontsize, handlelength=1.2,
                  columnspacing=0.8, borderaxespad=0.2)
    return ax


def measured(run: Run) -> bool:
    """True for a run on real processes (its times measured)."""
    return getattr(run.settings, "backend", "simulated") == "processes"


def plot_pipeline(run: Run, width: float = 7.2, title: str | None = None,
                  **kw: Any) -> Figure:
    """A figure of one step of `run` with both bubble definitions in its caption."""
    p = run.workers  # one row per rank of every replica
    top, bottom, rows = 0.4, 1.05, 0.34 * p  # inches: legend; axis label and caption; rows
    height = top + rows + bottom
    fig = Figure(figsize=(width, height))
    ax = fig.add_axes((0.8 / width, bottom / height, 1 - 0.95 / width, rows / height))
    draw_step(run, ax, **kw)
    what = (f"{run.mode}, measured on {p} processes, its last step: {run.span:.3g} s"
            if measured(run) else f"{run.mode}: step {run.span:.4g} s")
    caption = (f"{what}\nbubble {run.bubble_share:.1%} of the ranks' time (GPipe), "
               f"{run.bubble_ratio:.1%} of the ideal time (Megatron)")
    fig.text(0.5, 0.05 / height, title or caption, fontsize=10, ha="center", va="bottom")
    return fig
