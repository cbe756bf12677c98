"""A worker as a process (figure 000's "Processor i on GPU i") and the server as it sees it.

`RemoteServer` has the server's interface, `pull(shard)` and `push(shard, grad)`, carried over
gloo point-to-point to the shard processes, so the core's `pslab.worker.Worker` runs unchanged on top
of it: fetch every shard, compute, push every shard. The worker sleeps the timing model's
compute time (scaled to real seconds) before the real arithmetic, so a straggler in the
`Cluster` is a real straggler here, on a machine where the arithmetic itself takes microseconds.
"""
from __future__ import annotations

import os
import signal
import time
from typing import Callable

import torch
import torch.distributed as dist

from ..data import Digits
from ..model import init_params, loss_and_grad
from ..timeline import Span
from ..worker import Worker
from .job import Job
from .protocol import LAST, PULL, PUSH, header, message, pack, payload
from .report import Report


class RemoteServer:
    """pull and push over the wire. A push is answered with the next weights (protocol.py), so
    `pull` only asks explicitly for the very first fetch. Sends and receives are posted at once
    for every shard (isend / irecv) and waited for only when the weights are needed: the shards
    work on one worker's messages in parallel, and each answer finds its receive posted."""

    def __init__(self, job: Job, layout):
        shards = range(job.num_shards)
        self.outbox = [message(layout.keys(s)) for s in shards]
        self.inbox = [message(layout.keys(s)) for s in shards]
        self.sending: list = [None] * job.num_shards  # the isend of each shard's last message
        self.answer: list = [None] * job.num_shards  # the irecv of each shard's next answer
        self.fetched = [0] * job.num_shards  # version of the keys last pulled
        self.step, self.last = 0, False
        self.wire = job.options.wire  # draw each fetch as the wire timed it (see pull)
        self.now: Callable[[], float] = lambda: 0.0  # the run's clock, once it is agreed
        self.fetches: list[Span] = []  # wire: fetch spans drawn here, for the worker's report

    def ask(self) -> None:
        """The first fetch: ask every shard at once (as the simulation's fetches start
        together); later fetches are the answers to the pushes."""
        for shard, answer in enumerate(self.answer):
            if answer is None:
                self.post(shard, pack(self.outbox[shard], PULL, self.step, 0), answer=True)

    def pull(self, shard: int) -> tuple[int, torch.Tensor]:
        if self.answer[shard] is None:  # not asked yet (ask() asks every shard at once)
            self.post(shard, pack(self.outbox[shard], PULL, self.step, 0), answer=True)
        self.settle(shard)
        self.answer[shard].wait()
        self.answer[shard] = None
        got = header(self.inbox[shard])
        if self.wire:  # from the shard's send to now: what the network took
            self.fetches.append(Span(None, shard, "fetch", got.sent, self.now(), got.step))
        self.fetched[shard] = got.version
        return self.fetched[shard], payload(self.inbox[shard])

    def push(self, shard: int, grad: torch.Tensor) -> bool:
        """Send the gradient slice; False: whether it completed an update is the shard's to
        say (it reports every update it applies)."""
        kind = LAST if self.last else PUSH
        self.settle(shard)  # the outbox is about to be reused: stamp it once it is free
        self.post(shard, pack(self.outbox[shard], kind, self.step, self.fetched[shard],
                              grad.cpu(), sent=self.now()), answer=not self.last)
        return False

    def post(self, shard: int, outgoing: torch.Tensor, answer: bool) -> None:
        self.settle(shard)  # the outbox is about to be reused
        self.sending[shard] = dist.isend(outgoing, dst=shard)
        if answer:
            self.answer[shard] = dist.irecv(self.inbox[shard], src=shard)

    def settle(self, shard: int) -> None:
        """Wait for the shard's last send, once (a gloo Work waited twice never returns)."""
        if self.sending[shard] is not None:
            self.sending[shard].wait()
            self.sending[shard] = None

    def delivered(self) -> None:
        """Wait until every shard has taken this worker's last push (its answer is here)."""
        for shard, answer in enumerate(self.answer):
            if answer is not None:
                self.pull(shard)

    def close(self) -> None:
        """Wait until the last pushes are out (the process may end then)."""
        for shard in range(len(self.sending)):
            self.settle(shard)


class WorkerProcess:
    """The core Worker over a RemoteServer; built before time zero (loading the digits takes
    a moment that belongs to start-up, not to the first step)."""

    def __init__(self, job: Job, w: int, report: Report):
        self.job, self.w, self.report = job, w, report
        layout = job.layout()
        self.worker = Worker(w, Digits.load(job.seed), job.workers, job.settings.accumulate,
                             job.settings.batch, layout=layout)  # device: cuda:w when GPUs exist, else the CPU
        self.server = RemoteServer(job, layout)
        # torch's first backward in a fresh process costs ~0.1 s of one-time set-up: pay it
        # here, or the first measured minibatch looks like a straggler's
        data = self.worker.data
        loss_and_grad(init_params(data.features, job.hidden, data.classes, job.seed),
                      data.x_train[:2].to(self.worker.device),
                      data.y_train[:2].to(self.worker.device))

    def run(self, now: Callable[[], float]) -> None:
        job, w, worker, server = self.job, self.w, self.worker, self.server
        server.now = now
        for step in range(job.start_step, job.steps):
            if step in (job.options.kill.get(w), job.options.hang.get(w)):
                server.delivered()  # the steps before a fault on purpose count, every time
            fault(job, w, step)
            server.step = step
            server.ask()
            for s in range(job.num_shards):
                worker.fetch(server, s)
            spans = [f._replace(worker=w) for f in server.fetches]  # wire: the fetches
            server.fetches.clear()
            self.report("spans", spans + self.compute(step, now))
            server.last = step == job.steps - 1
            for s in range(job.num_shards):
                worker.push(server, s)
        server.close()


    def compute(self, step: int, now: Callable[[], float]) -> list[Span]:
        """The step's minibatches as blocks of the timing model's durations, scaled.
        transfers="model": each block sleeps its time and the real arithmetic is added to the
        last one. "wire": the blocks end when the model says (the arithmetic done inside the
        last one, unless it takes longer), so that what differs from the simulation is the
        network's doing, not this machine's arithmetic."""
        job, k, wire = self.job, self.job.settings.accumulate, self.job.options.wire
        spans, t = [], now()
        end = t
        for micro in range(k):
            seconds = job.durations[self.w][step * k + micro] * job.options.time_scale
            end += seconds
            if wire:
                if micro == k - 1:
                    self.worker.compute(step)
                seconds = end - now()
            if seconds > 0:
                time.sleep(seconds)
            spans.append(Span(self.w, None, "compute", t, now(), step, micro))
            t = spans[-1].end
        if not wire:
            self.worker.compute(step)  # the real arithmetic, inside the last minibatch's block
            spans[-1] = spans[-1]._replace(end=now())
        return spans


def fault(job: Job, w: int, step: int) -> None:
    """The faults asked for on purpose: die at once, or stop answering (until killed)."""
    if job.options.kill.get(w) == step:
        os.kill(os.getpid(), signal.SIGKILL)
    if job.options.hang.get(w) == step:
        while True:
            time.sleep(3600)
