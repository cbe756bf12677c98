"""Everything one process needs to play its part, decided once by whoever launches the run.

A `Job` is plain data (it crosses into each process by pickle, or is rebuilt from the same
command line on every torchrun rank): the settings of `pslab.train`, the timing model's
durations in virtual seconds, and, for sync rounds, the order in which the simulated clock
hands the gradients to each shard. Ranks 0..S-1 are server shards, S..S+W-1 are workers.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..cluster import Cluster
from ..modes import Policy
from ..simulate import make_layout, simulate
from .options import Options


@dataclass(frozen=True)
class Job:
    policy: Policy
    workers: int
    accumulate: int
    lr: float
    batch: int
    steps: int
    shards: int | str  # as given to train: "layers" or S
    seed: int
    hidden: int
    durations: list[list[float]]  # virtual seconds, one row per worker, one column per minibatch
    transfer: list[float]  # virtual seconds of one transfer on each shard's link
    update: list[float]  # virtual seconds of one update on each shard
    order: list[list[int]] | None  # sync: per step, the workers in the order the clock pushes
    options: Options
    staleness_lr: bool = False  # each push's gradient divided by its staleness when above 1
    checkpoint: str | None = None  # the launcher writes the server's rounds here
    start_step: int = 0  # resumed from a checkpoint: the first step (= round) to run
    start_keys: tuple | None = None  # ... and each shard's keys then (numpy arrays)

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

    def layout(self):
        return make_layout(self.shards, self.hidden)

    def config(self) -> dict[str, Any]:
        """Run.config of the measured run: train's settings plus the backend's."""
        o = self.options
        return dict(mode=self.policy.name, workers=self.workers, accumulate=self.accumulate,
                    lr=self.lr, batch=self.batch, steps=self.steps, shards=self.shards,
                    seed=self.seed, numerics=True, hidden=self.hidden,
                    staleness_lr=self.staleness_lr, backend="processes",
                    time_scale=o.time_scale, timeout=o.timeout, address=o.address,
                    start_method=o.start_method, kill=dict(o.kill), hang=dict(o.hang),
                    transfers=o.transfers)


def make_job(policy: Policy, config: dict[str, Any], options: Options) -> Job:
    """The job for train's validated `config`. A timing-only simulated run of the same settings
    gives the order of each sync round's pushes: the shards add gradients in that order, so a
    sync run on processes ends bit for bit where the simulated one does."""
    cluster: Cluster = config["cluster"]
    keys = dict(workers=config["workers"], accumulate=config["accumulate"], lr=config["lr"],
                batch=config["batch"], steps=config["steps"], shards=config["shards"],
                seed=config["seed"], hidden=config["hidden"])
    timing = simulate(policy, dict(keys, mode=policy.name, cluster=cluster, numerics=False,
                                   staleness_lr=False), make_layout(keys["shards"], keys["hidden"]))
    keys["staleness_lr"] = bool(config.get("staleness_lr", False))
    layout = timing.layout
    total = layout.size
    shard_bytes = layout.shard_bytes()
    order = None
    if policy.waits_for_update and policy.aggregate(keys["workers"]) == keys["workers"]:
        order = [[] for _ in range(keys["steps"])]
        for span in timing.timeline:  # push spans appear in the order the server took them
            if span.kind == "push" and span.shard == 0:
                order[span.step].append(span.worker)
    durations = cluster.compute_durations(keys["workers"], keys["steps"] * keys["accumulate"],
                                          keys["seed"]).tolist()
    return Job(policy=policy, durations=durations, order=order, options=options,
               transfer=[cluster.transfer_time(b) for b in shard_bytes],
               update=[cluster.update_duration(layout.keys(s) / total)
                       for s in range(layout.shards)], **keys)
