"""Everything one process needs to play its part, decided once by whoever launches the run.

A `Job` is plain data (it crosses into each process by pickle, or is rebuilt from the same
command line on every torchrun rank): the settings of `pslab.train`, the timing model's
durations in virtual seconds, and, for sync rounds, the order in which the simulated clock
hands the gradients to each shard. Ranks 0..S-1 are server shards, S..S+W-1 are workers.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, replace

from ..layout import Layout
from ..settings import Settings
from ..simulate import simulate


@dataclass(frozen=True)
class Job:
    settings: Settings  # the run's, checked by whoever made them (train, or torchrun's parse)
    durations: list[list[float]]  # virtual seconds, one row per worker, one column per minibatch
    transfer: list[float]  # virtual seconds of one transfer on each shard's link
    update: list[float]  # virtual seconds of one update on each shard
    order: list[list[int]] | None  # sync: per step, the workers in the order the clock pushes
    checkpoint: str | None = None  # the launcher writes the server's rounds here
    start_step: int = 0  # resumed from a checkpoint: the first step (= round) to run
    start_keys: tuple | None = None  # ... and each shard's keys then (numpy arrays)

    # the settings each process reads most, by their short names
    policy = property(lambda self: self.settings.mode)
    options = property(lambda self: self.settings.processes)
    workers = property(lambda self: self.settings.workers)
    steps = property(lambda self: self.settings.steps)
    accumulate = property(lambda self: self.settings.accumulate)
    seed = property(lambda self: self.settings.seed)
    hidden = property(lambda self: self.settings.hidden)

    @property
    def num_shards(self) -> int:
        return len(self.transfer)

    @property
    def world(self) -> int:
        return self.num_shards + self.workers

    def role(self, rank: int) -> tuple[str, int]:
        """("shard", s) for ranks 0..S-1, ("worker", w) for the rest: roles follow from rank."""
        s = self.num_shards
        return ("shard", rank) if rank < s else ("worker", rank - s)

    def layout(self) -> Layout:
        return self.settings.layout


def make_job(settings: Settings) -> Job:
    """The job for checked `settings` on processes. A timing-only simulated run of the same
    settings gives the order of each sync round's pushes: the shards add gradients in that
    order, so a sync run on processes ends bit for bit where the simulated one does."""
    policy, workers, steps = settings.mode, settings.workers, settings.steps
    with warnings.catch_warnings():  # its "run interrupted": this one is not the user's run
        warnings.filterwarnings("ignore", "run interrupted", UserWarning)
        timing = simulate(replace(settings, numerics=False, staleness_lr=False, processes=None))
    if not timing.complete:  # a Ctrl-C stopped its clock (engine.stop_on_interrupt): the
        raise KeyboardInterrupt  # user's, to stop the launch, before any process starts
    layout = timing.layout
    total = layout.size
    order = None
    if policy.waits_for_update and policy.aggregate(workers) == workers:
        order = [[] for _ in range(steps)]
        for span in timing.timeline:  # push spans appear in the order the server took them
            if span.kind == "push" and span.shard == 0:
                order[span.step].append(span.worker)
    cluster = settings.timing
    durations = cluster.compute_durations(workers, steps * settings.accumulate,
                                          settings.seed).tolist()
    return Job(settings, durations=durations, order=order,
               transfer=[cluster.transfer_time(b) for b in layout.shard_bytes()],
               update=[cluster.update_duration(layout.keys(s) / total)
                       for s in range(layout.shards)])
