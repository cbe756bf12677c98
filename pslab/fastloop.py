"""The clock of figure 000's async runs, timing only, in one Python loop.

A timing-only async run of 800 workers x 100 steps is 160k events and 761k spans; as actor
methods (simulation.py) most of its time goes to calls, attribute look-ups and the spans' rows.
Here the two events every such run is made of (a worker starts a step: fetch, compute; a
worker's compute ends: push, the server's updates) are handled inline, with everything they
read in local variables, and each event only books its jobs (Lindley's recursion) and logs
who it was, when, and where its transfers started. numpy then makes the spans' rows from that
log a few thousand events at a time (_add_rows): the holes between transfers, the compute and
update spans, every code, by the same float operations on the same operands, in the actors'
order. Bit for bit the same run at ~0.7x the time of the inlined loop that wrote each row.
The two kinds of event wait in a heap of their times alone (floats compare faster than the
clock's tuples), ties kept in the order they were scheduled; any other event (a stop asked by
Ctrl-C) stays on the clock's heap and runs in its turn as the clock would run it, and what is
left pending goes back to the clock's heap: what the actors would leave.

Simulation.run uses it only where it is exactly the actors' work: the base Simulation's
handlers, no numerics, no barrier and no staleness bound (async, SoftSync); tests/test_fastloop.py
compares the two paths field by field on many schedules.
Layer: actors (below simulation.py, which calls it), above the clock and the timeline.
"""
from __future__ import annotations

import math
import struct
from heapq import heappop, heapreplace
from typing import Any

import numpy as np

from .engine import Stopped
from .server import ParameterServer
from .timeline import Record, gaps

_new = tuple.__new__
FLUSH = 5 * 1500  # logged values gathered before their rows are made (~1500 events)


def run_inline(sim: Any, until: float | None) -> None:
    """Run a Simulation's clock as Clock.run(until) would, the two hot events inlined; where
    the run is not in the shape the inlined loop needs (_steady), the clock runs the actors."""
    clock = sim.clock
    tables = _Tables(sim) if _steady(sim) else None
    try:
        while tables is not None and _segment(sim, tables, until):
            tables = tables if _steady(sim) else None  # an outside event ran: still steady?
        if tables is None:
            clock.run(until)
    except Stopped:  # the clock stays at the last event run, as it would in Clock.run
        clock.stopped = True


def _steady(sim: Any) -> bool:
    """The inlined loop keeps one version, one push count and, per worker, one fetched version
    for every shard: true of every run it takes (each push goes to every shard alike), checked.
    """
    server = sim.server
    return (type(server).push is ParameterServer.push and len(server.versions) > 0
            and len(set(server.versions)) == 1 and len(set(server.counts)) == 1
            and all(len(set(f)) == 1 for f in sim.fetched))


class _Tables:
    """What the inlined loop and the row-maker read, made once per run."""

    def __init__(self, sim: Any):
        routes = sim.routes["fetch"]  # one-at-a-time: a push goes the way of the fetch
        self.workers, self.shards = len(routes), len(sim.updates)
        self.updates = [(shard, cost) for _, shard, cost in sim.updates]
        # per worker, its transfers: (shard's Resource, seconds, then seconds it stays busy)
        self.jobs = [[(shard, cost, 0.0) for _, shard, cost in route] for route in routes]
        # An update starts where its push ends (the push ends after `now`: costs are >= 0), on
        # the same resource, so a push that completes an update books both in one go: unless
        # the push went to a worker's own shard (colocated: a private link, the update on the
        # shard's own resource). Then the updates are booked one by one and their starts logged.
        self.log_updates = any(job[0] is not update[0] or job[1] < 0 for route in self.jobs
                               for job, update in zip(route, self.updates))
        self.pushes = self.jobs if self.log_updates else [
            [(shard, cost, after) for (shard, cost, _), (_, after) in zip(route, self.updates)]
            for route in self.jobs]
        cost = np.array([[cost for _, cost, _ in route] for route in self.jobs])
        self.cost = cost[:1] if (cost == cost[:1]).all() else cost  # one row: all alike
        self.update_cost = np.array([cost for _, cost in self.updates])
        # the span codes (columns.py), as floats: their sums stay exact (whole numbers below
        # 2^53, checked by the Simulation), and numpy adds floats faster than large ints
        timeline, S = sim.timeline, range(self.shards)
        self.fetch_codes = np.array([float(timeline.code(None, s, "fetch", 0)) for s in S])
        self.push_codes = np.array([float(timeline.code(None, s, "push", 0)) for s in S])
        self.update_codes = np.array([float(timeline.code(None, s, "update", 0)) for s in S])
        self.hole = float(timeline.code(None, None, "idle", 0, None, "queue"))
        self.compute = float(timeline.code(None, None, "compute", 0))
        self.step_unit, self.rank_unit = float(timeline.step_unit), float(timeline.worker_unit)
        self.micro_unit = float(timeline.micro_unit)
        self.durations = np.array([np.asarray(row, dtype=np.float64) for row in sim.durations])


