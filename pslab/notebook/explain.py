"""The surprises a dashboard's numbers hold, said in a line under them where they show.

Three surprises a student meets at once, and misreads without a word:

- async and SSP apply every worker's push at the full learning rate, where sync applies the
  mean of the N gradients: one round of pushes moves the weights N times as far (SSP(0) is sync
  at N x lr), so at a learning rate tuned for sync they train worse or diverge;
- async can end later than sync: both end just after the last push of the worker that ends
  last (the straggler), which computes and sends as long in both; what differs is how long it
  waits: sync's for its rounds' updates, async's at the shards, behind updates (N per round
  where sync applies one) and the other workers' pushes (on links that carry one transfer at a
  time, the seed figures', also their fetches);
- async with a straggler can end better trained than with equal workers: once the others are
  done, the straggler's last updates are its own, one after another on fresh weights (plain
  SGD), where equal workers' last updates are all N − 1 stale;
- sync itself blows up at a large learning rate: its one averaged step overshoots (so does
  any mode with one worker: plain SGD);
- a latency-bound transfer's share of the run grows as the run gets shorter (more shards)
  while its time stays the same.
Each clause is said only where the two runs' numbers show it.
"""
from __future__ import annotations

import html
from typing import Sequence

from ..drawing.timeline_plot import worker_label
from ..result import Run


def step_lr(lr: float, workers: int, choices: Sequence[float]) -> float:
    """The largest choice at or below lr / workers (sync's step per round), else the smallest."""
    below = [c for c in choices if c <= lr / workers * (1 + 1e-9)]
    return max(below) if below else min(choices)


def lr_reason(run: Run, lr: float, choices: Sequence[float],
              trains: float | None = None) -> str | None:
    """Why async/SSP train differently from sync at this lr, and the lr that matches sync's
    step; None for sync or a single worker (where the modes agree). A diverged run names
    `trains` instead, the largest lr below that trains in its mode (sync's step may diverge
    too)."""
    n = run.workers
    if run.mode == "sync" or n < 2:
        return None
    ssp = f" (SSP(0) is sync at lr {n * lr:g})" if run.mode.startswith("SSP") else ""
    why = (f"{run.mode} applies all {n} pushes at the full rate {lr:g}, sync their mean once: "
           f"a round moves the weights {n}× as far{ssp}.")
    if run.diverged:
        return f"DIVERGED. Why: {why}{_fix(trains)}"
    step = step_lr(lr, n, choices)
    smallest = "" if step <= lr / n * (1 + 1e-9) else ", the slider's smallest"
    return (f"Compared with sync: {why[:-1]}; sync's step is {lr:g} / {n} = {lr / n:.2g} "
            f"(try lr {step:g}{smallest}).")


def alone_note(run: Run, palette: str = "ps") -> str | None:
    """How an async/SSP run ends when its last updates are one worker's, each on fresh weights
    (staleness 0): as plain SGD, which a run of equal workers (all N − 1 stale) never gets;
    None when fewer than two such updates end it."""
    if run.mode == "sync" or run.workers < 2 or not run.history:
        return None
    last, k = run.history[-1].worker, 0
    for update in reversed(run.history):
        if update.worker != last or update.staleness != 0:
            break
        k += 1
    if k < 2 or last is None:  # None: SSP(0)'s averaged rounds, no one worker's updates
        return None
    return (f"Its last {k} updates are {worker_label(last, palette)}'s alone, on fresh weights: "
            "plain SGD.")


def _fix(trains: float | None) -> str:
    """The sentence that names a learning rate that trains (or says to try a smaller one)."""
    return (f" Learning rate {trains:g} trains." if trains is not None
            else " Try a smaller learning rate.")


def sync_reason(run: Run, lr: float, trains: float | None) -> str | None:
    """Why sync itself blew up (None when it did not): its one averaged step is too long; the
    largest learning rate below that trains (`trains`, None when none was found). Any mode
    with one worker is plain SGD, as sync is, and is said so."""
    if not run.diverged or (run.mode != "sync" and run.workers > 1):
        return None
    step = ("even sync's one averaged step" if run.mode == "sync" else
            f"even one worker's step (with one worker {run.mode} is plain SGD, as sync is)")
    return (f"DIVERGED. Why: at learning rate {lr:g} {step} overshoots: "
            f"each update lands further from the minimum than the last.{_fix(trains)}")


def later_reason(run: Run, sync: Run, straggler: bool, links: str = "duplex") -> str | None:
    """Why this run ends later than sync on the same clock (None when it does not), in two
    lines of a dashboard. links: how the shards' links carry transfers."""
    if run.mode == "sync" or run.makespan <= sync.makespan:
        return None
    return (f"Why {run.mode} ends later ({run.makespan:.2f} s, sync {sync.makespan:.2f} s): "
            + ", ".join(later_causes(run, sync, straggler, links)) + ".")  # two lines


