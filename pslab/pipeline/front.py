"""The front door of a pipelined run: `pslab.train(mode=pslab.Pipeline(...), ...)` hands its
arguments here, where each is checked by name before any work, then the run goes to its
backend (the virtual clock; real processes: pslab/pipeline/processes.py)."""
from __future__ import annotations

from typing import Any

from ..checks import flag, integer, number
from ..cluster import Cluster
from ..data import dataset_size
from ..limits import check_fits
from .mode import Pipeline
from .result import PipelineRun
from .simulated import simulate_pipeline

BACKENDS = ("simulated", "processes")
ON_PROCESSES = ("timeout", "kill", "hang")  # train's process options a pipeline takes


def train_pipeline(pipe: Pipeline, *, lr: float, batch: int, steps: int, seed: int,
                   cluster: Cluster | None, numerics: bool, hidden: int, backend: str,
                   progress: bool, unused: dict[str, Any]) -> PipelineRun:
    """Check a pipelined run's arguments and run it. `unused`: train's arguments that belong
    to other modes, refused by name unless left at None (workers, accumulate and shards are
    the parameter server's: here the stages are the workers and the micro-batches the
    accumulation, so they are ignored)."""
    lr = number("lr", lr, positive=True)
    batch = integer("batch", batch, high=dataset_size())
    steps = integer("steps", steps)
    seed = integer("seed", seed, low=0, high=2**64 - 1)
    hidden = integer("hidden", hidden, high=4096)
    flag("numerics", numerics)
    flag("progress", progress)
    cluster = Cluster() if cluster is None else cluster
    if not isinstance(cluster, Cluster):
        raise ValueError(f"cluster must be a pslab.Cluster (got {type(cluster).__name__})")
    if cluster.jitter or cluster.durations is not None:
        raise ValueError("a pipeline's cluster takes compute_time, speeds (one per stage), "
                         "latency, bandwidth and update_time; jitter and durations do not "
                         "apply (every step of a pipeline is timed alike)")
    cluster.check(pipe.stages, steps)
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(map(repr, BACKENDS))} for a "
                         f"Pipeline (got {backend!r})")
    processes = backend == "processes"
    for name, value in unused.items():
        if value not in (None, False) and not (processes and name in ON_PROCESSES):
            where = "on processes (timeout, kill and hang do)" if processes else \
                "on the virtual clock"
            raise ValueError(f"{name} does not apply to a Pipeline {where} "
                             f"(got {name}={value!r})")
    if processes:
        return _on_processes(pipe, lr, batch, steps, seed, hidden, numerics, unused)
    keys = sum(hidden * (64 if j == 0 else hidden) + hidden for j in range(pipe.layers - 1))
    check_fits(workers=pipe.stages, steps=steps, accumulate=pipe.microbatches * 3,
               shards=1, keys=keys + 10 * hidden + 10, batch=batch * pipe.microbatches,
               hidden=hidden * pipe.layers, numerics=numerics, updates=steps)
    return simulate_pipeline(pipe, lr, batch, steps, seed, cluster, numerics, hidden)


def _on_processes(pipe: Pipeline, lr: float, batch: int, steps: int, seed: int, hidden: int,
                  numerics: bool, given: dict[str, Any]) -> PipelineRun:
    """One OS process per rank on PyTorch's pipelining (loaded on first use: pslab stays
    light); at most 16 ranks, steps 1 to 10^5, timeout seconds of silence (default 10)."""
    if not numerics:
        raise ValueError("numerics=False only applies to backend='simulated'")
    integer("stages (one process each on backend='processes')", pipe.stages, high=16)
    integer("steps", steps, high=10**5)
    timeout = 10.0 if given["timeout"] is None else number(
        "timeout (seconds)", given["timeout"], positive=True, high=86400)
    from .processes import train_processes

    return train_processes(pipe, lr, batch, steps, seed, hidden, timeout, given["kill"],
                           given["hang"])
