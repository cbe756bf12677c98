"""The baseline of figure 003: random search over the same space, at the same budget.

Each "replica" samples its m children from the uniform policy (Θ = 0, never updated), so
random search trains exactly K·m·rounds children, on the same clock, with the same budget per
child, as `search` does with the same K, m and rounds. Only the learning is missing.
"""
from __future__ import annotations

from ..cluster import Cluster
from .search import Search, _check, _run
from .space import Space


def random_search(controllers: int = 3, children: int = 2, rounds: int = 10, seed: int = 0,
                  numerics: bool = True, cluster: Cluster | None = None,
                  space: Space | dict | None = None, steps: int = 50, batch: int = 96,
                  child_lr: float = 0.3) -> Search:
    """Sample controllers·children·rounds children uniformly and train them (no servers, no
    gradients). The arguments mean what they mean in `pslab.nas.search`."""
    cfg = _check(1, controllers, children, rounds, seed, 1.0, "async", numerics, cluster, space,
                 False, steps, batch, child_lr, 0.0)
    return _run(cfg, method="random", learn=False)
