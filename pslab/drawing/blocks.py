"""Where each block of a timeline goes: the spans as arrays, a row and a height for each.

One place for the geometry of figures 000 and 001, read by both renderers: matplotlib
(`pslab.drawing.timeline_plot`) and the browser (`pslab.notebook.browser_plots`). Rows are the
workers (G0 on top), then one per server shard; in figure 001's "column" layout a server update
spans every GPU row instead, as its gradient-sync block does. Arrays, not a loop per span: an
800-worker timeline still lays out in milliseconds.
"""
from __future__ import annotations

import numpy as np

from ..columns import Columns
from ..result import Run

FIELDS = ("worker", "shard", "kind", "step", "note", "start", "end")


def span_arrays(run: Run) -> dict[str, np.ndarray]:
    """The timeline as columns: worker and shard (-1 for none), kind (its name), step, note
    (its name, "" for none), start, end. Read straight from a columnar timeline."""
    timeline = run.timeline
    if not len(timeline):
        return {f: np.zeros(0, dtype=float if f in ("start", "end") else
                            str if f in ("kind", "note") else int) for f in FIELDS}
    if isinstance(timeline, Columns):
        cols = timeline.arrays()
        notes = np.array(["" if n is None else n for n in timeline.notes])
        return dict(worker=cols["worker"], shard=cols["shard"],
                    kind=np.array(timeline.kinds)[cols["kind"]], step=cols["step"],
                    note=notes[cols["note"]], start=cols["start"], end=cols["end"])
    worker, shard, kind, start, end, step, _, note = (list(c) for c in zip(*timeline))
    return dict(worker=np.array([-1 if x is None else x for x in worker]),
                shard=np.array([-1 if x is None else x for x in shard]),
                kind=np.array(kind), step=np.array(step),
                note=np.array(["" if n is None else n for n in note]),
                start=np.array(start, float), end=np.array(end, float))


def blocks(run: Run, column: bool, height: float) -> dict[str, np.ndarray]:
    """`span_arrays` of the spans one can see (zero-width transfers on a free network are
    dropped) plus each block's top and bottom y (rows numbered from 0 at the top)."""
    cols = span_arrays(run)
    w, server = cols["worker"], cols["worker"] < 0
    row = np.where(cols["shard"] < 0, 0, cols["shard"]) + run.workers
    if column:  # the update spans every GPU row
        top, bottom = np.where(server, 0, w), np.where(server, run.workers - 1, w)
    else:
        top = bottom = np.where(server, row, w)
    keep = cols["end"] > cols["start"]
    out = {name: values[keep] for name, values in cols.items()}
    out["y0"], out["y1"] = (top - height / 2)[keep], (bottom + height / 2)[keep]
    return out
