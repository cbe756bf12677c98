"""Pipeline parallelism's speed: a timing-only run of 8 stages x 64 micro-batches x 100 steps
per schedule (goal <= 0.5 s), and what a dashboard's slider step asks of the kernel: the clock
of a dashboard-sized pipeline with its bubbles and memory read off (goal <= 40 ms)."""
from __future__ import annotations

from typing import Any

import pslab

from .timing import measure, row

SECTION = "pipeline"
GOAL_RUN = 0.5  # seconds: 8 x 64 x 100, timing only
GOAL_SLIDER = 0.040  # seconds: one slider step's clock
SCHEDULES = [("gpipe", 1), ("1f1b", 1), ("interleaved-1f1b", 2), ("zb-h1", 1), ("zbv", 2)]


def big(schedule: str, chunks: int) -> pslab.Run:
    mode = pslab.Pipeline(stages=8, microbatches=64, schedule=schedule, chunks=chunks)
    return pslab.train(mode=mode, steps=100, numerics=False)


def slider(schedule: str = "1f1b") -> tuple:
    """A dashboard's clock step: p=8, m=32, 10 steps, and the numbers it shows."""
    mode = pslab.Pipeline(stages=8, microbatches=32, schedule=schedule)
    run = pslab.train(mode=mode, steps=10, numerics=False)
    return run.bubble_share, run.bubble_ratio, run.activations, len(run.timeline)


def rows(quick: bool) -> list[dict[str, Any]]:
    repeat = 3 if quick else 7
    out = []
    for schedule, chunks in SCHEDULES[:2] if quick else SCHEDULES:
        t = measure(lambda: big(schedule, chunks), repeat)
        spans = len(big(schedule, chunks).timeline)
        out.append(row(SECTION, f"timing only 8x64x100 {schedule}" + (
            f" v={chunks}" if chunks > 1 else "") + f" ({spans} spans)", t,
            goal=f"<= {GOAL_RUN:g} s", met=t["median"] <= GOAL_RUN))
    t = measure(slider, repeat * 3)
    out.append(row(SECTION, "slider step's clock: p=8, m=32, 10 steps + bubbles", t,
                   goal=f"<= {GOAL_SLIDER * 1e3:g} ms (no dashboard yet: its clock only)",
                   met=t["median"] <= GOAL_SLIDER))
    return out
