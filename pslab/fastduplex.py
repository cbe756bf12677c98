"""The clock of async runs on duplex links, timing only, in one Python loop.

The same run as the actors (simulation.py) on `Cluster(links="duplex")`, as four steps of the
lesson. A worker's step starts: it fetches from every shard (each answers once the updates it
has taken are applied, then in its fetch line) and computes. Its compute ends: it pushes to
every shard (in each shard's push line) and starts its next step when the pushes are sent.
A push arrives: the shard takes it (an urgent event, before the ordinary ones of its moment)
and books the update on its own line; when every shard has taken it, it is in the history.

The two kinds of a worker's event wait in a heap of their times alone (fastlog.take_hot). A
shard's pushes arrive in the order they were sent (its push line is first come first served),
so each shard keeps its pushes on the way in a plain FIFO and a heap of S heads picks the next
arrival: no heap of all events. Each worker's event logs its transfers' starts and numpy makes
its rows (fastlog.Rows); an update's row is noted with its place among them. The rows, the
history, the staleness and the clock are the actors' bit for bit (tests/test_fastloop.py
compares them on many schedules). Any other event (a stop asked by Ctrl-C) runs as the clock
would run it, between two of these.

Simulation.run uses it only where it is exactly the actors' work: the base Simulation's
handlers, no numerics, no barrier and no staleness bound (async, SoftSync).
Layer: actors (below simulation.py, which calls it), above the clock and the timeline.
"""
from __future__ import annotations

import math
from collections import deque
from heapq import heappop, heappush, heapreplace
from typing import Any, Callable

from .engine import URGENT, Stopped
from .fastlog import FLUSH, Rows, accumulated, next_hot, pending, recorder, same_costs, take_hot
from .server import ParameterServer


def run_duplex(sim: Any, until: float | None) -> bool:
    """Run the events up to `until` (all: None) as the clock would; returns True when it
    stopped for another event, which it then ran (the caller goes on), False when done."""
    clock = sim.clock
    if not _exact(sim):  # not the shape the loop needs: the clock runs the actors
        clock.run(until)
        return False
    foreign = _segment(sim, _Tables(sim), until)
    if foreign:
        try:
            clock.step()
        except Stopped:  # the clock stays at the last event run, as it would in Clock.run
            clock.stopped = True
            return False
    return foreign


def _exact(sim: Any) -> bool:
    """The loop does the actors' work exactly: the server's own push, a push costs what a
    fetch does, and each shard has one push line (in shard order in every route), whose
    pending arrivals end by its free time: they arrive in the order they wait in it."""
    pushes = sim.routes["push"]
    if type(sim.server).push is not ParameterServer.push or not same_costs(sim):
        return False
    if any([s for s, _, _ in route] != list(range(len(sim.updates))) for route in pushes):
        return False
    lines = [{id(line) for _, line, _ in shard} for shard in zip(*pushes)]
    if any(len(ids) != 1 for ids in lines):
        return False
    free = [line.free_at for _, line, _ in pushes[0]] if pushes else []
    return all(args[2] < len(free) and t <= free[args[2]]
               for t, _, fn, args in sim.clock.queue if fn == sim.push_arrived)


class _Tables:
    """What the loop reads, made once per run."""

    def __init__(self, sim: Any):
        self.shards = len(sim.updates)
        # per worker, its fetches: (the shard's fetch line, seconds, the shard's own line)
        self.fetches = [[(line, seconds, sim.updates[s][1]) for s, line, seconds in route]
                        for route in sim.routes["fetch"]]
        self.pushes = sim.routes["push"]  # per worker, its pushes: (shard, line, seconds)
        self.lines = [line for _, line, _ in sim.updates]  # each shard's own line: its updates
        self.seconds = [seconds for _, _, seconds in sim.updates]
        self.rows = Rows(sim, "apart")  # the shards book the updates as pushes arrive


