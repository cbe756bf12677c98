"""Section 1 of `python -m bench`: pslab's virtual clock against SimPy on the same schedule.

Figure 000's async schedule (N workers, 2 shards, fetch -> compute -> push -> update, seeded
jitter), 100 steps, timed in pslab (timing only) and in the SimPy model of bench/simpy_model.py.
Before any time is compared, both must give the same makespan and the same spans.
"""
from __future__ import annotations

import math
import time
from typing import Any

import pslab
from pslab import compiled, fastduplex

from . import c_clock
from .compiled_grid import python_loops
from .peak_memory import added_peak_mb
from .simpy_model import costs, simulate
from .timing import measure, measure_in_turn, row

STEPS, SEED = 100, 1
# SimPy's shards are resources of capacity one: a link that carries one transfer at a time
CLUSTER = pslab.Cluster(jitter=0.3, links="one-at-a-time")
DUPLEX = pslab.Cluster(jitter=0.3)  # the default links, for scale beside it
GOAL_RATIO = 15.0  # pslab worker-steps/s over SimPy's, at N = 800
GOAL_800 = 0.4  # seconds for 800 x 100 timing-only
GOAL_MB = 40.0  # peak RSS the 800 x 100 run adds to a warmed process


def _key(span: tuple) -> tuple:
    worker, shard, kind, start, end, step = span[:6]
    return (-1 if worker is None else worker, -1 if shard is None else shard, kind,
            round(start, 9), round(end, 9), step)


def same_schedule(workers: int, seconds: list[float] | None = None) -> pslab.Run:
    """Run both once and check they agree; returns pslab's run. `seconds`, when given, gets
    the SimPy run's wall time (at 800 workers it is the timed run: SimPy takes ~13 s)."""
    run = pslab.train(mode="async", workers=workers, steps=STEPS, numerics=False,
                      cluster=CLUSTER, seed=SEED)
    durations = CLUSTER.compute_durations(workers, STEPS, SEED).tolist()
    t0 = time.perf_counter()
    makespan, spans = simulate(durations, *costs(run), STEPS)
    if seconds is not None:
        seconds.append(time.perf_counter() - t0)
    if not math.isclose(makespan, run.makespan, rel_tol=1e-12):
        raise AssertionError(f"SimPy makespan {makespan} != pslab's {run.makespan}")
    mine = sorted(_key(s) for s in run.timeline if s.kind != "idle")
    if mine != sorted(_key(s) for s in spans):
        raise AssertionError("SimPy and pslab recorded different spans")
    return run


def rows(quick: bool) -> list[dict[str, Any]]:
    out = []
    for workers in (8, 800):
        simpy_seconds: list[float] = []
        run = same_schedule(workers, simpy_seconds)
        durations = CLUSTER.compute_durations(workers, STEPS, SEED).tolist()
        transfer, update = costs(run)
        repeat = 3 if quick or workers == 800 else 10
        ours = measure(lambda: pslab.train(mode="async", workers=workers, steps=STEPS,
                                           numerics=False, cluster=CLUSTER, seed=SEED), repeat)
        if workers == 800:  # one SimPy run (the checked one): a second would take ~13 s more
            once = simpy_seconds[0]
            theirs = {"median": once, "min": once, "max": once, "runs": 1}
        else:
            theirs = measure(lambda: simulate(durations, transfer, update, STEPS), repeat)
        rate = workers * STEPS / ours["median"]
        ratio = theirs["median"] / ours["median"]
        goal = f"ratio >= {GOAL_RATIO:g}" if workers == 800 else ""
        if workers == 800:
            goal += f"; pslab <= {GOAL_800} s"
        out.append(row("clock vs SimPy", f"pslab async {workers}x{STEPS} timing-only", ours,
                       worker_steps_per_s=rate, makespan=run.makespan))
        out.append(row("clock vs SimPy", f"SimPy async {workers}x{STEPS}", theirs,
                       worker_steps_per_s=workers * STEPS / theirs["median"],
                       ratio=ratio, goal=goal, met=ratio >= GOAL_RATIO and (
                           workers != 800 or ours["median"] <= GOAL_800)))
    # the default (duplex) links, timed in turn with one-at-a-time so the load falls on both,
    # and the same run on the Python loop where the loops run compiled (pslab/compiled.py)
    loop = "compiled" if compiled.in_use(fastduplex) else "Python"
    runs = {links.links: (lambda c=links: pslab.train(
        mode="async", workers=800, steps=STEPS, numerics=False, cluster=c, seed=SEED))
        for links in (DUPLEX, CLUSTER)}
    if loop == "compiled":
        runs["python"] = lambda: python_loops(runs["duplex"])
    pair = measure_in_turn(runs, 3 if quick else 5)
    duplex = pair["duplex"]
    out.append(row("clock vs SimPy", f"pslab async 800x{STEPS} timing-only, duplex links", duplex,
                   worker_steps_per_s=800 * STEPS / duplex["median"],
                   ratio=duplex["median"] / pair["one-at-a-time"]["median"],
                   goal=f"pslab <= {GOAL_800} s on the default (duplex) links too ({loop} "
                        f"loops); ratio: its time over one-at-a-time's, timed in turn",
                   met=duplex["median"] <= GOAL_800))
    if loop == "compiled":
        out.append(row("clock vs SimPy", f"pslab async 800x{STEPS} duplex, Python loop",
                       pair["python"], ratio=pair["python"]["median"] / duplex["median"],
                       goal="the same run on fastduplex.py itself (PSLAB_COMPILED=0); ratio: "
                            "its time over the compiled loop's, timed in turn"))
    mem = added_peak_mb(800, STEPS)
    out.append({"section": "clock vs SimPy", "name": f"peak RSS added, async 800x{STEPS} (MB)",
                **mem, "met": mem["added_mb"] <= GOAL_MB,
                "goal": f"<= {GOAL_MB:g} MB added ({mem['added_mb']:.0f} MB: "
                        f"{mem['before_mb']:.0f} -> {mem['after_mb']:.0f})"})
    return out + c_clock.rows(quick)  # what a compiled loop would give, checked the same way
