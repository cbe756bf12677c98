"""Parameter server vs ring vs ZeRO as workers are added (Sergeev & Del Balso 2018, Horovod).

Horovod's Figure 1-2 point: a parameter server's links carry every worker's push and fetch, so
its step time grows with N and the throughput saturates; a ring all-reduce sends 2(N−1)/N of
the model per worker whatever N is, so it keeps scaling (until its 2(N−1) latencies add up).
ZeRO-1/2 move the ring's bytes, ZeRO-3 1.5x them. Each worker keeps its own batch (weak
scaling, images per second as Horovod counts them); efficiency is the throughput over N times
one worker's with nothing to send. Timing only (numerics=False): the numbers are the clock's.
"""
from __future__ import annotations

import math
from typing import Sequence

from ..cluster import Cluster
from ..modes import ZeRO
from ..result import Run
from ..training import train
from .papers import counts
from .result import Result, Row

CLUSTERS = {  # the model is 9640 bytes: 0.096 s over one 1e5 B/s link
    "communication": Cluster(compute_time=0.1, latency=0.001, bandwidth=1e5, update_time=0.01),
    "compute": Cluster(compute_time=1.0, latency=0.001, bandwidth=1e6, update_time=0.01),
}
STEPS, BATCH = 4, 32


def modes(shards: int) -> dict[str, dict]:
    """Series label -> train's mode and shards."""
    return {f"PS, {shards} shards": dict(mode="sync", shards=shards),
            "ring all-reduce": dict(mode="allreduce"), "ZeRO-1": dict(mode=ZeRO(1)),
            "ZeRO-2": dict(mode=ZeRO(2)), "ZeRO-3": dict(mode=ZeRO(3))}


def throughput(run: Run) -> float:
    """Rows per virtual second over all workers."""
    return run.workers * STEPS * BATCH / run.makespan


def horovod_scaling(bound: str = "communication", workers: Sequence[int] = (1, 2, 4, 8, 16, 32, 64),
                    shards: int = 4) -> Result:
    """Scaling efficiency of PS (S shards), ring all-reduce and ZeRO-1/2/3 over N workers on a
    communication-bound or a compute-bound cluster."""
    if bound not in CLUSTERS:
        raise ValueError(f"bound must be one of {sorted(CLUSTERS)} (got {bound!r})")
    ns = counts("workers", workers, high=256, least=2)
    cluster = CLUSTERS[bound]
    ideal = BATCH / cluster.compute_time  # one worker, nothing to send
    series, runs = {}, {}
    for label, kw in modes(shards).items():
        ys = []
        for n in ns:
            if n == 1 and label.startswith("ZeRO"):  # nothing to shard over one worker
                ys.append(math.nan)
                continue
            runs[label, n] = run = train(workers=n, steps=STEPS, batch=BATCH, numerics=False,
                                         cluster=cluster, **kw)
            ys.append(throughput(run) / (n * ideal))
        series[label] = ys
    ps = series[f"PS, {shards} shards"]
    rows = [Row(f"ring all-reduce: efficiency at {ns[-1]} workers", "keeps scaling (~88% at "
                "512 GPUs)", series["ring all-reduce"][-1], "%"),
            Row(f"PS with {shards} shards: efficiency at {ns[-1]} workers", "saturates (~50%)",
                ps[-1], "%"),
            Row("ZeRO-3 over ZeRO-1: communication time per step", "1.5x the bytes (ZeRO paper)",
                _comm(runs["ZeRO-3", ns[-1]]) / _comm(runs["ZeRO-1", ns[-1]]), "x")]
    rows += [Row(f"{label} overtakes PS from N =", "—", crossover(ns, ps, series[label]))
             for label in ("ring all-reduce", "ZeRO-3")]
    note = (f"A PS shard's link serves all N workers' pushes and fetches one after another: "
            f"2N·M/S bytes per step over each of S = {shards} links, growing with N. The ring "
            f"sends 2(N−1)/N·M per worker over every link at once, so its step time levels off "
            f"at 2M/B plus 2(N−1) latencies; ZeRO-1/2 move the ring's bytes, ZeRO-3 1.5x. The "
            f"crossover: with few workers the S links serve them faster than one ring link "
            f"(2N·M/S < 2(N−1)/N·M while N is below about S); beyond it the PS saturates. "
            f"Where compute dominates, every mode stays near 100% until latencies add up.")
    return Result(f"Horovod (Sergeev & Del Balso 2018): PS vs ring vs ZeRO, {bound}-bound",
                  "Sergeev & Del Balso, Horovod, arXiv:1802.05799, Figures 1-2", rows,
                  "workers", ns, series, "scaling efficiency", note, runs, scale="log")


def crossover(ns: Sequence[int], ps: Sequence[float], other: Sequence[float]) -> float:
    """The first N >= 2 from which `other` stays ahead of the PS (nan: never)."""
    ahead = [n for n, p, o in zip(ns, ps, other) if n >= 2 and o > p]
    at = next((n for n in ahead if all(o > p for m, p, o in zip(ns, ps, other) if m >= n)),
              None)
    return math.nan if at is None else float(at)


def _comm(run: Run) -> float:
    """Worker 0's seconds in collectives per step."""
    return sum(s.duration for s in run.timeline if s.worker == 0
               and s.kind in ("reduce-scatter", "all-gather")) / STEPS
