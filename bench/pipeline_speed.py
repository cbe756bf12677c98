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


ACROSS = [("gpipe", 1), ("1f1b", 1), ("zb-h1", 1), ("interleaved-1f1b", 2)]  # drawn from
ACROSS_CASES = 10
CALIBRATION_STEPS = 3  # the per-action cost's probe run: its steps after the first count
# the probe's (F, B, W) seconds: fixed, the low end of the drawn F (the network bench's overhead
# runs at 10 ms of compute too), so that no case is predicted from a run of itself
PROBE_TIMES = (0.01, 0.02, 0.01)
ACROSS_GOAL = "median |error| <= 3 %, worst <= 8 % (the network bench's goal)"
BATCH, HIDDEN = 32, 32  # train_across's: one message is BATCH * HIDDEN * 4 bytes


def draw_across(seed: int, cases: int = ACROSS_CASES) -> list[tuple]:
    """The grid's cases for `seed`: (schedule, v, p, m, bits per second, (F, B, W) seconds),
    drawn: a schedule of ACROSS, p 2-4, m p-2p (as the schedule takes it), every host's link
    1-10 Mbit/s (log scale: one message 3-35 ms), F 10-30 ms with B = 2F, W = F."""
    from pslab.pipeline.schedules import refusal

    rng = random.Random(seed)
    out: list[tuple] = []
    while len(out) < cases:
        schedule, v = rng.choice(ACROSS)
        p = rng.randint(2, 4)
        m = rng.randint(p, 2 * p)
        rate = 10 ** rng.uniform(6, 7)
        f = rng.uniform(0.01, 0.03)
        if refusal(schedule, p, m, v) is None:
            out.append((schedule, v, p, m, rate, (f, 2 * f, f)))
    return out


def at_size(samples: dict[int, float], size: int) -> float:
    """One message's seconds on a calibrated link at `size` bytes, read off the calibration's
    medians (straight between the two sizes around it) rather than off the line through them:
    the token bucket lets a message's first 1600 B through at once after a pause, which a line
    through the origin cannot hold (4 KB at 2 Mbit/s: 11.8 ms measured, 17.1 on the line)."""
    xs = sorted(samples.items())
    for (a, ta), (b, tb) in zip(xs, xs[1:]):
        if a <= size <= b:
            return ta + (tb - ta) * (size - a) / (b - a)
    raise ValueError(f"size must lie within the calibrated sizes {xs[0][0]}-{xs[-1][0]} B "
                     f"(got {size})")


def measured_times(run: pslab.Run, split: bool, chunks: int) -> tuple[float, float, float]:
    """(F, B, W) as the run's actions took them after its first step (median seconds of each
    kind, times the v chunks a rank holds, as Pipeline's `times` count them): the sleep plus
    PyTorch's own work per action (~0.6-0.9 ms at load 2-3)."""
    took: dict[str, list[float]] = {}
    for s in run.timeline:
        if s.step and s.kind in ("forward", "backward", "backward-input", "backward-weight"):
            took.setdefault(s.kind, []).append(s.duration)
    f = statistics.median(took["forward"]) * chunks
    if not split:
        return f, statistics.median(took["backward"]) * chunks, 0.0
    w = statistics.median(took["backward-weight"]) * chunks
    return f, statistics.median(took["backward-input"]) * chunks + w, w


def receive_waits(run: pslab.Run, rank: int = 1) -> tuple[float, float]:
    """(median seconds of one receive wait, seconds a step that `rank` blocks on receives),
    over the measured steps after the first: PyTorch's single-stage schedules (GPipe, 1F1B)
    post a receive just before the action that needs it, and gloo sends a message only once
    its receive is posted, so each such wait is at least a whole transfer; the multi-stage
    runtime (ZB-H1, interleaved) posts receives ahead."""
    waits = [s for s in run.timeline if s.kind == "recv" and s.worker == rank and s.step > 0]
    steps = len({s.step for s in waits}) or 1
    return (statistics.median(s.duration for s in waits) if waits else 0.0,
            sum(s.duration for s in waits) / steps)


