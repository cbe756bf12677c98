"""The timeline every figure is made of: spans of fetch, compute, push, update and idle.

A span is one block in figures 000 and 001: who (a worker, or a server shard), what (its kind),
when (start, end in virtual seconds) and for which step. Plots, TikZ export and the widgets read
only these spans, so a timeline measured on real processes draws with the same code.
"""
from __future__ import annotations

from bisect import bisect_right
from typing import Iterable, NamedTuple

KINDS = ("fetch", "compute", "push", "update", "idle")
# The collectives of ZeRO / FSDP (pslab.collectives): kinds of their own, drawn only where a
# run has them, so the parameter-server figures keep their five-kind legend.
COLLECTIVES = ("reduce-scatter", "all-gather")
# A pipeline's kinds (pslab.pipeline): a stage's forward, its whole backward or the backward's
# input- and weight-gradient halves (zero-bubble schedules), and the activations and gradients
# it sends to and receives from its neighbours; its waits are idle spans noted "bubble".
PIPELINE = ("forward", "backward", "backward-input", "backward-weight", "send", "recv")
EVERY_KIND = KINDS + COLLECTIVES + PIPELINE
COMPUTES = ("compute",) + PIPELINE[:4]  # a worker computing
TRANSFERS = ("fetch", "push") + COLLECTIVES + PIPELINE[4:]  # a worker moving bytes

# What a span's `note` says, beyond its kind. Two kinds of waiting look alike (a white block)
# but have different cures: queueing at a busy shard goes away with more shards or bandwidth,
# waiting for other workers with a looser barrier (async, SSP, backup workers).
NOTES = {
    "queue": "idle: queued behind other transfers at a busy shard",
    "barrier": "idle: waiting for other workers (a sync round, the SSP bound, the ring)",
    "dropped": "push: arrived after its round closed; the server dropped it (backup workers)",
    "forward": "all-gather: ZeRO-3 gathers the parameters for the forward pass",
    "backward": "all-gather: ZeRO-3 gathers the parameters again for the backward pass",
    "bubble": "idle: a pipeline stage waiting for its input or for the flush (the bubble)",
}


class Span(NamedTuple):
    """One block of the timeline.

    worker: the worker's rank, or None for the server (updates).
    shard: the server shard involved (fetch, push, update), else None.
    kind: one of EVERY_KIND (KINDS, a collective, or a pipeline's kind).
    start, end: virtual seconds.
    step: the worker's push number (0-based) or, for an update, the step it applies.
    micro: for compute spans, which of the `accumulate` minibatches (0-based); else None.
    note: one of NOTES' keys, or None: why an idle span waited; a dropped push.
    """

    worker: int | None
    shard: int | None
    kind: str
    start: float
    end: float
    step: int
    micro: int | None = None
    note: str | None = None

    @property
    def duration(self) -> float:
        return self.end - self.start


def gaps(busy: Iterable[tuple[float, float]], start: float, end: float) -> list[tuple[float, float]]:
    """The parts of [start, end] covered by none of the `busy` intervals (which lie inside it)."""
    out, t = [], start
    for a, b in sorted(busy):
        if a > t:
            out.append((t, a))
        if b > t:
            t = b
    if t < end:
        out.append((t, end))
    return out


def total(spans: Iterable[Span], kind: str, note: str | None = None) -> float:
    """Summed duration of the spans of one kind (and, if given, one note)."""
    if hasattr(spans, "total"):  # a columnar timeline (pslab.columns) sums its columns
        return spans.total(kind, note)
    return sum(s.end - s.start for s in spans
               if s.kind == kind and (note is None or s.note == note))


def covered(spans: Iterable[Span], busy: Iterable[tuple[float, float]]) -> float:
    """Summed time of `spans` that falls inside any of the `busy` intervals (which may overlap)."""
    union = merged(busy)
    ends = [b for _, b in union]
    out = 0.0
    for s in spans:
        i = bisect_right(ends, s.start)  # the first interval ending after the span starts
        while i < len(union) and union[i][0] < s.end:
            out += min(s.end, union[i][1]) - max(s.start, union[i][0])
            i += 1
    return out


# The parts of a worker's time, in the order the side panel stacks them. A worker transfers
# to several shards at once (one fetch or push per shard, in parallel), so its transfer time is
# the union of those spans, not their sum: only then do the parts add up to the makespan.
SHARES = ("compute", "transfer", "idle")


