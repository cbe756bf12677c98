"""Checkpoint and resume a run: its whole state between two events, on disk, as plain data.

Between two events of the virtual clock the simulation is just data (pslab/snapshot.py). A
`Checkpoint(path, at=t)` handed to `pslab.train` runs the clock through every event up to
virtual time t, writes that state, and goes on: the run it observes is the same run, event for
event (a t at or after the run's end writes nothing and says so). `pslab.resume(path)` builds
the simulation afresh from the saved settings, puts the state back and carries on: the same
events in the same order on the same numbers, so the resumed run equals the uninterrupted one
bit for bit.

The file is a safetensors file (tensors + a JSON header; pslab/files.py), written to a temporary
file and renamed into place, so a full disk leaves the last good checkpoint whole, and reading
one runs no code. On real processes (`backend="processes"`, barrier modes) `Checkpoint(path)`
has the launcher write the server's shards after every complete round in the same format;
`pslab.resume(path)` starts new processes from the last one (pslab/processes/launcher.py).
"""
from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

from .checks import number
from .cluster import Cluster
from .files import check_writable_path, load_tensors, save_tensors
from .modes import Policy, policy_from_name
from .snapshot import restore, snapshot

FORMAT = "pslab-checkpoint-4"  # plain data (safetensors + JSON); other versions are refused
WHAT = "a pslab checkpoint"


class Checkpoint:
    """Where (path) and, to write one, when (at: virtual seconds) to checkpoint a run."""

    def __init__(self, path: str | Path, at: float | None = None):
        self.path = check_writable_path(path, "checkpoint path")
        self.at = None if at is None else number("checkpoint at (virtual seconds)", at)
        self.resuming = False  # set by resume(): read the file instead of writing it
        self.written = False  # set once the state is on disk

    def __repr__(self) -> str:
        when = "" if self.at is None else f", at={self.at:g}"
        return f"Checkpoint({str(self.path)!r}{when})"

    def play(self, sim, settings: dict[str, Any]) -> None:
        """Run `sim` (built by train from `settings`) to its end, writing the checkpoint on
        the way, or first putting back the state this checkpoint holds (resume)."""
        plain = plain_settings(settings)
        if self.resuming:
            saved, tensors = load_file(self.path)
            if saved["settings"] != plain:
                raise ValueError(f"checkpoint {self.path} was written by a run with other "
                                 f"settings ({saved['settings']!r}); resume it with "
                                 f"pslab.resume(path)")
            restore(sim, saved["state"], tensors)
            sim.run()
            return
        if self.at is None:
            raise ValueError("a simulated run writes its checkpoint at a virtual time: "
                             "Checkpoint(path, at=t)")
        sim.run(until=self.at)
        if sim.interrupted:
            return
        if sim.finished:  # the run ended before t: nothing to resume, nothing written
            warnings.warn(f"the run ended at {sim.makespan:.4g} virtual seconds, before the "
                          f"checkpoint's at={self.at:g}: no checkpoint written to {self.path}",
                          stacklevel=3)
            return
        state, tensors = snapshot(sim)
        save_tensors(self.path, tensors, dict(format=FORMAT, backend="simulated",
                                              settings=plain, time=sim.clock.now,
                                              updates=len(sim.history), state=state))
        self.written = True
        sim.run()


def plain_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """train's settings as JSON-able values: the mode by its name, the cluster by its
    arguments."""
    out = dict(settings)
    if isinstance(out.get("mode"), Policy):
        out["mode"] = out["mode"].name
    if isinstance(out.get("cluster"), Cluster):
        out["cluster"] = out["cluster"].plain()
    return out


def settings_from_plain(plain: dict[str, Any]) -> dict[str, Any]:
    """train's keyword arguments from `plain_settings`' values."""
    out = dict(plain)
    out["mode"] = policy_from_name(out["mode"])
    if out.get("cluster") is not None:
        out["cluster"] = Cluster.from_plain(out["cluster"])
    return out


def load_file(path: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(header, tensors) of a checkpoint; a ValueError naming the file for anything else."""
    if not isinstance(path, (str, Path)):
        raise TypeError(f"checkpoint path must be a file name, a str or pathlib.Path "
                        f"(got {path!r})")
    try:
        saved, tensors = load_tensors(path, WHAT)
    except ValueError:
        older = _older_format(Path(path))
        if older is None:
            raise
        raise ValueError(f"{path} was written by an older pslab ({older}, a pickle; this one "
                         f"reads {FORMAT}, plain data, and never unpickles a file: loading one "
                         f"could run any code): run it again from the start to checkpoint it "
                         f"anew") from None
    found = saved.get("format")
    if isinstance(found, str) and found.startswith("pslab-checkpoint-") and found != FORMAT:
        raise ValueError(f"{path} was written by another pslab ({found}; this one reads "
                         f"{FORMAT}): run it again from the start to checkpoint it anew")
    if found != FORMAT or not isinstance(saved.get("settings"), dict):
        raise ValueError(f"{path} is not {WHAT} (no {FORMAT} header)")
    return saved, tensors


def _older_format(path: Path) -> str | None:
    """The format name an older (pickled) pslab checkpoint carries, read as bytes, not
    unpickled; None if the file holds none."""
    if not path.is_file():
        return None
    found = re.search(rb"pslab-checkpoint-(\d+)", path.read_bytes()[:4096])
    name = found.group(0).decode() if found else None
    return name if name != FORMAT else None  # ours, but damaged: not a pickle


def load(path: str | Path) -> dict[str, Any]:
    """The saved checkpoint's header: its train settings, the virtual time, the backend."""
    return load_file(path)[0]
