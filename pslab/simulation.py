"""The actors of figures 000 and 001 on the clock: workers fetch, compute, push; shards update.

This module decides *when* (the clock and the policy); the Worker and ParameterServer decide
*what* (the arithmetic), called the moment the clock reaches each event. A shard's arithmetic
happens when its job is booked: the shard serves jobs in booking order, so every fetch sees
exactly the updates booked before it — the same order the virtual clock shows.

Layer: actors and policies (with modes, allreduce, snapshot), above the result type `Run`
and the arithmetic; the backends (simulate.py, processes/) run it, it never calls them.
"""
from __future__ import annotations

import math
from collections import defaultdict
from heapq import heappush
from typing import Callable

import numpy as np

from .cluster import Cluster
from .engine import Clock, Resource, collector_paused, stop_on_interrupt
from .fastloop import book_transfers, push_updates, run_inline
from .modes import Policy
from .server import ParameterServer
from .columns import NONE, Columns
from .timeline import Record, Span  # Record: public here too
from .worker import Worker


# tuple.__new__ skips NamedTuple's Python-level __new__: timing-only runs make ~10^6 spans.
_new = tuple.__new__


class Simulation:
    def __init__(self, server: ParameterServer, workers: list[Worker], policy: Policy,
                 cluster: Cluster, durations: np.ndarray, steps: int, shard_bytes: list[int],
                 evaluate: Callable[[], tuple[float, float]], staleness_lr: bool = False):
        self.server, self.workers, self.policy = server, workers, policy
        self.steps, self.accumulate = steps, workers[0].accumulate
        self.durations = durations
        self.staleness_lr = staleness_lr  # Zhang et al.: each push's lr divided by its staleness
        total = sum(shard_bytes) or 1
        self.shards = [Resource() for _ in shard_bytes]
        self._shard_ids = range(len(shard_bytes))
        # (shard index, its resource, seconds) for each kind of job: the hot loops read one list
        transfers = [(s, r, cluster.transfer_time(b))
                     for s, (r, b) in enumerate(zip(self.shards, shard_bytes))]
        self._transfers = [_routes(transfers, cluster, rank, len(workers))
                           for rank in range(len(workers))]
        self._updates = [(s, r, cluster.update_duration(b / total))
                         for s, (r, b) in enumerate(zip(self.shards, shard_bytes))]
        self.evaluate = evaluate
        self.clock = Clock()
        # sized to the run: the hot loops add precomputed codes (columns.py)
        self.timeline = Columns(workers=len(workers), shards=len(shard_bytes),
                                micros=self.accumulate)
        timeline = self.timeline
        timeline.code(len(workers) - 1, len(shard_bytes) - 1 if shard_bytes else None, "push",
                      steps, self.accumulate - 1)  # the largest code: past 2^53, refused now
        # The codes' parts as floats: their sums stay exact (below 2^53, checked above), and
        # the rows take floats ~2x faster than large ints (array.fromlist converts each value)
        self._rank_unit, self._step_unit = float(timeline.worker_unit), float(timeline.step_unit)
        self._micro_unit = float(timeline.micro_unit)
        self._compute = float(timeline.code(None, None, "compute", 0))  # + rank, micro, step
        # kind and note of a transfer -> each shard's part of its code
        self._job_codes = {(kind, note): [float(timeline.code(None, s, kind, 0, None, note))
                                          for s in self._shard_ids]
                           for kind, note in (("fetch", None), ("push", None),
                                              ("push", "dropped"))}
        self._hole = float(timeline.code(None, None, "idle", 0, None, "queue"))  # queue's idle
        self._update_codes = self._job_codes[("update", None)] = [
            float(timeline.code(None, s, "update", 0)) for s in self._shard_ids]
        self.history: list[Record] = []
        self.push_staleness: list[int] = []  # of every push the server used, in arrival order
        self._numerics = server.params is not None  # False: timing only, no keys to move
        self._fetched = [server.versions[:] for _ in workers]  # per worker: versions it computes on
        self._slowest = 0  # the fewest pushes any worker has done, kept in O(1) with a histogram
        self._how_many = defaultdict(int, {0: len(workers)})  # pushes done -> workers
        self._waiting: dict[int, list[tuple[int, float]]] = defaultdict(list)
        self._push_done = [0.0] * len(workers)
        self._stale = 0  # largest staleness among the pushes of the update being gathered
        self._closed = 0  # barrier rounds whose update is complete (later pushes are dropped)
        self._members: dict[int, list[int]] = defaultdict(list)  # round -> who pushed into it
        self.progress = None  # a tqdm bar, ticked once per server update
        # bound once: a bound method made per event is an allocation ~10^5 times in a large run
        self._start_step, self._computed = self.start_step, self.computed
        self.interrupted = False
        self.started = False
        self._barrier = policy.waits_for_update  # read once: SSP answers it with a property
        # Only a bounded-staleness policy can hold a worker back before a step.
        self._gated = not self._barrier and policy.bound < steps

    def run(self, until: float | None = None) -> None:
        """Run the clock to its end, or (until) through the events up to that virtual time."""
        if not self.started:  # a simulation resumed from a checkpoint is already under way
            self.started = True
            for w in self.workers:
                self.start_step(w.rank, 0)
        try:
            # worth it from some 10^4 objects on (engine.collector_paused)
            big = len(self.workers) * self.steps * self.accumulate >= 1000
            with collector_paused(promote=big), stop_on_interrupt(self.clock):
                if self._inline():
                    run_inline(self, until)  # the same run, its two hot events inlined
                else:
                    self.clock.run(until)
        except KeyboardInterrupt:  # a second Ctrl-C, or not the main thread: stop at once
            self.interrupted = True
        self.interrupted = self.interrupted or self.clock.stopped

    def _inline(self) -> bool:
        """May fastloop.run_inline run this simulation? Only where it does exactly what these
        actors do: their own handlers, timing only, no barrier, no staleness bound."""
        mine = type(self)
        return (not self._numerics and not self._barrier and not self._gated
                and self.evaluate is no_numbers and all(
                    getattr(mine, name) is getattr(Simulation, name)
                    for name in ("start_step", "computed", "_transfer", "_push", "_record")))

    @property
    def finished(self) -> bool:
        """No event is pending: the run is over (or was interrupted)."""
        return not self.clock._heap

    # --- a worker's step: gate, fetch, compute --------------------------------------------
    def start_step(self, rank: int, step: int) -> None:
        if step == self.steps:
            return
        if self._gated and not self.policy.may_start(step, self._slowest):
            self._waiting[step].append((rank, self.clock.now))
            return
        t = self._transfer("fetch", rank, step)
        server = self.server  # booked now, so each shard's fetch sees the updates booked before
        self._fetched[rank] = server.versions[:]  # in timing-only runs, all that a fetch brings
        if self._numerics:
            fetch = self.workers[rank].fetch
            for s in self._shard_ids:
                fetch(server, s)
        row, k = self.durations[rank], self.accumulate
        code = step * self._step_unit + (rank + 1) * self._rank_unit + self._compute
        micro_unit = self._micro_unit
        if k == 1:  # one minibatch, one span (micro 0 counts as 1 in the code)
            d = row[step]
            self.timeline.rows.fromlist([code + micro_unit, t, t + d])
            t += d
        else:
            out, first = [], step * k
            for micro in range(1, k + 1):
                d = row[first + micro - 1]
                out += (code + micro * micro_unit, t, t + d)
                t += d
            self.timeline.rows.fromlist(out)  # one call per event: cheaper than one per span
        clock = self.clock  # Clock.at, inlined (t > now): ~10^5 calls in a large run
        heappush(clock._heap, (t, clock._seq, self._computed, (rank, step)))
        clock._seq += 1

    def _transfer(self, kind: str, rank: int, step: int, note: str | None = None) -> float:
        """Book one transfer per shard, all asked for now; returns when the last one ends.
        Time spent queued behind other jobs on a busy shard becomes idle, noted "queue"."""
        who = step * self._step_unit + (rank + 1) * self._rank_unit
        out: list = []
        end = book_transfers(out, self._transfers[rank], self._job_codes[kind, note], who,
                             who + self._hole, self.clock.now)
        self.timeline.rows.fromlist(out)
        return end

    # --- push, and the server's update --------------------------------------------------
    def computed(self, rank: int, step: int) -> None:
        clock, worker = self.clock, self.workers[rank]
        if self._numerics:
            worker.compute(step)
        barrier = self._barrier
        if barrier and step < self._closed:  # its round already has its N pushes (backup)
            done = self._transfer("push", rank, step, "dropped")
            clock.at(done, self.start_step, rank, step + 1)  # fetch the new weights, go on
            return
        done = self._transfer("push", rank, step)
        applied_at, lag = self._push(worker, clock.now, step)
        self.push_staleness.append(lag)
        if lag > self._stale:
            self._stale = lag
        if barrier:
            self._push_done[rank] = done
            self._members[step].append(rank)
        if applied_at is not None:  # this push completed an update
            stale, self._stale = self._stale, 0
            if barrier:
                self._closed += 1
                self._record(applied_at, stale, None, step)
                clock.at(applied_at, self.round_applied, step)
            else:
                self._record(applied_at, stale, rank, step)
        if self._gated:
            clock.at(done, self.pushed_one, rank, step)
        elif not barrier:  # nothing to count: go straight on to the next step when it is sent
            heappush(clock._heap, (done, clock._seq, self._start_step, (rank, step + 1)))
            clock._seq += 1  # Clock.at, inlined as in start_step

    def _push(self, worker: Worker, now: float, step: int) -> tuple[float | None, int]:
        """Hand every shard its slice; book the updates that completes. Returns when the last
        update ends (None: the server only buffered the push) and the push's staleness."""
        grads = worker.grads  # empty in timing-only runs: push None, as Worker.push would
        out: list = []
        applied_at, stale = push_updates(
            out, self._updates, self._update_codes, step * self._step_unit, now,
            self.server.versions, self._fetched[worker.rank], self.server.push, grads,
            self.staleness_lr and bool(grads))  # lr / staleness, Zhang et al.
        if out:
            self.timeline.rows.fromlist(out)
        return applied_at, stale

    def _record(self, time: float, staleness: int, rank: int | None, step: int) -> None:
        evaluate, history = self.evaluate, self.history
        loss, acc = NO_NUMBERS if evaluate is no_numbers else evaluate()
        if self.progress is not None:
            self.progress.update(1)
        history.append(_new(Record, (time, loss, acc, staleness, len(history) + 1, rank, step)))

    def round_applied(self, step: int) -> None:
        """Sync: the averaged update is on every shard; the round's workers waited for it, now
        they fetch (with backup workers, the late ones are already on their way)."""
        now, members = self.clock.now, self._members.pop(step)
        for rank in sorted(members):
            if self._push_done[rank] < now:
                self.timeline.append(_new(Span, (rank, None, "idle", self._push_done[rank], now,
                                                 step, None, "barrier")))
        for rank in sorted(members):
            self.start_step(rank, step + 1)

    def pushed_one(self, rank: int, step: int) -> None:
        """SSP: the worker's push is sent; it may go on unless it is too far ahead. (Ungated
        policies go straight to start_step: they have nothing to count.)"""
        counts = self._how_many
        counts[step] -= 1
        counts[step + 1] += 1
        if counts[self._slowest] == 0:
            while counts[self._slowest] == 0:
                self._slowest += 1
            self._release()
        self.start_step(rank, step + 1)

    def _release(self) -> None:
        now = self.clock.now
        for step in sorted(s for s in self._waiting if self.policy.may_start(s, self._slowest)):
            for rank, since in self._waiting.pop(step):
                if now > since:
                    self.timeline.append(
                        _new(Span, (rank, None, "idle", since, now, step, None, "barrier")))
                self.start_step(rank, step)

    @property
    def makespan(self) -> float:
        # Every span ends by the last event, except updates, whose ends the history records.
        last_update = self.history[-1].time if self.history else 0.0
        return max(self.clock.now, last_update)


def _routes(transfers: list, cluster: Cluster, rank: int, workers: int) -> list:
    """A worker's transfer jobs: a colocated worker reaches its own shard locally, at no cost
    and in no queue (a private resource); every other shard over that shard's link."""
    if not cluster.colocated:
        return transfers
    return [(s, Resource(), 0.0) if cluster.host(s, workers) == rank else (s, r, cost)
            for s, r, cost in transfers]


NO_NUMBERS = (math.nan, math.nan)


def no_numbers() -> tuple[float, float]:
    return NO_NUMBERS