def _segment(sim: Any, tables: _Tables, until: float | None) -> bool:
    """Take the loop's events off the clock, run them (`_events`), and put back on the clock
    and the simulation what is left: the events not run, the rows, the clock's time."""
    clock = sim.clock
    fns = sim.start_step, sim.computed  # the very objects the loop tells them apart by
    hot = take_hot(clock, fns)
    arriving, due = _take_arrivals(clock, sim.push_arrived, tables.shards)
    log: list = []  # per worker's event: who (rank; ~(W + rank): a push), step, now, starts
    updates: list = []  # per update: (values logged before it, shard, step, start)
    moment = [clock.now, clock.scheduled, sim.round_staleness]  # as the loop leaves them
    try:
        return _events(sim, tables, fns, hot, (arriving, due), log, updates, moment, until)
    finally:
        clock.put_back(pending(*hot[1:]) + _arrivals_left(arriving, sim.push_arrived))
        tables.rows.add(log, updates)
        clock.now, clock.scheduled, sim.round_staleness = moment


def _events(sim: Any, tables: _Tables, fns: tuple, hot: tuple, on_the_way: tuple, log: list,
            updates: list, moment: list, until: float | None) -> bool:
    """Run events until the next one is another kind (return True: the caller runs it) or
    none is left before `until` (return False). Everything the loop reads is a local
    variable; `moment` gets the clock's time and its count."""
    (times, at, tied), (arriving, due), (now, seq, _) = hot, on_the_way, moment
    (start_event, computed_event), queue = fns, sim.clock.queue
    steps, k, durations, fetched, pushing = (sim.steps, sim.accumulate, sim.durations,
                                             sim.fetched, sim.pushing)
    versions = sim.server.versions
    fetches, pushes, shards, buffered = (tables.fetches, tables.pushes, tables.shards,
                                         ~len(tables.fetches))
    limit = math.inf if until is None else until
    arrive = _arrivals(sim, tables, on_the_way, log, updates, moment)
    try:
        while True:
            if queue and _clock_first(queue, times, at, due):
                return queue[0][0] <= limit  # another event first: the clock runs it
            if due and (not times or due[0][0] <= times[0]):  # pushes arrive (urgent)
                if due[0][0] > limit:
                    return False
                now = arrive(times[0] if times and times[0] < limit else limit)
                continue
            if not times or times[0] > limit:
                return False
            now, (rank, step), fn = next_hot(times, at, tied)
            if fn is start_event:  # fetch from every shard, then compute
                if step == steps:  # the worker is done
                    heappop(times)
                    continue
                log += (rank, step, now)
                end = _fetch(fetches[rank], now, log)
                fetched[rank] = versions[:]
                t = end + durations[rank][step] if k == 1 else \
                    accumulated(end, durations[rank], step, k)
                item = t, seq, computed_event, (rank, step)
            else:  # push to every shard, start the next step once they are sent
                log += (buffered - rank, step, now)
                t = _push(pushes[rank], now, log, seq, rank, step, arriving, due)
                pushing[rank] = [shards, 0, None]
                seq += shards
                item = t, seq, start_event, (rank, step + 1)
                if len(log) > FLUSH:
                    tables.rows.add(log, updates)
            seq += 1
            if at.setdefault(t, item) is not item:  # another event is due then: after it
                tied.setdefault(t, []).append(item)
            heapreplace(times, t)
    finally:
        moment[:2] = now, seq


def _fetch(route: list, now: float, log: list) -> float:
    """Book a worker's fetches, one per shard: each in the shard's fetch line once the shard's
    taken updates are applied (Resource.book, inlined); log each start; return when the last
    one ends."""
    end = now
    for line, seconds, shard in route:
        a = shard.free_at if shard.free_at > now else now
        if line.free_at > a:
            a = line.free_at
        b = line.free_at = a + seconds
        log.append(a)
        if b > end:
            end = b
    return end


