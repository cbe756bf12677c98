"""The clock of async runs on duplex links, timing only, in one Python function.

The same run as the actors (simulation.py) on `Cluster(links="duplex")`: a worker's fetch
(each shard answers once its taken updates are applied, then in its fetch line), its compute,
its push (in each shard's push line) and each shard taking the push when it arrives (an urgent
event, before the ordinary ones of its moment), the update on the shard's own line. Here the
three kinds of event wait in one heap of plain tuples and are handled inline, with what they
read in local variables, and each span's row is written with its code computed once per run:
the rows, the history, the staleness and the clock are the actors' bit for bit
(tests/test_fastloop.py compares them on many schedules). Any other event (a stop asked by
Ctrl-C) runs as the clock would run it, between two of these.

Simulation.run uses it only where it is exactly the actors' work: the base Simulation's
handlers, no numerics, no barrier and no staleness bound (async, SoftSync).
Layer: actors (below simulation.py, which calls it), above the clock and the timeline.
"""
from __future__ import annotations

import math
from heapq import heappop, heappush
from typing import Any

from .engine import URGENT, Stopped
from .timeline import Record, gaps

_new = tuple.__new__
START, COMPUTED, ARRIVED = 0, 1, 2  # the three kinds of event, in the heap
FLUSH = 3 * 4096  # row values gathered before they go to the timeline


def run_duplex(sim: Any, until: float | None) -> bool:
    """Run the events up to `until` (all: None) as the clock would; returns True when it
    stopped for another event, which it then ran (the caller goes on), False when done."""
    clock, server, timeline = sim.clock, sim.server, sim.timeline
    kinds = {START: sim.start_step, COMPUTED: sim.computed, ARRIVED: sim.push_arrived}
    heap = [(t, q, kind, args) for t, q, fn, args in clock.take(tuple(kinds.values()))
            for kind, f in kinds.items() if fn == f]
    queue, now, seq = clock.queue, clock.now, clock.scheduled  # queue: the other events only
    limit = math.inf if until is None else until
    steps, k, durations = sim.steps, sim.accumulate, sim.durations
    fetch_routes, push_routes, updates = sim.routes["fetch"], sim.routes["push"], sim.updates
    versions, fetched, pushing = server.versions, sim.fetched, sim.pushing
    history, staleness, progress = sim.history, sim.push_staleness, sim.progress
    push = server.push
    unit = timeline.step_unit

    def code(*fields: Any) -> int:
        return timeline.code(*fields[:2], fields[2], 0, *fields[3:])

    n = len(fetch_routes)
    fetch_code = [{s: code(r, s, "fetch") for s, _, _ in fetch_routes[r]} for r in range(n)]
    push_code = [{s: code(r, s, "push") for s, _, _ in push_routes[r]} for r in range(n)]
    hole = [code(r, None, "idle", None, "queue") for r in range(n)]
    compute = [[code(r, None, "compute", m) for m in range(k)] for r in range(n)]
    update_code = [code(None, s, "update") for s, _, _ in updates]
    out: list = []
    foreign = False
    try:
        while True:
            if queue and (not heap or queue[0][:2] < heap[0][:2]):
                foreign = queue[0][0] <= limit  # another event first: the clock runs it
                break
            if not heap or heap[0][0] > limit:
                break
            t, q, kind, args = heap[0]
            heappop(heap)
            now = t
            if kind == ARRIVED:  # Simulation.push_arrived: shard s takes the push
                rank, step, s = args
                mine = pushing[rank]
                lag = versions[s] - fetched[rank][s]
                if lag > mine[1]:
                    mine[1] = lag
                if push(s, None, lag):  # Simulation.take: the update, right behind it
                    _, shard, seconds = updates[s]
                    u0 = shard.free_at if shard.free_at > now else now
                    u1 = shard.free_at = u0 + seconds
                    out += (update_code[s] + step * unit, u0, u1)
                    mine[2] = u1 if mine[2] is None else max(mine[2], u1)
                mine[0] -= 1
                if mine[0] == 0:  # Simulation.pushed: every shard has it
                    _, stale, applied_at = mine
                    staleness.append(stale)
                    sim.round_staleness = max(sim.round_staleness, stale)
                    if applied_at is not None:
                        gathered, sim.round_staleness = sim.round_staleness, 0
                        if progress is not None:  # Simulation.record, no numbers to evaluate
                            progress.update(1)
                        history.append(_new(Record, (applied_at, math.nan, math.nan, gathered,
                                                     len(history) + 1, rank, step)))
                continue
            rank, step = args
            if kind == START:  # Simulation.start_step: fetch from every shard, compute
                if step == steps:
                    continue
                booked = []
                for s, line, seconds in fetch_routes[rank]:
                    ready = now
                    free = updates[s][1].free_at
                    if free > ready:
                        ready = free
                    a = line.free_at if line.free_at > ready else ready
                    b = line.free_at = a + seconds
                    booked.append((s, a, b))
                end = _rows(out, booked, fetch_code[rank], hole[rank], step * unit, now)
                fetched[rank] = versions[:]
                row, t = durations[rank], end
                for micro in range(k):
                    d = row[step * k + micro]
                    out += (compute[rank][micro] + step * unit, t, t + d)
                    t += d
                heappush(heap, (t if t > now else now, seq, COMPUTED, args))
                seq += 1
            else:  # Simulation.computed: push to every shard, go on
                booked = []
                for s, line, seconds in push_routes[rank]:
                    a = line.free_at if line.free_at > now else now
                    b = line.free_at = a + seconds
                    booked.append((s, a, b))
                end = _rows(out, booked, push_code[rank], hole[rank], step * unit, now)
                pushing[rank] = [len(booked), 0, None]
                for s, _, b in booked:
                    heappush(heap, (b if b > now else now, seq - URGENT, ARRIVED, (rank, step, s)))
                    seq += 1
                heappush(heap, (end if end > now else now, seq, START, (rank, step + 1)))
                seq += 1
            if len(out) > FLUSH:
                timeline.rows.fromlist(out)
                del out[:]
    finally:
        timeline.rows.fromlist(out)
        clock.put_back([(t, q, kinds[kind], args) for t, q, kind, args in heap])
        clock.now, clock.scheduled = now, seq
    if foreign:
        try:
            clock.step()
        except Stopped:  # the clock stays at the last event run, as it would in Clock.run
            clock.stopped = True
            return False
    return foreign


def _rows(out: list, booked: list, codes: dict, hole: int, at: int, now: float) -> float:
    """The rows of a worker's transfers, then of the holes between them (idle, "queue"), as
    Simulation.send adds them; returns when the last transfer ends."""
    end = now
    for s, a, b in booked:
        out += (codes[s] + at, a, b)
        if b > end:
            end = b
    for a, b in gaps([(a, b) for _, a, b in booked], now, end):
        out += (hole + at, a, b)
    return end
