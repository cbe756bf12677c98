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
from numbers import Integral
from typing import Any

import numpy as np
import torch

from .allreduce import RingSimulation
from .checkpoint import Checkpoint
from .collectives import ZeroSimulation
from .data import Digits
from .divergence import warn_if_diverged
from .layout import Layout
from .model import LAYERS, init_params, score, shapes, single_thread
from .modes import Policy
from .result import Run
from .server import ParameterServer
from .simulation import Simulation, no_numbers
from .worker import Worker, assemble


def simulate(policy: Policy, config: dict[str, Any], layout: Layout, progress: bool = False,
             checkpoint: Checkpoint | None = None) -> Run:
    """The simulated backend: train's checked `config` run on the virtual clock."""
    workers, accumulate, steps = config["workers"], config["accumulate"], config["steps"]
    batch, seed, cluster = config["batch"], config["seed"], config["cluster"]
    numerics, hidden, lr = config["numerics"], config["hidden"], config["lr"]
    staleness_lr = config["staleness_lr"]
    shard_bytes = cluster.timing_bytes(layout.shard_bytes())
    data = loaded(seed) if numerics else None
    params = init_params(data.features, hidden, data.classes, seed) if data else None
    server = ParameterServer(params, layout, policy.server_lr(lr, workers),
                             aggregate=policy.aggregate(workers))
    assembled: list = [(), None]  # the workers' shared last weights (Worker.assembled)
    crew = [Worker(i, data, workers, accumulate, batch, layout=layout, assembled=assembled)
            for i in range(workers)]

    score = partial(_score, server, data, assembled)

    # ring: no server (allreduce.py); ZeRO: the workers own the shards (collectives.py)
    actors = ZeroSimulation if policy.stage else RingSimulation if policy.ring else Simulation
    sim = actors(server, crew, policy, cluster,
                 seconds_by_worker(cluster.compute_durations(workers, steps * accumulate, seed)),
                 steps,
                 shard_bytes, score if data else no_numbers, staleness_lr)
    if progress:
        from tqdm.auto import tqdm

        pushes = steps * workers // policy.aggregate(workers)
        updates = steps if policy.waits_for_update else pushes
        sim.progress = tqdm(total=updates, desc=f"{policy.name}, {workers} workers", unit="update")
    # the first score too: on two busy cores, two threads took 0.25 s; no_grad: the workers'
    # gradients are written out (model.loss_and_grad), no graph is ever built
    with single_thread(), torch.no_grad():
        start_loss = score()[0] if data else math.nan
        if checkpoint is not None:  # write the state on the way, or carry on from written state
            checkpoint.play(sim, dict(config, mode=policy))
        else:
            sim.run()
    if sim.progress is not None:
        sim.progress.close()
    if sim.interrupted:
        warnings.warn(f"run interrupted at virtual time {sim.makespan:.3g} s after "
                      f"{len(sim.history)} updates: returning the partial run", stacklevel=3)
    groups = [layout.names_in(s) for s in range(layout.shards)]
    if policy.ring:  # no server rows to draw
        groups, shard_bytes = [], []
    run = Run(config, sim.timeline, sim.history, server.weights(), sim.makespan, groups,
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


MAX_SHARDS = 256


def owner_layout(workers: int, hidden: int) -> Layout:
    """ZeRO's layout: one near-equal key range per worker, the range it owns."""
    return Layout.key_range(shapes(features=64, hidden=hidden, classes=10), workers)


def make_layout(shards: int | str, hidden: int) -> Layout:
    """The server's layout for `train(shards=...)`: "layers" or S near-equal key ranges."""
    sizes = shapes(features=64, hidden=hidden, classes=10)
    if shards == "layers":
        return Layout.by_layer(sizes, LAYERS)
    if not (isinstance(shards, Integral) and not isinstance(shards, bool)
            and 1 <= shards <= MAX_SHARDS):
        raise ValueError(f"shards must be 'layers' or an integer from 1 to {MAX_SHARDS} "
                         f"(got {shards!r})")
    return Layout.key_range(sizes, int(shards))