def later_causes(run: Run, sync: Run, straggler: bool, links: str = "duplex") -> list[str]:
    """The causes `later_reason` names, each a clause (the command line's demo says them too).

    Both runs end a little after the last push of the worker that finishes last in `run`; up
    to that push the worker computes and sends, or waits. Where its computing and sending, and
    the time after its last push, are the same in both runs (to the hundredth of a second
    shown), the clauses say so and give its waits in each: their difference is the makespans'
    (to a hundredth or two).
    Otherwise they give all three times in each run."""
    w = last_worker(run)
    who = f"the slow G{w}" if straggler and w == 0 else f"G{w}"
    (end, waits, queued, bound), (s_end, s_waits, _, _) = _waits(run, w), _waits(sync, w)
    tail, s_tail = run.makespan - end, sync.makespan - s_end
    work, s_work = end - waits, s_end - s_waits
    if _same(tail, s_tail) and _same(work, s_work):
        causes = [f"{who} ends both, working as long in each"]
    else:
        causes = [f"{who} computes and sends {work:.2f} s (sync {s_work:.2f} s), and the run "
                  f"ends {tail:.2f} s after its last push (sync {s_tail:.2f} s)"]
    shards = _shards(len(run.shard_bytes))
    if links == "one-at-a-time":
        where = f"at the {shards}' one-at-a-time links"
        behind = "others' transfers"
    else:
        where, behind = f"at the {shards}", "others' pushes"
    what = f"{run.updates} updates and " if run.updates > sync.updates else ""
    mine = (f"{queued:.2f} s {where} for {what}{behind}" if queued > 0
            else f"{waits - bound:.2f} s")
    if bound > 0:
        mine += f" and {bound:.2f} s at the staleness bound"
    causes.append(f"but waits {mine}; in sync {s_waits:.2f} s")
    return causes


def last_worker(run: Run) -> int:
    """The worker whose last span ends last (the lowest number on a tie)."""
    ends = [0.0] * run.workers
    for s in run.timeline:
        if s.worker is not None and 0 <= s.worker < run.workers and s.kind != "idle":
            ends[s.worker] = max(ends[s.worker], s.end)
    return max(range(run.workers), key=lambda w: (ends[w], -w))


def _waits(run: Run, w: int) -> tuple[float, float, float, float]:
    """Worker w's last push's end, and its idle time before it: all of it, the part queued at a
    shard and the part at a staleness bound (SSP)."""
    mine = [s for s in run.timeline if s.worker == w]
    end = max((s.end for s in mine if s.kind != "idle"), default=0.0)
    idle = [(min(s.end, end) - s.start, s.note) for s in mine
            if s.kind == "idle" and s.start < end]
    bound = sum(t for t, note in idle if note == "barrier") if run.mode.startswith("SSP") else 0.0
    return (end, sum(t for t, _ in idle), sum(t for t, note in idle if note == "queue"), bound)


def _same(a: float, b: float) -> bool:
    """Equal as a dashboard shows them: within a hundredth of a second."""
    return abs(a - b) < 0.0105


def latency_note(run: Run, latency: float, bandwidth: float) -> str | None:
    """Why the transfer share moves while the transfers do not (None when the bytes, not the
    latency, set a message's time): each message's time is mostly its latency, the same at
    any number of shards, so a shorter run shows it as a larger share."""
    bytes_s = max(run.shard_bytes, default=0) / bandwidth
    if run.mode != "sync" or latency <= bytes_s:
        return None
    return (f"Transfers here are latency-bound ({latency:g} s a message, its bytes "
            f"{bytes_s * 1000:.2g} ms): their time does not change with the shards, so as the "
            "run gets shorter their share grows.")


def _shards(k: int) -> str:
    return "one shard" if k == 1 else f"{k} shards"


def why_html(run: Run, sync: Run, lr: float, straggler: bool,
             choices: Sequence[float], links: str = "duplex",
             trains: float | None = None, palette: str = "ps") -> str:
    """The lines above as HTML for a dashboard: a divergence line red; empty when nothing
    needs explaining. `trains`: for a diverged run, the largest lr below that trains;
    `palette`: how workers are named (G0, or GPU0 in figure 001's)."""
    lines = [(lr_reason(run, lr, choices, trains), "#c62828" if run.diverged else "#444"),
             (None if run.diverged else alone_note(run, palette), "#444"),
             (sync_reason(run, lr, trains), "#c62828"),
             (later_reason(run, sync, straggler, links), "#444")]
    return "".join(f"<div style='font-size:12px;line-height:1.2;color:{colour}'>"
                   f"{html.escape(text)}</div>" for text, colour in lines if text)
