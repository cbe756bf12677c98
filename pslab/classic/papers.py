"""The classic papers' numbers, re-derived by running pslab (notebook 05, tests/test_classic.py).

Each function makes its runs (seeded, so the same every time), measures what the paper measured
and returns a `Result`: the paper's number beside pslab's. The clusters are chosen to put pslab
where the paper was (a fast network for Li et al., equal workers for TensorFlow, d2l's bytes and
bandwidths); each `Result.note` says how, and what differs.
"""
from __future__ import annotations

import math
import warnings
from typing import Sequence

from ..allreduce import ring_time
from ..checks import integer, number
from ..cluster import Cluster
from ..modes import SSP, Backup, SoftSync
from ..result import Run
from ..training import train
from .result import Result, Row

# Li et al.: workers whose minibatch times vary a lot (lognormal, sigma 1) on a fast network, so
# the waiting is for other workers, not for the network.
BOUNDED_DELAY = dict(compute_time=1.0, jitter=1.0, latency=0.02, bandwidth=1e7, update_time=0.01)
EQUAL = dict(jitter=0.1)  # near-equal workers on a free network (TensorFlow's docstring, Zhang)
STRAGGLERS = dict(jitter=0.6, latency=0.01, bandwidth=1e7, update_time=0.05)  # Chen et al.
# d2l adds up its transfers one after another on a link: links="one-at-a-time"
D2L = dict(compute_time=1e-6, latency=0.0, bandwidth=16e9, update_time=0.0, model_bytes=160e6,
           links="one-at-a-time")
NVLINK = 3 * 18e9  # d2l: 8 V100s, three NVLink rings of 18 GB/s


MOST_WORKERS = 1024  # a list of cluster sizes beyond this would only exhaust the machine


def counts(name: str, values: object, low: int = 1, high: int | None = MOST_WORKERS,
           least: int = 1) -> list[int]:
    """A list of at least `least` integers from low to high, one run each: checked whole before
    the first run, so a bad last item never throws the earlier runs away."""
    items = None if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__") \
        else list(values)
    if items is None or len(items) < least:
        raise ValueError(f"{name} must be a list of at least {least} integers >= {low} "
                         f"(got {values!r})")
    return [integer(f"{name} item", v, low, high) for v in items]


def step_time(run: Run) -> float:
    """Virtual seconds between server updates, after the first (no start-up fetch)."""
    times = [r.time for r in run.history]
    return (times[-1] - times[0]) / (len(times) - 1)


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def time_to(run: Run, loss: float) -> float:
    """When the training loss first reached `loss` (inf: never)."""
    return next((r.time for r in run.history if r.loss <= loss), math.inf)


def waiting(run: Run) -> float:
    """Share of the workers' time spent waiting for other workers (not queueing at a shard)."""
    return run.barrier_time / (run.workers * run.makespan)


def bounded_delay(taus: Sequence[int] = (0, 1, 2, 4, 8, 16), workers: int = 4, steps: int = 80,
                  lr: float = 0.2, target: float = 0.5, converge: Sequence[int] = (0, 8, 16),
                  seed: int = 0) -> Result:
    """Li et al., OSDI'14, bounded delay τ (pslab.SSP(τ); τ = 0 is BSP). The waiting comes from
    timing-only runs; the runs for τ in `converge` also train (the arithmetic never changes a
    timeline, so they are the same runs, with a loss)."""
    taus = counts("taus", taus, low=0, high=None, least=2)
    converge = counts("converge", converge, low=0, high=None, least=0)  # () times nothing
    if not set(converge) <= set(taus):
        raise ValueError(f"converge must be a list of values from taus {taus} (got {converge})")
    target = number("target", target)
    runs = {t: train(mode=SSP(t), workers=workers, steps=steps, lr=lr, batch=16, shards=4,
                     seed=seed, numerics=t in converge, cluster=Cluster(**BOUNDED_DELAY))
            for t in taus}
    wait = [waiting(runs[t]) for t in taus]
    total = [time_to(runs[t], target) if t in converge else math.nan for t in taus]
    best = min(converge, key=lambda t: time_to(runs[t], target), default=math.nan)
    rows = [Row("workers waiting, τ = 0", "≈ 50 %", wait[0], "%"),
            Row(f"workers waiting, τ = {taus[-1]}", "≈ 2 %", wait[-1], "%"),
            Row(f"time to loss {target}, τ = 0", "longest (waiting)", total[0], " s"),
            Row(f"τ of {tuple(converge)} with the shortest time to it", "≈ 8 (U-shaped)", best)]
    note = ("pslab reproduces the waiting, not the U: its workers fetch fresh weights every "
            "step, so a larger τ removes waiting without adding staleness (mean staleness "
            f"{mean(runs[taus[1]].push_staleness):.2f} versions at τ = {taus[1]}, "
            f"{mean(runs[taus[-1]].push_staleness):.2f} at τ = {taus[-1]}); in Li et al. a "
            "task may start before the previous τ tasks' updates arrive, which is what makes "
            "large τ converge slower.")
    return Result("OSDI'14 (Li et al.): bounded delay", "Li et al., Scaling distributed machine "
                  "learning with the parameter server, OSDI 2014, bounded delay experiment",
                  rows, "bounded delay τ (pslab.SSP(τ))", list(taus),
                  {"waiting (% of worker time)": [100 * w for w in wait],
                   f"time to loss {target} (s)": total},
                  "waiting (% of worker time)", note, runs, twin=f"time to loss {target} (s)")


