"""The actors of figures 000 and 001 on the clock: workers fetch, compute, push; shards update.

This module decides *when* (the clock, the links and the policy); the Worker and
ParameterServer decide *what* (the arithmetic), called the moment the clock reaches each event.
A shard takes a push when it has arrived and answers a fetch with what it has taken by then,
once those updates are applied: every fetch holds exactly the updates that end before it
starts, the order the virtual clock shows.

Layer: actors and policies (with modes, allreduce, snapshot), above the result type `Run`
and the arithmetic; the backends (simulate.py, processes/) run it, it never calls them.
"""
from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, Callable

import numpy as np

from . import fastduplex, fastloop
from .cluster import Cluster
from .columns import Columns
from .engine import Clock, Resource, Shaped, collector_paused, stop_on_interrupt
from .compiled import twin
from .modes import Policy
from .server import ParameterServer
from .timeline import Record, gaps  # Record: public here too
from .worker import Worker

# the inlined loops: compiled where they are built from these very files (compiled.py)
run_duplex, run_inline = twin(fastduplex).run_duplex, twin(fastloop).run_inline

# A job on a shard: (shard, the Resource that serves it, seconds it takes).
Job = tuple[int, Resource, float]


class Simulation:
    """Figure 000 on a virtual clock: each worker fetches, computes, pushes and waits.

    One step of worker `rank`, as the figure draws it:
      start_step  the policy lets it start (SSP may hold it back: idle, "barrier");
      fetch       it asks every shard for its keys at once, over the shard's link;
      compute     `accumulate` minibatches back to back, on the keys it fetched;
      computed    it pushes its gradient to every shard; a shard that has gathered
                  `aggregate` pushes applies an update (take);
      wait        sync: until the round's update is applied (round_applied); SSP: until the
                  slowest worker is close enough (pushed_one); async: not at all.
    Each shard's link is carried as `cluster.links` says. "duplex": its fetches and its pushes
    each wait in their own line (a `Resource` per direction), the shard takes a push when it
    has arrived (push_arrived) and applies the update on its own `Resource`. "one-at-a-time":
    one `Resource` carries fetches, pushes and updates, so the shard can take each push the
    moment it is sent (its place in the line is fixed). A worker whose message waits in line
    is idle, noted "queue". Every block is a span in `timeline`; every update a `Record` in
    `history` (loss and accuracy from `evaluate`).

    Timing-only async runs take a loop with the same events inlined, bit for bit:
    `fastloop.run_inline` on one-at-a-time links, `fastduplex.run_duplex` on duplex ones
    (without a burst: a shaped link's lines are `engine.Shaped`, booked here), each compiled
    where it is built (compiled.py).
    Subclasses (RingSimulation, ZeroSimulation) replace `send` and
    `computed`.
    """

    def __init__(self, server: ParameterServer, workers: list[Worker], policy: Policy,
                 cluster: Cluster, durations: np.ndarray, steps: int, shard_bytes: list[int],
                 evaluate: Callable[[], tuple[float, float]]):
        self.server, self.workers, self.policy = server, workers, policy
        self.steps, self.accumulate = steps, workers[0].accumulate
        self.durations = durations
        self.evaluate = evaluate
        self.clock = Clock()
        # each shard's link (per direction) and the shard itself, and what their jobs cost
        self.in_order = cluster.links == "one-at-a-time"  # one line for all: take pushes at once
        total, n = sum(shard_bytes) or 1, len(workers)
        self.resources: list[Resource] = []  # every queue of the run, for the checkpoint
        routes: dict[str, list[Job]] = {"fetch": [], "push": []}
        self.updates: list[Job] = []
        credit = cluster.credit()  # a shaper's bucket on each direction (duplex only)
        self.shaped = credit > 0
        for s, b in enumerate(shard_bytes):
            fetches = self._resource(credit, cluster.latency)
            pushes, server_side = (fetches, fetches) if self.in_order else (
                self._resource(credit, cluster.latency), self._resource())
            routes["fetch"].append((s, fetches, cluster.transfer_time(b)))
            routes["push"].append((s, pushes, cluster.transfer_time(b)))
            self.updates.append((s, server_side, cluster.update_duration(b / total)))
        # per direction, per worker: its jobs (a colocated worker reaches its own shard locally)
        self.routes = {kind: [self._route(kind, jobs, cluster, rank, n) for rank in range(n)]
                       for kind, jobs in routes.items()}
        self.timeline = Columns(workers=n, shards=len(shard_bytes), micros=self.accumulate)
        # the largest span code of the run: past 2^53 it is refused now, not mid-run
        self.timeline.code(n - 1, len(shard_bytes) - 1 if shard_bytes else None,
                           "push", steps, self.accumulate - 1)
        self.history: list[Record] = []
        self.push_staleness: list[int] = []  # of every push the server used, in arrival order
        self.numerics = server.params is not None  # False: timing only, no keys to move
        self.fetched = [server.versions[:] for _ in workers]  # per worker: versions it computes on
        # per worker, its push on the way (duplex): [shards yet to take it, its staleness so
        # far, when the updates it completed end (None: none yet)]
        self.pushing: list[list] = [[0, 0, None] for _ in workers]
        self.round_staleness = 0  # the largest staleness among the pushes of the update gathered
        self.progress: Any = None  # a tqdm bar, ticked once per server update
        self.interrupted = False
        self.started = False
        self.barrier = policy.waits_for_update  # read once: SSP answers it with a property
        # sync and backup workers: the rounds
        self.closed = 0  # rounds that have all their pushes (later pushes are dropped)
        self.members: dict[int, list[int]] = defaultdict(list)  # round -> who pushed into it
        self.push_done = [0.0] * len(workers)  # when each worker's last push was sent
        # bounded staleness: only such a policy can hold a worker back before a step
        self.gated = not self.barrier and policy.bound < steps
        self.slowest = 0  # the fewest pushes any worker has done, kept in O(1) by a histogram
        self.how_many: dict[int, int] = defaultdict(int, {0: len(workers)})  # pushes -> workers
        self.waiting: dict[int, list[tuple[int, float]]] = defaultdict(list)  # step -> held

    def _resource(self, credit: float = 0.0, fixed: float = 0.0) -> Resource:
        self.resources.append(Shaped(credit, fixed) if credit > 0 else Resource())
        return self.resources[-1]

    def _route(self, kind: str, jobs: list[Job], cluster: Cluster, rank: int, workers: int
               ) -> list[Job]:
        """A worker's transfer jobs: a colocated worker reaches its own shard locally, at no
        cost; every other shard over that shard's link. A local fetch waits in no line (a
        private resource); so does a local push on a one-at-a-time link, while on a duplex
        link it joins the line of pushes at no cost, so that every shard takes the pushes in
        the order they were sent (the same push completes an update on every shard)."""
        if not cluster.colocated:
            return jobs
        shared = kind == "push" and not self.in_order
        return [((s, link if shared else self._resource(), 0.0)
                 if cluster.host(s, workers) == rank else (s, link, t)) for s, link, t in jobs]

    def run(self, until: float | None = None) -> None:
        """Run the clock to its end, or (until) through the events up to that virtual time."""
        # every worker's first step starts now, before any event: a simulation resumed from a
        # checkpoint is already under way
        first = [] if self.started else [w.rank for w in self.workers]
        self.started = True
        try:
            # worth it from some 10^4 objects on (engine.collector_paused)
            big = len(self.workers) * self.steps * self.accumulate >= 1000
            with collector_paused(promote=big), stop_on_interrupt(self.clock):
                if self.inlined() and not self.in_order:  # the same run, inlined
                    go_on = run_duplex(self, until, first)  # which starts them too
                    while go_on:  # True: it stopped to run another event; go on
                        go_on = run_duplex(self, until)
                else:
                    for rank in first:
                        self.start_step(rank, 0)
                    if self.inlined():
                        run_inline(self, until)  # the same run, its two hot events inlined
                    else:
                        self.clock.run(until)
                if self.clock.stopped:
                    self.finish_pushes()
        except KeyboardInterrupt:  # a second Ctrl-C, or not the main thread: stop at once
            self.interrupted = True
        self.interrupted = self.interrupted or self.clock.stopped

    def inlined(self) -> bool:
        """Does fastloop.run_inline run this simulation? Only where it does exactly what these
        actors do: their own handlers, timing only, no barrier, no staleness bound, links
        without a shaper's credit (their loops book a plain Resource)."""
        mine = type(self)
        return (not self.numerics and not self.barrier and not self.gated and not self.shaped
                and self.evaluate is no_numbers and all(
                    getattr(mine, name) is getattr(Simulation, name)
                    for name in ("start_step", "fetch", "compute", "computed", "send", "take",
                                 "push_arrived", "pushed", "record")))

    def finish_pushes(self) -> None:
        """The run stopped between two events: a push that some shards have taken and others
        not yet is taken by the others now (each at its arrival), so that the weights are
        those of the last record, on every shard."""
        shards = len(self.updates)
        half = {rank for rank, (left, _, _) in enumerate(self.pushing) if 0 < left < shards}
        if not half:
            return
        rest = []
        for event in self.clock.take((self.push_arrived,)):
            time, _, fn, args = event
            if args[0] in half:
                self.clock.now = max(self.clock.now, time)
                fn(*args)
            else:
                rest.append(event)
        self.clock.put_back(rest)

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
            for s in range(len(self.updates)):
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
        the last one ends. Time spent queued behind other messages becomes idle, noted "queue".
        On a duplex link a shard answers a fetch once the updates it has taken are applied."""
        now, add = self.clock.now, self.timeline.add
        booked = []
        for s, link, seconds in self.routes[kind][rank]:
            ready = now
            if kind == "fetch" and not self.in_order:
                ready = max(now, self.updates[s][1].free_at)
            booked.append((s, *link.book(ready, seconds)))
        end = now
        for s, start, stop in booked:
            add(rank, s, kind, start, stop, step, None, note)
            if stop > end:
                end = stop
        for start, stop in gaps([(a, b) for _, a, b in booked], now, end):
            add(rank, None, "idle", start, stop, step, None, "queue")
        if kind == "push" and note is None and not self.in_order:
            self.pushing[rank] = [len(booked), 0, None]
            for s, _, stop in booked:  # each shard takes it when it arrives
                self.clock.first(stop, self.push_arrived, rank, step, s)
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
        if self.barrier:  # its round's line: the round closes with its N-th push
            self.members[step].append(rank)
            if len(self.members[step]) == self.server.aggregate:
                self.closed += 1
        sent = self.send("push", rank, step)
        if self.in_order:
            self.pushing[rank] = [0, 0, None]
            for s in range(len(self.updates)):  # every shard takes it now
                self.take(rank, step, s)
            self.pushed(rank, step)
            self.pushing[rank] = [0, 0, None]  # nothing stays on the way
        if self.barrier:  # wait for the round's update (round_applied)
            self.push_done[rank] = sent
        elif self.gated:  # may it go on? (pushed_one)
            self.clock.at(sent, self.pushed_one, rank, step)
        else:  # async: go straight on to the next step once the push is sent
            self.clock.at(sent, self.start_step, rank, step + 1)

    def push_arrived(self, rank: int, step: int, shard: int) -> None:
        """Duplex: the worker's push has reached `shard`, which takes it."""
        self.take(rank, step, shard)
        self.pushing[rank][0] -= 1
        if self.pushing[rank][0] == 0:
            self.pushed(rank, step)

    def take(self, rank: int, step: int, s: int) -> None:
        """Shard s takes the worker's push (its slice of the gradient); once it has gathered
        `aggregate` pushes it applies the update, right behind this one."""
        server, push = self.server, self.pushing[rank]
        lag = server.versions[s] - self.fetched[rank][s]
        push[1] = max(push[1], lag)
        grads = self.workers[rank].grads  # empty in timing-only runs
        # the server scales a stale push (staleness_lr) and says when it completes an update
        if server.push(s, grads[s] if grads else None, lag):
            _, shard, seconds = self.updates[s]
            start, end = shard.book(self.clock.now, seconds)
            self.timeline.add(None, s, "update", start, end, step)
            push[2] = end if push[2] is None else max(push[2], end)

    def pushed(self, rank: int, step: int) -> None:
        """Every shard has taken the push: its staleness counts; if it completed the update,
        the update is in the history (and, in sync, the round ends when it is applied)."""
        _, stale, applied_at = self.pushing[rank]
        self.push_staleness.append(stale)
        self.round_staleness = max(self.round_staleness, stale)
        if applied_at is not None:
            staleness, self.round_staleness = self.round_staleness, 0
            if self.barrier:
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
        """SSP: the worker's push is sent; it may go on unless it is too far ahead. If it was
        the slowest, the steps it held back start too. On duplex links the shard answers the
        worker whose push this is first (its answer is the reply to that push, ready at once),
        then the workers it released; on one-at-a-time links, the seed model, they go first."""
        counts = self.how_many
        counts[step] -= 1
        counts[step + 1] += 1
        moved = counts[self.slowest] == 0
        while counts[self.slowest] == 0:
            self.slowest += 1
        if moved and self.in_order:
            self.release()
        self.start_step(rank, step + 1)
        if moved and not self.in_order:
            self.release()

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
    PLAIN = ("push_staleness", "fetched", "pushing", "slowest", "push_done", "round_staleness",
             "closed", "started")
    BY_STEP = {"how_many": int, "waiting": list, "members": list}  # int-keyed dicts

    def bookkeeping(self) -> dict[str, Any]:
        """What the actors keep between two events, as JSON-able values (links included)."""
        return dict(plain={k: getattr(self, k) for k in self.PLAIN},
                    by_step={k: [[key, v] for key, v in getattr(self, k).items()]
                             for k in self.BY_STEP},
                    links=[r.free_at for r in self.resources])

    def set_bookkeeping(self, saved: dict[str, Any]) -> None:
        """Put back what `bookkeeping` gave (checked: a file read back is untrusted)."""
        plain, by_step = saved.get("plain", {}), saved.get("by_step", {})
        if set(plain) != set(self.PLAIN) or set(by_step) != set(self.BY_STEP):
            raise ValueError(f"a checkpoint's state names {sorted(plain)}, {sorted(by_step)}: "
                             f"expected {sorted(self.PLAIN)}, {sorted(self.BY_STEP)}")
        for k, v in plain.items():
            setattr(self, k, v)
        self.pushing = [list(p) for p in self.pushing]  # each changed in place as shards take it
        for k, pairs in by_step.items():
            table = defaultdict(self.BY_STEP[k])
            table.update({key: ([tuple(x) for x in v] if k == "waiting" else v)
                          for key, v in pairs})
            setattr(self, k, table)
        for resource, free_at in zip(self.resources, saved["links"], strict=True):
            resource.free_at = free_at


NO_NUMBERS = (math.nan, math.nan)


def no_numbers() -> tuple[float, float]:
    return NO_NUMBERS
