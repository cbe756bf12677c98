"""The surprises a dashboard's numbers hold, said in a line under them where they show.

Three surprises a student meets at once, and misreads without a word:

- async and SSP apply every worker's push at the full learning rate, where sync applies the
  mean of the N gradients: one round of pushes moves the weights N times as far (SSP(0) is sync
  at N x lr), so at a learning rate tuned for sync they train worse or diverge;
- async can end later than sync: no mode ends before the straggler has made its steps, and
  async applies every push as an update of its own (N per round where sync applies one), which
  keeps the shards busy; on links that carry one transfer at a time (the seed figures') its
  pushes also wait for the other workers' fetches, where a real (duplex) link carries both.
- sync itself blows up at a large learning rate: its one averaged step overshoots;
- a latency-bound transfer's share of the run grows as the run gets shorter (more shards)
  while its time stays the same.
Each clause is said only where the two runs' numbers show it.
"""
from __future__ import annotations

import html
from typing import Sequence

from ..result import Run
from ..timeline import total


def step_lr(lr: float, workers: int, choices: Sequence[float]) -> float:
    """The largest choice at or below lr / workers (sync's step per round), else the smallest."""
    below = [c for c in choices if c <= lr / workers * (1 + 1e-9)]
    return max(below) if below else min(choices)


def lr_reason(run: Run, lr: float, choices: Sequence[float]) -> str | None:
    """Why async/SSP train differently from sync at this lr, and the lr that matches sync's
    step; None for sync or a single worker (where the modes agree)."""
    n = run.workers
    if run.mode == "sync" or n < 2:
        return None
    head = "DIVERGED. Why: " if run.diverged else "Compared with sync: "
    ssp = f" (SSP(0) is sync at lr {n * lr:g})" if run.mode.startswith("SSP") else ""
    return (f"{head}{run.mode} applies each of the {n} pushes at the full rate {lr:g}, sync "
            f"their mean once, so a round moves the weights {n}× as far{ssp}. Sync's step: "
            f"learning rate {step_lr(lr, n, choices):g}.")


def sync_reason(run: Run, lr: float, trains: float | None) -> str | None:
    """Why sync itself blew up (None when it did not): its one averaged step is too long; the
    largest learning rate below that trains (`trains`, None when none was found)."""
    if run.mode != "sync" or not run.diverged:
        return None
    fix = (f" Learning rate {trains:g} trains." if trains is not None
           else " Try a smaller learning rate.")
    return (f"DIVERGED. Why: at learning rate {lr:g} even sync's one averaged step overshoots: "
            f"each update lands further from the minimum than the last.{fix}")


def later_reason(run: Run, sync: Run, straggler: bool, links: str = "duplex") -> str | None:
    """Why this run ends later than sync on the same clock (None when it does not): each cause
    only where the two runs show it. links: how the shards' links carry transfers."""
    if run.mode == "sync" or run.makespan <= sync.makespan:
        return None
    return (f"Why {run.mode} ends later than sync ({run.makespan:.2f} s vs "
            f"{sync.makespan:.2f} s): " + "; ".join(later_causes(run, sync, straggler, links))
            + ".")


def later_causes(run: Run, sync: Run, straggler: bool, links: str = "duplex") -> list[str]:
    """The causes `later_reason` names, each a clause (the command line's demo says them too)."""
    shards = len(run.shard_bytes)
    causes = []
    if straggler:
        causes.append("nothing ends before the slow G0 is done")
    busy, sync_busy = (total(r.timeline, "update") / max(shards, 1) for r in (run, sync))
    if run.updates > sync.updates and busy > sync_busy:
        causes.append(f"its {run.updates} pushes are {run.updates} updates (sync: "
                      f"{sync.updates}), {busy:.1f} s of updating a shard (sync {sync_busy:.1f})")
    if run.queue_time > sync.queue_time:
        where = (f"at the {_shards(shards)}, whose links carry one transfer at a time: a push "
                 f"waits for the others' fetches" if links == "one-at-a-time" else
                 f"at the {_shards(shards)}")
        causes.append(f"its transfers queue {where} ({run.queue_time:.1f} GPU-s queued, sync "
                      f"{sync.queue_time:.1f})")
    if run.barrier_time > 0:
        causes.append(f"workers wait {run.barrier_time:.1f} GPU-s at the staleness bound")
    if not causes:
        causes.append("the order its pushes take on the shards")
    return causes


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
             trains: float | None = None) -> str:
    """The lines above as HTML for a dashboard: a divergence line red; empty when nothing
    needs explaining. `trains`: for a diverged sync run, the largest lr below that trains."""
    lines = [(lr_reason(run, lr, choices), "#c62828" if run.diverged else "#444"),
             (sync_reason(run, lr, trains), "#c62828"),
             (later_reason(run, sync, straggler, links), "#444")]
    return "".join(f"<div style='font-size:12px;line-height:1.2;color:{colour}'>"
                   f"{html.escape(text)}</div>" for text, colour in lines if text)
