"""The timeline every figure is made of: spans of fetch, compute, push, update and idle.

A span is one block in figures 000 and 001: who (a worker, or a server shard), what (its kind),
when (start, end in virtual seconds) and for which step. Plots, TikZ export and the widgets read
only these spans, so a timeline measured on real processes draws with the same code.
"""
from __future__ import annotations

from bisect import bisect_right
from typing import Iterable, NamedTuple

KINDS = ("fetch", "compute", "push", "update", "idle")

# What a span's `note` says, beyond its kind. Two kinds of waiting look alike (a white block)
# but have different cures: queueing at a busy shard goes away with more shards or bandwidth,
# waiting for other workers with a looser barrier (async, SSP, backup workers).
NOTES = {
    "queue": "idle: queued behind other transfers at a busy shard",
    "barrier": "idle: waiting for other workers (a sync round, the SSP bound, the ring)",
    "dropped": "push: arrived after its round closed; the server dropped it (backup workers)",
}


class Span(NamedTuple):
    """One block of the timeline.

    worker: the worker's rank, or None for the server (updates).
    shard: the server shard involved (fetch, push, update), else None.
    kind: one of KINDS.
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
    return sum(s.end - s.start for s in spans
               if s.kind == kind and (note is None or s.note == note))


def covered(spans: Iterable[Span], busy: Iterable[tuple[float, float]]) -> float:
    """Summed time of `spans` that falls inside any of the `busy` intervals (which may overlap)."""
    merged: list[list[float]] = []
    for a, b in sorted(busy):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    ends = [b for _, b in merged]
    out = 0.0
    for s in spans:
        i = bisect_right(ends, s.start)  # the first interval ending after the span starts
        while i < len(merged) and merged[i][0] < s.end:
            out += min(s.end, merged[i][1]) - max(s.start, merged[i][0])
            i += 1
    return out
