"""Update modes of figure 000 and the classic papers as policies over one engine.

A policy answers a few questions and nothing else:
- how many pushes the server averages into one update (`aggregate`) and whether it adds them at
  the full learning rate instead (`server_lr`: SSP, like Ho et al.'s and Li et al.'s servers);
- whether a worker waits for the update after pushing (`waits_for_update`: a barrier) and which
  pushes of a round the server drops (with a barrier over N of N + b workers, the late ones);
- when a worker may start its next step (`bound`, `may_start`);
- how the run is scheduled (`schedule`): "server" (workers push to a parameter server),
  "allreduce" (no server: the workers run a ring all-reduce, pslab.allreduce) or "zero" (no
  server: worker i owns key range i and runs ZeRO's collectives, pslab.collectives).

| mode | aggregate | barrier | |
|---|---|---|---|
| sync | N | yes | figure 000 |
| async | 1 | no | figure 000 |
| SSP(s) | 1 (N when s = 0) | no (yes when s = 0) | Ho et al. 2013; SSP(0) is BSP |
| Backup(b) | N − b of N | yes, the b late pushes dropped | Chen et al. 2016 |
| SoftSync(c) | c | no | Zhang et al. 2016 (n-softsync with λ workers: c = λ / n) |
| allreduce | N | yes, no server | d2l, DDP |
| ZeRO(k) | N | yes, no server: worker i owns key range i | Rajbhandari et al. 2020, FSDP |
"""
from __future__ import annotations

import math

from .checks import integer


# The largest bound a mode takes on its own, before it meets a run: more workers, steps or pushes
# than any run on one machine can hold (a run's memory estimate refuses far less). What needs
# the run (b < workers, c dividing workers * steps) is checked by `check`, when train has it.
MOST = 10**9


class Policy:
    name = "policy"
    waits_for_update = False  # True: after pushing, wait for the update, then fetch (a barrier)
    bound = math.inf  # how many steps a worker may run ahead of the slowest one
    schedule = "server"  # how it runs: "server", "allreduce" or "zero" (see the table above)

    def aggregate(self, workers: int) -> int:
        return 1

    def server_lr(self, lr: float, workers: int) -> float:
        """The server's step size: it averages `aggregate` pushes and multiplies by this."""
        return lr

    def check(self, workers: int, steps: int) -> None:
        """Raise ValueError, naming the policy's parameter, if it cannot run on this many."""

    def may_start(self, step: int, slowest_pushed: int) -> bool:
        """May a worker start push number `step` (0-based) when the slowest has pushed this many?"""
        return step - slowest_pushed <= self.bound

    def __repr__(self) -> str:
        return self.name

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)


class Sync(Policy):
    """A barrier: the server averages all workers' gradients, makes one update, then all fetch."""

    name = "sync"
    waits_for_update = True
    bound = 0

    def aggregate(self, workers: int) -> int:
        return workers


class Backup(Sync):
    """Sync with b backup workers (Chen et al. 2016; TensorFlow's replicas_to_aggregate).

    Of `workers` = N + b, the server averages the first N pushes of each round and drops the b
    late ones; a late worker fetches the new weights and goes on. Backup(0) is sync.
    """

    def __init__(self, b: int):
        self.b = integer("b (the number of backup workers)", b, low=0, high=MOST)
        self.name = f"Backup({self.b})"

    def aggregate(self, workers: int) -> int:
        return workers - self.b

    def check(self, workers: int, steps: int) -> None:
        if self.b >= workers:
            raise ValueError(f"Backup(b) needs b < workers: the server averages workers - b "
                             f"pushes per round (got b={self.b} with workers={workers})")


class Async(Policy):
    """Every push is applied when it arrives; no worker ever waits for another."""

    name = "async"


class SoftSync(Policy):
    """Soft synchronization (Zhang et al. 2016): the server averages every c pushes as they
    arrive, whoever sent them, with no barrier. SoftSync(1) is async; Zhang's n-softsync with λ
    workers is SoftSync(λ // n)."""

    def __init__(self, c: int):
        self.c = integer("c (pushes averaged per update)", c, high=MOST)
        self.name = f"SoftSync({self.c})"

    def aggregate(self, workers: int) -> int:
        return self.c

    def check(self, workers: int, steps: int) -> None:
        if (workers * steps) % self.c:
            raise ValueError(f"SoftSync(c) needs c to divide workers * steps = {workers * steps} "
                             f"(every push must end up in an update) (got c={self.c})")


