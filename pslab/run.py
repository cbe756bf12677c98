"""`pslab.train`: one call that builds the data, model, server, workers and clock of figures
000–002, runs them in virtual time and returns a `Run` (timeline, history, weights, makespan).
"""
from __future__ import annotations

import math
from numbers import Integral
import warnings
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from contextlib import contextmanager
from typing import Any, Iterator

import torch

from .checks import flag, integer, number
from .cluster import Cluster
from .data import Digits, dataset_size
from .divergence import divergence, warn_if_diverged
from .layout import BYTES_PER_VALUE, Layout  # noqa: F401 - BYTES_PER_VALUE: public here too
from .limits import check_fits
from .model import LAYERS, Params, init_params, score, shapes
from .modes import Policy, policy_for
from .processes.options import check_options
from .checkpoint import Checkpoint, settings_from_plain
from .checkpoint import load as load_checkpoint
from .server import ParameterServer
from .simulation import Record, Simulation, no_numbers
from .timeline import Span, covered, total, worker_shares
from .worker import Worker



@dataclass
class Run:
    """What a run leaves behind. `timeline`, `history`, `weights` and `makespan` are the contract
    the notebooks and plots read; the rest are conveniences derived from them."""

    config: dict[str, Any]
    timeline: list[Span]
    history: list[Record]
    weights: Params
    makespan: float
    shards: list[list[str]] = field(default_factory=list)
    shard_bytes: list[int] = field(default_factory=list)
    complete: bool = True  # False when the run was interrupted (Ctrl-C): a partial timeline
    layout: Layout | None = None  # each shard's key range of the flattened parameters
    push_staleness: list[int] = field(default_factory=list)  # of every push used, in order
    start_loss: float = math.nan  # training loss of the initial weights (nan: timing only)

    @property
    def workers(self) -> int:
        return self.config["workers"]

    @property
    def mode(self) -> str:
        return str(self.config["mode"])

    @property
    def idle_time(self) -> float:
        """Total time workers spent waiting (the white blocks of figure 001)."""
        return total(self.timeline, "idle")

    @property
    def sync_wait(self) -> float:
        """The part of the idle time that falls while the server applies an update: in figure
        001 the blue gradient-sync column, as opposed to the white wait for slower GPUs."""
        updates = [(s.start, s.end) for s in self.timeline if s.kind == "update"]
        return covered((s for s in self.timeline if s.kind == "idle"), updates)

    @property
    def queue_time(self) -> float:
        """Idle time spent queued behind other transfers at a busy shard (more shards or more
        bandwidth cure it), as opposed to `barrier_time`."""
        return total(self.timeline, "idle", "queue")

    @property
    def barrier_time(self) -> float:
        """Idle time spent waiting for other workers: a sync round, the SSP bound, the ring."""
        return total(self.timeline, "idle", "barrier")

    @property
    def dropped(self) -> int:
        """Pushes the server dropped (backup workers: they came after their round closed)."""
        return sum(1 for s in self.timeline if s.kind == "push" and s.note == "dropped"
                   and s.shard in (0, None))

    @property
    def diverged(self) -> bool:
        """True when the training loss became non-finite or blew up (see `divergence`)."""
        return divergence(self) is not None

    @property
    def divergence(self) -> str | None:
        """What went wrong, in a sentence, or None (pslab.divergence)."""
        return divergence(self)

    @property
    def idle_fraction(self) -> float:
        """Idle time over all workers' time (workers x makespan)."""
        return self.idle_time / (self.workers * self.makespan) if self.makespan else 0.0

    def shares(self) -> list[dict[str, float]]:
        """Per worker, seconds computing, transferring and idle (adding up to the makespan), and
        the queue and barrier parts of idle: see pslab.timeline.worker_shares."""
        return worker_shares(self.timeline, self.workers, self.makespan)

    @property
    def updates(self) -> int:
        return len(self.history)

    @property
    def staleness(self) -> list[int]:
        return [r.staleness for r in self.history]

    @property
    def final_accuracy(self) -> float:
        return self.history[-1].accuracy if self.history else math.nan

    def to_chrome_trace(self, path: str | Path) -> Path:
        """Write the timeline as a Chrome trace (Perfetto, chrome://tracing); see trace.py."""
        from .drawing.trace import to_chrome_trace

        return to_chrome_trace(self, path)

    def __repr__(self) -> str:
        acc = self.final_accuracy
        acc_text = "" if math.isnan(acc) else f", test accuracy {acc:.1%}"
        updates = f"{self.updates} update" + ("" if self.updates == 1 else "s")
        diverged = ", DIVERGED" if self.diverged else ""
        return (f"Run({self.mode}, {self.workers} workers, {updates}, makespan "
                f"{self.makespan:.3g} s, idle {self.idle_fraction:.1%}{acc_text}{diverged})")


def as_runs(value: Any, name: str = "run", many: bool = True) -> list[Run]:
    """Check a plotting entry's argument: a Run (or, with many=True, a non-empty list of them)."""
    runs = [value] if isinstance(value, Run) else list(value) if many and isinstance(
        value, (list, tuple)) else None
    if not runs or not all(isinstance(r, Run) for r in runs):
        what = "a pslab.Run (what pslab.train returns)" + (" or a non-empty list of them"
                                                            if many else "")
        raise ValueError(f"{name} must be {what} (got {type(value).__name__})")
    return runs


@contextmanager
def single_thread() -> Iterator[None]:
    """Run torch on one thread inside the block.

    The digits MLP is tiny: on a busy 2-core machine one thread trains it ~10x faster than the
    default (one per core), and the numbers no longer depend on how many cores the machine has
    (matmul reductions split by thread change the last bits), so a seed gives the same run
    everywhere and notebook outputs compare exactly.
    """
    before = torch.get_num_threads()
    if before != 1:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if before != 1:
            torch.set_num_threads(before)


