"""How the server lays the parameters out over its shards (figure 000, and Θ in figure 003).

The named parameters are flattened, in server order, into one vector of keys; each shard holds
one contiguous key range [start, stop) of it, as ps-lite partitions its key space. Two ways to
cut the vector:
- `by_layer`: figure 000's shards, cut only between whole layers ({W_o, b_o}, {W_h, b_h});
- `key_range(S)`: S ranges of near-equal bytes, cutting through a tensor where needed (as MXNet
  splits a big array over all servers), so S shards really move S times less data each.
Both are ranges, so the server, the workers and the process backend handle them alike.
`make_layout` is the server's layout a run's `shards` setting names; `owner_layout` is ZeRO's,
one range per worker.
"""
from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral
from typing import Sequence

import torch

from .model import LAYERS, shapes as model_shapes

Params = dict[str, torch.Tensor]
BYTES_PER_VALUE = 4  # every key is a float32
MAX_SHARDS = 256


@dataclass(frozen=True)
class Layout:
    """Names and shapes of the parameters (server order) and each shard's key range."""

    names: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]
    ranges: tuple[tuple[int, int], ...]  # [start, stop) of each shard in the flat vector

    @classmethod
    def key_range(cls, shapes: dict[str, Sequence[int]], shards: int) -> "Layout":
        """`shards` contiguous ranges of near-equal size (they differ by at most one key)."""
        names, dims = _order(shapes)
        total = sum(_count(d) for d in dims)
        if not 1 <= shards <= total:
            raise ValueError(f"shards must be from 1 to {total} (one key each at most) "
                             f"(got {shards})")
        cuts = [total * s // shards for s in range(shards + 1)]
        return cls(names, dims, tuple(zip(cuts, cuts[1:])))

    @classmethod
    def by_layer(cls, shapes: dict[str, Sequence[int]], groups: Sequence[Sequence[str]]
                 ) -> "Layout":
        """One shard per group of whole tensors, groups taken in order (figure 000)."""
        order = [n for g in groups for n in g]
        if sorted(order) != sorted(shapes):
            raise ValueError(f"groups must hold every parameter once: {sorted(shapes)} "
                             f"(got {groups!r})")
        dims = tuple(tuple(shapes[n]) for n in order)
        edges, at = [0], 0
        for g in groups:
            at += sum(_count(tuple(shapes[n])) for n in g)
            edges.append(at)
        return cls(tuple(order), dims, tuple(zip(edges, edges[1:])))

    @property
    def size(self) -> int:
        """How many keys (scalars) the model has."""
        return self.ranges[-1][1]

    @property
    def shards(self) -> int:
        return len(self.ranges)

    def shard_bytes(self) -> list[int]:
        """Bytes of each shard's keys: what one transfer of the shard carries."""
        return [BYTES_PER_VALUE * (stop - start) for start, stop in self.ranges]

    def keys(self, shard: int) -> int:
        start, stop = self.ranges[shard]
        return stop - start

    def names_in(self, shard: int) -> list[str]:
        """The parameters with at least one key in the shard (a cut tensor appears in two)."""
        start, stop = self.ranges[shard]
        out, at = [], 0
        for name, dims in zip(self.names, self.shapes):
            n = _count(dims)
            if at < stop and at + n > start:
                out.append(name)
            at += n
        return out

    def flatten(self, params: Params) -> torch.Tensor:
        """One vector of every key, in server order."""
        return torch.cat([params[n].reshape(-1) for n in self.names])

    def unflatten(self, flat: torch.Tensor) -> Params:
        """The named tensors back, as views of `flat` (no copy)."""
        out, at = {}, 0
        for name, dims in zip(self.names, self.shapes):
            n = _count(dims)
            out[name] = flat[at:at + n].view(dims)
            at += n
        return out

    def split(self, flat: torch.Tensor) -> list[torch.Tensor]:
        """The vector cut into its shards' ranges (views, no copy)."""
        return [flat[a:b] for a, b in self.ranges]


def make_layout(shards: int | str, hidden: int) -> Layout:
    """The server's layout for a run's `shards`: "layers" or S near-equal key ranges."""
    sizes = model_shapes(features=64, hidden=hidden, classes=10)
    if shards == "layers":
        return Layout.by_layer(sizes, LAYERS)
    if not (isinstance(shards, Integral) and not isinstance(shards, bool)
            and 1 <= shards <= MAX_SHARDS):
        raise ValueError(f"shards must be 'layers' or an integer from 1 to {MAX_SHARDS} "
                         f"(got {shards!r})")
    return Layout.key_range(sizes, int(shards))


def owner_layout(workers: int, hidden: int) -> Layout:
    """ZeRO's layout: one near-equal key range per worker, the range it owns."""
    return Layout.key_range(model_shapes(features=64, hidden=hidden, classes=10), workers)


def _order(shapes: dict[str, Sequence[int]]) -> tuple[tuple[str, ...], tuple[tuple[int, ...], ...]]:
    if not shapes:
        raise ValueError("a layout needs at least one parameter")
    return tuple(shapes), tuple(tuple(d) for d in shapes.values())


def _count(dims: tuple[int, ...]) -> int:
    n = 1
    for d in dims:
        n *= d
    return n
