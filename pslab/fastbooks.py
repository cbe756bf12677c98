"""The shards' books of the duplex loop (fastduplex.py): each push's arrivals, booked when it
is sent.

A shard's push line is first come first served and only the pushes that arrive book its
update line, so when a push is sent its arrival on each shard is known: when (the line's end),
what it finds (the shard's version, hence its lag) and where its update goes. `push` books
them all then, and the push joins the history then (pushes complete in the order they were
sent). What the rest of the run reads of a shard is what the arrivals that have happened left
it: a fetch finds them by their time (`bisect`). A segment of the loop ends at a cut (a
moment, or the clock's own next event): `cut` takes back what the arrivals after it did, and
gives them back as the clock's events.

The books are flat: per shard, the arrivals' times and the update line's free time after each
(lists, in the order they arrive, which is the order they were sent); per push, one entry in
`sent`. The n-th arrival on a shard leaves its version and push count at divmod(count + n,
aggregate) from the segment's start (ParameterServer.push counts every push), so neither is
stored; whatever else a cut or an update's row needs is made from these when it is asked for,
not per push: a run of 80,000 pushes books ~2x faster so.
Layer: actors (below fastduplex.py), above the clock and the timeline.
"""
from __future__ import annotations

import math
from bisect import bisect_left
from collections import deque
from itertools import compress, count, repeat
from typing import Any, Callable

import numpy as np

from .engine import URGENT
from .fastlog import doubles
from .timeline import Record

# an arrival as a cut reads it: (time, the clock's count when it was scheduled; its shard as
# the arrival leaves it: version, the update line's free time, pushes counted; whose push:
# rank, step; its lag, and the end of the update it completes or None). Its clock order is
# count - URGENT, a large int: the books keep the small count and shift a cut instead.
T, SCHEDULED, VERSION, FREE, COUNT, RANK, STEP, LAG, APPLIED = range(9)
# a push sent, in Books.sent: the clock's count, the log's mark, rank, step, its lag, the end
# of the update it completes (-inf: none) and the round's staleness as it leaves it
COUNTED, MARK, BY, AT, STALE, MADE, ROUND = range(7)
SENT = 7