def _push(route: list, now: float, log: list, seq: int, rank: int, step: int,
          arriving: list, due: list) -> float:
    """Book a worker's pushes, one per shard, each in the shard's push line; log each start
    and put its arrival in the shard's FIFO (the clock's event `seq` onwards). Returns when
    the last one ends."""
    end, first = now, seq - URGENT  # urgent: before the ordinary events of its moment
    for s, line, seconds in route:  # in shard order (_exact)
        a = line.free_at if line.free_at > now else now
        b = line.free_at = a + seconds
        log.append(a)
        if b > end:
            end = b
        fifo, item = arriving[s], (b, first + s, rank, step, s)
        if not fifo:
            heappush(due, item)
        fifo.append(item)
    return end


def _arrivals(sim: Any, tables: _Tables, on_the_way: tuple, log: list, updates: list,
              moment: list) -> Callable[[float], float]:
    """`arrive(horizon)`: the next push arrives, and the pushes after it up to `horizon` (a
    time) unless another event is asked for meanwhile; returns the time of the last."""
    arriving, due = on_the_way
    versions, counts, aggregate = sim.server.versions, sim.server.counts, sim.server.aggregate
    fetched, pushing, lines, seconds = sim.fetched, sim.pushing, tables.lines, tables.seconds
    queue, note = sim.clock.queue, updates.extend
    staleness, record = sim.push_staleness, recorder(sim)

    def arrive(horizon: float) -> float:
        while True:
            now, _, rank, step, s = due[0]
            fifo = arriving[s]
            fifo.popleft()
            if fifo:
                heapreplace(due, fifo[0])
            else:
                heappop(due)
            # shard s takes it (Simulation.take; ParameterServer.push, timing only)
            mine = pushing[rank]
            lag = versions[s] - fetched[rank][s]
            if lag > mine[1]:
                mine[1] = lag
            if aggregate == 1 or _gathered(counts, s, aggregate):  # the update, behind it
                versions[s] += 1
                line = lines[s]
                u0 = line.free_at if line.free_at > now else now
                u1 = line.free_at = u0 + seconds[s]
                note((len(log), s, step, u0))  # its row: after those of the events logged
                if mine[2] is None or u1 > mine[2]:
                    mine[2] = u1
            mine[0] -= 1
            if mine[0] == 0:  # every shard has it (Simulation.pushed)
                _, stale, applied_at = mine
                staleness.append(stale)
                if stale > moment[2]:  # the largest staleness of the update being gathered
                    moment[2] = stale
                if applied_at is not None:
                    record(applied_at, moment[2], rank, step)
                    moment[2] = 0
            if not due or due[0][0] > horizon or queue:
                return now

    return arrive


def _gathered(counts: list, s: int, aggregate: int) -> bool:
    """SoftSync (ParameterServer.push, timing only): shard s counts the push; does it complete
    the `aggregate` pushes of an update?"""
    counts[s] += 1
    if counts[s] < aggregate:
        return False
    counts[s] = 0
    return True


def _take_arrivals(clock: Any, arrived: Any, shards: int) -> tuple[list[deque], list]:
    """Take the pending arrivals off the clock: per shard a FIFO of (time, order, rank, step,
    shard), and the heap of each FIFO's first."""
    arriving: list[deque] = [deque() for _ in range(shards)]
    for t, q, _, (rank, step, s) in clock.take((arrived,)):
        arriving[s].append((t, q, rank, step, s))
    due = sorted(fifo[0] for fifo in arriving if fifo)
    return arriving, due


def _arrivals_left(arriving: list[deque], arrived: Any) -> list:
    """The arrivals that have not happened, as the clock's events."""
    return [(t, q, arrived, (rank, step, s)) for fifo in arriving for t, q, rank, step, s in fifo]


def _clock_first(queue: list, times: list, at: dict, due: list) -> bool:
    """Is the clock's own next event (another kind) due before the loop's next one?"""
    mine = [at[times[0]][:2]] if times else []
    if due:
        mine.append(due[0][:2])
    return not mine or queue[0][:2] < min(mine)
