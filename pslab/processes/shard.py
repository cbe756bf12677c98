"""A server shard as a process (figure 000's "Parameter Server Shard i"), serving its workers.

The arithmetic is the core's: this process holds a `pslab.server.ParameterServer` and uses only its
own shard's `pull` and `push`. One thread per worker (blocking point-to-point recv from that
worker: unlike an any-source recv it notices at once when the worker dies), one lock for the
server state, and one lock for the shard's link, held for the timing model's transfer and update
durations (scaled to real seconds): the link serves one job at a time, as `Resource` does on
the virtual clock. That is `Cluster(links="one-at-a-time")` whatever the run's Cluster says
(transfers="model": its timeline lines up with a simulated one-at-a-time run, not with the
default duplex one); with transfers="wire" the real link, full duplex, times the transfers
and the lock holds the updates only. When a worker may go on is the mode's call (`Policy`):
after its push, a worker gets the weights of its next step once the policy lets it start
that step. The workers of a barrier's round (sync, Backup) get theirs in rank order, as the
simulated server books their fetches, on every shard alike; with a staleness bound (SSP) the
worker whose push a shard took is answered first, then the workers that push released, by
step and in the order they were held: the simulated duplex server's order.
"""
from __future__ import annotations

import math
import threading
import time
from typing import Callable

import torch
import torch.distributed as dist

from ..model import init_params
from ..server import ParameterServer
from ..timeline import Span
from .job import Job
from .protocol import LAST, PULL, REPLY, header, message, pack, payload
from .report import Report


class Stuck(RuntimeError):
    pass


