"""The clock of figure 000's async runs, timing only, in one Python loop.

A timing-only async run of 800 workers x 100 steps is 160k events and 761k spans; as actor
methods (simulation.py) most of its time goes to calls, attribute look-ups and the spans' rows.
Here the two events every such run is made of (a worker starts a step: fetch, compute; a
worker's compute ends: push, the server's updates) are handled inline, with everything they
read in local variables, and each event only books its jobs (Lindley's recursion) and logs
who it was, when, and where its transfers started. numpy then makes the spans' rows from that
log a few thousand events at a time (fastlog.Rows): the holes between transfers, the compute and
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
from heapq import heappop, heapreplace
from typing import Any

from .engine import Stopped
from .fastlog import FLUSH, Rows, accumulated, next_hot, pending, recorder, same_costs, take_hot
from .server import ParameterServer


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
    for every shard: true of every run it takes (each push goes to every shard alike), checked,
    with the server's own push and a push that costs what a fetch does."""
    server = sim.server
    return (type(server).push is ParameterServer.push and same_costs(sim)
            and len(server.versions) > 0 and len(set(server.versions)) == 1
            and len(set(server.counts)) == 1
            and all(len(set(f)) == 1 for f in sim.fetched))


class _Tables:
    """What the inlined loop reads, made once per run, and the row-maker of its log."""

    def __init__(self, sim: Any):
        self.workers, self.shards = len(sim.routes["fetch"]), len(sim.updates)
        self.updates = [(shard, cost) for _, shard, cost in sim.updates]
        # per worker, its transfers: (shard's Resource, seconds, then seconds it stays busy)
        self.jobs, pushes = ([[(shard, cost, 0.0) for _, shard, cost in route]
                              for route in sim.routes[kind]] for kind in ("fetch", "push"))
        # An update starts where its push ends (the push ends after `now`: costs are >= 0), on
        # the same resource, so a push that completes an update books both in one go: unless
        # the push went to a worker's own shard (colocated: a private link, the update on the
        # shard's own resource). Then the updates are booked one by one and their starts logged.
        self.log_updates = any(job[0] is not update[0] or job[1] < 0 for route in pushes
                               for job, update in zip(route, self.updates))
        self.pushes = pushes if self.log_updates else [
            [(shard, cost, after) for (shard, cost, _), (_, after) in zip(route, self.updates)]
            for route in pushes]
        pad = (0.0,) * self.shards if self.log_updates else ()  # an event's update columns
        self.loop = (self.jobs, self.pushes, self.updates, ~self.workers, pad,
                     sim.server.aggregate)  # what the loop reads of these, at once
        self.rows = Rows(sim, "logged" if self.log_updates else "booked")


def _segment(sim: Any, tables: _Tables, until: float | None) -> bool:
    """Take the two events off the clock, run them (`_events`) until the next one is neither
    of the two (then run it as the clock would and return True) or none is left before
    `until` (return False), and put back on the clock and the simulation what is left."""
    clock, server = sim.clock, sim.server
    fns = sim.start_step, sim.computed  # the very objects the loop tells them apart by
    hot = take_hot(clock, fns)
    # one version and one push count for every shard (_steady), and each worker's version
    moment = [clock.now, clock.scheduled, sim.round_staleness, server.versions[0],
              server.counts[0]]
    fetched = [f[0] for f in sim.fetched]
    log: list = []  # per event: who (rank; ~rank: a push), step, now, its transfers' starts
    try:
        foreign = _events(sim, tables, fns, hot, moment, fetched, log, until)
    finally:
        clock.put_back(pending(*hot[1:]))
        tables.rows.add(log)
        clock.now, clock.scheduled, sim.round_staleness, version, count = moment
        server.versions[:] = [version] * tables.shards
        server.counts[:] = [count] * tables.shards
        sim.fetched = [[v] * tables.shards for v in fetched]
    if foreign:  # as Clock.run runs it; a stop (time -inf) leaves the last event's time
        clock.step()
    return foreign


def _events(sim: Any, tables: _Tables, fns: tuple, hot: tuple, moment: list, fetched: list,
            log: list, until: float | None) -> bool:
    """Run the two events in time order: a worker starts a step (fetch from every shard, then
    compute) or its compute ends (push to every shard, the server's update). True when another
    event is next, False when none is left before `until`; `moment` gets what it changes."""
    (times, at, tied), (now, seq, gathered, version, count) = hot, moment
    (start_event, computed_event), heap = fns, sim.clock.queue
    steps, k, durations, limit = (sim.steps, sim.accumulate, sim.durations,
                                  math.inf if until is None else until)
    staleness, record = sim.push_staleness, recorder(sim)
    jobs, pushes, update_jobs, buffered, pad, aggregate = tables.loop
    try:
        while True:
            if heap and (not times or heap[0][:2] < at[times[0]][:2]):
                return heap[0][0] <= limit  # another event first: the clock runs it
            if not times or times[0] > limit:
                return False
            now, (rank, step), fn = next_hot(times, at, tied)
            if fn is start_event:  # Simulation.start_step: fetch from every shard, compute
                if step == steps:  # the worker is done
                    heappop(times)
                    continue
                end = _book(jobs[rank], now, log, (rank, step, now), pad)
                fetched[rank] = version
                t = end + durations[rank][step] if k == 1 else \
                    accumulated(end, durations[rank], step, k)
                item = t, seq, computed_event, (rank, step)
            else:  # Simulation.computed: push to every shard, the server's update
                lag = version - fetched[rank]  # staleness: the same on every shard
                staleness.append(lag)
                gathered = lag if lag > gathered else gathered
                count += 1  # ParameterServer.push, timing only: a count per shard, all alike
                if count < aggregate:  # buffered: the update waits for more pushes
                    t = _book(pushes[rank], now, log, (buffered - rank, step, now), pad)
                else:  # the update: each shard's right behind its push
                    t, applied_at = _book_updated(pushes[rank], now, log, (~rank, step, now))
                    if pad:
                        applied_at = _book_updates(update_jobs, now, log)
                    count, version = 0, version + 1
                    record(applied_at, gathered, rank, step)
                    gathered = 0
                if len(log) > FLUSH:
                    tables.rows.add(log)
                item = t, seq, start_event, (rank, step + 1)
            seq += 1
            if at.setdefault(t, item) is not item:  # another event is due then: after it
                tied.setdefault(t, []).append(item)
            heapreplace(times, t)
    finally:
        moment[:] = now, seq, gathered, version, count


def _book(route: list, now: float, log: list, event: tuple, pad: tuple) -> float:
    """Log the event (who, step, now) and book its transfers, one per shard, each on its
    shard's link as soon as it is free (Resource.book, inlined); log each start (then `pad`:
    no update); return when the last one ends."""
    log += event
    end = now
    for shard, cost, _ in route:
        a = shard.free_at
        if a < now:
            a = now
        b = shard.free_at = a + cost
        log.append(a)
        if b > end:
            end = b
    log += pad
    return end


def _book_updated(route: list, now: float, log: list, event: tuple) -> tuple[float, float]:
    """`_book` for pushes that complete an update, each shard's update booked right behind
    its push on the same resource (`after` seconds). Returns when the last push ends and
    when the last update does (an update of no time ends with its push). Kept apart from
    `_book`, not a flag of it: a fetch is booked 80,000 times in a figure-size run."""
    log += event
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
