"""The shards' books of the duplex loop (fastduplex.py): each push's arrivals, booked when it
is sent.

A shard's push line is first come first served and only the pushes that arrive book its
update line, so when a push is sent its arrival on each shard is known: when (the line's end),
what it finds (the shard's version, hence its lag) and where its update goes. The loop's push
(fastduplex._events, inlined there) books them all then, on a FIFO per shard, and the push
joins the history then (pushes complete in the order they were sent). What the rest of the
run reads of a shard is what the arrivals that have happened left it: a fetch takes them off
the FIFO up to its moment (`arrived`). A segment of the loop ends at a cut (a moment, or the
clock's own next event): `cut` takes back what the arrivals after it did, and gives them back
as the clock's events.
Layer: actors (below fastduplex.py), above the clock and the timeline.
"""
from __future__ import annotations

import math
from collections import deque
from typing import Any

from .engine import URGENT
from .timeline import Record

# a booked arrival: (time, the clock's count when it was scheduled; its shard as the arrival
# leaves it: version, the update line's free time, pushes counted; whose push: rank, step; its
# lag, and the end of the update it completes or None). Its clock order is count - URGENT, a
# large int that costs an allocation per use, so the books keep the small count and shift a
# cut instead (`_counted`).
T, SCHEDULED, VERSION, FREE, COUNT, RANK, STEP, LAG, APPLIED = range(9)