def _segment(sim: Any, tables: _Tables, until: float | None) -> bool:
    """Run events until the next one is neither of the two (then run it as the clock would and
    return True) or none is left before `until` (return False).

    Each event is a step of the lesson: a worker starts a step (it fetches from every shard,
    then computes) or its compute ends (it pushes to every shard, the server updates, and the
    worker waits for its pushes before its next step). Everything the loop reads is a local
    variable, written back to the simulation when the segment ends."""
    clock, server = sim.clock, sim.server
    start_event, computed_event = sim.start_step, sim.computed
    times, at, tied = _take_hot(clock, (start_event, computed_event))
    heap, now, seq = clock.queue, clock.now, clock.scheduled  # heap: the other events only
    steps, k, durations = sim.steps, sim.accumulate, sim.durations
    aggregate, staleness, history, progress = (server.aggregate, sim.push_staleness,
                                               sim.history, sim.progress)
    gathered, version, count = sim.round_staleness, server.versions[0], server.counts[0]
    fetched = [f[0] for f in sim.fetched]  # per worker: the version it computes on
    jobs, pushes, update_jobs = tables.jobs, tables.pushes, tables.updates
    buffered, log_updates = ~tables.workers, tables.log_updates
    pad = (0.0,) * tables.shards  # the update columns of an event that books none
    nan = math.nan  # the very object simulation's records hold: records compare equal
    limit = math.inf if until is None else until
    log: list = []  # per event: who (rank; ~rank: a push), step, now, its transfers' starts
    foreign = False
    try:
        while True:
            if heap and (not times or heap[0][:2] < at[times[0]][:2]):
                foreign = heap[0][0] <= limit  # another event first: the clock runs it
                break
            if not times or times[0] > limit:
                break
            now = times[0]
            _, _, fn, args = at.pop(now)
            if tied and now in tied:  # events at the same time: the next in line
                at[now] = tied[now].pop(0)
                if not tied[now]:
                    del tied[now]
            rank, step = args
            if fn is start_event:  # Simulation.start_step: fetch from every shard, compute
                if step == steps:  # the worker is done
                    heappop(times)
                    continue
                log += (rank, step, now)
                end = _book(jobs[rank], now, log)
                if log_updates:
                    log += pad
                fetched[rank] = version
                t = end + durations[rank][step] if k == 1 else \
                    _accumulated(end, durations[rank], step, k)
                item = t, seq, computed_event, args
            else:  # Simulation.computed: push to every shard, the server's update
                lag = version - fetched[rank]  # staleness: the same on every shard
                staleness.append(lag)
                if lag > gathered:
                    gathered = lag
                count += 1  # ParameterServer.push, timing only: a count per shard, all alike
                if count < aggregate:  # buffered: the update waits for more pushes
                    log += (buffered - rank, step, now)
                    end = _book(jobs[rank], now, log)
                    if log_updates:
                        log += pad
                else:  # the update: each shard's right behind its push
                    log += (~rank, step, now)
                    end, applied_at = _book_updated(pushes[rank], now, log)
                    if log_updates:
                        applied_at = _book_updates(update_jobs, now, log)
                    count, version = 0, version + 1
                    if progress is not None:  # Simulation.record, no numbers to evaluate
                        progress.update(1)
                    history.append(_new(Record, (applied_at, nan, nan, gathered,
                                                 len(history) + 1, rank, step)))
                    gathered = 0
                if len(log) > FLUSH:
                    _add_rows(sim, tables, log)
                    del log[:]
                t = end  # the worker waits for its pushes, then starts its next step
                item = t, seq, start_event, (rank, step + 1)
            seq += 1
            if at.setdefault(t, item) is not item:  # another event is due then: after it
                tied.setdefault(t, []).append(item)
            heapreplace(times, t)
    finally:
        clock.put_back(_pending(at, tied))
        _add_rows(sim, tables, log)
        clock.now, clock.scheduled, sim.round_staleness = now, seq, gathered
        server.versions[:] = [version] * tables.shards
        server.counts[:] = [count] * tables.shards
        sim.fetched = [[v] * tables.shards for v in fetched]
    if foreign:  # as Clock.run runs it; a stop (time -inf) leaves the last event's time
        clock.step()
    return foreign


