"""The simulated backend: train's checked settings run on the virtual clock (figures 000-002).

Builds the data, the model, the server, the workers and the actors on the clock, runs them
(writing or resuming a checkpoint on the way) and returns the `Run`. The process backend
(pslab/processes/) is its sibling; the front door (pslab/training.py) picks one of them.
"""
from __future__ import annotations

import math
import warnings
from array import array
from functools import lru_cache, partial
from typing import Generator, Sequence

import numpy as np
import torch

from .allreduce import RingSimulation
from .checkpoint import Checkpoint
from .collectives import ZeroSimulation
from .data import Digits
from .divergence import warn_if_diverged
from .model import init_params, score, single_thread
from .result import Run
from .server import ParameterServer
from .settings import Settings
from .simulation import Simulation, no_numbers
from .worker import Worker, assemble

# how each policy's schedule runs on the clock: through the server (simulation.py), a ring
# all-reduce without one (allreduce.py), or ZeRO's owners and collectives (collectives.py)
ACTORS = {"server": Simulation, "allreduce": RingSimulation, "zero": ZeroSimulation}


def simulate(settings: Settings, progress: bool = False,
             checkpoint: Checkpoint | None = None) -> Run:
    """The simulated backend: checked `settings` run on the virtual clock."""
    parts = simulate_in_parts(settings, (), progress, checkpoint)
    while True:
        try:
            next(parts)
        except StopIteration as done:
            return done.value


def simulate_in_parts(settings: Settings, pauses: Sequence[float], progress: bool = False,
                      checkpoint: Checkpoint | None = None) -> Generator[float, None, Run]:
    """`simulate`, pausing at each virtual time of `pauses` (ascending): it runs the events up
    to that time, then yields it; the next part goes on from there, and the last one returns
    the Run, the same run bit for bit as one `simulate` (a dashboard's event loop runs one part
    per turn, so a slider moved meanwhile waits for one part, not the whole run)."""
    if pauses and checkpoint is not None:
        raise ValueError("pauses and checkpoint do not go together: a checkpoint runs the "
                         "clock its own way")
    policy, layout, cluster = settings.mode, settings.layout, settings.timing
    workers, accumulate, steps = settings.workers, settings.accumulate, settings.steps
    batch, seed, hidden, lr = settings.batch, settings.seed, settings.hidden, settings.lr
    numerics = settings.numerics
    shard_bytes = cluster.timing_bytes(layout.shard_bytes())
    data = loaded(seed) if numerics else None
    params = init_params(data.features, hidden, data.classes, seed) if data else None
    server = ParameterServer(params, layout, policy.server_lr(lr, workers),
                             policy.aggregate(workers), settings.staleness_lr)
    assembled: list = [(), None]  # the workers' shared last weights (Worker.assembled)
    crew = [Worker(i, data, workers, accumulate, batch, layout=layout, assembled=assembled)
            for i in range(workers)]

    score = partial(_score, server, data, assembled)

    actors = ACTORS[policy.schedule]
    sim = actors(server, crew, policy, cluster,
                 seconds_by_worker(cluster.compute_durations(workers, steps * accumulate, seed)),
                 steps, shard_bytes, score if data else no_numbers)
    if progress:
        from tqdm.auto import tqdm

        pushes = steps * workers // policy.aggregate(workers)
        updates = steps if policy.waits_for_update else pushes
        sim.progress = tqdm(total=updates, desc=f"{policy.name}, {workers} workers", unit="update")
    # one thread for the first score too (two cost more on a busy machine); no_grad: the
    # workers' gradients are written out (model.loss_and_grad), no graph is ever built
    with single_thread(), torch.no_grad():
        start_loss = score()[0] if data else math.nan
    for pause in pauses:  # torch's settings held only while a part runs, never across a yield
        with single_thread(), torch.no_grad():
            sim.run(until=pause)
        if sim.interrupted:
            break
        yield pause
    with single_thread(), torch.no_grad():
        if checkpoint is not None:  # write the state on the way, or carry on from written state
            checkpoint.play(sim, settings)
        elif not sim.interrupted:
            sim.run()
    if sim.progress is not None:
        sim.progress.close()
    if sim.interrupted:
        warnings.warn(f"run interrupted at virtual time {sim.makespan:.3g} s after "
                      f"{len(sim.history)} updates: returning the partial run", stacklevel=4)
    groups = [layout.names_in(s) for s in range(layout.shards)]
    if policy.schedule != "server":  # no server rows to draw
        groups, shard_bytes = [], []
    run = Run(settings, sim.timeline, sim.history, server.weights(), sim.makespan, groups,
              shard_bytes, complete=not sim.interrupted, layout=layout,
              push_staleness=sim.push_staleness, start_loss=start_loss)
    warn_if_diverged(run)
    return run


@lru_cache(maxsize=4)
def loaded(seed: int) -> Digits:
    """The digits split of a seed, loaded once per process and shared by its runs, which only
    read it: a dashboard trains again on every slider step, and the split keeps its shuffled
    epochs (Digits.shuffled) from one run to the next instead of copying them again."""
    return Digits.load(seed)


def seconds_by_worker(durations: np.ndarray) -> list[array]:
    """One row of compute seconds per worker, as doubles: a row reads as floats, like a list,
    at 8 bytes a step instead of a float object's 32 (2 MB less at 800 x 100)."""
    return [array("d", row.tobytes()) for row in np.ascontiguousarray(durations, np.float64)]


def _score(server: ParameterServer, data: Digits, assembled: list) -> tuple[float, float]:
    """(training loss, test accuracy) of the server's weights now. Put together in the
    workers' shared `assembled`: in sync mode the next round's workers fetch these very
    tensors, so they reuse the weights instead of making them again."""
    return score(assemble(server.layout, server.params, assembled), data)
