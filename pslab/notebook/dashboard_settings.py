"""What a dashboard's controls say, as one `pslab.train` call: the settings and the presets.

`Settings` holds the nine controlled values (workers, accumulation, lr, mode, SSP's s, the
straggler's slowdown, shards, bandwidth, links) plus the fixed parts of a figure's set-up; `PRESETS`
are the set-ups the notebooks start from (figures 000-002); `describe_change` and
`value_text` say a setting the way a person reads it ("bandwidth 100 kB/s"). No plotting and
no widgets here: `pslab.notebook.liveview` draws, `pslab.widgets` puts controls in front.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from ..checks import integer, number, one_of
from ..data import dataset_size
from ..cluster import LINKS, Cluster
from ..modes import SSP

MODES = ("sync", "async", "SSP")
RANGES = {"workers": (1, 16), "accumulate": (1, 8), "ssp": (0, 10), "shards": (1, 8)}
SLOWDOWN = (1.0, 4.0)  # how many times slower G0 may be
# a slider move re-simulates the whole run, 16 workers at most: 1,000 steps of them take well
# under a second; 10^6 steps would take minutes and gigabytes
MAX_MINIBATCHES = 1000


@dataclass(frozen=True)
class Settings:
    """What a dashboard shows. The first nine are on controls; the rest come from a preset.

    slowdown: how many times slower worker 0 (G0, the straggler of figure 000) computes.
    bandwidth: bytes per second of each server shard's link. ssp: the s of SSP(s) (mode "SSP").
    links: how a shard's link carries transfers (`pslab.Cluster`'s links): "duplex", a real
    link, or "one-at-a-time", the seed figures' link where a fetch waits for a push.
    minibatches: when set, the work is fixed instead of the steps: each worker computes this
    many minibatches, so a run has minibatches / accumulate steps (figure 001: accumulating
    k minibatches per push makes k times fewer updates of the same total work).
    """

    workers: int = 8
    accumulate: int = 1
    lr: float = 0.5
    mode: str = "sync"
    ssp: int = 2
    slowdown: float = 2.0
    shards: int = 2
    bandwidth: float = 1e5
    links: str = "duplex"
    steps: int = 30
    batch: int = 32
    seed: int = 0
    compute_time: float = 1.0
    jitter: float = 0.1
    latency: float = 0.02
    update_time: float = 0.2
    palette: str = "ps"
    minibatches: int | None = None

    def __post_init__(self) -> None:
        # The same ranges as the controls: a dashboard never starts where a slider cannot be.
        one_of("mode", self.mode, MODES)
        one_of("links", self.links, LINKS)
        for name, (low, high) in RANGES.items():
            integer(name, getattr(self, name), low, high)
        integer("steps", self.steps, high=MAX_MINIBATCHES)
        integer("batch", self.batch, high=dataset_size())
        integer("seed", self.seed, low=0)
        if self.minibatches is not None:  # a slider move re-simulates: it must stay quick
            integer("minibatches", self.minibatches, high=MAX_MINIBATCHES)
            if self.minibatches % self.accumulate:
                raise ValueError(f"accumulate must divide minibatches={self.minibatches} "
                                 f"(one of {', '.join(map(str, self.accumulations()))}; "
                                 f"got {self.accumulate})")
        low, high = SLOWDOWN
        if number("slowdown", self.slowdown) < low or self.slowdown > high:
            raise ValueError(f"slowdown must be a number from {low:g} to {high:g} "
                             f"(got {self.slowdown!r})")
        number("lr", self.lr, positive=True)
        number("bandwidth", self.bandwidth, positive=True, allow_inf=True)
        one_of("palette", self.palette, ("ps", "accumulation"))
        self.cluster()  # the timing model's own checks (compute_time, jitter, ...), up front

    @property
    def run_steps(self) -> int:
        """Steps per worker: `steps`, or minibatches / accumulate when the work is fixed."""
        return self.steps if self.minibatches is None else self.minibatches // self.accumulate

    def accumulations(self) -> list[int]:
        """The accumulation steps a control offers: all of 1-8, or those dividing the work."""
        low, high = RANGES["accumulate"]
        return [k for k in range(low, high + 1)
                if self.minibatches is None or self.minibatches % k == 0]

    @property
    def policy(self) -> str | SSP:
        return SSP(self.ssp) if self.mode == "SSP" else self.mode

    def cluster(self) -> Cluster:
        speeds = [1.0 / self.slowdown] + [1.0] * (self.workers - 1)
        return Cluster(compute_time=self.compute_time, speeds=speeds, jitter=self.jitter,
                       latency=self.latency, bandwidth=self.bandwidth,
                       update_time=self.update_time, links=self.links)

    def train_kwargs(self) -> dict[str, Any]:
        """The exact arguments of `pslab.train` for these settings (numerics left to the caller)."""
        return dict(mode=self.policy, workers=self.workers, accumulate=self.accumulate,
                    lr=self.lr, batch=self.batch, steps=self.run_steps, shards=self.shards,
                    seed=self.seed, cluster=self.cluster())

    def code(self) -> str:
        """The same run as one line of Python, to paste into a cell."""
        kw = self.train_kwargs()
        mode = f"pslab.SSP({self.ssp})" if self.mode == "SSP" else repr(self.mode)
        cl = (f"pslab.Cluster(compute_time={self.compute_time:g}, speeds={_speeds_code(self)}, "
              f"jitter={self.jitter:g}, latency={self.latency:g}, bandwidth={self.bandwidth:.3g}, "
              f"update_time={self.update_time:g}"
              + (f", links={self.links!r})" if self.links != "duplex" else ")"))
        return (f"pslab.train(mode={mode}, workers={kw['workers']}, accumulate={kw['accumulate']}, "
                f"lr={self.lr:.3g}, batch={self.batch}, steps={kw['steps']}, shards={self.shards}, "
                f"seed={self.seed}, cluster={cl})")

    def changed(self, **values: Any) -> "Settings":
        return replace(self, **values)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _speeds_code(s: Settings) -> str:
    rest = f" + [1.0] * {s.workers - 1}" if s.workers > 1 else ""
    return f"[1 / {s.slowdown:g}]{rest}"


# The dashboards of the notebooks: each starts where its figure is (the exact replays live in
# pslab.replay; these are the same set-ups made continuous so that every control means something).
PRESETS: dict[str, Settings] = {
    # A general lab: 8 workers x 30 steps is the size the latency goal is stated for.
    "default": Settings(),
    # 000: three processors, G0 at half speed, F and P short, a visible server Update.
    "000": Settings(workers=3, mode="async", slowdown=2.0, steps=12, compute_time=3.0,
                    jitter=0.0, latency=0.25, bandwidth=1e8, update_time=1.0),
    # 001: four GPUs, uneven forward/backward blocks, one gradient sync; accumulate two steps.
    # The work is fixed (24 minibatches per GPU), as in the figure: accumulate moves only how
    # often the GPUs sync, so updates and idle time fall as it grows.
    "001": Settings(workers=4, accumulate=2, mode="sync", slowdown=1.0, shards=1,
                    compute_time=3.3, jitter=0.15, latency=0.0, bandwidth=1e8, update_time=1.0,
                    palette="accumulation", batch=16, minibatches=24),
    # 002: three data-parallel workers on a two-shard server, as pslab.replay.figure002().
    "002": Settings(workers=3, mode="sync", slowdown=1.0, steps=20, jitter=0.2),
}


def preset(name: str = "default", **overrides: Any) -> Settings:
    """The settings a dashboard starts from: PRESETS[name] with `overrides` applied."""
    if not isinstance(name, str) or name not in PRESETS:
        raise ValueError(f"preset_name must be one of {', '.join(map(repr, PRESETS))} (got {name!r})")
    unknown = sorted(set(overrides) - set(asdict(PRESETS[name])))
    if unknown:
        raise ValueError(f"{unknown[0]} is not a dashboard setting; the settings are "
                         f"{', '.join(asdict(PRESETS[name]))}")
    return PRESETS[name].changed(**overrides) if overrides else PRESETS[name]


def value_text(name: str, value: Any) -> str:
    """A setting as a person reads it: 'bandwidth 100 kB/s', 'straggler × 2', 'lr 0.5'."""
    if name == "bandwidth":
        return f"bandwidth {bytes_per_s(value)}"
    if name == "slowdown":
        return f"straggler × {value:g}"
    if name == "ssp":
        return f"SSP s {value}"
    return f"{name} {value:g}" if isinstance(value, float) else f"{name} {value}"


def bytes_per_s(b: float) -> str:
    for unit, size in (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if b >= size:
            return f"{b / size:g} {unit}"
    return f"{b:g} B/s"


def describe_change(now: Settings, before: Settings) -> str:
    """'workers 3', 'mode sync, lr 0.1': what `before` had that `now` has not (short)."""
    names = ("workers", "accumulate", "lr", "mode", "ssp", "slowdown", "shards", "bandwidth",
             "links")
    parts = []
    for n in names:
        a, b = getattr(now, n), getattr(before, n)
        if a != b and not (n == "ssp" and "SSP" not in (now.mode, before.mode)):
            parts.append(value_text(n, b))
    return ", ".join(parts[:2]) + (", ..." if len(parts) > 2 else "") if parts else "same"
