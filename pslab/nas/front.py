"""The NAS tier's two entries: `search` (figure 003) and `random_search` (its baseline).

    result = pslab.nas.search(servers=2, controllers=3, children=2, rounds=10, seed=0)
    baseline = pslab.nas.random_search(controllers=3, children=2, rounds=10, seed=0)

Both take the same arguments with the same defaults, checked once into a `SearchSettings`,
and run S server shards, K controller replicas and m child replicas each for R rounds on one
virtual clock. A search that trains many children shows a progress bar with an estimate of the
time left (a notebook bar in Jupyter, else on stderr), and Ctrl-C stops it cleanly: the
replicas' rounds finished so far come back as a partial `Search` (`complete` False, with a
warning), and the children trained so far stay in the cache, so a rerun gets them at once.
"""
from __future__ import annotations

import time
import warnings
from typing import Any

from ..checks import flag
from ..cluster import Cluster
from ..engine import stop_on_interrupt
from ..layout import Layout
from ..model import single_thread
from ..server import ParameterServer
from . import child
from .policies import POLICIES
from .result import Search
from .schedule import Tiers
from .settings import SearchSettings
from .space import Space

# progress=None shows a bar from this many children on (K x m x rounds): trained, a child takes
# 20-50 ms at load 1; timing only, the clock takes ~0.1 ms per child. Fixed by the arguments,
# never by the time taken, so a notebook's output is the same every run.
BAR_FROM = {True: 200, False: 20_000}


def search(servers: int = 2, controllers: int = 3, children: int = 2, rounds: int = 10,
           seed: int = 0, lr: float = 2.0, mode: str = "async", numerics: bool = True,
           cluster: Cluster | None = None, space: Space | dict | None = None,
           cube: bool = True, steps: int = 50, batch: int = 96, child_lr: float = 0.3,
           decay: float = 0.8, policy: str = "softmax", progress: bool | None = None
           ) -> Search:
    """Neural architecture search by REINFORCE on a parameter server (figure 003).

    servers: S shards holding Θ by key range (1 to Θ's size). controllers: K replicas.
    children: m child replicas per controller. rounds: batches per replica. seed: every random
    choice. lr: the servers' step on Θ. mode: "async" (each push applied as it comes) or
    "sync" (one averaged update per round, a barrier across replicas). numerics: False runs the
    clock only (children are sampled from the initial policy, uniform for "softmax"; no training).
    cluster: the timing model (default `Cluster(compute_time=0.03)`); a child takes
    steps × (compute_time / its speed) × its relative FLOPs; `speeds` and `durations` are per
    child replica (K·m rows, one column per round).
    space: what is searched (`pslab.nas.Space`). cube: reward R³ (the paper) or R.
    steps, batch, child_lr: each child's training budget. decay: the baseline's EMA decay.
    policy: the controller, "softmax" (one softmax per decision, Θ starts uniform) or "lstm"
    (the paper's recurrent controller; it wants a larger lr).
    progress: a bar with the time left, True or False; None: from `BAR_FROM` children on.
    Ctrl-C returns the partial search (see the module's docstring).
    """
    settings = SearchSettings(servers, controllers, children, rounds, seed, lr, mode, numerics,
                              cluster, space, cube, steps, batch, child_lr, decay, policy)
    return _run(settings, method="reinforce", progress=flag("progress", progress, True))


def random_search(servers: int = 2, controllers: int = 3, children: int = 2, rounds: int = 10,
                  seed: int = 0, lr: float = 2.0, mode: str = "async", numerics: bool = True,
                  cluster: Cluster | None = None, space: Space | dict | None = None,
                  cube: bool = True, steps: int = 50, batch: int = 96, child_lr: float = 0.3,
                  decay: float = 0.8, policy: str = "softmax", progress: bool | None = None
                  ) -> Search:
    """The baseline of figure 003: random search over the same space, at the same budget.

    Each replica samples its m children from the uniform policy (Θ = 0, never updated), so a
    random search trains exactly controllers·children·rounds children, on the same clock, with
    the same budget per child, as `search` does with the same arguments: it takes the same
    arguments with the same defaults, checked the same way and meaning the same, so one call
    can be swapped for the other. Those of the learning controller (servers, lr, mode, cube,
    decay, policy: where Θ lives and how it learns) are kept in the result's settings but
    change nothing here: a random search never pulls, learns or pushes Θ, and draws its
    children uniformly. progress and Ctrl-C: as in `search`.
    """
    settings = SearchSettings(servers, controllers, children, rounds, seed, lr, mode, numerics,
                              cluster, space, cube, steps, batch, child_lr, decay, policy)
    return _run(settings, method="random", progress=flag("progress", progress, True))


def _run(settings: SearchSettings, method: str, progress: bool | None) -> Search:
    """Checked `settings` run on the clock: method "reinforce" learns Θ, "random" never does."""
    learn, numerics, total = method == "reinforce", settings.numerics, settings.trained
    policy = POLICIES[settings.policy]
    layout = Layout.key_range(policy.shapes(settings.space), settings.servers)
    theta0 = policy.init(settings.space, settings.seed)
    server = ParameterServer(theta0 if numerics else None, layout, settings.lr,
                             aggregate=settings.controllers if settings.sync else 1)
    tiers = Tiers(server, policy, theta0, settings.space, settings.timing, settings.controllers,
                  settings.children, settings.rounds, settings.seed, sync=settings.sync,
                  learn=learn, numerics=numerics, budget=settings.budget, cube=settings.cube,
                  decay=settings.decay)
    before = child.stats["trained"]
    bar = None
    if progress or (progress is None and total >= BAR_FROM[numerics]):
        from tqdm.auto import tqdm

        bar = tqdm(total=total, desc=f"{method} search", unit="child")
        tiers.tick, tiers.sampled = bar.update, _Sampled(bar)
    try:  # the first Ctrl-C stops the clock between two events (engine.stop_on_interrupt)
        with single_thread(), stop_on_interrupt(tiers.clock):
            makespan = tiers.run()
    finally:
        if bar is not None:
            bar.close()
    if tiers.clock.stopped:
        warnings.warn(f"search interrupted after {len(tiers.samples)} of {total} children: "
                      f"returning the partial search (the children trained so far are "
                      f"cached: a rerun gets them at once)", stacklevel=3)
    makespan = max([makespan, *(s.end for s in tiers.timeline)])  # an update may end last
    theta = server.flat() if numerics and learn else None
    return Search(settings, method, tiers.timeline, tiers.samples, tiers.history, makespan,
                  layout, theta, child.stats["trained"] - before, tiers.gradients,
                  complete=not tiers.clock.stopped)


class _Sampled:
    """The bar counts children trained (or from the cache); the children sampled so far, ahead
    of them, go in its postfix (at most twice a second: each redraws it)."""

    def __init__(self, bar: Any):
        self.bar, self.n, self.shown = bar, 0, 0.0

    def __call__(self, n: int) -> None:
        self.n += n
        if time.monotonic() - self.shown > 0.5:
            self.bar.set_postfix_str(f"{self.n} sampled")
            self.shown = time.monotonic()
