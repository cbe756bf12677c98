"""What the two inlined loops share: their hot events off the clock, and the rows of their log.

fastloop.py (one-at-a-time links) and fastduplex.py (duplex links) run the actors' timing-only
async runs with the hot events inlined. Each keeps those events in a heap of their times alone
(`take_hot`: floats compare ~3x faster than the clock's tuples; fastduplex.py keeps only its
compute ends there, its starts in a FIFO beside it) and gives back what has not run
(`pending`). Each event only logs who it was, when, and where its transfers started; numpy
then makes the spans' rows from that log a few thousand events at a time (`Rows.add`): the
transfers, the holes between them, the compute and update spans, every code, by the same float
operations on the same operands as the actors, in the actors' order.
Layer: actors (below fastloop.py and fastduplex.py), above the clock and the timeline.
"""
from __future__ import annotations

import math
import struct
from typing import Any, Callable

import numpy as np

from .timeline import Record

FLUSH = 5 * 1500  # logged values gathered before their rows are made (~1500 events)
BLOCK = 256  # records a packing format holds, rounded up to: a few formats serve every flush
_formats: dict = {}  # (a record's struct codes, records) -> their struct.Struct, compiled once


def packed(values: list, codes: str) -> np.ndarray:
    """Flat `values`, records of struct `codes` ("q": an int, "d": a float), as a 2-d array of
    8-byte values: read the float columns as they are, the int ones through `.view(np.int64)`.
    struct packs floats and small ints ~2x faster than numpy, and an int as an int64 ~2x
    faster than as a double (no float made per int). Compiling a format for n records costs
    about what packing them does: each is kept, n rounded up to a block (padded with zeros).
    The padding goes on `values` itself for the call (`*values, *padding` would copy them all
    into a list first, then into the call's tuple), and comes off again."""
    width = struct.calcsize(codes) // 8
    n, given = len(values) // width, len(values)
    size = -(-n // BLOCK) * BLOCK
    if (codes, size) not in _formats:
        _formats[codes, size] = struct.Struct(codes * size)
    values += [0] * (size * width - given)
    try:
        data = _formats[codes, size].pack(*values)
    finally:
        del values[given:]
    return np.frombuffer(data).reshape(-1, width)[:n]


def same_costs(sim: Any) -> bool:
    """Does each worker's push to a shard cost what its fetch does? (Rows reads one table.)"""
    fetches, pushes = sim.routes["fetch"], sim.routes["push"]
    return all([c for _, _, c in f] == [c for _, _, c in p] for f, p in zip(fetches, pushes))


def take_hot(clock: Any, hot: tuple) -> tuple[list[float], dict, dict]:
    """Take the events of the `hot` kinds off the clock (left with the others) into a heap of
    their times alone, `at` each time the event due then, and `tied`: the further events due
    at a time, in their order."""
    at: dict = {}
    tied: dict = {}
    mine = [(t, seq, hot[hot.index(fn)], args) for t, seq, fn, args in clock.take(hot)]
    for item in mine:
        if at.setdefault(item[0], item) is not item:
            tied.setdefault(item[0], []).append(item)
    return [item[0] for item in mine], at, tied  # sorted: a heap


def next_hot(times: list[float], at: dict, tied: dict) -> tuple[float, tuple, Any]:
    """The next of the events `take_hot` took, off `at` (and `tied`): (time, args, fn).
    Its time stays on the heap: the caller replaces it with that of the event it schedules."""
    now = times[0]
    _, _, fn, args = at.pop(now)
    if tied and now in tied:  # events at the same time: the next in line
        at[now] = tied[now].pop(0)
        if not tied[now]:
            del tied[now]
    return now, args, fn


def pending(at: dict, tied: dict) -> list:
    """The events `take_hot` took, and those scheduled since, that have not run."""
    out = list(at.values())
    for items in tied.values():
        out += items
    at.clear()
    tied.clear()
    return out


def recorder(sim: Any) -> Callable[[float, int, int, int], None]:
    """`record(applied_at, staleness, rank, step)`: Simulation.record with no numbers to score:
    the progress bar ticks and the update joins the history."""
    history, progress, nan = sim.history, sim.progress, math.nan
    new = tuple.__new__  # nan: the very object the actors' records hold, so they compare equal

    def record(applied_at: float, staleness: int, rank: int, step: int) -> None:
        if progress is not None:
            progress.update(1)
        history.append(new(Record, (applied_at, nan, nan, staleness, len(history) + 1, rank,
                                    step)))

    return record


def accumulated(start: float, durations: Any, step: int, k: int) -> float:
    """When a step of k minibatches that starts at `start` ends: its minibatches computed one
    after another (added in order, as the actors add them)."""
    t = start
    for d in durations[step * k:(step + 1) * k]:
        t += d
    return t


class Rows:
    """Makes the spans' rows of a log of events and adds them to the timeline.

    Per event the log holds (who, step, now, then one transfer start per shard, then, when
    the updates are "logged", one update start per shard). who: `rank` for a step's start
    (fetch, compute); `~rank` for a push that completed an update (push, then the updates);
    `~(W + rank)` for a push that completed none (W workers: `buffered - rank` with
    `buffered = ~W`). A push's updates are "booked" right behind it on the same resource (each
    starts where its push ends), "logged" (colocated shards: their starts in the log), or
    "apart" (duplex links: the shard books them when the push arrives; `add` takes them, and
    every push is logged as `~(W + rank)`).
    """

    def __init__(self, sim: Any, updates: str):
        routes = sim.routes["fetch"]  # a push costs what a fetch does (same_costs)
        self.workers, self.shards = len(routes), len(sim.updates)
        self.log_updates, self.push_updates = updates == "logged", updates != "apart"
        self.width = 3 + self.shards * (1 + self.log_updates)  # logged values per event
        self.codes = f"2q{self.width - 2}d"  # an event's: who and step, ints; the rest, floats
        cost = np.array([[seconds for _, _, seconds in route] for route in routes])
        self.cost = cost[:1] if (cost == cost[:1]).all() else cost  # one row: all alike
        self.update_cost = np.array([seconds for _, _, seconds in sim.updates])
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
        self.accumulate, self.timeline = sim.accumulate, timeline
        self.logged = 0  # the log's values made into rows so far

    def add(self, log: list, updates: list | None = None, upto: float = math.inf) -> None:
        """Add the rows of the logged events to the timeline, in the order the actors add them,
        and empty `log`. updates ("apart"): the update spans booked on the way, flat (arrival,
        order, mark, shard, step, start; mark: the log's length, counted from the run's start,
        when its push was logged): those that arrive by `upto` go in among the events' rows
        where they arrive, and leave `updates`."""
        del log[len(log) - len(log) % self.width:]  # an event cut short (a 2nd Ctrl-C): no row
        L = packed(log, self.codes)
        items, keep = self.items(L)
        if updates:
            items = self._place(items, keep, L[:, 2], updates, upto)
        self.timeline.rows.frombytes(memoryview(items.view(np.uint8)))  # no copy in between
        self.logged += len(log)
        del log[:]

    def _place(self, items: np.ndarray, keep: np.ndarray, now: np.ndarray, updates: list,
               upto: float) -> np.ndarray:
        """`items` with the rows of the updates that arrive by `upto` put in where they arrive:
        after the events before their moment (urgent: before those at it) and after their push
        (sent at that moment, at no cost), in the order they arrive. `keep`: which of each
        event's slots made an item (`items`)."""
        U = packed(updates, "d4qd")  # arrival, order, mark, shard, step (ints), start
        # by (arrival, order): the clock's. Each shard's arrivals come in order, so the sort
        # only merges runs (timsort); the due ones are a prefix of it, the others stay noted
        order = np.lexsort((U.view(np.int64)[:, 1], U[:, 0]))
        U = U.take(order, axis=0)  # whole records: ~3x faster than a column at a time
        due = int(np.searchsorted(U[:, 0], upto, "right"))
        if due < len(order):
            updates[:] = [v for i in np.sort(order[due:]).tolist()
                          for v in updates[6 * i:6 * i + 6]]
        else:
            del updates[:]
        U = U[:due]
        (mark, s, step), arrival, start = U.view(np.int64)[:, 2:5].T, U[:, 0], U[:, 5]
        # the event each precedes: the first at or after its arrival (urgent: before those at
        # it), and after its push. Arrivals and events are both in order: a stable sort of the
        # two merges them (~2x faster than a binary search per arrival)
        ahead = np.arange(due)
        merged = np.argsort(np.concatenate((arrival, now)), kind="stable")
        at = np.flatnonzero(merged < due) - ahead  # the events merged before each
        np.maximum(at, (mark - self.logged) // self.width + 1, out=at)
        rows = np.empty((due, 3))
        np.add(step * self.step_unit, self.update_codes[s], out=rows[:, 0])
        rows[:, 1] = start
        np.add(start, self.update_cost[s], out=rows[:, 2])
        if due > 1 and (at[1:] < at[:-1]).any():  # a push sent at its arrival's moment: after it
            again = np.argsort(at, kind="stable")  # (what np.insert did: by event, then arrival)
            at, rows = at[again], rows[again]
        # each update's place in the whole: the items of the events before its event, and the
        # updates before it. Column by column: a sum along a short axis (keep.sum(axis=1)) is
        # numpy's slow case
        counts = np.full(len(keep) + 1, self.shards, dtype=np.intp)  # each transfer is kept
        counts[0] = 0
        for column in keep.T[self.shards:]:
            np.add(counts[1:], column, out=counts[1:])
        place = counts.cumsum()[at] + ahead  # cumsum()[e]: the items of the events before e
        whole = np.empty(len(items) + due, dtype="V24")
        whole[place] = rows.view("V24").ravel()
        theirs = np.ones(len(whole), dtype=bool)
        theirs[place] = False
        whole[theirs] = items
        return whole

    def items(self, L: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The rows of the logged events (each a 24-byte item: code, start, end), and which of
        each event's slots made one (E x slots). Every value is the loop's own or the same
        float operation on the same operands as the actors', so the rows are theirs bit for
        bit. Each column is made as one vector over the events (a shard's transfers, holes, a
        minibatch's compute): numpy works along the short axis (S shards) one call per event."""
        S, k, W = self.shards, self.accumulate, self.workers
        tail = max(k, S) if self.push_updates else k
        R = np.empty((len(L), 2 * S + tail, 3))
        keep = np.ones(R.shape[:2], dtype=bool)  # the transfers' are; the others set below
        I = L.view(np.int64)
        who, step, now = I[:, 0], I[:, 1], L[:, 2]
        pushed = who < 0
        rank = who ^ (who >> 63)  # ~who for a push, who for a start
        updated = pushed & (rank < W)  # only in the logs with the updates behind their push
        np.remainder(rank, W, out=rank)  # a push's ~who is rank or W + rank
        at = step * self.step_unit
        code = at + (rank + 1) * self.rank_unit  # exact: whole numbers below 2^53 (columns.py)
        # the transfers, a shard at a time: where each starts (logged) and ends
        A = [L[:, 3 + s] for s in range(S)]
        B = [R[:, s, 2] for s in range(S)]
        for s in range(S):
            cost = self.cost[0, s] if len(self.cost) == 1 else self.cost[:, s].take(rank)
            np.add(A[s], cost, out=B[s])
            np.add(code, np.where(pushed, self.push_codes[s], self.fetch_codes[s]),
                   out=R[:, s, 0])
            R[:, s, 1] = A[s]
        self._holes(R, keep, now, A, B, code)
        # a start's compute, one span per minibatch; a push's updates, each behind its push
        t = now
        for s in range(S):  # the transfers' end, shard by shard
            t = np.maximum(t, B[s])
        first = rank * self.durations.shape[1] + step * k  # flat: faster
        for m in range(tail):
            slot = R[:, 2 * S + m]
            if m < k:
                d = self.durations.ravel().take(first + m)
                fields = code + (self.compute + (m + 1) * self.micro_unit), t, t + d
                t = fields[2]
            if m < S and self.push_updates:
                u = L[:, 3 + S + m] if self.log_updates else np.maximum(B[m], now)
                update = at + self.update_codes[m], u, u + self.update_cost[m]
                fields = ([np.where(pushed, a, b) for a, b in zip(update, fields)] if m < k
                          else update)
            for c in range(3):
                slot[:, c] = fields[c]
            if m >= k:
                keep[:, 2 * S + m] = updated
            elif m < S and self.push_updates:
                np.logical_or(updated, ~pushed, out=keep[:, 2 * S + m])
            else:
                np.logical_not(pushed, out=keep[:, 2 * S + m])
        # each row as one 24-byte item: numpy picks kept items far faster than kept rows of 3
        return R.reshape(-1, 3).view("V24").ravel()[keep.ravel()], keep

    def _holes(self, R: np.ndarray, keep: np.ndarray, now: np.ndarray, A: list,
               B: list, code: np.ndarray) -> None:
        """The holes: the parts of [now, end] that no transfer covers (timeline.gaps, per
        event), into the columns S..2S of R (kept where there is one). A, B: each shard's
        transfers' starts and ends."""
        S = self.shards
        starts, ends = A, B
        unordered = np.zeros(len(now), dtype=bool)
        for s in range(1, S):
            unordered |= A[s] < A[s - 1]
        if unordered.any():  # gaps' sorted(): by (start, end), in the events that need it
            A2, B2 = np.stack(A, axis=1), np.stack(B, axis=1)
            order = np.lexsort((B2[unordered], A2[unordered]), axis=1)
            A2[unordered] = np.take_along_axis(A2[unordered], order, 1)
            B2[unordered] = np.take_along_axis(B2[unordered], order, 1)
            starts, ends = list(A2.T), list(B2.T)
        hole, top = code + self.hole, None  # top: the latest end so far (maximum.accumulate)
        for j in range(S):
            slot = R[:, S + j]
            slot[:, 0] = hole
            if j == 0:
                slot[:, 1] = now
                top = ends[0]
            else:
                np.maximum(top, now, out=slot[:, 1])
                top = np.maximum(top, ends[j])
            slot[:, 2] = starts[j]
            np.greater(starts[j], slot[:, 1], out=keep[:, S + j])
