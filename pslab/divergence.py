"""Divergence said out loud (Zhang et al. 2016: a fixed large learning rate diverges under
staleness, lr/τ recovers). A run that blew up still returns — it is a lesson, not an error —
but `run.diverged` is True, its repr and plot titles say so, and `train` warns once, naming the
likely cause: the learning rate for this much staleness.
"""
from __future__ import annotations

import math
import warnings


GROWTH = 3.0  # a training loss this many times its starting value counts as blown up


def divergence(run: "Run") -> str | None:
    """What went wrong, in one sentence, or None when the run did not diverge (or, timing
    only, has no loss to judge)."""
    if not run.settings.numerics or not run.history:
        return None
    start = run.start_loss if math.isfinite(run.start_loss) else run.history[0].loss
    for r in run.history:
        if not math.isfinite(r.loss):
            return (f"the training loss became {r.loss} at update {r.version} "
                    f"(t = {r.time:.3g} s)")
    worst = max(run.history, key=lambda r: r.loss)
    if worst.loss > GROWTH * start:
        return (f"the training loss grew to {worst.loss:.3g}, {worst.loss / start:.1f}x its "
                f"start {start:.3g}, at update {worst.version} (t = {worst.time:.3g} s)")
    return None


def likely_cause(run: "Run") -> str:
    """The advice: too large a learning rate, for this much staleness if there is any."""
    lr = run.settings.lr
    stale = run.push_staleness or run.staleness
    mean = sum(stale) / len(stale) if stale else 0.0
    if mean < 0.5 or run.settings.staleness_lr:
        return f"likely cause: the learning rate {lr:g} is too large; try a smaller lr"
    return (f"likely cause: the learning rate {lr:g} is too large for this much staleness "
            f"(a push is {mean:.1f} versions behind on average): try lr={lr / max(mean, 1):.3g} "
            f"or staleness_lr=True")


def warn_if_diverged(run: "Run") -> None:
    """One warning per diverged run, from the caller of pslab.train."""
    why = divergence(run)
    if why is not None:
        # Named "pslab.train", not the caller's file: a notebook cell's file name changes every
        # run, and stored notebook outputs must not. No registry: every diverged run says so.
        warnings.warn_explicit(f"{run.mode} run with {run.workers} workers diverged: {why}; "
                               f"{likely_cause(run)}", RuntimeWarning, "pslab.train", 0)
