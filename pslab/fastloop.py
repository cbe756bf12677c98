"""The clock of figure 000's async runs, timing only, in one Python function (issue 19).

A timing-only async run of 800 workers x 100 steps is 160k events of a few dozen float
operations each; as actor methods (simulation.py) most of its time goes to calls and attribute
look-ups, not to the schedule. Here the two events every such run is made of (a worker starts a
step: fetch, compute; a worker's compute ends: push, the server's updates) are handled inline,
with everything they read in local variables and the rows added a few thousand at a time:
about 1.4x faster at 800 x 100 (process time), bit for bit the same run. The booking of the
transfers and of the updates is one code for both paths (book_transfers, push_updates).
The heap is the clock's own, with the actors' own events in it: any other event (a stop asked
by Ctrl-C) is run as the clock would, and what is left pending is what the actors would leave.

Simulation.run uses it only where it is exactly the actors' work: the base Simulation's
handlers, no numerics, no barrier and no staleness bound (async, SoftSync); tests/test_fastloop.py
compares the two paths field by field on many schedules.
Layer: actors (below simulation.py, which calls it), above the clock and the timeline.
"""
from __future__ import annotations

import math
from heapq import heappop, heappush
from typing import Any, Callable, Sequence

from .engine import Stopped
from .timeline import Record, gaps

_new = tuple.__new__
FLUSH = 3 * 2048  # row values gathered before one array.fromlist: one call per ~200 events


def book_transfers(out: list, jobs: list, codes: list[int], who: int, hole: int,
                   now: float) -> float:
    """Book one transfer per shard, all asked for now (Lindley's recursion, Resource.book
    inlined); add their rows (code, start, end) to `out`, then the idle rows of the holes
    between them (time queued behind other jobs). Returns when the last one ends.
    jobs: (shard, its Resource, seconds); codes: each shard's part of the span code; who: the
    rank and step part; hole: the whole code of an idle row. The one booking both loops use."""
    # The holes are found as the jobs are booked (with many workers, most transfers queue),
    # which is right while no job starts before the one booked before it; else timeline.gaps
    # sorts them out. end: the jobs so far cover [now, end] but for holes.
    end = last = now
    idle, ordered = [], True  # the holes' rows, written after the transfers'
    for s, shard, cost in jobs:
        a = shard.free_at
        if a < now:
            a = now
        b = shard.free_at = a + cost
        out += (who + codes[s], a, b)
        if a > end:
            idle += (hole, end, a)
        if b > end:
            end = b
        if a < last:
            ordered = False
        last = a
    if not ordered:
        idle = []
        for a, b in gaps(zip(out[-3 * len(jobs) + 1::3], out[-3 * len(jobs) + 2::3]), now, end):
            idle += (hole, a, b)
    out += idle
    return end


def push_updates(out: list, updates: list, codes: list[int], when: int, now: float,
                 versions: list[int], fetched: list[int], push: Callable[..., bool],
                 grads: Sequence = (), scaled: bool = False) -> tuple[float | None, int]:
    """Hand every shard its slice of a push sent at `now` (`push(shard, grad)`: the server's,
    True when it completed an update); book each completed update right behind the push and
    add its row to `out`. Returns when the last update ends (None: the server only buffered
    the push) and the push's staleness (versions it is behind `fetched`, the largest).
    updates: (shard, its Resource, seconds); grads: the push's slices (none: timing only);
    scaled: divide each slice by its staleness (Zhang et al.)."""
    applied_at, stale = None, 0
    for s, shard, cost in updates:
        lag = versions[s] - fetched[s]
        if lag > stale:
            stale = lag
        grad = grads[s] if grads else None
        if scaled and lag > 1:
            grad = grad / lag
        if push(s, grad):
            u0 = shard.free_at  # Resource.book, inlined: right behind this push
            if u0 < now:
                u0 = now
            u1 = shard.free_at = u0 + cost
            out += (when + codes[s], u0, u1)
            if applied_at is None or u1 > applied_at:
                applied_at = u1
    return applied_at, stale


def run_inline(sim: Any, until: float | None) -> None:
    """Run a Simulation's clock as Clock.run(until) would, the two hot events inlined."""
    clock = sim.clock
    heap, now, seq = clock._heap, clock.now, clock._seq
    start_event, computed_event = sim._start_step, sim._computed
    steps, k, durations, fetched = sim.steps, sim.accumulate, sim.durations, sim._fetched
    routes, updates, add = sim._transfers, sim._updates, sim.timeline.rows.fromlist
    fetch_codes, push_codes = sim._job_codes["fetch", None], sim._job_codes["push", None]
    update_codes, hole_code, compute_code = sim._update_codes, sim._hole, sim._compute
    step_unit, rank_unit, micro_unit = sim._step_unit, sim._rank_unit, sim._micro_unit
    versions, push, staleness = sim.server.versions, sim.server.push, sim.push_staleness
    history, progress, gathered = sim.history, sim.progress, sim._stale
    nan = math.nan  # the very object simulation's records hold: records compare equal
    limit = float("inf") if until is None else until
    out: list = []  # the rows of the last events, added to the timeline a few thousand at a time
    try:
        while heap and heap[0][0] <= limit:
            if len(out) > FLUSH:
                add(out)
                del out[:]
            now, _, fn, args = heappop(heap)
            if fn is start_event:
                rank, step = args
                if step == steps:
                    continue
                codes = fetch_codes
            elif fn is computed_event:
                rank, step = args
                codes = push_codes
            else:  # not one of the two: as the clock would run it, after the rows so far
                add(out)
                del out[:]
                clock.now, clock._seq, sim._stale = now, seq, gathered
                fn(*args)
                seq, gathered = clock._seq, sim._stale
                continue
            who = step * step_unit + (rank + 1) * rank_unit
            end = book_transfers(out, routes[rank], codes, who, who + hole_code, now)
            if fn is start_event:  # Simulation.start_step: the fetched versions, the compute
                fetched[rank] = versions[:]
                row, t, code = durations[rank], end, who + compute_code
                if k == 1:
                    t = end + row[step]
                    out += (code + micro_unit, end, t)
                else:
                    for micro in range(k):
                        d = row[step * k + micro]
                        out += (code + (micro + 1) * micro_unit, t, t + d)
                        t += d
                heappush(heap, (t, seq, computed_event, args))  # the same (rank, step)
                seq += 1
                continue
            # Simulation.computed: hand every shard its slice, book the updates that completes
            applied_at, lag = push_updates(out, updates, update_codes, step * step_unit, now,
                                           versions, fetched[rank], push)
            staleness.append(lag)
            if lag > gathered:
                gathered = lag
            if applied_at is not None:  # Simulation._record, with no numbers to evaluate
                if progress is not None:
                    progress.update(1)
                history.append(_new(Record, (applied_at, nan, nan, gathered, len(history) + 1,
                                             rank, step)))
                gathered = 0
            heappush(heap, (end, seq, start_event, (rank, step + 1)))
            seq += 1
    except Stopped as stop:
        now = stop.now
        clock.stopped = True
    finally:
        add(out)
        clock.now, clock._seq, sim._stale = now, seq, gathered
