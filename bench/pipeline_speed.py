"""Pipeline parallelism's speed: a timing-only run of 8 stages x 64 micro-batches x 100 steps
per schedule (goal <= 0.5 s; and 4 data-parallel replicas of 1f1b), and a slider step of
notebook 08's dashboard in the kernel per schedule (p from 2 to 8, m from 8 to 32, each value
new: the clock of one step, its bubbles and the browser figures' data; goal <= 40 ms); and,
as root, pipelines across namespaced hosts measured beside the clock (not in --quick)."""
from __future__ import annotations

import os
import random
import statistics
from typing import Any

import pslab

from .timing import measure, row

SECTION = "pipeline"
GOAL_RUN = 0.5  # seconds: 8 x 64 x 100, timing only
GOAL_SLIDER = 0.040  # seconds: one slider step's clock
SCHEDULES = [("gpipe", 1), ("1f1b", 1), ("interleaved-1f1b", 2), ("looped-bfs", 2),
             ("zb-h1", 1), ("zbv", 2), ("zb-h2", 1)]


def big(schedule: str, chunks: int, replicas: int = 1) -> pslab.Run:
    mode = pslab.Pipeline(stages=8, microbatches=64, schedule=schedule, chunks=chunks,
                          replicas=replicas)
    return pslab.train(mode=mode, steps=100, numerics=False)


def slider(schedule: str = "1f1b") -> tuple:
    """A dashboard's clock step: p=8, m=32, 10 steps, and the numbers it shows."""
    mode = pslab.Pipeline(stages=8, microbatches=32, schedule=schedule)
    run = pslab.train(mode=mode, steps=10, numerics=False)
    return run.bubble_share, run.bubble_ratio, run.activations, len(run.timeline)


def dashboard_steps(schedule: str = "1f1b", chunks: int = 1, presses: int = 12) -> list[float]:
    """Seconds of the dashboard's fast path (a slider step in the kernel: the clock, the
    numbers and the browser figures' data) over `presses` new (p, m) values the schedule
    takes (p from 2 to 8, m from 8 to 32; the first at p = 8, m = 32)."""
    from pslab.notebook.pipeline_dashboard import PipelineDashboard
    from pslab.pipeline.schedules import refusal

    grid = [(p, m) for m in range(8, 33) for p in range(2, 9)]
    random.Random(8).shuffle(grid)  # every value new: nothing from the dashboard's cache
    values = [(8, 32)] + [pm for pm in grid if pm != (8, 32) and pm != (2, 8)
                          and refusal(schedule, *pm, chunks) is None]
    dash = PipelineDashboard(settle_delay=None, schedule=schedule, chunks=chunks, stages=2,
                             microbatches=8)
    dash.latencies_ms.clear()
    for p, m in values[:presses]:
        dash.set(stages=p, microbatches=m)
    return [t / 1e3 for t in dash.latencies_ms]


ACROSS = [("gpipe", 1), ("1f1b", 1), ("zb-h1", 1)]  # schedules measured across hosts
ACROSS_RATE = 2e6  # bits per second of every host's shaped link


def receive_waits(run: pslab.Run, rank: int = 1) -> tuple[float, float]:
    """(median seconds of one receive wait, seconds a step that `rank` blocks on receives),
    over the measured steps after the first: PyTorch's single-stage schedules (GPipe, 1F1B)
    post a receive just before the action that needs it, and gloo sends a message only once
    its receive is posted, so each such wait is a whole transfer the clock overlaps with
    compute; the multi-stage runtime (ZB-H1 here) posts receives a tick ahead."""
    waits = [s for s in run.timeline if s.kind == "recv" and s.worker == rank and s.step > 0]
    steps = len({s.step for s in waits}) or 1
    return (statistics.median(s.duration for s in waits) if waits else 0.0,
            sum(s.duration for s in waits) / steps)


