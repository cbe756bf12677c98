"""`pslab.train`: the front door of figures 000-002. One call makes the run's `Settings` (every
argument checked once, pslab/settings.py), then hands them to a backend: the virtual clock
(pslab/simulate.py) or real OS processes (pslab/processes/); `pslab.resume` carries a
checkpointed run on. It sits above both backends and below the tiers (nas, classic), drawing
and the notebooks.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Generator, Sequence

from .checkpoint import Checkpoint
from .checks import flag, one_of
from .cluster import Cluster
from .modes import Policy
from .options import LOOPBACK, ProcessOptions
from .pipeline import Pipeline
from .pipeline.front import run_pipeline
from .result import Run
from .settings import BACKENDS, Settings
from .simulate import simulate, simulate_in_parts


def train(mode: str | Policy | Pipeline = "sync", workers: int = 3, accumulate: int = 1,
          lr: float = 0.5, batch: int = 32, steps: int = 50, shards: int | str = "layers",
          seed: int = 0, cluster: Cluster | None = None, numerics: bool = True, hidden: int = 32,
          progress: bool = False, backend: str = "simulated", time_scale: float | None = None,
          timeout: float | None = None, address: str | None = None,
          start_method: str | None = None, kill: dict[int, int] | None = None,
          hang: dict[int, int] | None = None, checkpoint: Checkpoint | None = None,
          staleness_lr: bool = False, transfers: str | None = None) -> Run:
    """Train the digits MLP on a parameter server in virtual time.

    mode: "sync", "async" or pslab.SSP(s). workers: how many. accumulate: minibatches per push.
    lr: SGD step size. batch: rows per minibatch. steps: pushes per worker. shards: "layers"
    (figure 000: {W_o, b_o} and {W_h, b_h}) or an int S from 1 to 256, S key ranges of
    near-equal bytes (ps-lite's key ranges). seed: every random choice. cluster: the timing
    model (default Cluster()).
    numerics: False runs the same timeline without any arithmetic (fast, for large clusters).
    hidden: width of the hidden layer. progress: show a progress bar (a notebook bar in Jupyter).
    Interrupting a run (Ctrl-C, or the notebook's stop button) returns what was computed so far,
    with `run.complete == False`.
    backend: "simulated" (the virtual clock) or "processes": each shard and worker an OS
    process on torch.distributed (gloo), timeline measured; it alone takes time_scale (real
    seconds slept per virtual second of the cluster's durations, default 0.01), timeout
    (seconds, default 10), address (default "127.0.0.1", loopback), start_method
    ("forkserver" or "spawn"), kill / hang ({worker: step}: faults on purpose), transfers
    ("model", the default: a shard holds its link for the model's transfer time, or "wire": a
    transfer takes what the real network takes, how runs across shaped links are compared with
    the simulation). See docs/processes.md.
    staleness_lr: divide each push's learning rate by max(1, its staleness) (Zhang et al. 2016).
    checkpoint: pslab.Checkpoint(path, at=t) writes the run's whole state when virtual time
    reaches t; pslab.resume(path) carries it on, bit for bit (checkpoint.py). On processes,
    Checkpoint(path) writes the server's shards after every round (barrier modes).
    mode may also be pslab.Backup(b), pslab.SoftSync(c), "allreduce" or pslab.ZeRO(stage)
    (pslab.modes; ZeRO ignores shards: each worker owns one key range). On backend="processes",
    ZeRO(3) runs on PyTorch's FSDP2 and "allreduce" on its DDP (2 to 16 workers; timeout, kill
    and hang apply; ZeRO(1) and ZeRO(2), which FSDP2 does not express, are refused).
    mode may be pslab.Pipeline(stages, microbatches, schedule, chunks, replicas): pipeline
    parallelism, returning a PipelineRun (pslab/pipeline/; workers, accumulate and shards do
    not apply: the pipeline's ranks are the workers, its micro-batches the accumulation).
    """
    flag("progress", progress)
    settings = Settings.build(
        mode=mode, workers=workers, accumulate=accumulate, lr=lr, batch=batch, steps=steps,
        shards=shards, seed=seed, cluster=cluster, numerics=numerics, hidden=hidden,
        staleness_lr=staleness_lr, backend=backend, time_scale=time_scale, timeout=timeout,
        address=address, start_method=start_method, kill=kill, hang=hang, transfers=transfers)
    return train_settings(settings, progress, checkpoint)


def train_in_parts(pauses: Sequence[float], **kwargs: Any) -> Generator[float, None, Run]:
    """`train(**kwargs)` on the virtual clock, made in parts: it runs the events up to each
    virtual time of `pauses` (ascending) and yields that time, and the last part returns the
    Run, bit for bit `train(**kwargs)`'s. A caller with an event loop runs one part per turn.
    The arguments are checked here, before any part runs; simulated runs only."""
    settings = Settings.build(**kwargs)
    if settings.processes is not None or isinstance(settings.mode, Pipeline):
        raise ValueError(f"train_in_parts runs on the virtual clock only (got backend="
                         f"{settings.backend!r}, mode={settings.mode.name})")
    if any(not b > a for a, b in zip(pauses, pauses[1:])):
        raise ValueError(f"pauses must be ascending virtual times (got {list(pauses)!r})")
    return simulate_in_parts(settings, pauses)


def train_settings(settings: Settings, progress: bool = False,
                   checkpoint: Checkpoint | None = None) -> Run:
    """Run checked `settings` on their backend (what `train` does once it has made them)."""
    if checkpoint is not None and not isinstance(checkpoint, Checkpoint):
        raise ValueError(f"checkpoint must be a pslab.Checkpoint (got {checkpoint!r})")
    if isinstance(settings.mode, Pipeline):
        if checkpoint is not None:
            raise ValueError(f"checkpoint does not apply to mode={settings.mode.name}: a "
                             f"pipeline's step is short and its state is the weights")
        return run_pipeline(settings)
    if settings.processes is None:
        return simulate(settings, progress, checkpoint)
    if settings.mode.schedule == "server":
        from .processes.launcher import launch  # loaded on first use: import pslab stays light

        return launch(settings, progress, checkpoint)
    if checkpoint is not None:
        raise ValueError(f"checkpoint does not apply to mode={settings.mode.name} on processes: "
                         f"PyTorch's collectives run without a server to checkpoint")
    from .processes.fsdp import collectives  # FSDP2 / DDP, loaded on first use as the launcher

    return collectives(settings)


def resume(path: str | Path, progress: bool = False, backend: str = "simulated",
           address: str | None = None) -> Run:
    """Carry a checkpointed run on to its end; returns the Run (as if never interrupted).

    The file's settings go through train's own checks (Settings.from_dict) before anything
    starts. backend: the backend the caller resumes on, which must be the one the file was
    written on: a file alone never makes resume start processes. address (backend="processes"
    only): where the new processes listen, the caller's choice as in train (default loopback),
    never the file's; the file's other process options (time_scale, timeout, start_method,
    transfers) are kept, its faults on purpose (kill, hang) are not asked again."""
    flag("progress", progress)
    one_of("backend", backend, BACKENDS)
    if address is not None:  # the caller's arguments first, then the file
        if backend != "processes":
            raise ValueError("address only applies to resume(path, backend='processes')")
        ProcessOptions(address=address)
    again = Checkpoint.opened(path)
    saved = again.header
    if saved["backend"] != backend:
        raise ValueError(f"{path} is a checkpoint of a run on backend={saved['backend']!r}: "
                         f"resume it with pslab.resume(path, backend={saved['backend']!r}) "
                         f"(got backend={backend!r})")
    plain = dict(saved["settings"])
    if backend == "processes":
        recorded = plain["processes"]["address"]
        if recorded not in ("127.0.0.1", "::1", address):
            raise ValueError(f"checkpoint {path}: field settings.processes.address: its run "
                             f"listened on {recorded!r}; a file never chooses where processes "
                             f"listen: pass address={recorded!r} to resume there, deliberately")
        plain["processes"] = dict(plain["processes"], address=address or LOOPBACK, kill={},
                                  hang={})
    try:
        settings = Settings.from_dict(plain)
        if settings.backend != backend:
            raise ValueError(f"field settings.processes: a run on backend={backend!r} has "
                             f"none (got {plain['processes']!r})")
        return train_settings(settings, progress, again)
    except ValueError as error:  # the checks of the file's settings: name the file
        if str(path) in str(error):
            raise
        raise ValueError(f"checkpoint {path}: {error}") from None
