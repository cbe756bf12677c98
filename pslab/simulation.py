"""The actors of figures 000 and 001 on the clock: workers fetch, compute, push; shards update.

This module decides *when* (the clock and the policy); the Worker and ParameterServer decide
*what* (the arithmetic), called the moment the clock reaches each event. A shard's arithmetic
happens when its job is booked: the shard serves jobs in booking order, so every fetch sees
exactly the updates booked before it — the same order the virtual clock shows.
"""
from __future__ import annotations

import gc
import math
from collections import defaultdict
from typing import Callable, NamedTuple

import numpy as np

from .cluster import Cluster
from .engine import Clock, Resource, stop_on_interrupt
from .modes import Policy
from .server import ParameterServer
from .timeline import Span, gaps
from .worker import Worker


class Record(NamedTuple):
    """One server update: when it was applied and what the model was then."""

    time: float
    loss: float  # cross-entropy on the whole training split (nan in timing-only runs)
    accuracy: float  # on the held-out test split (nan in timing-only runs)
    staleness: int  # server version when applied minus the version the gradient was computed on
    version: int  # updates applied so far, this one included
    worker: int | None  # whose push it was (None: a sync round, all workers)
    step: int


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
        self.timeline: list[Span] = []
        self.history: list[Record] = []
        self.push_staleness: list[int] = []  # of every push the server used, in arrival order
        self.pushed = [0] * len(workers)  # pushes completed, per worker (for SSP)
        self._slowest = 0  # min(self.pushed), kept up to date in O(1) with a histogram
        self._how_many = defaultdict(int, {0: len(workers)})  # pushes done -> workers
        self._waiting: dict[int, list[tuple[int, float]]] = defaultdict(list)
        self._push_done = [0.0] * len(workers)
        self._stale = 0  # largest staleness among the pushes of the update being gathered
        self._closed = 0  # barrier rounds whose update is complete (later pushes are dropped)
        self._members: dict[int, list[int]] = defaultdict(list)  # round -> who pushed into it
        self.progress = None  # a tqdm bar, ticked once per server update
        self.interrupted = False
        self.started = False
        # Only a bounded-staleness policy can hold a worker back before a step.
        self._gated = not policy.waits_for_update and policy.bound < steps

    def run(self) -> None:
        if not self.started:  # a simulation resumed from a checkpoint is already under way
            self.started = True
            for w in self.workers:
                self.start_step(w.rank, 0)
        # A run allocates up to ~10^6 spans and frees none: the cyclic garbage collector would
        # rescan them again and again (half the time of a large timing-only run) for nothing.
        enabled = gc.isenabled()
        gc.disable()
        try:
            with stop_on_interrupt(self.clock):
                self.clock.run()
        except KeyboardInterrupt:  # a second Ctrl-C, or not the main thread: stop at once
            self.interrupted = True
        finally:
            if enabled:
                gc.enable()
        self.interrupted = self.interrupted or self.clock.stopped

    # --- a worker's step: gate, fetch, compute --------------------------------------------
    def start_step(self, rank: int, step: int) -> None:
        if step == self.steps:
            return
        if self._gated and not self.policy.may_start(step, self._slowest):
            self._waiting[step].append((rank, self.clock.now))
            return
        worker, server = self.workers[rank], self.server
        t = self._transfer("fetch", rank, step)
        fetch = worker.fetch
        for s in self._shard_ids:  # booked now, so each sees the updates booked before
            fetch(server, s)
        row, k = self.durations[rank], self.accumulate
        for micro in range(k):
            d = row[step * k + micro]
            self.timeline.append(_new(Span, (rank, None, "compute", t, t + d, step, micro, None)))
            t += d
        self.clock.at(t, self.computed, rank, step)

    def _transfer(self, kind: str, rank: int, step: int, note: str | None = None) -> float:
        """Book one transfer per shard, all asked for now; returns when the last one ends.
        Time spent queued behind other jobs on a busy shard becomes idle, noted "queue"."""
        now, timeline = self.clock.now, self.timeline
        append = timeline.append
        end, queued = now, False
        jobs = self._transfers[rank]
        for s, shard, cost in jobs:
            a = shard.free_at  # Resource.book, inlined: this loop runs ~10^6 times
            if a < now:
                a = now
            b = shard.free_at = a + cost
            append(_new(Span, (rank, s, kind, a, b, step, None, note)))
            if b > end:
                end = b
            if a > now:
                queued = True
        if queued:  # rare on a quiet network: only then look for the gaps between the jobs
            booked = [(sp.start, sp.end) for sp in timeline[-len(jobs):]]
            for a, b in gaps(booked, now, end):
                append(_new(Span, (rank, None, "idle", a, b, step, None, "queue")))
        return end

    # --- push, and the server's update --------------------------------------------------
    def computed(self, rank: int, step: int) -> None:
        now, worker = self.clock.now, self.workers[rank]
        worker.compute(step)
        barrier = self.policy.waits_for_update
        if barrier and step < self._closed:  # its round already has its N pushes (backup)
            done = self._transfer("push", rank, step, "dropped")
            self.clock.at(done, self.start_step, rank, step + 1)  # fetch the new weights, go on
            return
        done = self._transfer("push", rank, step)
        applied_at, lag = self._push(worker, now, step)
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
                self.clock.at(applied_at, self.round_applied, step)
            else:
                self._record(applied_at, stale, rank, step)
        if not barrier:
            self.clock.at(done, self.pushed_one, rank, step)

    def _push(self, worker: Worker, now: float, step: int) -> tuple[float | None, int]:
        """Hand every shard its slice; book the updates that completes. Returns when the last
        update ends (None: the server only buffered the push) and the push's staleness."""
        server, timeline = self.server, self.timeline
        versions, fetched = server.versions, worker.versions
        applied_at, stale = None, 0
        for s, shard, cost in self._updates:
            lag = versions[s] - fetched[s]
            if lag > stale:
                stale = lag
            if self.staleness_lr and lag > 1 and worker.grads:  # lr / staleness, Zhang et al.
                applied = server.push(s, worker.grads[s] / lag)
            else:
                applied = worker.push(server, s)
            if applied:
                u0, u1 = shard.book(now, cost)  # right behind this push
                timeline.append(_new(Span, (None, s, "update", u0, u1, step, None, None)))
                if applied_at is None or u1 > applied_at:
                    applied_at = u1
        return applied_at, stale

    def _record(self, time: float, staleness: int, rank: int | None, step: int) -> None:
        loss, acc = self.evaluate()
        if self.progress is not None:
            self.progress.update(1)
        self.history.append(
            _new(Record, (time, loss, acc, staleness, len(self.history) + 1, rank, step)))

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
        """Async / SSP: the worker's push is sent; it may go on unless it is too far ahead."""
        self.pushed[rank] = step + 1
        if self._gated:
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


def no_numbers() -> tuple[float, float]:
    return math.nan, math.nan
