"""The timing model behind every figure: how long compute, transfers and updates take.

`Cluster` says nothing about what is computed, only how long it takes in virtual seconds:
per-worker speeds (stragglers), per-minibatch jitter drawn from the run's seed, or an explicit
table of compute durations (figure 001 gives one); transfers cost latency + bytes / bandwidth on
the link of the shard that serves them, carried as `links` says (full duplex by default); an
update of the whole model takes `update_time` (a shard holding a fraction f of the parameters
takes f·update_time, so more shards update in parallel).
`model_bytes` replays a real model's costs (d2l's 160 MB of gradients) in the timing while the
numerics keep training the digits MLP; `colocated` puts shard s on worker s's GPU, as when one
GPU (or every GPU, a slice each) aggregates the gradients.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .checks import number

_JITTER = 3  # random stream id for compute jitter
# Bounds that keep every time of the model finite (a run sums up to ~10^8 of them):
LONGEST = 1e9  # seconds (30 years) for one minibatch, transfer or update
MAX_JITTER = 5.0  # exp(5·z): one sigma is already a 150x spread
SLOWEST_LINK = 1e-6  # bytes per second
ARGUMENTS = ("compute_time", "speeds", "jitter", "durations", "latency", "bandwidth",
             "update_time", "model_bytes", "colocated", "links",
             "reduce_scatter", "burst")  # Cluster's, as plain() names them
LINKS = ("duplex", "one-at-a-time")  # how a shard's link carries transfers (Cluster's docstring)


class Cluster:
    """A timing model. `Cluster(latency=0, bandwidth=float("inf"), update_time=0)` is a free network.

    compute_time: seconds per minibatch on a worker of speed 1.
    speeds: relative speed per worker (0.5 = a 2x slower straggler); default all 1.
    jitter: spread of each minibatch's time: it is multiplied by exp(jitter·z), z ~ N(0, 1).
    durations: explicit compute seconds, one row per worker, one column per minibatch
        (steps·accumulate columns); overrides compute_time, speeds and jitter.
    latency: seconds per transfer (the cost of handling one message); bandwidth: bytes per
        second of each shard's link, each way. A transfer takes latency + bytes / bandwidth.
    links: how a shard's link carries its transfers.
        "duplex" (the default: what a real link does): two directions, fetches (shard to
        workers) and pushes (workers to shard), each carrying one message at a time in the
        order they come (a shaper's queue: messages of a model's size go through it whole, one
        after another), the two directions never waiting for each other. The shard applies an
        update once its push has arrived, beside the link, and answers a fetch once the
        updates it has taken are applied.
        "one-at-a-time": one transfer or update at a time on the link, either way, in the
        order they were asked for (the seed figures' picture: a fetch waits for a push).
    update_time: seconds for the server to apply one update to the whole model.
    model_bytes: bytes of the whole model for the timing only (default: the digits MLP's own);
        each shard then carries its share of them (its share of the keys); at most 1e15 (a PB).
    colocated: shard s lives on worker s % workers: that worker's transfers to it are local
        and free (d2l's "aggregate on one GPU" / "split over all GPUs"); default False, the
        server is a separate machine (d2l's "via the CPU").
    reduce_scatter: the bytes a reduce-scatter moves (ZeRO's collectives), in units of a ring's
        (N − 1)/N of the model: 1 (the paper's, a ring's; the default), 2 for gloo's, which
        moves an all-reduce's bytes (measured across hosts: pslab.processes.network).
    burst: bytes a duplex link's direction lets through at once after a pause, as a token
        bucket shapes a link (`tc tbf`'s burst): a transfer that finds its direction idle
        ends up to burst / bandwidth seconds sooner, as much as the direction was idle
        before it (engine.Shaped), never sooner than its latency. 0 (the default): none, a
        wire's link. Measured across hosts (pslab.processes.network). The ring modes'
        transfers take none.
    """

    def __init__(self, compute_time: float = 1.0, speeds: Sequence[float] | None = None,
                 jitter: float = 0.0, durations: Sequence[Sequence[float]] | None = None,
                 latency: float = 0.02, bandwidth: float = 1e5, update_time: float = 0.2,
                 model_bytes: float | None = None, colocated: bool = False,
                 links: str = "duplex", reduce_scatter: float = 1.0,
                 burst: float = 0.0):
        self.compute_time = number("compute_time", compute_time, positive=True, high=LONGEST)
        self.speeds = None if speeds is None else _speeds(speeds)
        self.jitter = number("jitter", jitter, high=MAX_JITTER)
        self.durations = None if durations is None else _table(durations)
        self.latency = number("latency", latency, high=LONGEST)
        self.bandwidth = number("bandwidth", bandwidth, allow_inf=True, low=SLOWEST_LINK)
        self.update_time = number("update_time", update_time, high=LONGEST)
        self.model_bytes = None if model_bytes is None else number("model_bytes", model_bytes,
                                                                   positive=True, high=1e15)
        if not isinstance(colocated, bool):
            raise ValueError(f"colocated must be True or False (got {colocated!r})")
        self.colocated = colocated
        if links not in LINKS:
            raise ValueError(f"links must be one of {', '.join(map(repr, LINKS))} (got {links!r})")
        self.links = links
        self.reduce_scatter = number("reduce_scatter", reduce_scatter, low=1.0, high=100.0)
        self.burst = number("burst", burst, high=1e15)
        if self.burst and links != "duplex":
            raise ValueError(f"burst needs links='duplex' (got burst={burst!r} with "
                             f"links={links!r})")

    @classmethod
    def free(cls, **kwargs) -> "Cluster":
        """A free network: transfers and updates take no time; only compute does."""
        return cls(latency=0.0, bandwidth=math.inf, update_time=0.0, **kwargs)

    def __repr__(self) -> str:
        keys = ("compute_time", "speeds", "jitter", "latency", "bandwidth", "update_time",
                "model_bytes")
        parts = [f"{k}={getattr(self, k)!r}" for k in keys if getattr(self, k) is not None]
        if self.colocated:
            parts.append("colocated=True")
        if self.links != "duplex":
            parts.append(f"links={self.links!r}")
        if self.reduce_scatter != 1.0:
            parts.append(f"reduce_scatter={self.reduce_scatter!r}")
        if self.burst:
            parts.append(f"burst={self.burst!r}")
        if self.durations is not None:
            parts.append(f"durations=<{self.durations.shape[0]}x{self.durations.shape[1]}>")
        return f"Cluster({', '.join(parts)})"

    def plain(self) -> dict:
        """The constructor's arguments as plain values (JSON), for files read back."""
        out = {k: getattr(self, k) for k in ("compute_time", "jitter", "latency", "bandwidth",
                                              "update_time", "model_bytes", "colocated",
                                              "links")}
        out["speeds"] = None if self.speeds is None else self.speeds.tolist()
        out["durations"] = None if self.durations is None else self.durations.tolist()
        if self.reduce_scatter != 1.0:  # (files written before it existed have none)
            out["reduce_scatter"] = self.reduce_scatter
        if self.burst:  # (nor before burst)
            out["burst"] = self.burst
        return out

    @classmethod
    def from_plain(cls, values: dict) -> "Cluster":
        """The Cluster `plain()` described (every value checked again, as typed in)."""
        if not isinstance(values, dict):
            raise ValueError(f"a cluster is a dict of Cluster's arguments (got {values!r})")
        unknown = sorted(map(str, set(values) - set(ARGUMENTS)))
        if unknown:
            raise ValueError(f"a cluster takes {', '.join(ARGUMENTS)} (got {', '.join(unknown)})")
        return cls(**values)

    def check(self, workers: int, minibatches: int) -> None:
        """Raise ValueError unless speeds and durations fit `workers` x `minibatches`."""
        if self.speeds is not None and len(self.speeds) != workers:
            raise ValueError(f"cluster speeds must be one speed per worker: {workers} speeds "
                             f"(got {len(self.speeds)})")
        if self.durations is not None and self.durations.shape != (workers, minibatches):
            raise ValueError(
                f"cluster durations must be a table of shape (workers, steps*accumulate) = "
                f"({workers}, {minibatches}) (got {self.durations.shape})")

    def compute_durations(self, workers: int, minibatches: int, seed: int) -> np.ndarray:
        """Seconds of every minibatch: an array of shape (workers, minibatches), for a shape
        the entry (`Settings`, `SearchSettings`) has already passed through `check`."""
        if self.durations is not None:
            return self.durations.copy()
        speeds = np.ones(workers) if self.speeds is None else self.speeds
        base = np.repeat((self.compute_time / speeds)[:, None], minibatches, axis=1)
        if self.jitter:
            z = np.random.default_rng([seed, _JITTER]).standard_normal(base.shape)
            base = base * exp_everywhere_alike(self.jitter * z)
        return base

    def timing_bytes(self, shard_bytes: list[int]) -> list[int]:
        """The bytes each shard's transfers cost: its own, or its share of `model_bytes`."""
        if self.model_bytes is None:
            return list(shard_bytes)
        total = sum(shard_bytes)
        return [round(self.model_bytes * b / total) for b in shard_bytes]

    def host(self, shard: int, workers: int) -> int | None:
        """The worker whose GPU holds the shard (colocated), else None: a separate server."""
        return shard % workers if self.colocated else None

    def transfer_time(self, nbytes: int) -> float:
        return self.latency + (nbytes / self.bandwidth if nbytes else 0.0)

    def credit(self) -> float:
        """Seconds a transfer on an idle link direction saves at most (burst / bandwidth)."""
        return self.burst / self.bandwidth if self.burst and self.bandwidth < math.inf else 0.0

    def update_duration(self, fraction: float) -> float:
        return self.update_time * fraction


def exp_everywhere_alike(x: np.ndarray) -> np.ndarray:
    """exp of every element by the C library's scalar exp, not numpy's vector exp: numpy picks
    a SIMD exp by the CPU (AVX-512 or not) whose last bits differ, and a jittered timeline must
    be the same on every machine (the engine's fingerprint tests pin it bit for bit)."""
    flat = np.fromiter(map(math.exp, x.ravel().tolist()), dtype=float, count=x.size)
    return flat.reshape(x.shape)


def _speeds(values: Sequence[float]) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.ndim != 1 or len(arr) == 0 or not np.all(np.isfinite(arr)) \
            or not np.all(arr >= 1e-6):
        raise ValueError(f"speeds must be a list of finite numbers >= 1e-06, one per worker "
                         f"(got {values!r})")
    return arr


def _table(values: Sequence[Sequence[float]]) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.ndim != 2 or arr.size == 0:
        raise ValueError("durations must be a table (list of rows), one row per worker and one "
                         f"column per minibatch (got {values!r})")
    if not np.all(np.isfinite(arr)) or not np.all(arr > 0) or not np.all(arr <= LONGEST):
        raise ValueError(f"durations must all be finite numbers > 0 and <= {LONGEST:g} "
                         f"(got {values!r})")
    return arr