class SSP(Policy):
    """Stale synchronous parallel (Ho et al. 2013): no worker starts step t+s+1 before all have
    pushed step t. Every gradient counts at the full learning rate, as on their server.

    s >= 1: pushes are applied one by one as in async; SSP(s) with s >= steps is exactly async.
    s = 0 is BSP, Ho et al.'s definition: one barrier per step like sync, the server adds the
    step's N gradients in one update. So SSP(0)'s timeline is sync's, and its weights at lr are
    sync's at N·lr (sync averages the gradients, SSP adds them).
    """

    def __init__(self, s: int):
        self.bound = integer("s (the SSP staleness bound)", s, low=0, high=MOST)
        self.name = f"SSP({self.bound})"

    @property
    def waits_for_update(self) -> bool:  # type: ignore[override]
        return self.bound == 0

    def aggregate(self, workers: int) -> int:
        return workers if self.bound == 0 else 1

    def server_lr(self, lr: float, workers: int) -> float:
        # the server averages its `aggregate` pushes: scaling by their number makes it a sum
        return lr * self.aggregate(workers)


class AllReduce(Sync):
    """No server: after each step the workers run a ring all-reduce of their gradients
    (reduce-scatter, then all-gather; what DDP does) and all apply the mean: sync's numerics."""

    name = "allreduce"
    schedule = "allreduce"


class ZeRO(AllReduce):
    """ZeRO (Rajbhandari et al., SC'20) and PyTorch's FSDP: figure 000's shards move into the
    workers. With N workers the flat parameters are cut into N key ranges (the server's
    `Layout`), worker i owns range i: its optimizer state (stage 1, P_os), its gradients too
    (stage 2, P_os+g), its parameters too (stage 3, P_os+g+p). After each step a reduce-scatter
    leaves each worker the summed gradient of its own range; it updates that range and an
    all-gather hands everyone the new weights. Stage 3 gathers the parameters before the
    forward and again before the backward pass, then reduce-scatters the gradients. The
    numbers are sync's (pslab.collectives)."""

    schedule = "zero"

    def __init__(self, stage: int):
        self.stage = integer("stage (ZeRO's stage: 1 optimizer states, 2 + gradients, "
                             "3 + parameters)", stage, low=1, high=3)
        self.name = f"ZeRO({self.stage})"

    def check(self, workers: int, steps: int) -> None:
        if workers < 2:
            raise ValueError(f"ZeRO(stage) needs workers >= 2: with one worker there is "
                             f"nothing to shard (got workers={workers} for {self.name})")


MODES = {"sync": Sync, "async": Async, "allreduce": AllReduce}


class Staged:
    """A mode that cuts the model into stages (`pslab.Pipeline`, pslab/pipeline/mode.py): it
    checks its own arguments when made; `Settings` reads these and checks the run's."""

    name: str
    stages: int  # ranks of one pipeline
    microbatches: int  # per replica and step
    replicas: int = 1  # data-parallel copies of the pipeline (their gradients all-reduced)
    layers: int

    def plain(self) -> dict:
        """The mode's arguments as plain values."""
        raise NotImplementedError

    def refusal_on_processes(self) -> str | None:
        """Why real processes cannot run this mode, naming the argument, or None."""
        return None


def policy_from_name(name: str) -> Policy:
    """The mode a policy's name names ("sync", "SSP(2)", "Backup(1)", ...): for files read
    back, which hold names, never objects."""
    if name in MODES:
        return MODES[name]()
    kind, _, rest = str(name).partition("(")
    bounded = {"SSP": SSP, "Backup": Backup, "SoftSync": SoftSync, "ZeRO": ZeRO}
    if kind in bounded and rest.endswith(")") and rest[:-1].isdigit():
        return bounded[kind](int(rest[:-1]))
    return policy_for(name)  # refuses it, in the words train uses


def policy_for(mode: str | Policy) -> Policy:
    if isinstance(mode, Policy):
        return mode
    if isinstance(mode, str) and mode in MODES:
        return MODES[mode]()
    raise ValueError(f"mode must be 'sync', 'async', 'allreduce', pslab.SSP(s) with an integer "
                     f"s >= 0, pslab.Backup(b), pslab.SoftSync(c) or pslab.ZeRO(stage) with "
                     f"stage 1, 2 or 3 (got {mode!r})")
