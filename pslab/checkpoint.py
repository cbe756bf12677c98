"""Checkpoint and resume a simulated run: the whole state between two events, on disk.

Between two events of the virtual clock the simulation is just data: the clock's heap of
pending events, the server's shards and versions, each worker's fetched keys, the timeline and
history so far. A `Checkpoint(path, at=t)` handed to `pslab.train` writes all of it (pickled)
when the clock reaches virtual time t, and the run goes on. `pslab.resume(path)` carries on from
there: the same events in the same order on the same numbers, so the resumed run equals the
uninterrupted one bit for bit.

On real processes (`backend="processes"`, barrier modes) `Checkpoint(path)` has the launcher
write the server's shards after every complete round; `pslab.resume(path)` starts new processes
from the last one (pslab/processes/launcher.py).
"""
from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

from .checks import flag, number

FORMAT = "pslab-checkpoint-2"  # 2: the simulation keeps fetched versions itself (issue 13)


class Checkpoint:
    """Where (path) and, to write one, when (at: virtual seconds) to checkpoint a run."""

    def __init__(self, path: str | Path, at: float | None = None):
        if not isinstance(path, (str, Path)):
            raise ValueError(f"checkpoint path must be a file name (got {path!r})")
        self.path = Path(path)
        self.at = None if at is None else number("checkpoint at (virtual seconds)", at)
        self.resuming = False  # set by resume(): read the file instead of writing it

    def __repr__(self) -> str:
        when = "" if self.at is None else f", at={self.at:g}"
        return f"Checkpoint({str(self.path)!r}{when})"

    def arm(self, sim, settings: dict[str, Any]):
        """Called by train with its simulation, before it runs: to write, schedule the save;
        to resume, return the saved simulation (its settings must be these)."""
        if not self.resuming:
            if self.at is None:
                raise ValueError("a simulated run writes its checkpoint at a virtual time: "
                                 "Checkpoint(path, at=t)")
            sim.clock.at(self.at, _save, sim, self.path, settings)
            return sim
        saved = load(self.path)
        if repr(saved["settings"]) != repr(settings):
            raise ValueError(f"checkpoint {self.path} was written by a run with other settings "
                             f"({saved['settings']!r}); resume it with pslab.resume(path)")
        return saved["simulation"]


def _save(sim, path: Path, settings: dict[str, Any]) -> None:
    bar, sim.progress = sim.progress, None  # a progress bar is the notebook's, not the run's
    try:
        path.write_bytes(pickle.dumps(dict(format=FORMAT, settings=settings, simulation=sim,
                                           time=sim.clock.now, updates=len(sim.history))))
    finally:
        sim.progress = bar


def load(path: str | Path) -> dict[str, Any]:
    """The saved checkpoint: its train settings, the simulation, the virtual time it was at."""
    if not isinstance(path, (str, Path)):
        raise ValueError(f"checkpoint path must be a file name (got {path!r})")
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"checkpoint {path} does not exist")
    saved = pickle.loads(path.read_bytes())
    found = saved.get("format") if isinstance(saved, dict) else None
    if isinstance(found, str) and found.startswith("pslab-checkpoint-") and found != FORMAT:
        raise ValueError(f"{path} was written by another pslab ({found}; this one reads "
                         f"{FORMAT}): run it again from the start to checkpoint it anew")
    if found != FORMAT:
        raise ValueError(f"{path} is not a pslab checkpoint")
    return saved


def resume(path: str | Path, progress: bool = False):
    """Carry a checkpointed run on to its end; returns the Run (as if never interrupted)."""
    from .run import train

    flag("progress", progress)
    saved = load(path)
    if saved.get("backend") == "processes":
        from .processes.launcher import resume_processes

        return resume_processes(saved, Path(path), progress)
    again = Checkpoint(path)
    again.resuming = True
    return train(**saved["settings"], progress=progress, checkpoint=again)