def across_rows(seed: int | None = None, steps: int = 6) -> list[dict[str, Any]]:
    """Pipelines across p namespaced hosts (root only; one row saying why elsewhere) on a
    seeded random grid (draw_across; the seed printed, new each run unless given), measured
    beside the clock, as the network bench compares the parameter-server modes. Per case, two
    calibrations beside the run: the link (pslab.processes.calibrate; the clock takes the
    measured time of the run's message size, at_size) and, on the case's own hosts just
    before it, what the processes add per action (overhead.action_cost of a short probe run:
    the case's schedule, stages, micro-batches and chunks with PROBE_TIMES, not the case's
    drawn times: a probe of the case itself would predict the case from a run of itself;
    the cost depends on the sleeps, on one host at load 8-10 5-ms sleeps read 5-11 ms an
    action where 20-ms ones paid 1.4-3.3, and the grid's error carries that).
    The clock then runs the case with every action charged that cost where the processes pay
    it (overhead.placed: the inside part on the action, the part between actions after its
    sends, which every PyTorch schedule class posts right after the compute),
    receives posted where PyTorch posts them (processes.receives_of). Each action sleeps its
    drawn seconds. measured: the schedule's span per step (span_time, the median of the steps
    after the first); error: simulated / measured - 1; also the clock without the cost
    (error_uncharged), with all of it before the sends (error_all_before), with every receive
    posted early, and the load when the case ran. Then the summary: median and worst |error|,
    `met`, and the same without the cost and with all of it before the sends."""
    import secrets

    from pslab.pipeline.overhead import action_cost, charged, placed
    from pslab.pipeline.processes import receives_of, span_time, step_time, train_across
    from pslab.pipeline.simulated import simulate_pipeline
    from pslab.processes.calibrate import calibrate
    from pslab.processes.hosts import Hosts, unavailable
    from pslab.settings import Settings

    why = unavailable()
    if why:
        return [{"section": SECTION, "name": f"across hosts not measured: {why}"}]
    seed = secrets.randbelow(10**6) if seed is None else seed
    cases = draw_across(seed)
    print(f"\npipeline across hosts: grid seed {seed} ({len(cases)} cases; python -m bench "
          f"--only pipeline --seed {seed} draws the same). Per case: measured = the schedule's "
          f"span per step on real processes; simulated = the clock on the calibrated link, "
          f"every action charged the per-action cost a probe run just before, on the same hosts "
          f"(the case's schedule with F, B, W = {PROBE_TIMES[0] * 1e3:g}, "
          f"{PROBE_TIMES[1] * 1e3:g}, {PROBE_TIMES[2] * 1e3:g} ms, not the case's), measured "
          f"(PyTorch's work beside the sleeps and the waits: its part inside an action on "
          f"the action, its part between actions after the sends, which leave right after the "
          f"compute); error = simulated / measured - 1; load = 1-minute load average then",
          flush=True)
    out = []
    for schedule, v, p, m, rate, times in cases:
        load = os.getloadavg()[0]
        link = calibrate(rate)
        message = at_size(link.samples, BATCH * HIDDEN * 4)
        cluster = pslab.Cluster(latency=0.0, bandwidth=BATCH * HIDDEN * 4 / message,
                                update_time=0.0)
        pipe = pslab.Pipeline(stages=p, microbatches=m, schedule=schedule, chunks=v,
                              times=times)
        with Hosts(p, bandwidth=rate) as hosts:
            where = [hosts.namespace(r) for r in range(p)]
            probe = pslab.Pipeline(stages=p, microbatches=m, schedule=schedule, chunks=v,
                                   times=PROBE_TIMES)
            cost = action_cost(train_across(probe, where, steps=CALIBRATION_STEPS,
                                            batch=BATCH))
            real = train_across(pipe, where, steps=steps, batch=BATCH)
        load = max(load, os.getloadavg()[0])
        measured = span_time(real)
        posts = receives_of(pipe)

        def clock(mode: pslab.Pipeline, receives: Any = posts, after: float = 0.0) -> float:
            return simulate_pipeline(Settings(mode=mode, steps=2, numerics=False,
                                              cluster=cluster), receives, after).step_time

        mode, after = placed(pipe, cost)
        simulated = clock(mode, after=after)
        bare, before = clock(pipe), clock(charged(pipe, cost.total))
        took = measured_times(real, pipe.split, v)  # the compute with PyTorch's per-action work
        own = clock(pslab.Pipeline(stages=p, microbatches=m, schedule=schedule, chunks=v,
                                   times=took))
        wait, per_step = receive_waits(real)
        out.append(row(SECTION, f"across {p} hosts {rate / 1e6:.1f} Mbit/s, {schedule}"
                       + (f" v={v}" if v > 1 else "") + f" p={p} m={m} F={times[0] * 1e3:.0f} "
                       f"ms: s/step (simulated {simulated * 1e3:.0f} ms)",
                       {"median": measured}, seed=seed, schedule=schedule, chunks=v, stages=p,
                       microbatches=m, bandwidth=rate, times=list(times),
                       measured_step=measured, measured_with_checks=step_time(real),
                       action_cost=cost.total, probe_times=list(PROBE_TIMES),
                       action_cost_inside=cost.inside,
                       action_cost_between=cost.between, simulated_step=simulated,
                       error=simulated / measured - 1, simulated_uncharged=bare,
                       simulated_all_before=before, error_all_before=before / measured - 1,
                       error_uncharged=bare / measured - 1,
                       receives="late" if posts == "late" else "runtime's plan",
                       simulated_early=clock(pipe, "early"),
                       measured_times=list(took), simulated_measured_compute=own,
                       error_measured_compute=own / measured - 1,
                       receive_wait=wait, receive_wait_per_step=per_step, message=message,
                       load=load))
        r = out[-1]
        print(f"  {r['name']}: measured {measured * 1e3:7.1f} ms, simulated "
              f"{simulated * 1e3:7.1f} ms, error {r['error']:+6.1%} (cost {cost.inside * 1e3:.2f}"
              f" + {cost.between * 1e3:.2f} ms an action; without it "
              f"{r['error_uncharged']:+6.1%}; all of it before the sends "
              f"{r['error_all_before']:+6.1%}; message "
              f"{message * 1e3:.1f} ms; receives {r['receives']}; load {load:.1f})", flush=True)
    summary = {}
    for key in ("error", "error_uncharged", "error_all_before", "error_measured_compute"):
        errors = sorted(abs(r[key]) for r in out)
        summary[key] = (statistics.median(errors), errors[-1])
    (median, worst), loads = summary["error"], [r["load"] for r in out]
    met = median <= 0.03 and worst <= 0.08
    out.append(row(SECTION, f"across hosts, seed {seed}: median |error| {median:.1%}, worst "
                   f"{worst:.1%} (load {min(loads):.1f}-{max(loads):.1f})", {}, seed=seed,
                   cases=len(out), median_error=median, worst_error=worst,
                   median_error_uncharged=summary["error_uncharged"][0],
                   worst_error_uncharged=summary["error_uncharged"][1],
                   median_error_all_before=summary["error_all_before"][0],
                   worst_error_all_before=summary["error_all_before"][1],
                   median_error_measured_compute=summary["error_measured_compute"][0],
                   worst_error_measured_compute=summary["error_measured_compute"][1],
                   load_min=min(loads), load_max=max(loads), goal=ACROSS_GOAL, met=met))
    print(f"pipeline across hosts, seed {seed}, {len(out) - 1} cases, load {min(loads):.1f}-"
          f"{max(loads):.1f}: median |error| {median:.1%}, worst {worst:.1%}: goal "
          f"{ACROSS_GOAL}: {'met' if met else 'NOT met'} (without the per-action cost: median "
          f"{summary['error_uncharged'][0]:.1%}, worst {summary['error_uncharged'][1]:.1%}; "
          f"all of it before the sends: median {summary['error_all_before'][0]:.1%}, worst "
          f"{summary['error_all_before'][1]:.1%}; "
          f"with each action's compute as this run measured it: median "
          f"{summary['error_measured_compute'][0]:.1%}, worst "
          f"{summary['error_measured_compute'][1]:.1%})")
    return out


def rows(quick: bool, seed: int | None = None) -> list[dict[str, Any]]:
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
        out += across_rows(seed)
    return out