def _book(route: list, now: float, log: list) -> float:
    """Book a worker's transfers, one per shard, each on its shard's link as soon as it is
    free (Resource.book, inlined); log each start; return when the last one ends."""
    end = now
    for shard, cost, _ in route:
        a = shard.free_at
        if a < now:
            a = now
        b = shard.free_at = a + cost
        log.append(a)
        if b > end:
            end = b
    return end


def _book_updated(route: list, now: float, log: list) -> tuple[float, float]:
    """`_book` for pushes that complete an update, each shard's update booked right behind
    its push on the same resource (`after` seconds). Returns when the last push ends and
    when the last update does (an update of no time ends with its push). Kept apart from
    `_book`, not a flag of it: a fetch is booked 80,000 times in a figure-size run."""
    end = busy = now
    for shard, cost, after in route:
        a = shard.free_at
        if a < now:
            a = now
        b = shard.free_at = a + cost
        log.append(a)
        if b > end:
            end = b
        if after:
            f = shard.free_at = b + after
            if f > busy:
                busy = f
    return end, busy if busy > end else end


def _book_updates(update_jobs: list, now: float, log: list) -> float:
    """Book the shards' updates one by one (each right behind its shard's push: colocated
    shards), log each start, return when the last one ends."""
    applied_at = -math.inf
    for shard, cost in update_jobs:
        u0 = shard.free_at
        if u0 < now:
            u0 = now
        u1 = shard.free_at = u0 + cost
        log.append(u0)
        if u1 > applied_at:
            applied_at = u1
    return applied_at


def _accumulated(start: float, durations: Any, step: int, k: int) -> float:
    """When a step of k minibatches that starts at `start` ends: its minibatches computed one
    after another (added in order, as the actors add them)."""
    t = start
    for d in durations[step * k:(step + 1) * k]:
        t += d
    return t


def _take_hot(clock: Any, hot: tuple) -> tuple[list[float], dict, dict]:
    """Take the events of the two kinds off the clock (left with the others) into a heap of
    their times alone (floats compare ~3x faster than the clock's tuples), `at` each time the
    event due then, and `tied`: the further events due at a time, in their order."""
    at: dict = {}
    tied: dict = {}
    mine = [(t, seq, hot[hot.index(fn)], args) for t, seq, fn, args in clock.take(hot)]
    for item in mine:
        if at.setdefault(item[0], item) is not item:
            tied.setdefault(item[0], []).append(item)
    return [item[0] for item in mine], at, tied  # sorted: a heap


def _pending(at: dict, tied: dict) -> list:
    """The events `_take_hot` took, and those scheduled since, that have not run."""
    out = list(at.values())
    for items in tied.values():
        out += items
    at.clear()
    tied.clear()
    return out


