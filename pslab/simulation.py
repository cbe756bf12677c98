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
from typing import Any, Callable

import numpy as np

from .cluster import Cluster
from .columns import Columns
from .engine import Clock, Resource, collector_paused, stop_on_interrupt
from .fastloop import run_inline
from .modes import Policy
from .server import ParameterServer
from .timeline import Record, gaps  # Record: public here too
from .worker import Worker

# A job on a shard: (shard, the Resource that serves it, seconds it takes).
Job = tuple[int, Resource, float]


class Simulation:
    """Figure 000 on a virtual clock: each worker fetches, computes, pushes and waits.

    One step of worker `rank`, as the figure draws it:
      start_step  the policy lets it start (SSP may hold it back: idle, "barrier");
      fetch       it asks every shard for its keys at once, over the shard's link;
      compute     `accumulate` minibatches back to back, on the keys it fetched;
      computed    it pushes its gradient to every shard; a shard that has gathered
                  `aggregate` pushes books the update right behind them;
      wait        sync: until the round's update is applied (round_applied); SSP: until the
                  slowest worker is close enough (pushed_one); async: not at all.
    Each shard's link is a `Resource`: it carries one job at a time, first come first served,
    so a worker whose shard is busy waits in line (idle, "queue"). Every block is a span in
    `timeline`; every update a `Record` in `history` (loss and accuracy from `evaluate`).

    Timing-only async runs take `fastloop.run_inline`, the same events inlined, bit for bit.
    Subclasses (RingSimulation, ZeroSimulation) replace `send` and `computed`.
    """

    def __init__(self, server: ParameterServer, workers: list[Worker], policy: Policy,
                 cluster: Cluster, durations: np.ndarray, steps: int, shard_bytes: list[int],
                 evaluate: Callable[[], tuple[float, float]], staleness_lr: bool = False):
        self.server, self.workers, self.policy = server, workers, policy
        self.steps, self.accumulate = steps, workers[0].accumulate
        self.durations = durations
        self.staleness_lr = staleness_lr  # Zhang et al.: each push's lr divided by its staleness
        self.evaluate = evaluate
        self.clock = Clock()
        # each shard's link, and what its jobs cost
        self.shards = [Resource() for _ in shard_bytes]
        total = sum(shard_bytes) or 1
        transfers = [(s, link, cluster.transfer_time(b))
                     for s, (link, b) in enumerate(zip(self.shards, shard_bytes))]
        self.routes: list[list[Job]] = [_route(transfers, cluster, rank, len(workers))
                                        for rank in range(len(workers))]
        self.updates: list[Job] = [(s, link, cluster.update_duration(b / total))
                                   for s, (link, b) in enumerate(zip(self.shards, shard_bytes))]
        self.timeline = Columns(workers=len(workers), shards=len(shard_bytes),
                                micros=self.accumulate)
        # the largest span code of the run: past 2^53 it is refused now, not mid-run
        self.timeline.code(len(workers) - 1, len(shard_bytes) - 1 if shard_bytes else None,
                           "push", steps, self.accumulate - 1)
        self.history: list[Record] = []
        self.push_staleness: list[int] = []  # of every push the server used, in arrival order
        self.numerics = server.params is not None  # False: timing only, no keys to move
        self.fetched = [server.versions[:] for _ in workers]  # per worker: versions it computes on
        self.round_staleness = 0  # the largest staleness among the pushes of the update gathered
        self.progress: Any = None  # a tqdm bar, ticked once per server update
        self.interrupted = False
        self.started = False
        self.barrier = policy.waits_for_update  # read once: SSP answers it with a property
        # sync and backup workers: the rounds
        self.closed = 0  # rounds whose update is complete (later pushes are dropped)
        self.members: dict[int, list[int]] = defaultdict(list)  # round -> who pushed into it
        self.push_done = [0.0] * len(workers)  # when each worker's last push was sent
        # bounded staleness: only such a policy can hold a worker back before a step
        self.gated = not self.barrier and policy.bound < steps
        self.slowest = 0  # the fewest pushes any worker has done, kept in O(1) by a histogram
        self.how_many: dict[int, int] = defaultdict(int, {0: len(workers)})  # pushes -> workers
        self.waiting: dict[int, list[tuple[int, float]]] = defaultdict(list)  # step -> held

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
                if self.inlined():
                    run_inline(self, until)  # the same run, its two hot events inlined
                else:
                    self.clock.run(until)
        except KeyboardInterrupt:  # a second Ctrl-C, or not the main thread: stop at once
            self.interrupted = True
        self.interrupted = self.interrupted or self.clock.stopped

    def inlined(self) -> bool:
        """Does fastloop.run_inline run this simulation? Only where it does exactly what these
        actors do: their own handlers, timing only, no barrier, no staleness bound."""
        mine = type(self)
        return (not self.numerics and not self.barrier and not self.gated
                and self.evaluate is no_numbers and all(
                    getattr(mine, name) is getattr(Simulation, name)
                    for name in ("start_step", "computed", "send", "deliver", "record")))

    @property
    def finished(self) -> bool:
        """No event is pending: the run is over (or was interrupted)."""
        return self.clock.idle

    # --- a worker's step: start, fetch, compute -----------------------------------------
    def start_step(self, rank: int, step: int) -> None:
        if step == self.steps:
            return
        if self.gated and not self.policy.may_start(step, self.slowest):
            self.waiting[step].append((rank, self.clock.now))  # released by pushed_one
            return
        arrived = self.fetch(rank, step)
        done = self.compute(rank, step, arrived)
        self.clock.at(done, self.computed, rank, step)

    def fetch(self, rank: int, step: int) -> float:
        """Ask every shard for its keys now; returns when the last of them has arrived.
        Booked now, so each shard's answer holds the updates booked on it before."""
        arrived = self.send("fetch", rank, step)
        server = self.server
        self.fetched[rank] = server.versions[:]  # in timing-only runs, all that a fetch brings
        if self.numerics:
            worker = self.workers[rank]
            for s in range(len(self.shards)):
                worker.fetch(server, s)
        return arrived

    def compute(self, rank: int, step: int, start: float) -> float:
        """The step's minibatches back to back from `start`; returns when the last ends."""
        k, row, t = self.accumulate, self.durations[rank], start
        for micro in range(k):
            d = row[step * k + micro]
            self.timeline.add(rank, None, "compute", t, t + d, step, micro)
            t += d
        return t

    def send(self, kind: str, rank: int, step: int, note: str | None = None) -> float:
        """One transfer per shard, all asked for now, each over its shard's link; returns when
        the last one ends. Time spent queued behind other jobs on a busy link becomes idle,
        noted "queue"."""
        now, add = self.clock.now, self.timeline.add
        booked = [(s, *link.book(now, seconds)) for s, link, seconds in self.routes[rank]]
        end = now
        for s, start, stop in booked:
            add(rank, s, kind, start, stop, step, None, note)
            if stop > end:
                end = stop
        for start, stop in gaps([(a, b) for _, a, b in booked], now, end):
            add(rank, None, "idle", start, stop, step, None, "queue")
        return end

    # --- push, and the server's update --------------------------------------------------
    def computed(self, rank: int, step: int) -> None:
        """The worker's gradient is ready: push it, and go on as the policy says."""
        if self.numerics:
            self.workers[rank].compute(step)
        if self.barrier and step < self.closed:  # its round already has its N pushes (backup)
            sent = self.send("push", rank, step, "dropped")
            self.clock.at(sent, self.start_step, rank, step + 1)  # fetch the new weights, go on
            return
        sent = self.send("push", rank, step)
        self.deliver(rank, step)
        if self.barrier:  # wait for the round's update (round_applied)
            self.push_done[rank] = sent
            self.members[step].append(rank)
        elif self.gated:  # may it go on? (pushed_one)
            self.clock.at(sent, self.pushed_one, rank, step)
        else:  # async: go straight on to the next step once the push is sent
            self.clock.at(sent, self.start_step, rank, step + 1)

    def deliver(self, rank: int, step: int) -> None:
        """Hand every shard its slice of the push; a shard that has gathered its `aggregate`
        pushes books the update right behind this one. When every shard has, the update is
        complete: a record in the history (and, in sync, the round's end)."""
        now, server, fetched = self.clock.now, self.server, self.fetched[rank]
        grads = self.workers[rank].grads  # empty in timing-only runs
        applied_at, stale = None, 0
        for s, shard, seconds in self.updates:
            lag = server.versions[s] - fetched[s]
            stale = max(stale, lag)
            grad = grads[s] if grads else None
            if self.staleness_lr and grads and lag > 1:  # lr / staleness, Zhang et al.
                grad = grad / lag
            if server.push(s, grad):  # this push completes the shard's update
                start, end = shard.book(now, seconds)
                self.timeline.add(None, s, "update", start, end, step)
                applied_at = end if applied_at is None else max(applied_at, end)
        self.push_staleness.append(stale)
        self.round_staleness = max(self.round_staleness, stale)
        if applied_at is not None:
            staleness, self.round_staleness = self.round_staleness, 0
            if self.barrier:
                self.closed += 1
                self.record(applied_at, staleness, None, step)
                self.clock.at(applied_at, self.round_applied, step)
            else:
                self.record(applied_at, staleness, rank, step)

    def record(self, time: float, staleness: int, rank: int | None, step: int) -> None:
        """One server update in the history, scored on the weights it made."""
        loss, acc = self.evaluate()
        if self.progress is not None:
            self.progress.update(1)
        self.history.append(Record(time, loss, acc, staleness, len(self.history) + 1, rank,
                                   step))

    # --- waiting for the others ---------------------------------------------------------
    def round_applied(self, step: int) -> None:
        """Sync: the averaged update is on every shard; the round's workers waited for it, now
        they fetch (with backup workers, the late ones are already on their way)."""
        now, members = self.clock.now, sorted(self.members.pop(step))
        for rank in members:
            if self.push_done[rank] < now:
                self.timeline.add(rank, None, "idle", self.push_done[rank], now, step, None,
                                  "barrier")
        for rank in members:
            self.start_step(rank, step + 1)

    def pushed_one(self, rank: int, step: int) -> None:
        """SSP: the worker's push is sent; it may go on unless it is too far ahead."""
        counts = self.how_many
        counts[step] -= 1
        counts[step + 1] += 1
        if counts[self.slowest] == 0:
            while counts[self.slowest] == 0:
                self.slowest += 1
            self.release()
        self.start_step(rank, step + 1)

    def release(self) -> None:
        """SSP: the slowest worker moved on; start the held steps the bound now allows."""
        now = self.clock.now
        for step in sorted(s for s in self.waiting if self.policy.may_start(s, self.slowest)):
            for rank, since in self.waiting.pop(step):
                if now > since:
                    self.timeline.add(rank, None, "idle", since, now, step, None, "barrier")
                self.start_step(rank, step)

    @property
    def makespan(self) -> float:
        # Every span ends by the last event, except updates, whose ends the history records.
        last_update = self.history[-1].time if self.history else 0.0
        return max(self.clock.now, last_update)

    # --- between two events: the bookkeeping as plain values (snapshot.py) ---------------
    PLAIN = ("push_staleness", "fetched", "slowest", "push_done", "round_staleness", "closed",
             "started")
    BY_STEP = {"how_many": int, "waiting": list, "members": list}  # int-keyed dicts

    def bookkeeping(self) -> dict[str, Any]:
        """What the actors keep between two events, as JSON-able values (links included)."""
        return dict(plain={k: getattr(self, k) for k in self.PLAIN},
                    by_step={k: [[key, v] for key, v in getattr(self, k).items()]
                             for k in self.BY_STEP},
                    links=[[link.free_at for _, link, _ in route] for route in self.routes])

    def set_bookkeeping(self, saved: dict[str, Any]) -> None:
        """Put back what `bookkeeping` gave (checked: a file read back is untrusted)."""
        plain, by_step = saved.get("plain", {}), saved.get("by_step", {})
        if set(plain) != set(self.PLAIN) or set(by_step) != set(self.BY_STEP):
            raise ValueError(f"a checkpoint's state names {sorted(plain)}, {sorted(by_step)}: "
                             f"expected {sorted(self.PLAIN)}, {sorted(self.BY_STEP)}")
        for k, v in plain.items():
            setattr(self, k, v)
        for k, pairs in by_step.items():
            table = defaultdict(self.BY_STEP[k])
            table.update({key: ([tuple(x) for x in v] if k == "waiting" else v)
                          for key, v in pairs})
            setattr(self, k, table)
        for route, free in zip(self.routes, saved["links"], strict=True):
            for (_, link, _), at in zip(route, free, strict=True):
                link.free_at = at


def _route(transfers: list[Job], cluster: Cluster, rank: int, workers: int) -> list[Job]:
    """A worker's transfer jobs: a colocated worker reaches its own shard locally, at no cost
    and in no queue (a private resource); every other shard over that shard's link."""
    if not cluster.colocated:
        return transfers
    return [(s, Resource(), 0.0) if cluster.host(s, workers) == rank else (s, link, cost)
            for s, link, cost in transfers]


NO_NUMBERS = (math.nan, math.nan)


def no_numbers() -> tuple[float, float]:
    return NO_NUMBERS
