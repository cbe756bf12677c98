"""Notebook 07's memory bars drawn by the browser: the bytes one GPU holds of each model state
at every ZeRO stage (figure 1 of the ZeRO paper, for our MLP), as `BrowserFigure` data.

One stacked bar per stage (none, ZeRO-1, -2, -3): parameters, gradients, optimizer states (none:
our SGD keeps none, and the legend says "0 B") and, at stage 3, the layer gathered for compute;
the stage of the mode on show is outlined. The
colours and the unit are matplotlib's (`pslab.drawing.zero_plot`); a hover on a part says its
state, its bytes and the bar's total.
"""
from __future__ import annotations

from typing import Any, Sequence

from ..drawing.dataflow_plot import fmt_bytes
from ..drawing.zero_plot import STATES, bytes_unit
from ..zero import Memory
from .browser_plots import FONT

STAGES = ("none", "ZeRO-1", "ZeRO-2", "ZeRO-3")
MEMORY_PX = 170  # px: under the numbers, a short picture
HALF = 0.35  # a bar's half width, in stages


def memory_layout(unit_name: str, title: str = "ZeRO stage (the mode on show outlined)"
                  ) -> dict[str, Any]:
    """The bars' frame: `title` under them, the bytes in `unit_name` up the side."""
    return {"height": MEMORY_PX, "font": FONT, "panels": [dict(
        share=1.0, left=58, right=12, top=26, bottom=40, ylabel=f"{unit_name} per GPU",
        xlabel=title)]}


def memory_legend(mems: Sequence[Memory]) -> list[dict[str, Any]]:
    """The parts some bar holds; a state no bar holds is named with its 0 B and no swatch
    (our plain SGD keeps no optimizer state: a legend box for it would say it does)."""
    out: list[dict[str, Any]] = []
    for key, label, colour in STATES:
        if any(getattr(m, key) > 0 for m in mems):
            out.append({"colour": colour, "label": label})
        elif key == "optimizer":
            out.append({"colour": None, "label": f"{label}: 0 B (plain SGD)"})
    return out


def memory_panel(mems: Sequence[Memory], outlined: int | None = None,
                 title: str | None = None) -> tuple[dict, dict]:
    """(layout, panel) of the stacked bars of `mems` (one Memory per stage, from stage 0);
    `outlined`: the stage drawn with a thick outline (the mode on show); `title` under them."""
    unit, unit_name = bytes_unit(max(m.total for m in mems))
    rects: dict[str, list] = {k: [] for k in ("x0", "x1", "y0", "y1", "c")}
    stage, held, total = [], [], []
    texts: dict[str, int] = {}  # "12.3 kB" -> its number in the hover's table
    for k, mem in enumerate(mems):
        bottom = 0.0
        for c, (key, _, _) in enumerate(STATES):
            value = getattr(mem, key)
            if value <= 0:
                continue
            for name, v in zip(rects, (k - HALF, k + HALF, bottom / unit,
                                       (bottom + value) / unit, c)):
                rects[name].append(round(v, 6))
            stage.append(k)
            held.append(texts.setdefault(fmt_bytes(value), len(texts)))
            total.append(texts.setdefault(fmt_bytes(mem.total), len(texts)))
            bottom += value
    lines = []
    if outlined is not None:
        top = mems[outlined].total / unit
        x0, x1 = outlined - HALF, outlined + HALF
        lines.append(dict(x=[x0, x0, x1, x1, x0], y=[0, top, top, 0, 0], colour="#000000",
                          width=2.4, hover=False))
    panel = dict(xlim=[-0.6, len(mems) - 0.4],
                 ylim=[0.0, max(m.total for m in mems) / unit * 1.15],
                 xticks=[[k, STAGES[k]] for k in range(len(mems))],
                 colours=[colour for _, _, colour in STATES], rects=rects, lines=lines,
                 hover=dict(lines=["{stage:stages}: {c:states} {held:texts}",
                                   "{total:texts} per GPU in all"],
                            cols=dict(stage=stage, held=held, total=total),
                            tables=dict(stages=list(STAGES),
                                        states=[label for _, label, _ in STATES],
                                        texts=list(texts))))
    return (memory_layout(unit_name, title) if title else memory_layout(unit_name)), panel