def across_rows(steps: int = 6, repeats: int = 3) -> list[dict[str, Any]]:
    """p = 4, m = 8 across 4 namespaced hosts (root only; an empty list elsewhere) behind
    links shaped to 2 Mbit/s, each action sleeping F:B:W = 20:40:20 ms: the measured seconds
    per step (the median of `repeats` runs, the schedules in turn, each run's own median with
    its first step left out) beside the clock's on the calibrated link (latency, bandwidth), as
    the network bench compares the parameter-server modes; ratio: measured / simulated; rank
    1's receive waits (`receive_waits`); and the clock with receives posted as PyTorch's
    schedule class posts them (`late`: GPipe's and 1F1B's transfers start when the receiver
    asks), error_late its error."""
    from pslab.pipeline.processes import POSTED_LATE, step_time, train_across
    from pslab.pipeline.simulated import simulate_pipeline
    from pslab.settings import Settings
    from pslab.processes.calibrate import calibrate
    from pslab.processes.hosts import Hosts, unavailable

    why = unavailable()
    if why:
        print(f"pipeline across hosts skipped: {why}")
        return []
    link = calibrate(ACROSS_RATE)
    cluster = pslab.Cluster(latency=link.latency, bandwidth=link.bandwidth, update_time=0.0)
    pipes = {schedule: pslab.Pipeline(stages=4, microbatches=8, schedule=schedule,
                                      chunks=chunks, times=(0.02, 0.04, 0.02))
             for schedule, chunks in ACROSS}
    seen: dict[str, list[tuple[float, float, float]]] = {name: [] for name in pipes}
    loads = [os.getloadavg()[0]]
    for _ in range(repeats):  # in turn: a change of load falls on every schedule alike
        for name, pipe in pipes.items():
            with Hosts(4, bandwidth=ACROSS_RATE) as hosts:
                real = train_across(pipe, [hosts.namespace(r) for r in range(4)],
                                    steps=steps)
            seen[name].append((step_time(real), *receive_waits(real)))
            loads.append(os.getloadavg()[0])
    load = f"load {min(loads):.1f}-{max(loads):.1f}"
    out = []
    for name, pipe in pipes.items():
        measured, wait, per_step = (statistics.median(x) for x in zip(*seen[name]))
        simulated = pslab.train(mode=pipe, steps=2, numerics=False, cluster=cluster).step_time
        late = simulate_pipeline(Settings(mode=pipe, steps=2, numerics=False, cluster=cluster),
                                 late=name in POSTED_LATE).step_time
        out.append(row(SECTION, f"across 4 hosts {ACROSS_RATE / 1e6:g} Mbit/s, {name} "
                       f"p=4 m=8: s/step (simulated {simulated * 1e3:.0f} ms, with receives "
                       f"posted as PyTorch posts them {late * 1e3:.0f} ms; rank 1 waits "
                       f"{per_step * 1e3:.0f} ms a step on receives, {wait * 1e3:.1f} ms "
                       f"each; {load})",
                       {"median": measured, "min": min(x[0] for x in seen[name]),
                        "max": max(x[0] for x in seen[name]), "runs": repeats},
                       ratio=measured / simulated, simulated_step=simulated,
                       error=measured / simulated - 1, simulated_late=late,
                       error_late=measured / late - 1, receive_wait=wait,
                       receive_wait_per_step=per_step, transfer=cluster.transfer_time(
                           32 * 32 * 4), link_latency=link.latency,
                       link_bandwidth=link.bandwidth))
    return out


def rows(quick: bool) -> list[dict[str, Any]]:
    repeat = 3 if quick else 7
    out = []
    cases = [(sc, v, 1) for sc, v in (SCHEDULES[:2] if quick else SCHEDULES)] + [("1f1b", 1, 4)]
    for schedule, chunks, replicas in cases:
        t = measure(lambda: big(schedule, chunks, replicas), repeat)
        spans = len(big(schedule, chunks, replicas).timeline)
        out.append(row(SECTION, f"timing only 8x64x100 {schedule}" + (
            f" v={chunks}" if chunks > 1 else "") + (f" d={replicas}" if replicas > 1 else "")
            + f" ({spans} spans)", t, goal=f"<= {GOAL_RUN:g} s", met=t["median"] <= GOAL_RUN))
    t = measure(slider, repeat * 3)
    out.append(row(SECTION, "the clock alone: p=8, m=32, 10 steps + bubbles", t))
    for schedule, chunks in SCHEDULES[1:2] if quick else SCHEDULES:
        steps = dashboard_steps(schedule, chunks, 12 if quick else 24)
        t = {"median": statistics.median(steps), "min": min(steps), "max": max(steps),
             "runs": len(steps)}
        out.append(row(SECTION, f"slider step in the kernel (dashboard 08, {schedule}"
                       + (f" v={chunks}" if chunks > 1 else "") + ")", t,
                       goal=f"<= {GOAL_SLIDER * 1e3:g} ms", met=t["median"] <= GOAL_SLIDER))
    if not quick:
        out += across_rows()
    return out
