"""`pslab.train`: the front door of figures 000-002. One call checks every argument once,
then hands the run to a backend: the virtual clock (pslab/simulate.py) or real OS processes
(pslab/processes/); `pslab.resume` carries a checkpointed run on. It sits above both backends
and below the tiers (nas, classic), drawing and the notebooks.
"""
from __future__ import annotations

from pathlib import Path

from .checks import flag, integer, number, one_of
from .checkpoint import Checkpoint, settings_from_plain
from .checkpoint import load as load_checkpoint
from .cluster import Cluster
from .data import dataset_size
from .limits import check_fits
from .modes import Policy, policy_for
from .pipeline import Pipeline
from .pipeline.front import train_pipeline
from .processes.options import Options, check_options
from .result import Run
from .simulate import make_layout, owner_layout, simulate


def train(mode: str | Policy | Pipeline = "sync", workers: int = 3, accumulate: int = 1, lr: float = 0.5,
          batch: int = 32, steps: int = 50, shards: int | str = "layers", seed: int = 0,
          cluster: Cluster | None = None, numerics: bool = True, hidden: int = 32,
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
    mode may be pslab.Pipeline(stages, microbatches, schedule, chunks): pipeline parallelism,
    returning a PipelineRun (pslab/pipeline/; workers, accumulate and shards do not apply).
    """
    if isinstance(mode, Pipeline):
        return train_pipeline(mode, lr=lr, batch=batch, steps=steps, seed=seed, cluster=cluster,
                              numerics=numerics, hidden=hidden, backend=backend,
                              progress=progress, unused=dict(
                                  time_scale=time_scale, timeout=timeout, address=address,
                                  start_method=start_method, kill=kill, hang=hang,
                                  checkpoint=checkpoint, staleness_lr=staleness_lr,
                                  transfers=transfers))
    policy = policy_for(mode)
    workers = integer("workers", workers)
    accumulate = integer("accumulate", accumulate)
    lr = number("lr", lr, positive=True)
    batch = integer("batch", batch, high=dataset_size())
    steps = integer("steps", steps)
    hidden = integer("hidden", hidden)
    seed = integer("seed", seed, low=0, high=2**64 - 1)  # what torch.Generator accepts
    policy.check(workers, steps)
    for name, value in (("numerics", numerics), ("progress", progress),
                        ("staleness_lr", staleness_lr)):
        flag(name, value)
    given_cluster, cluster = cluster, Cluster() if cluster is None else cluster
    if not isinstance(cluster, Cluster):
        raise ValueError(f"cluster must be a pslab.Cluster (got {type(cluster).__name__})")
    layout = make_layout(shards, hidden)  # checked even where ZeRO replaces it
    if policy.stage:  # ZeRO: no server, worker i owns key range i
        layout = owner_layout(workers, hidden)
    cluster.check(workers, steps * accumulate)
    check_fits(workers=workers, steps=steps, accumulate=accumulate, shards=layout.shards,
               keys=layout.size, batch=batch, hidden=hidden, numerics=numerics,
               updates=workers * steps // policy.aggregate(workers))
    options = check_options(backend, workers, steps, layout.shards, time_scale=time_scale,
                            timeout=timeout, address=address, start_method=start_method,
                            kill=kill, hang=hang, transfers=transfers)

    config = dict(mode=policy.name, workers=workers, accumulate=accumulate, lr=lr, batch=batch,
                  steps=steps, shards=shards, seed=seed, cluster=cluster, numerics=numerics,
                  hidden=hidden, staleness_lr=staleness_lr)
    if checkpoint is not None and not isinstance(checkpoint, Checkpoint):
        raise ValueError(f"checkpoint must be a pslab.Checkpoint (got {checkpoint!r})")
    if options is not None:  # real processes: pslab/processes/
        if not numerics:
            raise ValueError("numerics=False only applies to backend='simulated'")
        if policy.ring:  # no server: PyTorch's own collectives
            return _collectives(policy, config, options, dict(
                time_scale=time_scale, address=address, start_method=start_method,
                checkpoint=checkpoint, cluster=given_cluster, staleness_lr=staleness_lr or None,
                transfers=transfers))
        from .processes.launcher import launch  # loaded on first use: import pslab stays light

        return launch(policy, config, options, progress, checkpoint)
    return simulate(policy, config, layout, progress, checkpoint)


def _collectives(policy: Policy, config: dict, options: Options, given: dict) -> Run:
    """ZeRO(3) on PyTorch's FSDP2 and "allreduce" on its DDP, one OS process per worker
    (pslab/processes/fsdp.py): real time, measured, so the settings of the simulated clock and
    of the parameter server's processes do not apply and are refused by name."""
    if policy.stage not in (0, 3):
        raise ValueError(f"backend='processes' runs ZeRO(3) on PyTorch's FSDP2 and 'allreduce' "
                         f"on its DDP; FSDP2 does not express {policy.name} (it shards the "
                         f"parameters too, i.e. stage 3): run {policy.name} with "
                         f"backend='simulated' (got mode={policy.name})")
    used = [name for name, value in given.items() if value is not None]
    if used:
        raise ValueError(f"{used[0]} does not apply to mode={policy.name} on processes: "
                         f"PyTorch's collectives run at full speed, are timed by the profiler "
                         f"and meet through a private file store (allowed there: timeout, kill, "
                         f"hang)")
    from .processes.fsdp import train_ddp, train_fsdp  # loaded on first use, as the launcher

    how = train_fsdp if policy.stage == 3 else train_ddp
    keys = ("workers", "steps", "seed", "batch", "lr", "hidden", "accumulate")
    return how(**{k: config[k] for k in keys}, timeout=options.timeout, kill=options.kill,
               hang=options.hang)


def resume(path: str | Path, progress: bool = False, backend: str = "simulated",
           address: str | None = None) -> Run:
    """Carry a checkpointed run on to its end; returns the Run (as if never interrupted).

    The file's settings go through train's own checks before anything starts. backend: the
    backend the caller resumes on, which must be the one the file was written on: a file alone
    never makes resume start processes. address (backend="processes" only): where the new
    processes listen, the caller's choice as in train (default loopback), never the file's;
    the file's other process options (time_scale, timeout, start_method, transfers) are kept."""
    flag("progress", progress)
    one_of("backend", backend, ("simulated", "processes"))
    saved = load_checkpoint(path)
    if saved["backend"] != backend:
        raise ValueError(f"{path} is a checkpoint of a run on backend={saved['backend']!r}: "
                         f"resume it with pslab.resume(path, backend={saved['backend']!r}) "
                         f"(got backend={backend!r})")
    given = {}
    if backend == "processes":
        given = {k: saved["options"][k] for k in ("time_scale", "timeout", "start_method",
                                                  "transfers")}
        recorded = saved["options"]["address"]
        if recorded not in ("127.0.0.1", "::1", address):
            raise ValueError(f"checkpoint {path}: field options.address: its run listened on "
                             f"{recorded!r}; a file never chooses where processes listen: "
                             f"pass address={recorded!r} to resume there, deliberately")
        given["address"] = address
    elif address is not None:
        raise ValueError("address only applies to resume(path, backend='processes')")
    again = Checkpoint(path)
    again.resuming = True
    try:
        settings = settings_from_plain(saved["settings"])
        return train(**settings, progress=progress, checkpoint=again, backend=backend, **given)
    except ValueError as error:  # train's checks of the file's settings: name the file
        if str(path) in str(error):
            raise
        raise ValueError(f"checkpoint {path}: {error}") from None