class Shard:
    def __init__(self, job: Job, index: int, report: Report):
        self.job, self.index, self.report = job, index, report
        layout = job.layout()
        params = init_params(64, job.hidden, 10, job.seed)  # the digits: 64 pixels, 10 classes
        lr = job.policy.server_lr(job.settings.lr, job.workers)
        self.server = ParameterServer(params, layout, lr, job.policy.aggregate(job.workers),
                                      job.settings.staleness_lr)
        self.keys = layout.keys(index)
        if job.start_keys is not None:  # resumed: the shard as the checkpoint left it
            self.server.params[index] = torch.from_numpy(job.start_keys[index].copy())
            self.server.versions[index] = job.start_step
        self.state = threading.Condition()  # guards the server and the counters below
        self.link = threading.Lock()  # one transfer or update at a time
        self.pushed = [job.start_step] * job.workers  # pushes received per worker (SSP)
        self.alive = set(range(job.workers))
        self.received = 0  # pushes handed to the server so far
        self.applied_upto = 0  # ... of which this many are in an applied update
        self.turn = [0] * job.steps  # sync: how many of step t's pushes went in, in clock order
        self.answered = [0] * (job.steps + 1)  # sync: how many fetches of step t were answered
        # backup workers: per round, the workers whose pushes went in, and those of them whose
        # next weights went out (answered in rank order, as on every shard)
        self.members: dict[int, list[int]] = {}
        self.answered_members: dict[int, set[int]] = {}
        self.round_stale = 0  # largest staleness among the pushes of the update being built
        # SSP: the workers held back by the bound ((step, worker), in the order they were held)
        # and those whose answers go out next, in this order (see queue_answers)
        self.gated = not job.policy.waits_for_update and job.policy.bound < job.steps
        self.held: list[tuple[int, int]] = []
        self.line: list[int] = []
        self.errors: list[str] = []
        self.arrived = [job.start_step] * job.workers  # pushes that reached the shard
        self.finished = 0  # worker threads that are done

    def run(self, now: Callable[[], float]) -> None:
        self.now = now  # seconds since time zero
        threads = [threading.Thread(target=self.serve, args=(w,), daemon=True)
                   for w in range(self.job.workers)]
        for t in threads:
            t.start()
        with self.state:  # not join(): a thread may sit in a recv from a hung worker
            self.state.wait_for(lambda: self.errors or self.finished == len(threads))
        if self.errors:
            raise Stuck(self.errors[0])  # the first to give up; the others say the same

    # --- one worker's conversation ------------------------------------------------------
    def serve(self, w: int) -> None:
        """Worker w's messages, each answered. The receive of its next message is posted
        before this one is answered (two buffers, in turn): gloo sends only into a posted
        receive, whose notice travels to the sender the other way, behind whatever is queued
        there: posted after the answer, it would wait behind the answers to every other
        worker of a round (sync, Backup), and hold the worker's push until they are out."""
        rank = self.job.num_shards + w
        bufs = [message(self.keys), message(self.keys)]
        turn, posted = 0, None
        try:
            posted = dist.irecv(bufs[turn], src=rank)
            while True:
                posted.wait()
                arrived = self.now()
                buf = bufs[turn]
                kind, step, version, sent = header(buf)
                if kind != LAST:  # the worker's next message: its push (or its last)
                    turn = 1 - turn
                    posted = dist.irecv(bufs[turn], src=rank)
                if kind == PULL:
                    self.reply(w, rank, step, buf, queued=False)
                    continue
                seq = self.take(w, step, version, payload(buf), (sent, arrived))
                if kind == LAST:
                    return
                if seq is not None:  # a dropped push (a backup worker's late one) waits not
                    self.wait_to_start(w, step + 1, seq)
                self.reply(w, rank, step + 1, buf, queued=self.gated)
        except RuntimeError as e:  # gloo: the worker died, or stayed silent past the timeout
            self.lose(w, e)
        finally:
            # the receive goes before `finished` counts this thread: the group may be destroyed
            # from then on, and a gloo Work outliving it aborts the process at exit
            del posted
            with self.state:
                self.finished += 1
                self.state.notify_all()

    def take(self, w: int, step: int, version: int, grad, wire: tuple[float, float]
             ) -> int | None:
        """The push arrives over the link, then goes to the server (in clock order for sync).
        Returns its number among the pushes the server took (None: dropped, its round was
        already complete: with backup workers, the late pushes). wire: when the worker sent
        it and when it arrived: the push's span with transfers="wire"."""
        a, b = wire if self.job.options.wire else self.hold_link(self.job.transfer[self.index])
        self.arrived[w] = step + 1
        order, policy = self.job.order, self.job.policy
        with self.state:
            if policy.waits_for_update and step < self.server.versions[self.index]:
                self.pushed[w] = step + 1
                dropped = Span(w, self.index, "push", a, b, step, note="dropped")
                self.report.hold("spans", [dropped])
                return None
        self.report.hold("spans", [Span(w, self.index, "push", a, b, step)])
        with self.state:
            self.members.setdefault(step, []).append(w)
            if order is not None:  # sync: add the round's gradients as the simulation does
                self.wait(lambda: order[step][self.turn[step]] == w)
                self.turn[step] += 1
            lag = self.server.versions[self.index] - version
            self.report.hold("push", dict(worker=w, step=step, staleness=lag, time=b))
            self.round_stale = max(self.round_stale, lag)
            self.received += 1
            seq = self.received
            applied = self.server.push(self.index, grad, lag)
            self.pushed[w] = step + 1
            if self.gated:
                self.queue_answers(w, step + 1)
            stale, self.round_stale = (self.round_stale, 0) if applied else (0, self.round_stale)
            new_version, keys = self.server.pull(self.index)
            self.state.notify_all()
        if applied:  # the update's time on the shard, then the waiting workers may go on
            u0, u1 = self.hold_link(self.job.update[self.index])
            self.report.hold("spans", [Span(None, self.index, "update", u0, u1, step)])
            # numpy, not a tensor: torch pickles a tensor for a pipe as shared memory fetched
            # from the sender later, which fails once a finished shard has exited
            self.report("update", dict(shard=self.index, version=new_version, start=u0, time=u1,
                                       staleness=stale, step=step, keys=keys.numpy(),
                                       worker=w if self.server.aggregate == 1 else None))
            with self.state:
                self.applied_upto = max(self.applied_upto, seq)
                self.state.notify_all()
        return seq

    def wait_to_start(self, w: int, step: int, seq: int) -> None:
        """Hold worker w's answer until the mode lets it start `step`."""
        policy = self.job.policy

        def may_go() -> bool:
            if policy.waits_for_update:  # a barrier: the update that took this push is made
                return self.applied_upto >= seq
            return self.bound_lets_start(step)

        with self.state:
            self.wait(may_go)

    def bound_lets_start(self, step: int) -> bool:
        """Holding self.state: the mode lets a worker start `step`, given the slowest live
        worker's pushes so far (SSP's bound; no bound: always)."""
        slowest = min((self.pushed[v] for v in self.alive), default=math.inf)
        return self.job.policy.may_start(step, slowest)

    def queue_answers(self, w: int, step: int) -> None:
        """SSP, holding self.state, worker w's push just taken: w joins the line of answers if
        the bound lets it start `step`, else it is held; the held workers the bound now lets
        go join the line too, by step, each step's in the order they were held. On the wire
        (the duplex links of the clock's pushed_one) w goes first; with transfers="model" (the
        one-at-a-time links it plays) after them."""
        pusher = []
        if step < self.job.steps:  # (after its last push a worker is not answered)
            if self.bound_lets_start(step):
                pusher = [w]
            else:
                self.held.append((step, w))
        if self.job.options.wire:
            self.line += pusher
        self.release_held()
        if not self.job.options.wire:
            self.line += pusher

    def release_held(self) -> None:
        """SSP, holding self.state: the held workers the bound lets go now join the line."""
        go = sorted((x for x in self.held if self.bound_lets_start(x[0])),
                    key=lambda x: x[0])  # stable: each step's in the order they were held
        self.line += [v for _, v in go]
        self.held = [x for x in self.held if x not in go]

    def reply(self, w: int, rank: int, step: int, buf, queued: bool) -> None:
        """Answer with the shard's weights: this is the worker's fetch. With transfers="wire"
        the worker draws it (it alone knows when the weights arrived). queued: SSP's answer to
        a push, sent in its turn in the line (queue_answers)."""
        wire, in_order = self.job.options.wire, self.job.order is not None
        if queued:
            with self.state:
                self.wait(lambda: bool(self.line) and self.line[0] == w)
        if in_order:  # sync: a round's workers are answered in rank order, on every shard
            with self.state:  # (as the simulated server books them), not in thread wake-up
                self.wait(lambda: self.answered[step] == w)  # order, which differs per shard
        round_ = self.members.get(step - 1, ()) if self.job.policy.waits_for_update else ()
        if not in_order and w in round_:  # backup workers: the round's members the same way
            with self.state:  # (a late, dropped push's worker is answered at once)
                done = self.answered_members.setdefault(step, set())
                self.wait(lambda: all(v in done or v not in self.alive
                                      for v in round_ if v < w))
        a = self.now() if wire else self.hold_link(self.job.transfer[self.index])[0]
        with self.state:
            version, keys = self.server.pull(self.index)
        dist.send(pack(buf, REPLY, step, version, keys, sent=a), dst=rank)
        if not wire:  # model: the link was held for the model's time, then the send returned
            self.report.hold("spans", [Span(w, self.index, "fetch", a, self.now(), step)])
        if queued:
            with self.state:
                self.line.pop(0)
                self.state.notify_all()
        if in_order or w in round_:
            with self.state:
                self.answered[step] += 1
                self.answered_members.setdefault(step, set()).add(w)
                self.state.notify_all()

    # --- helpers -------------------------------------------------------------------------
    def hold_link(self, virtual_seconds: float) -> tuple[float, float]:
        """Occupy the link for the timing model's duration, scaled to real seconds."""
        with self.link:
            a = self.now()
            if virtual_seconds and self.job.options.time_scale:
                time.sleep(virtual_seconds * self.job.options.time_scale)
            return a, self.now()

    def wait(self, ready: Callable[[], bool]) -> None:
        """Wait (holding self.state) until ready(); a timeout is an error, never a hang."""
        timeout = self.job.options.timeout
        if not self.state.wait_for(lambda: ready() or bool(self.errors), timeout=timeout):
            behind = min(self.arrived)
            late = [v for v, n in enumerate(self.arrived) if n == behind]
            raise Stuck(f"shard {self.index}: no push of step {behind} came from worker "
                        f"{', '.join(map(str, late))} for {timeout:g} s (dead or hung)")
        if self.errors:
            raise Stuck(self.errors[0])

    def lose(self, w: int, error: Exception) -> None:
        """Worker w is gone. Modes without a barrier go on without it, and so does a barrier
        with enough backup workers left; a sync round cannot complete."""
        policy = self.job.policy
        with self.state:
            self.alive.discard(w)
            if self.gated:  # its answer will never go out; and the slowest may have moved
                self.line = [v for v in self.line if v != w]
                self.held = [x for x in self.held if x[1] != w]
                self.release_held()
            if isinstance(error, Stuck) or (policy.waits_for_update and
                                            len(self.alive) < self.server.aggregate):
                self.errors.append(str(error) if isinstance(error, Stuck) else
                                   f"shard {self.index}: lost worker {w} ({error})")
            self.state.notify_all()
