"""The settings of a run: one typed, frozen object, made and checked once.

`pslab.train(...)` makes a `Settings` from its keyword arguments (`Settings.build`); the
backends (pslab/simulate.py, pslab/processes/), the `Run` and the checkpoint carry that object
unchanged and trust it. Each rule is checked in one place: a value's own type and range here,
when the object is made; a mode's own rule in its policy (`Policy.check`); the timing table's
shape in `Cluster.check`; the shard layout in `layout.make_layout`; memory in
`limits.check_fits`; a process option's own rule in `ProcessOptions` (pslab/options.py). A
changed copy (`dataclasses.replace`) is checked again.

`to_dict()` gives the settings as JSON values, and `Settings.from_dict(d)` makes the object
again through the same `build` as `train`: a file read back is checked exactly as typed-in
arguments are.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from .checks import flag, integer, number, one_of
from .cluster import Cluster
from .data import dataset_size
from .layout import Layout, make_layout, owner_layout
from .limits import check_fits
from .modes import Policy, Staged, Sync, policy_for, policy_from_name
from .options import ProcessOptions, check_faults

BACKENDS = ("simulated", "processes")
PROCESS_OPTIONS = tuple(f.name for f in fields(ProcessOptions))
MAX_PROCESSES = 64  # shards + workers: each is a whole Python process with torch loaded
COLLECTIVE_WORKERS = (2, 16)  # FSDP2 and DDP on processes: one process per worker
# what PyTorch's collectives and pipelines on processes take (they run at full speed, timed by
# the profiler or the clock, and meet through a private file store); the other process
# options must keep their defaults
COLLECTIVE_OPTIONS = ("timeout", "kill", "hang")
PIPELINE_RANKS, PIPELINE_STEPS = 16, 10**5  # a pipeline on processes: one process per rank


# The rules of a setting that another entry takes too (`pslab.nas.search`): written once here.
def check_seed(value: Any) -> int:
    """A seed: an integer a torch.Generator takes (0 to 2**64 - 1)."""
    return integer("seed", value, low=0, high=2**64 - 1)


def check_batch(value: Any) -> int:
    """Rows per minibatch: 1 to the digits' training rows."""
    return integer("batch", value, high=dataset_size())


def check_cluster(value: Any) -> Cluster | None:
    """A timing model: a `pslab.Cluster`, or None for the entry's default."""
    if value is not None and not isinstance(value, Cluster):
        raise ValueError(f"cluster must be a pslab.Cluster (got {type(value).__name__})")
    return value