class Books:
    """Each shard's booked arrivals, and each worker's latest push (for a cut)."""

    def __init__(self, sim: Any, rows: Any, arrivals: list):
        server, S = sim.server, len(sim.updates)
        self.sim, self.rows, self.shards = sim, rows, S
        self.lines = [line for _, line, _ in sim.updates]  # each shard's own line: its updates
        self.fifos: list[deque] = [deque() for _ in range(S)]
        # each shard as the last arrival that has happened left it: what a fetch reads
        self.arrived = [(-math.inf, -math.inf, server.versions[s], self.lines[s].free_at,
                         server.counts[s], None, None, 0, None) for s in range(S)]
        # each shard as the pushes sent so far leave it
        self.versions, self.counts = server.versions[:], server.counts[:]
        self.free = [line.free_at for line in self.lines]
        self.last: list[list] = [[None] * S for _ in sim.routes["push"]]  # its booked arrivals
        self.before = [0] * len(self.last)  # round staleness before each latest push completed
        self.stalest = [sim.round_staleness]  # of the update being gathered
        self.notes: list = []  # per update, flat: arrival, order, sender's mark, shard, step, start
        self.ticks: deque = deque()  # with a progress bar: each record's arrival, as (t, order)
        self.carried: dict = {}  # rank -> (step, lag, applied) of a push begun before
        # per worker, per shard: what the loop's push there needs, looked up once, not per push
        self.plans = [[(s, line, cost, sim.updates[s][2], self.fifos[s].append)
                       for s, line, cost in route] for route in sim.routes["push"]]
        parts: dict = {}  # the pushes on their way: book their arrivals, in the clock's order
        for t, q, _, (rank, step, s) in arrivals:
            if rank not in parts:
                parts[rank] = list(sim.pushing[rank])
                self.carried[rank] = (step, *parts[rank][1:])
            part = parts[rank]
            lag, applied = self._take(s, t, q, -1, rank, step)
            part[0] -= 1
            part[1] = max(part[1], lag)
            if applied is not None:
                part[2] = applied if part[2] is None else max(part[2], applied)
            if part[0] == 0:
                self._complete(rank, step, part[1], part[2], (t, q))

    def _take(self, s: int, t: float, q: int, mark: int, rank: int, step: int) -> tuple:
        """Book shard s's arrival of a push (Simulation.take): (its lag, its update's end)."""
        lag = self.versions[s] - self.sim.fetched[rank][s]
        applied = None
        if gathered(self.counts, s, self.sim.server.aggregate):
            self.versions[s] += 1
            u0 = max(self.free[s], t)
            applied = self.free[s] = u0 + self.sim.updates[s][2]
            self.notes.extend((t, q + URGENT, mark, s, step, u0))
        self.last[rank][s] = book = (t, q + URGENT, self.versions[s], self.free[s],
                                     self.counts[s], rank, step, lag, applied)
        self.fifos[s].append(book)
        return lag, applied

    def _complete(self, rank: int, step: int, stale: int, applied: float | None,
                  key: tuple) -> None:
        """Every shard has taken the push (Simulation.pushed and record, timing only)."""
        sim = self.sim
        self.before[rank] = self.stalest[0]
        sim.push_staleness.append(stale)
        self.stalest[0] = max(self.stalest[0], stale)
        if applied is not None:
            if sim.progress is not None:
                self.ticks.append(key)
            sim.history.append(Record(applied, math.nan, math.nan, self.stalest[0],
                                      len(sim.history) + 1, rank, step))
            self.stalest[0] = 0

    def between(self, queue: list, mine: tuple, now: float) -> tuple | None:
        """Before the loop's next event (`mine`: its clock key, or (until, inf)): the records
        whose arrival comes first tick the progress bar, and the clock's own next event, if it
        comes first, ends the segment. Returns None (go on) or (the cut, whether the clock's
        event runs next)."""
        done = (now, math.inf)  # what has happened: the arrivals up to the last event's moment
        while True:
            first = queue[0][:2] if queue else None
            tick = self.ticks[0] if self.ticks else None
            if first is not None and first < mine and (tick is None or first < tick):
                return max(first, done), True  # a stop asked for (-inf): here
            if tick is None or not tick < mine:
                return None
            self.ticks.popleft()
            self.sim.progress.update(1)  # it may ask for a stop: right after this arrival
            done = max(done, (tick[0], tick[1] + 1))

    def cut(self, cut: tuple) -> list:
        """The arrivals before `cut` (a clock key: time, order) have happened, the others not:
        the shards, the pushes on their way, the history, the staleness and the update rows as
        the actors leave them then. Returns the arrivals to come, as the clock's events."""
        sim, back, cut = self.sim, [], _counted(cut)
        for s, fifo in enumerate(self.fifos):
            while fifo and fifo[0][:2] < cut:
                self.arrived[s] = fifo.popleft()
            book = self.arrived[s]
            sim.server.versions[s], sim.server.counts[s] = book[VERSION], book[COUNT]
            self.lines[s].free_at = book[FREE]
            back += [(*_key(b[:2]), sim.push_arrived, (b[RANK], b[STEP], s)) for b in fifo]
        undone = []  # (arrival of its last shard, whether it made an update) of a cut push
        for rank, books in enumerate(self.last):
            booked = [b for b in books if b is not None]
            if not booked:
                continue
            step = booked[0][STEP]
            carried = self.carried.get(rank)
            _, lag, applied = carried if carried and carried[0] == step else (step, 0, None)
            whole = _latest(applied, [b[APPLIED] for b in booked])
            taken = [b for b in booked if b[:2] < cut]
            lag = max([lag] + [b[LAG] for b in taken])
            sim.pushing[rank] = [len(booked) - len(taken), lag,
                                 _latest(applied, [b[APPLIED] for b in taken])]
            if len(taken) < len(booked):
                undone.append((max(b[:2] for b in booked), rank, whole is not None))
        undone.sort()
        if undone:  # they complete in the order they were sent: the last ones booked
            del sim.push_staleness[len(sim.push_staleness) - len(undone):]
            del sim.history[len(sim.history) - sum(made for _, _, made in undone):]
            self.stalest[0] = self.before[undone[0][1]]
        sim.round_staleness = self.stalest[0]
        notes = self.notes
        self.notes[:] = [v for i in range(0, len(notes), 6)
                         if (notes[i], notes[i + 1]) < cut for v in notes[i:i + 6]]
        return back

    def last_arrival(self) -> float:
        """When the last arrival that has happened happened (-inf: none)."""
        return max(book[T] for book in self.arrived) if self.arrived else -math.inf


def last_key(books: list) -> tuple:
    """The clock's key of the last arrival of a push booked on every shard (`books`)."""
    return _key(max(book[:2] for book in books))


def _key(booked: tuple) -> tuple:
    """The clock's key (time, order) of an arrival booked at (time, count): urgent."""
    return booked[0], booked[1] - URGENT


def _counted(key: tuple) -> tuple:
    """A clock key (time, order) as the books' (time, count) compare with it: exact ints, and
    an infinite order stays infinite."""
    return key[0], key[1] + URGENT


def _latest(applied: float | None, ends: list) -> float | None:
    """The latest of `applied` and the update ends in `ends` (None: there is none)."""
    ends = [e for e in [applied, *ends] if e is not None]
    return max(ends) if ends else None


def gathered(counts: list, s: int, aggregate: int) -> bool:
    """ParameterServer.push, timing only: shard s counts the push; does it complete the
    `aggregate` pushes of an update?"""
    counts[s] += 1
    if counts[s] < aggregate:
        return False
    counts[s] = 0
    return True