def train(mode: str | Policy = "sync", workers: int = 3, accumulate: int = 1, lr: float = 0.5,
          batch: int = 32, steps: int = 50, shards: int | str = "layers", seed: int = 0,
          cluster: Cluster | None = None, numerics: bool = True, hidden: int = 32,
          progress: bool = False, backend: str = "simulated", time_scale: float | None = None,
          timeout: float | None = None, address: str | None = None,
          start_method: str | None = None, kill: dict[int, int] | None = None,
          hang: dict[int, int] | None = None, checkpoint: Checkpoint | None = None,
          staleness_lr: bool = False) -> Run:
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
    ("forkserver" or "spawn"), kill / hang ({worker: step}: faults on purpose). See
    docs/processes.md.
    staleness_lr: divide each push's learning rate by max(1, its staleness) (Zhang et al. 2016).
    checkpoint: pslab.Checkpoint(path, at=t) writes the run's whole state when virtual time
    reaches t; pslab.resume(path) carries it on, bit for bit (checkpoint.py). On processes,
    Checkpoint(path) writes the server's shards after every round (barrier modes).
    mode may also be pslab.Backup(b), pslab.SoftSync(c) or "allreduce" (pslab.modes).
    """
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
    cluster = Cluster() if cluster is None else cluster
    if not isinstance(cluster, Cluster):
        raise ValueError(f"cluster must be a pslab.Cluster (got {type(cluster).__name__})")
    layout = make_layout(shards, hidden)
    cluster.check(workers, steps * accumulate)
    check_fits(workers=workers, steps=steps, accumulate=accumulate, shards=layout.shards,
               keys=layout.size, batch=batch, hidden=hidden, numerics=numerics,
               updates=workers * steps // policy.aggregate(workers))
    options = check_options(backend, workers, steps, layout.shards, time_scale=time_scale,
                            timeout=timeout, address=address, start_method=start_method,
                            kill=kill, hang=hang)

    config = dict(mode=policy.name, workers=workers, accumulate=accumulate, lr=lr, batch=batch,
                  steps=steps, shards=shards, seed=seed, cluster=cluster, numerics=numerics,
                  hidden=hidden, staleness_lr=staleness_lr)
    if options is not None and policy.ring:
        raise ValueError(f"backend='processes' runs the parameter-server modes (sync, async, "
                         f"SSP, Backup, SoftSync), not a ring all-reduce (got mode={policy.name})")
    if checkpoint is not None and not isinstance(checkpoint, Checkpoint):
        raise ValueError(f"checkpoint must be a pslab.Checkpoint (got {checkpoint!r})")
    if options is not None:  # real processes: pslab/processes/
        if not numerics:
            raise ValueError("numerics=False only applies to backend='simulated'")
        from .processes.launcher import launch

        return launch(policy, config, options, progress, checkpoint)
    shard_bytes = cluster.timing_bytes(layout.shard_bytes())
    data = Digits.load(seed) if numerics else None
    params = init_params(data.features, hidden, data.classes, seed) if data else None
    server = ParameterServer(params, layout, policy.server_lr(lr, workers),
                             aggregate=policy.aggregate(workers))
    crew = [Worker(i, data, workers, accumulate, batch, layout=layout) for i in range(workers)]

    score = partial(_score, server, data)

    actors = Simulation
    if policy.ring:  # no server: the workers all-reduce (pslab/allreduce.py)
        from .allreduce import RingSimulation as actors
    sim = actors(server, crew, policy, cluster,
                 cluster.compute_durations(workers, steps * accumulate, seed).tolist(), steps,
                 shard_bytes, score if data else no_numbers, staleness_lr)
    start_loss = score()[0] if data else math.nan
    if progress:
        from tqdm.auto import tqdm

        pushes = steps * workers // policy.aggregate(workers)
        updates = steps if policy.waits_for_update else pushes
        sim.progress = tqdm(total=updates, desc=f"{policy.name}, {workers} workers", unit="update")
    with single_thread():
        if checkpoint is not None:  # write the state on the way, or carry on from written state
            checkpoint.play(sim, dict(config, mode=policy))
        else:
            sim.run()
    if sim.progress is not None:
        sim.progress.close()
    if sim.interrupted:
        warnings.warn(f"run interrupted at virtual time {sim.makespan:.3g} s after "
                      f"{len(sim.history)} updates: returning the partial run", stacklevel=2)
    groups = [layout.names_in(s) for s in range(layout.shards)]
    if policy.ring:  # no server rows to draw
        groups, shard_bytes = [], []
    run = Run(config, sim.timeline, sim.history, server.weights(), sim.makespan, groups,
              shard_bytes, complete=not sim.interrupted, layout=layout,
              push_staleness=sim.push_staleness, start_loss=start_loss)
    warn_if_diverged(run)
    return run


def resume(path: str | Path, progress: bool = False) -> Run:
    """Carry a checkpointed run on to its end; returns the Run (as if never interrupted)."""
    flag("progress", progress)
    saved = load_checkpoint(path)
    settings = settings_from_plain(saved["settings"])
    if saved.get("backend") == "processes":
        from .processes.launcher import resume_processes

        return resume_processes(saved, Path(path), progress)
    again = Checkpoint(path)
    again.resuming = True
    return train(**settings, progress=progress, checkpoint=again)


def _score(server: ParameterServer, data: Digits) -> tuple[float, float]:
    """(training loss, test accuracy) of the server's weights now."""
    return score(server.layout.unflatten(server.flat()), data)


MAX_SHARDS = 256


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