class Books:
    """Each shard's booked arrivals, and each push sent."""

    def __init__(self, sim: Any, rows: Any, arrivals: list):
        server, S = sim.server, len(sim.updates)
        self.sim, self.rows, self.shards, self.aggregate = sim, rows, S, server.aggregate
        self.lines = [line for _, line, _ in sim.updates]  # each shard's own line: its updates
        # each shard as the segment found it: the arrivals' (version, count) are counted on
        self.start = list(zip(server.versions, server.counts))
        # per shard, its arrivals: when (the n-th at index n - 1); its version and its update
        # line's free time after each (at index n; at 0, as the segment found them). A fetch
        # reads them at its number of arrivals: no int made per read (versions: ParameterServer's)
        self.times: list[list[float]] = [[] for _ in range(S)]
        self.readies: list[list[float]] = [[line.free_at] for line in self.lines]
        self.read_versions: list[list[int]] = [[v] for v in server.versions]
        self.reads = [0] * S  # per shard: the arrivals a fetch has found happened
        self.placed = [0] * S  # per shard: the arrivals whose updates have their rows
        self.sent: list = []  # per push sent, flat (SENT values; ROUND ...)
        self.settled = 0  # the pushes sent whose staleness and record are the run's (`settle`)
        # per shard, the arrivals of the pushes on their way at the start (indexes 1, 2, ...):
        # count, rank, step, lag; and per rank, where its arrivals are (shard, index)
        self.early: list[list[tuple]] = [[] for _ in range(S)]
        self.on_way: dict = {}
        self.happened = [0] * S  # per shard: the arrivals before the cut (cut's)
        # each shard as the pushes sent so far leave it
        self.versions, self.counts = server.versions[:], server.counts[:]
        self.free = [line.free_at for line in self.lines]
        self.before = [0] * len(sim.routes["push"])  # round staleness before a push on its way
        self.stalest = [sim.round_staleness]  # of the update being gathered
        self.ticks: deque = deque()  # with a progress bar: each record's arrival, as (t, order)
        self.carried: dict = {}  # rank -> (step, lag, applied) of a push begun before
        self.push = self._pusher()
        parts: dict = {}  # the pushes on their way: book their arrivals, in the clock's order
        for t, q, _, (rank, step, s) in arrivals:
            if rank not in parts:
                parts[rank] = list(sim.pushing[rank])
                self.carried[rank] = (step, *parts[rank][1:])
            part = parts[rank]
            lag, applied = self._take(s, t, q + URGENT, rank, step)
            part[0] -= 1
            part[1] = max(part[1], lag)
            if applied is not None:
                part[2] = applied if part[2] is None else max(part[2], applied)
            if part[0] == 0:
                self._complete(rank, step, part[1], part[2], (t, q))
        self.opening = self.stalest[0]  # before the first push sent

    def _take(self, s: int, t: float, count: int, rank: int, step: int) -> tuple:
        """Book shard s's arrival of a push on its way (Simulation.take): (its lag, its
        update's end)."""
        lag = self.versions[s] - self.sim.fetched[rank][s]
        applied = None
        if _gathered(self.counts, s, self.aggregate):
            self.versions[s] += 1
            applied = self.free[s] = max(self.free[s], t) + self.sim.updates[s][2]
        self.times[s].append(t)
        self.readies[s].append(self.free[s])
        self.read_versions[s].append(self.versions[s])
        self.early[s].append((count, rank, step, lag))
        self.on_way.setdefault(rank, []).append((s, len(self.times[s])))
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

    def _pusher(self) -> Callable[[int, int, float, int, list], float]:
        """`push(rank, step, now, seq, log)`: book a worker's pushes, one per shard in the
        shard's push line, logging each start, and their arrivals (`_take` and `_complete`,
        inlined); returns when the last one is sent."""
        sim = self.sim
        sent, counts, free, times = self.versions, self.counts, self.free, self.times
        fetched, aggregate = sim.fetched, self.aggregate
        # per worker, per shard: what its push there needs, looked up once, not per push
        plans = [[(s, line, cost, sim.updates[s][2], times[s].append, self.readies[s].append,
                   self.read_versions[s].append) for s, line, cost in route]
                 for route in sim.routes["push"]]
        progress, ticks, stalest, rows = sim.progress, self.ticks, self.stalest, self.rows
        book, none = self.sent.extend, -math.inf

        def push(rank: int, step: int, now: float, seq: int, log: list) -> float:
            mine, mark = fetched[rank], rows.logged + len(log)
            end, stale, applied = now, 0, none  # none: no update
            for s, line, cost, seconds, arrive, ready, counted in plans[rank]:  # (_exact)
                a = line.free_at
                if a < now:
                    a = now
                b = line.free_at = a + cost
                log.append(a)
                if b > end:
                    end = b
                version = sent[s]
                lag = version - mine[s]  # what it finds when it arrives at b
                if lag > stale:
                    stale = lag
                if aggregate == 1 or _gathered(counts, s, aggregate):
                    version = sent[s] = version + 1
                    u0 = free[s]
                    if u0 < b:
                        u0 = b
                    u1 = free[s] = u0 + seconds
                    if u1 > applied:
                        applied = u1
                    ready(u1)
                else:
                    ready(free[s])
                arrive(b)
                counted(version)
            if stale > stalest[0]:
                stalest[0] = stale
            book((seq, mark, rank, step, stale, applied, stalest[0]))  # its record: `settle`
            if applied != none:
                if progress is not None:
                    ticks.append(_key(max((t[-1], seq + s) for s, t in enumerate(times))))
                stalest[0] = 0
            return end

        return push

    def between(self, queue: list, times: list, at: dict, limit: float,
                now: float) -> tuple | None:
        """Before the loop's next event (or `limit`): the records whose arrival comes first
        tick the progress bar, and the clock's own next event, if it comes first, ends the
        segment. Returns None (go on) or (the cut, whether the clock's event runs next)."""
        mine = (times[0], at[times[0]][1]) if times and times[0] <= limit else (limit, math.inf)
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

    def state(self, s: int, n: int) -> tuple[int, int]:
        """Shard s's (version, pushes counted) after its n-th arrival."""
        version, count = self.start[s]
        more, count = divmod(count + n, self.aggregate)
        return version + more, count

    def sender(self, s: int, n: int) -> tuple:
        """Shard s's n-th arrival: (the clock's count, rank, step, its lag or None: a push sent
        in the segment, whose lag `cut` finds)."""
        early = self.early[s]
        if n <= len(early):
            return early[n - 1]
        p = SENT * (n - 1 - len(early))
        return self.sent[p + COUNTED] + s, self.sent[p + BY], self.sent[p + AT], None

    def until(self, s: int, key: tuple) -> int:
        """How many of shard s's arrivals come before `key` (time, count)."""
        times, (t, count) = self.times[s], key
        n = bisect_left(times, t)
        while n < len(times) and times[n] == t and self.sender(s, n + 1)[0] < count:
            n += 1
        return n

    def booked(self, s: int, n: int, lag: int | None = None) -> tuple:
        """Shard s's n-th arrival as a cut reads it; `lag`: its push's, when not its own."""
        count, rank, step, own = self.sender(s, n)
        version, pushes = self.state(s, n)
        free = self.readies[s][n]
        if lag is None:  # its push has not completed: its worker has not fetched since
            lag = own if own is not None else (self.state(s, n - 1)[0]
                                               - self.sim.fetched[rank][s])
        return (self.times[s][n - 1], count, version, free, pushes, rank, step, lag,
                free if pushes == 0 else None)

    def latest(self) -> dict:
        """rank -> (its latest push's arrivals as a cut reads them, the round's staleness
        before that push)."""
        out = {rank: ([self.booked(s, n) for s, n in where], self.before[rank])
               for rank, where in self.on_way.items()}
        if not self.sent:
            return out
        ranks = doubles(self.sent[BY::SENT])
        index = np.unique(ranks[::-1], return_index=True)[1]  # each rank's last, from the end
        early = [len(e) for e in self.early]
        for p in (len(ranks) - 1 - index).tolist():
            sent = self.sent[SENT * p:SENT * (p + 1)]
            ns = [1 + early[s] + p for s in range(self.shards)]
            whole = all(n <= happened for n, happened in zip(ns, self.happened))
            out[sent[BY]] = ([self.booked(s, n, sent[STALE] if whole else None)
                              for s, n in enumerate(ns)], self._before(p))
        return out

    def _before(self, p: int) -> int:
        """The round's staleness before the p-th push sent (0 after an update)."""
        if p == 0:
            return self.opening
        last = self.sent[SENT * (p - 1):SENT * p]
        return 0 if last[MADE] != -math.inf else last[ROUND]

    def settle(self) -> None:
        """The pushes sent so far join the staleness and (those that completed an update) the
        history, in the order they were sent: made here in C loops, not one by one."""
        sim, sent = self.sim, self.sent[SENT * self.settled:]
        self.settled = len(self.sent) // SENT
        sim.push_staleness += sent[STALE::SENT]
        made = list(map((-math.inf).__lt__, sent[MADE::SENT]))
        applied, stalest, ranks, steps = (compress(sent[i::SENT], made)
                                          for i in (MADE, ROUND, BY, AT))
        nan = math.nan  # the actors' very object
        sim.history += map(tuple.__new__, repeat(Record), zip(
            applied, repeat(nan), repeat(nan), stalest, count(len(sim.history) + 1), ranks,
            steps))

    def cut(self, cut: tuple) -> list:
        """The arrivals before `cut` (a clock key: time, order) have happened, the others not:
        the shards, the pushes on their way, the history, the staleness and the lines as the
        actors leave them then. Returns the arrivals to come, as the clock's events."""
        sim, back, cut = self.sim, [], _counted(cut)
        for s in range(self.shards):
            n = self.happened[s] = self.until(s, cut)
            sim.server.versions[s], sim.server.counts[s] = self.state(s, n)
            self.lines[s].free_at = self.readies[s][n]
            for m in range(n + 1, len(self.times[s]) + 1):
                count, rank, step, _ = self.sender(s, m)
                back.append((self.times[s][m - 1], count - URGENT, sim.push_arrived,
                             (rank, step, s)))
        self.settle()
        undone = []  # (arrival of its last shard, whether it made an update) of a cut push
        before = {}
        for rank, (booked, before[rank]) in self.latest().items():
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
            self.stalest[0] = before[undone[0][1]]
        sim.round_staleness = self.stalest[0]
        return back

    def due(self, upto: tuple) -> np.ndarray:
        """The updates whose arrival comes before `upto` (a clock key) and that have no rows
        yet, one row each (arrival, count, the sender's mark in the log, shard, step, start);
        from now on they have their rows (Rows.add)."""
        self.settle()
        parts, upto = [], _counted(upto)
        for s in range(self.shards):
            lo, hi = self.placed[s], self.until(s, upto)
            if hi <= lo:
                continue
            self.placed[s] = hi
            n = np.arange(lo + 1, hi + 1)
            made = (self.start[s][1] + n) % self.aggregate == 0  # arrivals that update
            arrival = doubles(self.times[s][lo:hi])
            start = np.maximum(doubles(self.readies[s][lo:hi]), arrival)
            senders = self._senders(s, lo + 1, hi + 1)
            rows = np.column_stack((arrival, senders[:, 0], senders[:, 1],
                                    np.full(hi - lo, float(s)), senders[:, 2], start))
            parts.append(rows[made])
        return np.concatenate(parts) if parts else np.empty((0, 6))

    def _senders(self, s: int, lo: int, hi: int) -> np.ndarray:
        """(count, mark, step) of shard s's arrivals lo..hi-1, as floats (exact: small ints)."""
        early = len(self.early[s])
        out = [(count, -1, step) for count, _, step, _ in self.early[s][lo - 1:hi - 1]]
        p0, p1 = max(lo - 1 - early, 0), max(hi - 1 - early, 0)  # the pushes sent in the segment
        mine = np.column_stack([doubles(self.sent[SENT * p0 + i:SENT * p1:SENT])
                                for i in (COUNTED, MARK, AT)])  # only these: packing costs
        mine[:, 0] += s  # the count of shard s's arrival: the push's own plus s
        return np.concatenate((np.array(out, dtype=np.float64).reshape(-1, 3), mine))

    def last_arrival(self) -> float:
        """When the last arrival that has happened happened (-inf: none); after `cut`."""
        return max((self.times[s][n - 1] for s, n in enumerate(self.happened) if n),
                   default=-math.inf)


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


def _gathered(counts: list, s: int, aggregate: int) -> bool:
    """ParameterServer.push, timing only: shard s counts the push; does it complete the
    `aggregate` pushes of an update?"""
    counts[s] += 1
    if counts[s] < aggregate:
        return False
    counts[s] = 0
    return True
