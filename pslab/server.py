"""The parameter server of figures 000 and 003: shards, versions, pull and push.

Push and pull are the whole interface (as in ps-lite). The server knows nothing of time: the
engine decides when a pull or push happens, the server does the arithmetic
w_new = w − α·mean(∂L/∂w) the moment it is asked. `aggregate` pushes are averaged into one update
(the number of workers in sync mode, 1 in async), so the mode is a setting, not a second server.
"""
from __future__ import annotations

from itertools import combinations


from .model import NAMES, Params


def split_shards(sizes: dict[str, int], shards: int) -> list[list[str]]:
    """Split the parameters, in server order, into `shards` contiguous groups, the largest as
    small as possible (ties: the first such split). Two shards give figure 000's
    {W_o, b_o} and {W_h, b_h}.
    """
    names = [n for n in NAMES if n in sizes] + [n for n in sizes if n not in NAMES]

    def groups(cuts: tuple[int, ...]) -> list[list[str]]:
        edges = (0, *cuts, len(names))
        return [names[a:b] for a, b in zip(edges, edges[1:])]

    best = min(combinations(range(1, len(names)), shards - 1),
               key=lambda cuts: max(sum(sizes[n] for n in g) for g in groups(cuts)))
    return groups(best)


_EMPTY: Params = {}


class ParameterServer:
    """Holds the parameters in shards; each shard has its own version (count of updates)."""

    def __init__(self, params: Params | None, shards: list[list[str]], lr: float,
                 aggregate: int = 1):
        self.shards = shards
        self.lr = lr
        self.aggregate = aggregate
        self.params = dict(params) if params is not None else None  # None: timing only
        self.versions = [0] * len(shards)
        self._buffer: list[list[Params]] = [[] for _ in shards]
        self._counts = [0] * len(shards)

    def pull(self, shard: int) -> tuple[int, Params]:
        """The shard's version and its weights (tensors are never changed in place, so no copy)."""
        if self.params is None:
            return self.versions[shard], _EMPTY
        return self.versions[shard], {n: self.params[n] for n in self.shards[shard]}

    def push(self, shard: int, grads: Params) -> bool:
        """Hand in one gradient for the shard; True when it completed an update (version + 1)."""
        if self.params is None:  # timing only: count the pushes, no arithmetic
            buf = self._counts
            buf[shard] += 1
            if buf[shard] < self.aggregate:
                return False
            buf[shard] = 0
        else:
            buf = self._buffer[shard]
            buf.append(grads)
            if len(buf) < self.aggregate:
                return False
            self._apply(shard, buf)
            buf.clear()
        self.versions[shard] += 1
        return True

    def _apply(self, shard: int, grads: list[Params]) -> None:
        for name in self.shards[shard]:
            g = grads[0][name].to(self.params[name].device)
            for other in grads[1:]:  # summed in arrival order: the clock fixes it, so runs repeat
                g = g + other[name].to(g.device)
            self.params[name] = self.params[name] - self.lr * (g / len(grads))

    def weights(self) -> Params:
        """All parameters by name (empty in timing-only runs)."""
        return dict(self.params) if self.params is not None else {}