def _add_rows(sim: Any, tables: _Tables, log: list) -> None:
    """Add the spans of the logged events to the timeline, in the order the actors add them:
    per event its transfers, the holes between them (idle, "queue"), then its compute
    (a start) or its updates (a push that completed one). Every value is the loop's own or
    the same float operation on the same operands, so the rows are the actors' bit for bit."""
    if not log:
        return
    S, k, W = tables.shards, sim.accumulate, tables.workers
    width = 3 + S * (1 + tables.log_updates)
    del log[len(log) - len(log) % width:]  # an event cut short (a second Ctrl-C) made no row
    # struct packs a list of floats and small ints into doubles ~2x faster than array or numpy
    L = np.frombuffer(struct.pack(f"{len(log)}d", *log)).reshape(-1, width)
    E = len(L)
    who, step, now, A = L[:, 0].astype(np.intp), L[:, 1], L[:, 2], L[:, 3:3 + S]
    pushed = who < 0
    rank = np.where(pushed, ~who, who)
    updated = pushed & (rank < W)
    rank[rank >= W] -= W
    B = A + tables.cost[rank if len(tables.cost) > 1 else 0]
    at = step * tables.step_unit
    code = at + (rank + 1) * tables.rank_unit  # exact: whole numbers below 2^53 (columns.py)
    tail = max(k, S)
    R = np.empty((E, 2 * S + tail, 3))
    keep = np.empty((E, 2 * S + tail), dtype=bool)
    R[:, :S, 0] = code[:, None] + np.where(pushed[:, None], tables.push_codes,
                                           tables.fetch_codes)
    R[:, :S, 1], R[:, :S, 2] = A, B
    keep[:, :S] = True
    # the holes: the parts of [now, end] that no transfer covers (timeline.gaps, per event)
    starts, ends = A, B
    if S > 1:
        unordered = (A[:, 1:] < A[:, :-1]).any(axis=1)
        if unordered.any():
            order = np.lexsort((B[unordered], A[unordered]), axis=1)  # gaps' sorted()
            starts, ends = A.copy(), B.copy()
            starts[unordered] = np.take_along_axis(A[unordered], order, 1)
            ends[unordered] = np.take_along_axis(B[unordered], order, 1)
    covered = R[:, S:2 * S, 1]
    covered[:, 0] = now
    if S > 1:
        np.maximum(np.maximum.accumulate(ends[:, :-1], axis=1), now[:, None],
                   out=covered[:, 1:])
    R[:, S:2 * S, 0] = (code + tables.hole)[:, None]
    R[:, S:2 * S, 2] = starts
    np.greater(starts, covered, out=keep[:, S:2 * S])
    # a start's compute, one span per minibatch; a push's updates, each behind its push
    t = now.copy()
    for s in range(S):  # the transfers' end: column by column, far faster than max(axis=1)
        np.maximum(t, B[:, s], out=t)
    first = rank * tables.durations.shape[1] + (step * k).astype(np.intp)  # flat: faster
    u = L[:, 3 + S:] if tables.log_updates else np.maximum(B, now[:, None])
    for m in range(tail):
        slot = R[:, 2 * S + m]
        if m < k:
            d = tables.durations.ravel()[first + m]
            fields = code + (tables.compute + (m + 1) * tables.micro_unit), t, t + d
            t = fields[2]
        if m < S:
            update = at + tables.update_codes[m], u[:, m], u[:, m] + tables.update_cost[m]
            fields = [np.where(pushed, a, b) for a, b in zip(update, fields)] if m < k else update
        for c in range(3):
            slot[:, c] = fields[c]
        keep[:, 2 * S + m] = (updated if m < S else False) | (~pushed if m < k else False)
    # each row as one 24-byte item: numpy picks kept items far faster than kept rows of 3
    items = R.reshape(-1, 3).view("V24").ravel()[keep.ravel()]
    sim.timeline.rows.frombytes(memoryview(items.view(np.uint8)))  # no copy in between
