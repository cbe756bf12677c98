"""The baseline of figure 003: random search over the same space, at the same budget.

Each "replica" samples its m children from the uniform policy (Θ = 0, never updated), so
random search trains exactly K·m·rounds children, on the same clock, with the same budget per
child, as `search` does with the same K, m and rounds. Only the learning is missing.
"""
from __future__ import annotations

from ..cluster import Cluster
from ..checks import flag
from .search import Search, _check, _run
from .space import Space


def random_search(servers: int = 2, controllers: int = 3, children: int = 2, rounds: int = 10,
                  seed: int = 0, lr: float = 2.0, mode: str = "async", numerics: bool = True,
                  cluster: Cluster | None = None, space: Space | dict | None = None,
                  cube: bool = True, steps: int = 50, batch: int = 96, child_lr: float = 0.3,
                  decay: float = 0.8, policy: str = "softmax", progress: bool | None = None
                  ) -> Search:
    """Sample controllers·children·rounds children uniformly and train them: the baseline of
    `pslab.nas.search`, which takes the same arguments with the same defaults, checked the same
    way and meaning the same, so one call can be swapped for the other. Those of the learning
    controller (servers, lr, mode, cube, decay, policy: where Θ lives and how it learns) are
    kept in the result's config but change nothing here: a random search never pulls, learns or
    pushes Θ, and draws its children uniformly (tested). progress and Ctrl-C: as in `search`."""
    cfg = _check(servers, controllers, children, rounds, seed, lr, mode, numerics, cluster,
                 space, cube, steps, batch, child_lr, decay, policy)
    return _run(cfg, method="random", learn=False, progress=flag("progress", progress, True))