@dataclass(frozen=True)
class Settings:
    """Everything a run is made from (what `pslab.train` takes, less how to show and save it).

    mode: a `Policy` ("sync", "async", SSP(s), Backup(b), SoftSync(c), "allreduce", ZeRO(k)),
    or a `pslab.Pipeline` (a `Staged` mode: workers become its stages × replicas, accumulate
    its micro-batches; shards do not apply).
    workers; accumulate: minibatches per push; lr: SGD step size; batch: rows per minibatch;
    steps: pushes per worker; shards: "layers" or S key ranges; seed: every random choice;
    cluster: the timing model (None: `Cluster()`); numerics: False runs the timeline without
    arithmetic; hidden: the hidden layer's width; staleness_lr: each push's lr divided by its
    staleness; processes: the process backend's options, or None for the simulated clock.
    """

    mode: Policy | Staged = field(default_factory=Sync)
    workers: int = 3
    accumulate: int = 1
    lr: float = 0.5
    batch: int = 32
    steps: int = 50
    shards: int | str = "layers"
    seed: int = 0
    cluster: Cluster | None = None
    numerics: bool = True
    hidden: int = 32
    staleness_lr: bool = False
    processes: ProcessOptions | None = None

    def __post_init__(self) -> None:
        put = object.__setattr__  # frozen: the checked values replace the given ones, once
        staged = isinstance(self.mode, Staged)
        if staged:  # the pipeline's own numbers, checked where it was made
            put(self, "workers", self.mode.stages * self.mode.replicas)
            put(self, "accumulate", self.mode.microbatches)
        else:
            put(self, "mode", policy_for(self.mode))
        for name in ("workers", "accumulate"):
            put(self, name, integer(name, getattr(self, name)))
        put(self, "lr", number("lr", self.lr, positive=True))
        put(self, "batch", check_batch(self.batch))
        for name in ("steps", "hidden"):
            put(self, name, integer(name, getattr(self, name)))
        put(self, "seed", check_seed(self.seed))
        for name in ("numerics", "staleness_lr"):
            put(self, name, flag(name, getattr(self, name)))
        check_cluster(self.cluster)
        if staged:
            self._check_pipeline()
            return
        self.mode.check(self.workers, self.steps)
        make_layout(self.shards, self.hidden)  # the shards rule, even where ZeRO replaces it
        self.timing.check(self.workers, self.steps * self.accumulate)
        layout = self.layout
        check_fits(workers=self.workers, steps=self.steps, accumulate=self.accumulate,
                   shards=layout.shards, keys=layout.size, batch=self.batch, hidden=self.hidden,
                   numerics=self.numerics, updates=self.updates)
        if self.processes is not None:
            self._check_processes()

    def _check_processes(self) -> None:
        """The rules a run on real processes adds to the settings' own."""
        options, mode = self.processes, self.mode
        if not isinstance(options, ProcessOptions):
            raise ValueError(f"processes must be a pslab.options.ProcessOptions or None "
                             f"(got {options!r})")
        if not self.numerics:
            raise ValueError("numerics=False only applies to backend='simulated'")
        if isinstance(mode, Staged):
            self._only_collective_options("PyTorch's pipelining runs at full speed, timed by "
                                          "the clock,")
            integer("stages (one process each on backend='processes')", mode.stages,
                    high=PIPELINE_RANKS)
            if mode.stages * mode.replicas > PIPELINE_RANKS:
                raise ValueError(f"stages * replicas must be at most {PIPELINE_RANKS} on "
                                 f"backend='processes', one process per rank of every replica "
                                 f"(got {mode.stages} * replicas={mode.replicas})")
            why = mode.refusal_on_processes()
            if why:
                raise ValueError(why)
            integer("steps", self.steps, high=PIPELINE_STEPS)
        elif mode.schedule != "server":  # PyTorch's own collectives: FSDP2 and DDP
            if mode.schedule == "zero" and mode.stage != 3:
                raise ValueError(f"backend='processes' runs ZeRO(3) on PyTorch's FSDP2 and "
                                 f"'allreduce' on its DDP; FSDP2 does not express {mode.name} "
                                 f"(it shards the parameters too, i.e. stage 3): run "
                                 f"{mode.name} with backend='simulated' (got mode={mode.name})")
            self._only_collective_options("PyTorch's collectives run at full speed, are timed "
                                          "by the profiler")
            low, high = COLLECTIVE_WORKERS
            integer("workers (FSDP2 and DDP on processes)", self.workers, low=low, high=high)
        elif self.workers + self.layout.shards > MAX_PROCESSES:
            raise ValueError(f"workers + shards must be at most {MAX_PROCESSES} with backend="
                             f"'processes', one OS process each (got {self.workers} + "
                             f"{self.layout.shards})")
        object.__setattr__(self, "processes", ProcessOptions(**{
            n: check_faults(n, getattr(options, n), self.workers, self.steps)
            if n in ("kill", "hang") else getattr(options, n) for n in PROCESS_OPTIONS}))

    def _only_collective_options(self, why: str) -> None:
        """Refuse, by name, a process option beyond COLLECTIVE_OPTIONS, a cluster or
        staleness_lr on a backend of PyTorch's own (`why` says what it does instead)."""
        options, defaults = self.processes, ProcessOptions()
        used = [n for n in PROCESS_OPTIONS if n not in COLLECTIVE_OPTIONS
                and getattr(options, n) != getattr(defaults, n)]
        used += ["cluster"] * (self.cluster is not None) + ["staleness_lr"] * self.staleness_lr
        if used:
            raise ValueError(f"{used[0]} does not apply to mode={self.mode.name} on processes: "
                             f"{why} and meet through a private file store (allowed there: "
                             f"{', '.join(COLLECTIVE_OPTIONS)})")

    def _check_pipeline(self) -> None:
        """The rules a pipelined run adds (the Pipeline's own are checked where it is made)."""
        pipe = self.mode
        if self.staleness_lr:
            raise ValueError("staleness_lr does not apply to a Pipeline: its ranks meet at "
                             "every flush, no gradient is stale")
        timing = self.timing
        if timing.jitter or timing.durations is not None:
            raise ValueError("a pipeline's cluster takes compute_time, speeds (one per rank: "
                             "stages × replicas), latency, bandwidth and update_time; jitter "
                             "and durations do not apply (every step of a pipeline is timed "
                             "alike)")
        timing.check(self.workers, self.steps)
        h = self.hidden
        keys = sum(h * (64 if j == 0 else h) + h for j in range(pipe.layers - 1)) + 10 * h + 10
        shown = dict(stages=pipe.stages, replicas=pipe.replicas, microbatches=pipe.microbatches,
                     layers=pipe.layers, steps=self.steps, batch=self.batch, hidden=h,
                     numerics=self.numerics)
        check_fits(shown, workers=self.workers, steps=self.steps,
                   accumulate=self.accumulate * 3, shards=1, keys=keys,
                   batch=self.batch * self.accumulate, hidden=h * pipe.layers,
                   numerics=self.numerics, updates=self.steps)
        if self.processes is not None:
            self._check_processes()

    @classmethod
    def build(cls, mode: str | Policy = "sync", backend: str = "simulated",
              **given: Any) -> "Settings":
        """The settings `train`'s keyword arguments describe: backend and the process options
        (time_scale, timeout, address, start_method, kill, hang, transfers; None: the default)
        become `processes`, refused by name on backend="simulated"."""
        one_of("backend", backend, BACKENDS)
        options = {n: given.pop(n) for n in PROCESS_OPTIONS if given.get(n) is not None}
        for n in PROCESS_OPTIONS:
            given.pop(n, None)
        allowed = [f.name for f in fields(cls) if f.name != "processes"]
        unknown = sorted(set(given) - set(allowed))
        if unknown:
            raise ValueError(f"unknown setting(s) {', '.join(unknown)}; allowed: "
                             f"{', '.join(allowed)}, backend, {', '.join(PROCESS_OPTIONS)}")
        if backend == "simulated":
            if options:
                raise ValueError(f"{', '.join(options)} only apply to backend='processes' "
                                 f"(got backend='simulated')")
            return cls(mode=mode, **given)
        return cls(mode=mode, **given, processes=ProcessOptions(**options))

    @property
    def backend(self) -> str:
        return "simulated" if self.processes is None else "processes"

    @property
    def timing(self) -> Cluster:
        """The timing model: the given cluster, or the default `Cluster()`."""
        return Cluster() if self.cluster is None else self.cluster

    @property
    def layout(self) -> Layout:
        """Where the keys live: the server's shards, or ZeRO's range per worker."""
        if self.mode.schedule == "zero":
            return owner_layout(self.workers, self.hidden)
        return make_layout(self.shards, self.hidden)

    @property
    def updates(self) -> int:
        """How many updates the run makes when it completes (a pipeline: one per step)."""
        if isinstance(self.mode, Staged):
            return self.steps
        return self.workers * self.steps // self.mode.aggregate(self.workers)

    def to_dict(self) -> dict[str, Any]:
        """The settings as JSON values: the mode by its name, the cluster by its arguments
        (None: the default), `processes` as a dict of the options (kill/hang keys as strings,
        as JSON has them) or None."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        options = self.processes
        out.update(mode=self.mode.name,
                   **({"pipeline": self.mode.plain()} if isinstance(self.mode, Staged) else {}),
                   cluster=None if self.cluster is None else self.cluster.plain(),
                   processes=None if options is None else {
                       n: {str(k): v for k, v in getattr(options, n).items()}
                       if n in ("kill", "hang") else getattr(options, n)
                       for n in PROCESS_OPTIONS})
        return out

    @classmethod
    def from_dict(cls, values: Any) -> "Settings":
        """The settings `to_dict` wrote (a file read back), checked exactly as `train` checks
        its arguments (through the same `build`)."""
        if not isinstance(values, dict) or not all(isinstance(k, str) for k in values):
            raise ValueError(f"settings must be a dict of train's arguments (got {values!r})")
        out = dict(values)
        if "mode" in out:
            out["mode"] = policy_from_name(out["mode"])
        if out.get("cluster") is not None:
            try:
                out["cluster"] = Cluster.from_plain(out["cluster"])
            except TypeError as error:  # an argument Cluster does not have
                raise ValueError(f"cluster: {error}") from None
        options = out.pop("processes", None)
        if options is not None:
            if not isinstance(options, dict) or set(options) - set(PROCESS_OPTIONS):
                raise ValueError(f"processes must be None or a dict of "
                                 f"{', '.join(PROCESS_OPTIONS)} (got {options!r})")
            out.update(options, backend="processes")
            for n in ("kill", "hang"):
                if isinstance(out.get(n), dict):  # JSON's keys are strings
                    out[n] = {int(k) if isinstance(k, str) and k.isdigit() else k: v
                              for k, v in out[n].items()}
        return cls.build(**out)
