"""A worker of figure 000 ("Processor i on GPU i"): fetch (F), compute minibatches, push (P).

A worker keeps the keys it last fetched, shard by shard, and computes its gradient on them:
so in async mode its gradient really is stale when the others have moved the server on. With
`accumulate = k` (figure 001) it runs k minibatches back to back and pushes their mean once.
The worker knows nothing of time; the engine tells it when.
"""
from __future__ import annotations

import torch

from .data import Digits
from .layout import Layout, Params
from .model import loss_and_grad
from .server import ParameterServer


def device_for(rank: int) -> torch.device:
    """`cuda:i` for worker i when GPUs exist (wrapping round when there are fewer), else the CPU."""
    if torch.cuda.is_available():
        return torch.device(f"cuda:{rank % torch.cuda.device_count()}")
    return torch.device("cpu")


def assemble(layout: Layout, shards: list[torch.Tensor], held: list) -> Params:
    """The named weights made of the shards' keys, reusing `held` ([key, weights], updated)
    when they were last put together from these very tensors, unchanged since: compared by
    identity and `_version` (bumped by any in-place change); the tensors are held, so an id
    is not reused."""
    key = [(t, t._version) for t in shards]
    before, weights = held
    if len(before) != len(key) or any(a is not b or u != v
                                      for (a, u), (b, v) in zip(before, key)):
        weights = layout.unflatten(torch.cat(shards))
        held[:] = [key, weights]
    return weights


class Worker:
    def __init__(self, rank: int, data: Digits | None, workers: int, accumulate: int, batch: int,
                 device: torch.device | None = None, layout: Layout | None = None,
                 assembled: list | None = None):
        self.rank = rank
        self.layout = layout  # how the shards' keys make up the model (None: timing only)
        self.data = data  # None: timing only, no arithmetic
        self.workers, self.accumulate, self.batch = workers, accumulate, batch
        self.device = device if device is not None else device_for(rank)
        self.shards: dict[int, torch.Tensor] = {}  # shard -> the keys fetched, on self.device
        self.versions: dict[int, int] = {}  # shard -> version fetched
        self.grads: list[torch.Tensor] = []  # this push's gradient, cut into the shards' ranges
        self.loss = float("nan")
        # The last weights put together from fetched shard tensors, and those tensors: shared by
        # a run's workers (assembled=the same list), since in sync mode a round's workers all
        # compute on the very same tensors (the server replaces a shard's tensor on update and
        # never changes one in place): the cat and the views are made once a round, not once
        # per worker. Compared by identity and version; the tensors are held, so an id is not
        # reused.
        self.assembled = assembled if assembled is not None else [(), None]

    def fetch(self, server: ParameterServer, shard: int) -> int:
        """Pull one shard's keys onto this worker's device; returns the version fetched."""
        version, keys = server.pull(shard)
        self.versions[shard] = version
        if keys is not None:  # None in timing-only runs
            self.shards[shard] = keys.to(self.device)
        return version

    def compute(self, step: int) -> None:
        """Gradient of push `step`: the mean over `accumulate` minibatches of global batch `step`."""
        if self.data is None:
            return
        layout = self.layout
        weights = assemble(layout, [self.shards[s] for s in range(layout.shards)], self.assembled)
        total: torch.Tensor | None = None
        losses = []
        for micro in range(self.accumulate):
            x, y = self.data.minibatch(step, self.rank, micro, self.workers, self.accumulate,
                                       self.batch)
            loss, grads = loss_and_grad(weights, x.to(self.device), y.to(self.device))
            losses.append(loss)
            flat = layout.flatten(grads)
            total = flat if total is None else total + flat
        # x / 1 is x, bit for bit: the mean of one minibatch needs no division (a tensor op less)
        self.grads = layout.split(total / self.accumulate if self.accumulate > 1 else total)
        self.loss = sum(losses) / len(losses)

    def push(self, server: ParameterServer, shard: int) -> bool:
        """Send this shard's part of the gradient; True when the server completed an update."""
        return server.push(shard, self.grads[shard] if self.grads else None)