def merged(intervals: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """The union of `intervals` as sorted, disjoint intervals."""
    out: list[tuple[float, float]] = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            if b > out[-1][1]:
                out[-1] = (out[-1][0], b)
        elif b > a:
            out.append((a, b))
    return out


def _length(intervals: list[tuple[float, float]]) -> float:
    return sum(b - a for a, b in intervals)


def worker_shares(spans: Iterable[Span], workers: int, makespan: float) -> list[dict[str, float]]:
    """Per worker, the seconds of the makespan it spent computing, transferring and idle.

    compute: the time some compute span (COMPUTES) of the worker covers; transfer: the time some fetch or
    push covers and no compute does (transfers to different shards overlap: counted once);
    idle: the rest of [0, makespan], so compute + transfer + idle == makespan for every worker.
    Inside idle, `queue` is the part spent queued behind other transfers at a busy shard and
    `barrier` the part spent waiting for other workers (the spans' notes); the rest of idle is
    unnoted (e.g. a worker that finished early, waiting for the run to end).
    """
    kinds: list[dict[str, list[tuple[float, float]]]] = [
        {"compute": [], "transfer": [], "queue": [], "barrier": []} for _ in range(workers)]
    if hasattr(spans, "arrays"):  # a columnar timeline: pick the intervals with numpy
        _gather(spans, kinds, makespan)
        return [_split(k, makespan) for k in kinds]
    for s in spans:
        if s.worker is None or not 0 <= s.worker < workers:
            continue
        part = ("transfer" if s.kind in TRANSFERS else
                "compute" if s.kind in COMPUTES else s.note if s.kind == "idle" else None)
        if part in kinds[s.worker]:
            a, b = max(s.start, 0.0), min(s.end, makespan)
            if b > a:
                kinds[s.worker][part].append((a, b))
    return [_split(k, makespan) for k in kinds]


def _gather(columns, kinds: list[dict[str, list[tuple[float, float]]]], makespan: float) -> None:
    """worker_shares' loop over the spans, on a columnar timeline's arrays (pslab.columns):
    the same clipped intervals in each worker's lists (merged sorts them: order is free), no
    Span made. ~20x faster on a dashboard's few thousand spans."""
    import numpy as np

    parts = list(kinds[0]) if kinds else []
    of_kind = np.array([parts.index("transfer") if k in TRANSFERS else parts.index("compute")
                        if k in COMPUTES else -2 if k == "idle" else -1
                        for k in columns.kinds] or [-1])
    of_note = np.array([parts.index(n) if n in ("queue", "barrier") else -1
                        for n in columns.notes])
    cols = columns.arrays()
    part = of_kind[cols["kind"]]
    idle = part == -2
    part[idle] = of_note[cols["note"][idle]]
    worker = cols["worker"]
    a, b = np.maximum(cols["start"], 0.0), np.minimum(cols["end"], makespan)
    keep = np.flatnonzero((worker >= 0) & (worker < len(kinds)) & (part >= 0) & (b > a))
    group = worker[keep] * len(parts) + part[keep]
    order = keep[np.argsort(group, kind="stable")]
    group = worker[order] * len(parts) + part[order]
    cuts = np.flatnonzero(np.diff(group)) + 1
    for lo, hi in zip([0, *cuts.tolist()], [*cuts.tolist(), len(order)]):
        if lo < hi:
            w, p = divmod(int(group[lo]), len(parts))
            rows = order[lo:hi]
            kinds[w][parts[p]].extend(zip(a[rows].tolist(), b[rows].tolist()))


def _split(k: dict[str, list[tuple[float, float]]], makespan: float) -> dict[str, float]:
    compute = merged(k["compute"])
    busy = merged(compute + k["transfer"])
    queue = merged(busy + k["queue"])
    waiting = merged(queue + k["barrier"])
    c, used = _length(compute), _length(busy)
    q = _length(queue) - used
    return {"compute": c, "transfer": used - c, "idle": max(makespan - used, 0.0),
            "queue": q, "barrier": _length(waiting) - used - q}


class Record(NamedTuple):
    """One server update: when it was applied and what the model was then."""

    time: float
    loss: float  # cross-entropy on the whole training split (nan in timing-only runs)
    accuracy: float  # on the held-out test split (nan in timing-only runs)
    staleness: int  # server version when applied minus the version the gradient was computed on
    version: int  # updates applied so far, this one included
    worker: int | None  # whose push it was (None: a sync round, all workers)
    step: int