def softsync_staleness(workers: int = 16, ns: Sequence[int] = (1, 2, 4, 8, 16),
                       steps: int = 40) -> Result:
    """Zhang et al. 2016: under n-softsync with λ workers, mean staleness ≈ n."""
    ns = counts("ns", ns, high=integer("workers", workers, high=MOST_WORKERS))
    runs = {n: train(mode=SoftSync(workers // n), workers=workers, steps=steps, seed=0,
                     numerics=False, cluster=Cluster.free(**EQUAL)) for n in ns}
    stale = [mean(runs[n].push_staleness) for n in ns]
    rows = [Row(f"mean staleness, {n}-softsync (SoftSync({workers // n}))", f"≈ {n}", s)
            for n, s in zip(ns, stale)]
    note = (f"{workers} near-equal workers. n-softsync averages λ/n = {workers}/n gradients per "
            "update; pslab counts a gradient's staleness as the updates applied between its "
            "fetch and its own update, so a gradient waits for about n(λ−1)/λ updates.")
    return Result("Zhang et al. 2016: staleness under n-softsync", "Zhang, Gupta, Lian, Liu, "
                  "Staleness-aware Async-SGD, IJCAI 2016, n-softsync protocol", rows,
                  "n (n-softsync)", list(ns), {"mean staleness": stale, "n": list(ns)},
                  "versions behind", note, runs)


def staleness_aware_lr(workers: int = 8, lr: float = 0.5, steps: int = 30) -> Result:
    """Zhang et al. 2016: a fixed large lr diverges under staleness; lr/τ converges."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the fixed-lr run diverges: the point
        runs = {rule: train(mode="async", workers=workers, steps=steps, lr=lr, seed=0,
                            staleness_lr=rule == "lr/τ") for rule in ("fixed lr", "lr/τ")}
    fixed, aware = runs["fixed lr"], runs["lr/τ"]
    rows = [Row(f"fixed lr {lr}: diverged?", "diverges", float(fixed.diverged)),
            Row(f"fixed lr {lr}: test accuracy", "(diverged)", fixed.final_accuracy, "%"),
            Row("lr/τ: diverged?", "converges", float(aware.diverged)),
            Row("lr/τ: test accuracy", "(converged)", aware.final_accuracy, "%"),
            Row("mean staleness τ", "—", mean(aware.push_staleness))]
    note = (f"async, {workers} workers on the default cluster, lr {lr} (pslab's default). "
            "Diverged? is 1 for yes, 0 for no (run.diverged).")
    updates = list(range(1, fixed.updates + 1))
    return Result("Zhang et al. 2016: the staleness-aware learning rate", "Zhang et al., "
                  "IJCAI 2016, learning rate modulation α/⟨σ⟩", rows, "update", updates,
                  {rule: [r.loss for r in run.history] for rule, run in runs.items()},
                  "training loss", note, runs)


def async_staleness(ns: Sequence[int] = (2, 4, 8, 16), steps: int = 40) -> Result:
    """TensorFlow's SyncReplicasOptimizer docstring: with N equal workers, async staleness
    averages N − 1."""
    ns = counts("ns", ns)
    runs = {n: train(mode="async", workers=n, steps=steps, seed=0, numerics=False,
                     cluster=Cluster.free(**EQUAL)) for n in ns}
    stale = [mean(runs[n].push_staleness) for n in ns]
    rows = [Row(f"mean staleness, N = {n}", f"N − 1 = {n - 1}", s) for n, s in zip(ns, stale)]
    return Result("TensorFlow: async staleness with N workers", "TensorFlow, "
                  "tf.compat.v1.train.SyncReplicasOptimizer docstring", rows, "workers N",
                  list(ns), {"mean staleness": stale, "N − 1": [n - 1 for n in ns]},
                  "versions behind", "near-equal workers on a free network; the first round "
                  "(nothing pushed yet) pulls the mean a little below N − 1.", runs)


def backup_workers(n: int = 8, bs: Sequence[int] = (0, 1, 2, 3, 4), steps: int = 40) -> Result:
    """Chen et al. 2016: N of N + b is never slower than N and cuts the step time as b grows."""
    bs = counts("bs", bs, low=0, high=MOST_WORKERS - integer("n", n, high=MOST_WORKERS))
    runs = {b: train(mode=Backup(b), workers=n + b, steps=steps, seed=0, numerics=False,
                     cluster=Cluster(**STRAGGLERS)) for b in bs}
    times = [step_time(runs[b]) for b in bs]
    rows = [Row(f"step time, {n} of {n + b}", "baseline (sync)" if b == 0 else
                "≤ the row above", t, " s") for b, t in zip(bs, times)]
    rows.append(Row(f"speed-up with b = {bs[-1]}", "> 1", times[0] / times[-1], "x"))
    return Result("Chen et al. 2016: backup workers", "Chen, Pan, Monga, Bengio, Jozefowicz, "
                  "Revisiting distributed synchronous SGD, 2016", rows, "backup workers b",
                  list(bs), {"step time (s)": times}, "virtual seconds per update",
                  f"sync over {n} workers whose minibatch times vary (lognormal, sigma 0.6); "
                  "the b slowest pushes of each round are dropped.", runs)


def d2l_transfers() -> Result:
    """d2l "Parameter Servers": 160 MB of gradients over 16 GB/s links, one step's exchange."""
    cases = {"via one GPU": dict(shards=1, colocated=True),
             "via the CPU": dict(shards=1, colocated=False),
             "split four ways": dict(shards=4, colocated=True)}
    runs = {name: train(mode="sync", workers=4, steps=5, numerics=False, shards=c["shards"],
                        cluster=Cluster(colocated=c["colocated"], **D2L))
            for name, c in cases.items()}
    runs["ring, 8 GPUs"] = train(mode="allreduce", workers=8, steps=5, numerics=False,
                                 cluster=Cluster(**{**D2L, "bandwidth": NVLINK}))
    ms = {name: 1e3 * (step_time(run) - D2L["compute_time"]) for name, run in runs.items()}
    paper = {"via one GPU": "60 ms", "via the CPU": "80 ms", "split four ways": "15 ms",
             "ring, 8 GPUs": "≈ 6 ms"}
    rows = [Row(name, paper[name], ms[name], " ms") for name in runs]
    d2l_ring = 1e3 * 2 * D2L["model_bytes"] / NVLINK
    exact = 1e3 * ring_time(Cluster(**{**D2L, "bandwidth": NVLINK}), 8, D2L["model_bytes"])
    note = ("4 GPUs, compute ~0, one sync step's exchange (pushes then fetches on the busiest "
            "link). 'via one GPU' and 'split four ways' put the shards on the GPUs "
            f"(Cluster(colocated=True)). The ring moves 2(N−1)/N of the model: {exact:.2f} ms; "
            f"d2l's ≈ 6 ms is 2·160 MB/(3·18 GB/s) = {d2l_ring:.2f} ms, dropping the (N−1)/N.")
    return Result("d2l: where the gradients are summed", "Dive into Deep Learning, "
                  "section 'Parameter Servers'", rows, "", list(runs),
                  {"pslab (ms)": [ms[n] for n in runs],
                   "d2l (ms)": [60.0, 80.0, 15.0, 6.0]}, "ms per step", note, runs)


def distbelief_scaling(machines: Sequence[int] = (1, 2, 4, 8, 16, 32, 64)) -> Result:
    """Dean et al. 2012: a communication-bound model stops scaling, a compute-bound one goes on.

    The work of one step (a fixed global batch) is split over the machines; every machine
    fetches and pushes the whole model over one server link. Compute per step C, transfer t."""
    machines = counts("machines", machines, least=2)
    if 8 not in machines:
        raise ValueError(f"machines must include 8, the paper's row (got {machines})")
    t, update = 0.01, 0.24  # transfer of the model; the server's update (a fixed cost)
    ratios = {"communication-bound (C = 64 t)": 64, "compute-bound (C = 6400 t)": 6400}
    runs, speedups = {}, {}
    for label, ratio in ratios.items():
        for m in machines:
            # the peak was set on links that carry one transfer at a time (the seed's model):
            # on duplex links the fetches and pushes overlap and the 64-machine step is 1x
            runs[label, m] = train(mode="sync", workers=m, steps=6, shards=1, numerics=False,
                                   cluster=Cluster(compute_time=ratio * t / m, latency=0.0,
                                                   bandwidth=9640 / t, update_time=update,
                                                   links="one-at-a-time"))
        one = step_time(runs[label, machines[0]])
        speedups[label] = [one / step_time(runs[label, m]) for m in machines]
    comm, comp = speedups.values()
    at8 = machines.index(8)
    rows = [Row("communication-bound: speed-up at 8 machines", "2.2x", comm[at8], "x"),
            Row(f"communication-bound: at {machines[-1]} machines", "slower than at 8",
                comm[-1], "x"),
            Row(f"compute-bound: at {machines[-1]} machines", "keeps scaling", comp[-1], "x")]
    note = ("DistBelief split one model over machines; pslab splits one step's batch, same "
            "arithmetic: compute C/m, communication growing with m on one link. The "
            "communication-bound ratio and the update time (24 t) are chosen so the peak lands "
            "where the paper's did; what is reproduced is the shape.")
    return Result("DistBelief (Dean et al. 2012): when scaling stops", "Dean et al., Large "
                  "scale distributed deep networks, NIPS 2012, Figure 3", rows, "machines",
                  list(machines), speedups, "speed-up over 1 machine", note, runs, scale="log")
