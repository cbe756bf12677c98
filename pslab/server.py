"""The parameter server of figures 000 and 003: shards, versions, pull and push.

Push and pull are the whole interface (as in ps-lite). Each shard holds one contiguous key range
of the flattened parameters (`pslab.layout.Layout`). The server knows nothing of time: the
engine decides when a pull or push happens, the server does the arithmetic
w_new = w − α·mean(∂L/∂w) the moment it is asked. `aggregate` pushes are averaged into one update
(the number of workers in sync mode, 1 in async), so the mode is a setting, not a second server.
With `staleness_lr` a push `staleness` versions behind counts at lr / staleness (Zhang et al.
2016): the pusher says how stale it is, the server scales it.
Layer: arithmetic (with data, model, layout and worker), above the clock; it knows no actor.
"""
from __future__ import annotations

import torch

from .layout import Layout, Params


class ParameterServer:
    """Holds the parameters as one flat tensor per shard; each shard has its own version
    (its count of updates). `params=None` makes a timing-only server that just counts."""

    def __init__(self, params: Params | None, layout: Layout, lr: float, aggregate: int = 1,
                 staleness_lr: bool = False):
        self.layout = layout
        self.lr = lr
        self.aggregate = aggregate
        self.staleness_lr = staleness_lr
        # One tensor per shard, replaced on update and never changed in place: a pull hands out
        # the tensor itself, and the puller keeps the version it saw (no copy needed).
        self.params = None if params is None else [
            t.clone() for t in layout.split(layout.flatten(params))]
        self.versions = [0] * layout.shards
        # what each shard has gathered towards its next update: the gradients, or (timing
        # only) their count
        self.buffer: list[list[torch.Tensor]] = [[] for _ in range(layout.shards)]
        self.counts = [0] * layout.shards

    def pull(self, shard: int) -> tuple[int, torch.Tensor | None]:
        """The shard's version and its keys (None in timing-only runs)."""
        return self.versions[shard], None if self.params is None else self.params[shard]

    def push(self, shard: int, grad: torch.Tensor | None, staleness: int = 0) -> bool:
        """Hand in one gradient for the shard's keys, computed `staleness` versions ago; True
        when it completed an update."""
        if self.params is None:  # timing only: count the pushes, no arithmetic
            buf = self.counts
            buf[shard] += 1
            if buf[shard] < self.aggregate:
                return False
            buf[shard] = 0
        else:
            if self.staleness_lr and staleness > 1:
                grad = grad / staleness
            buf = self.buffer[shard]
            buf.append(grad)
            if len(buf) < self.aggregate:
                return False
            self._apply(shard, buf)
            buf.clear()
        self.versions[shard] += 1
        return True

    def _apply(self, shard: int, grads: list[torch.Tensor]) -> None:
        w = self.params[shard]
        device = w.device
        if len(grads) == 1:  # x / 1 is x, bit for bit: no mean to take
            step = grads[0].to(device) * self.lr
        else:  # summed in arrival order (the clock fixes it, so runs repeat) into a new tensor,
            # then divided and scaled in place: w - lr * (sum / n), the same kernels and bits
            step = grads[0].to(device) + grads[1].to(device)
            for other in grads[2:]:
                step.add_(other.to(device))
            step.div_(len(grads)).mul_(self.lr)
        self.params[shard] = w - step

    def flat(self) -> torch.Tensor:
        """Every key in one vector (server order)."""
        return torch.cat(self.params)

    def weights(self) -> Params:
        """All parameters by name (empty in timing-only runs)."""
        if self.params is None:
            return {}
        return self.layout.unflatten(self.flat())  # views of a fresh vector: the caller's own
