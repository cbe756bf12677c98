"""The data a dashboard's browser-drawn plots show: timeline, loss/accuracy curves, side panel.

Each function turns runs into the plain data `BrowserFigure` sends (numbers rounded to what a
screen can show, so a step sends a few kB): block edges and colours with the hover details of
figure 000/001's timeline (worker, kind, step, start, end, shard, why it waited), the curves of
loss and test accuracy against virtual time, and the side panel (staleness histogram, or in
sync mode each worker's split of compute, transfer and idle time). The geometry and the
colours are the matplotlib plots' own (`pslab.drawing.blocks`, `pslab.drawing.palette`).
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Any, Sequence

import numpy as np

from ..drawing.blocks import blocks
from ..drawing.palette import EVERY_KIND, PALETTES, RUN_COLOURS, share_colours
from ..drawing.timeline_plot import HEIGHT, ZORDER, legend_kinds, legend_label, worker_label
from ..result import Run
from ..timeline import NOTES, SHARES
from .livefigure import nice_ceiling

FONT = 12  # px: every text of the live plots (>= 10 px on a projector, tests/test_legible.py)
# heights: the controls, the numbers, the lines that explain them, the timeline and the loss
# curve on one screen at 1024x768 (about 500 px of notebook) at any number of rows: rows too
# close for their names in 10 px are named one in k, and a note under the axis says so
TIMELINE_PX, CURVES_PX, SIDE_PX = 156, 112, 224
BOTTOM = 32  # px under an axis: its ticks and its name
DIGITS = 4  # decimals of the virtual seconds sent (a pixel is ~0.1 s on a 100-s run)
WHY = [NOTES[n] for n in NOTES]  # hover's "why it waited", by code
NOTE_CODE = {n: i for i, n in enumerate(NOTES)}  # no note: -1, and the hover line is left out
KIND_CODE = {k: i for i, k in enumerate(EVERY_KIND)}
ZORDERS = np.array([ZORDER[k] for k in EVERY_KIND])


SUBSCRIPTS = str.maketrans("oh0123456789", "ₒₕ₀₁₂₃₄₅₆₇₈₉")


def plain_row(label: str) -> str:
    """A shard row as plain text, 'S0: Wₒ … Wₕ': the tensors it holds after a colon, their
    subscripts as subscripts (matplotlib's '$W_o$' maths gone)."""
    head, _, inside = label.partition(": ")
    if not inside:
        return label
    names = [n.strip().strip("$") for n in inside.split(",")]
    names = [n if "_" not in n else n.split("_")[0] + n.split("_")[1].translate(SUBSCRIPTS)
             for n in names]
    return f"{head}: " + (" ".join(names) if "…" in names else ", ".join(names))


def timeline_layout(palette: str) -> dict[str, Any]:
    # px of row names: shard rows are long; 16 GPU rows name every row in two columns of "GPU15"
    left = 100 if palette == "accumulation" else 124
    return {"height": TIMELINE_PX, "font": FONT, "panels": [dict(
        share=1.0, left=left, right=10, top=24, bottom=BOTTOM, xlabel="virtual time (s)",
        yinvert=True, zoom=True)]}


def timeline_legend(palette: str, runs: Sequence[Run] = ()) -> list[dict[str, Any]]:
    """The legend's entries; with `runs`, ZeRO's collectives too where one of them has them.
    Figure 001's blue is its gradient sync; in a run that is not sync (async, SSP) the same
    blue is each push's transfers and server update, and the legend says so."""
    unsynced = palette == "accumulation" and any(r.mode != "sync" for r in runs)
    return [{"colour": PALETTES[palette][k],
             "label": "transfers and server updates" if unsynced and k == "update"
             else legend_label(k, palette)} for k in legend_kinds(palette, runs)]


def timeline_panel(run: Run, palette: str, rows: Sequence[str], xmax: float) -> dict[str, Any]:
    """One panel: every visible span as a block, drawn in the matplotlib plot's z-order (idle
    under compute under transfers under updates), with what a hover shows."""
    column = palette == "accumulation"
    b = blocks(run, column, 1.0 if column else HEIGHT)
    order = np.argsort(ZORDERS[_codes(b["kind"], KIND_CODE)], kind="stable")
    b = {name: values[order] for name, values in b.items()}
    kind = _codes(b["kind"], KIND_CODE)
    server = b["worker"] < 0
    who = np.where(server, len(rows) if column else run.workers + b["shard"], b["worker"])
    note = _codes(b["note"], NOTE_CODE)
    return dict(
        xlim=[0.0, xmax], ylim=[-0.5, len(rows) - 0.5], vline=run.makespan,
        yticks=[[i, r] for i, r in enumerate(rows)],
        colours=[PALETTES[palette][k] for k in EVERY_KIND],
        rects=dict(x0=packed(b["start"], "f4"), x1=packed(b["end"], "f4"),
                   y0=packed(b["y0"], "f4"), y1=packed(b["y1"], "f4"), c=packed(kind, "int"),
                   widen=packed(~np.isin(b["kind"], ("idle", "compute")), "int")),
        hover=dict(lines=["{who:who}: {kind:kinds}, step {step}",
                          "start {x0} s, end {x1} s", "shard S{shard}", "{note:why}"],
                   cols=dict(who=packed(who, "int"), kind=packed(kind, "int"),
                             step=packed(b["step"], "int"), shard=packed(b["shard"], "int"),
                             note=packed(note, "int")),
                   tables=dict(who=[*rows, "server"], why=WHY,
                               kinds=[legend_label(k, palette) for k in EVERY_KIND])))


def _codes(names: np.ndarray, codes: dict[str, int]) -> np.ndarray:
    """Each name's number in `codes` (-1 for one not there), one lookup per distinct name."""
    uniq, back = np.unique(names, return_inverse=True)
    return np.array([codes.get(u, -1) for u in uniq.tolist()], dtype=int)[back.reshape(-1)] \
        if len(names) else np.zeros(0, int)


def packed(values: np.ndarray, dtype: str = "f8") -> dict[str, Any]:
    """A column as raw little-endian bytes: sent as a binary buffer, no JSON number text
    (browser_figure.js reads it as a typed array). dtype: "f8", "f4" (7 significant digits,
    far below a pixel even zoomed in, in half the bytes: a timeline's block edges) or "int"
    (the narrowest of i1, i2, i4 that holds every value: kinds, rows, steps)."""
    values = np.asarray(values)
    if dtype == "int":
        dtype = narrowest_int(values)
    return {"dtype": dtype, "data": np.ascontiguousarray(values, "<" + dtype).tobytes()}


def narrowest_int(values: np.ndarray) -> str:
    """"i1", "i2" or "i4": the fewest bytes a signed integer column needs."""
    if not values.size:
        return "i1"
    low, high = int(values.min()), int(values.max())
    for dtype in ("i1", "i2", "i4"):
        info = np.iinfo(dtype)
        if info.min <= low and high <= info.max:
            return dtype
    raise ValueError(f"values must fit in 32-bit integers (got {low} to {high})")


def column(value: Any) -> np.ndarray:
    """A `packed` column back as an array (or a plain list as one): what the browser reads."""
    if isinstance(value, dict):
        return np.frombuffer(value["data"], "<" + value["dtype"])
    return np.asarray(value)


def timeline_rows(run: Run, palette: str, shard_label: Any) -> list[str]:
    """G0 … then one row per server shard (none in figure 001's column layout)."""
    rows = [worker_label(w, palette) for w in range(run.workers)]
    if palette != "accumulation":
        rows += [plain_row(shard_label(run, s)) for s in range(len(run.shard_bytes))]
    return rows


CURVES_LAYOUT = {"height": CURVES_PX, "font": FONT, "panels": [
    dict(share=0.5, left=58, right=12, top=22, bottom=BOTTOM, xlabel="virtual time (s)",
         ylabel="loss (log)", ylog=True, xname="time (s)", yname="loss"),  # clear of the legend
    dict(share=0.5, left=58, right=12, top=22, bottom=BOTTOM, xlabel="virtual time (s)",
         ylabel="test accuracy", yfmt="pct", xname="time (s)", yname="test accuracy")]}


def curves(runs: Sequence[Run], labels: Sequence[str]) -> tuple[list[dict], list[dict]]:
    """(panels, legend) of the loss (log axis) and test-accuracy curves against time."""
    loss, acc, legend, right = [], [], [], 1e-9
    for i, (run, label) in enumerate(zip(runs, labels)):
        colour = RUN_COLOURS[i % len(RUN_COLOURS)]
        t = [round(r.time, DIGITS) for r in run.history]
        right = max([right, *t])
        loss.append(dict(x=t, y=[_finite(r.loss) for r in run.history], colour=colour,
                         label=label))
        acc.append(dict(x=t, y=[round(r.accuracy, 4) for r in run.history], colour=colour,
                        label=label))
        legend.append({"colour": colour, "label": label, "line": True})
    seen = [y for line in loss for y in line["y"] if y > 0]
    low, high = (min(seen), max(seen)) if seen else (0.1, 10.0)
    xlim = [0.0, right * 1.02]
    return [dict(xlim=xlim, ylim=[low / 1.15, high * 1.15], lines=loss),
            dict(xlim=xlim, ylim=[0.0, 1.0], lines=acc)], legend


def _finite(loss: float) -> float:
    """A loss a log axis can draw: a blown-up run's inf/nan stays at the top of the axis."""
    return round(loss, 5) if math.isfinite(loss) and loss > 0 else 1e6


def side_layout(sync: bool) -> dict[str, Any]:
    if sync:  # each worker's time split, horizontal bars
        panel = dict(share=1.0, left=44, right=22, top=26, bottom=40, yinvert=True,
                     xlabel="share of the run's time", xfmt="pct")
    else:
        panel = dict(share=1.0, left=48, right=14, top=10, bottom=40, ylabel="updates",
                     xlabel="staleness (versions behind when applied)")
    return {"height": SIDE_PX, "font": FONT, "panels": [panel]}


def side_legend(sync: bool, palette: str) -> list[dict[str, Any]]:
    colours = share_colours(palette)
    return [{"colour": colours[p], "label": p} for p in SHARES] if sync else []


def side_panel(run: Run, palette: str, split: list[dict[str, float]] | None = None
               ) -> dict[str, Any]:
    """In sync mode each worker's compute/transfer/idle shares (`split`: `run.shares()`, if
    known already); else the staleness histogram."""
    if run.mode == "sync":
        return _busy(run, palette, run.shares() if split is None else split)
    counts = Counter(run.staleness)
    top = max(counts, default=0)
    values = list(range(top + 1))
    n = [counts.get(v, 0) for v in values]
    step = 1 if top < 8 else math.ceil(top / 6)
    return dict(xlim=[-0.6, top + 0.6], ylim=[0.0, nice_ceiling(max(n, default=1) * 1.1)],
                xticks=[[v, str(v)] for v in values[::step]], colours=[RUN_COLOURS[1]],
                rects=dict(x0=[v - 0.4 for v in values], x1=[v + 0.4 for v in values],
                           y0=[0] * len(n), y1=n, c=[0] * len(n)),
                hover=dict(lines=["staleness {x}: {n} updates"],
                           cols=dict(x=values, n=n), tables={}))


def _busy(run: Run, palette: str, split: list[dict[str, float]]) -> dict[str, Any]:
    total = run.makespan or 1.0
    colours = share_colours(palette)
    rects: dict[str, list] = {k: [] for k in ("x0", "x1", "y0", "y1", "c")}
    who, part, seconds = [], [], []
    for w, parts in enumerate(split):
        left = 0.0
        for k, name in enumerate(SHARES):
            width = parts[name] / total
            for key, v in zip(rects, (left, left + width, w - 0.4, w + 0.4, k)):
                rects[key].append(round(v, 5))
            who.append(w)
            part.append(k)
            seconds.append(round(parts[name], 3))
            left += width
    rows = [worker_label(w, palette) for w in range(len(split))]
    return dict(xlim=[0.0, 1.0], ylim=[-0.5, len(split) - 0.5],
                yticks=[[i, r] for i, r in enumerate(rows)],
                colours=[colours[p] for p in SHARES], rects=rects,
                hover=dict(lines=["{who:rows}: {part:parts} {s} s"],
                           cols=dict(who=who, part=part, s=seconds),
                           tables=dict(rows=rows, parts=list(SHARES))))
