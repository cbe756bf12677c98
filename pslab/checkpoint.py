"""Checkpoint and resume a run: its whole state between two events, on disk, as plain data.

Between two events of the virtual clock the simulation is just data (pslab/snapshot.py). A
`Checkpoint(path, at=t)` handed to `pslab.train` runs the clock through every event up to
virtual time t, writes that state, and goes on: the run it observes is the same run, event for
event (a t at or after the run's end writes nothing and says so). `pslab.resume(path)` builds
the simulation afresh from the saved settings, puts the state back and carries on: the same
events in the same order on the same numbers, so the resumed run equals the uninterrupted one
bit for bit.

The file is a safetensors file (tensors + a JSON header; pslab/tensorfile.py), written to a temporary
file and renamed into place, so a full disk leaves the last good checkpoint whole, and reading
one runs no code. On real processes (`backend="processes"`, barrier modes) `Checkpoint(path)`
has the launcher write the server's shards after every complete round in the same format;
`pslab.resume(path, backend="processes")` starts new processes from the last one.

A file read back is untrusted: `load` checks its header's shape (`SimulatedHeader`,
`ProcessHeader`: keys, types, ranges) before any value is used; the settings are then checked by
train's own checks (pslab.resume makes them with `Settings.from_dict`), the state against the
simulation they build (snapshot.check) and the tensors' names and float32 shapes against that
simulation before their bytes are read. Any failure is a ValueError naming the file and the field.
"""
from __future__ import annotations

import os
import re
import warnings
from pathlib import Path
from typing import Any, Literal, Optional, Union

from msgspec import Struct, to_builtins

from .checks import number
from .files import check_shape, check_writable_path, decode_rest, json_members, json_prefix, \
    open_regular, read_at
from .options import LOOPBACK
from .settings import Settings
from .snapshot import Count, State, Time, plain_state, restore, snapshot
from .tensorfile import TensorFile, save_tensors

FORMAT = "pslab-checkpoint-4"  # plain data (safetensors + JSON); other versions are refused
WHAT = "a pslab checkpoint"
SPAN_BYTES = 256  # a timeline span as JSON is ~70 bytes; a history record or an event less


class SavedOptions(Struct, forbid_unknown_fields=True):
    """The process options a process checkpoint records (address: where it ran; resume listens
    where its caller says, never where a file says)."""
    time_scale: float
    timeout: float
    address: str
    start_method: str
    kill: dict[str, int]
    hang: dict[str, int]
    transfers: str


class SavedSettings(Struct, forbid_unknown_fields=True):
    """A run's settings as `Settings.to_dict` writes them (their values are Settings' to
    check: resume makes them with `Settings.from_dict`)."""
    mode: str
    workers: int
    accumulate: int
    lr: float
    batch: int
    steps: int
    shards: Union[int, str]
    seed: int
    cluster: Optional[dict[str, Any]]
    numerics: bool
    hidden: int
    staleness_lr: bool
    processes: Optional[SavedOptions]


class SimulatedRest(Struct, forbid_unknown_fields=True):
    """A simulated run's header after its settings (decoded by msgspec, see files.decode_rest)."""
    time: Time
    updates: Count
    state: State


class ProcessRest(Struct, forbid_unknown_fields=True):
    """A process run's header after its settings."""
    step: Count  # the rounds complete: the first step a resumed run plays
    updates: Count


class SimulatedHeader(Struct, forbid_unknown_fields=True):
    format: str
    backend: Literal["simulated"]
    settings: SavedSettings
    time: Time
    updates: Count
    state: State


class ProcessHeader(Struct, forbid_unknown_fields=True):
    format: str
    backend: Literal["processes"]
    settings: SavedSettings
    step: Count
    updates: Count


class Checkpoint:
    """Where (path) and, to write one, when (at: virtual seconds) to checkpoint a run."""

    def __init__(self, path: str | Path, at: float | None = None):
        self.path = check_writable_path(path, "checkpoint path")
        self.at = None if at is None else number("checkpoint at (virtual seconds)", at)
        self.resuming = False  # set by resume(): read the file instead of writing it
        self.written = False  # set once the state is on disk
        self._loaded: tuple[dict[str, Any], TensorFile] | None = None

    @classmethod
    def opened(cls, path: str | Path) -> "Checkpoint":
        """A Checkpoint to resume from `path`, its header loaded and checked once (`header`),
        its state kept until the run it goes into restores it."""
        loaded = load_file(path)
        found = cls(path)
        found.resuming, found._loaded = True, loaded
        return found

    @property
    def header(self) -> dict[str, Any]:
        """The header of the file `opened` read: settings, backend, time or step, updates."""
        if self._loaded is None:
            raise ValueError(f"{self!r} was not opened to resume: Checkpoint.opened(path)")
        return {k: v for k, v in self._loaded[0].items() if k != "state"}

    def __repr__(self) -> str:
        when = "" if self.at is None else f", at={self.at:g}"
        return f"Checkpoint({str(self.path)!r}{when})"

    def play(self, sim, settings: Settings) -> None:
        """Run `sim` (built by train from `settings`) to its end, writing the checkpoint on
        the way, or first putting back the state this checkpoint holds (resume)."""
        plain = settings.to_dict()
        if self.resuming:
            saved, found = self._loaded or load_file(self.path)
            self._loaded = None  # the state goes into sim: not kept twice
            if saved["settings"] != plain:
                raise ValueError(f"checkpoint {self.path} was written by a run with other "
                                 f"settings ({saved['settings']!r}); resume it with "
                                 f"pslab.resume(path)")
            restore(sim, saved["state"], found)
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


def load_file(path: str | Path) -> tuple[dict[str, Any], TensorFile]:
    """(header, tensor file) of a checkpoint, its header's shape checked (SimulatedHeader or
    ProcessHeader), its tensors not read yet; a ValueError naming the file for anything else."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"checkpoint path must be a file name, a str or pathlib.Path "
                        f"(got {path!r})")
    where = f"{path} ({WHAT})"
    try:
        found = TensorFile(path, WHAT, bound=lambda start: _limits(start, path, where))
    except ValueError:
        older = _older_format(Path(path))
        if older is None:
            raise
        raise ValueError(f"{path} was written by an older pslab ({older}, a pickle; this one "
                         f"reads {FORMAT}, plain data, and never unpickles a file: loading one "
                         f"could run any code): run it again from the start to checkpoint it "
                         f"anew") from None
    first, at = json_members(found.meta_text, ("format", "backend", "settings"), where)
    kind = ProcessHeader if first["backend"] == "processes" else SimulatedHeader
    rest = decode_rest(found.meta_text, at, ProcessRest if kind is ProcessHeader else
                       SimulatedRest, where)
    header = check_shape(dict(first, **{k: getattr(rest, k) for k in rest.__struct_fields__}),
                         kind, where)
    if kind is SimulatedHeader and header.time != header.state.now:
        raise ValueError(f"{path} ({WHAT}): field time: {header.time!r} is not the saved "
                         f"clock state.now={header.state.now!r}")
    if kind is ProcessHeader and header.step != header.updates:
        raise ValueError(f"{path} ({WHAT}): field step: {header.step} rounds but "
                         f"{header.updates} updates")
    checked = {k: to_builtins(getattr(header, k)) for k in header.__struct_fields__
               if k != "state"}
    if kind is SimulatedHeader:
        checked["state"] = header.state  # a State: snapshot.restore checks it against the run
    return checked, found


def _limits(start: str, path: str | Path, where: str) -> tuple[int, int]:
    """(longest header, most tensors) a run of the settings that begin pslab's header `start`
    writes, known before the rest is read: the format is checked, the settings go through
    Settings' checks (its memory limit included), then bound the state (about SPAN_BYTES per
    span the run can have drawn) and the tensors (the server's shards, a buffered gradient per
    worker and shard, and each worker's copy and gradient of every shard)."""
    try:
        format_ = json_prefix(start, ("format",), where)["format"]
    except ValueError:
        format_ = None
    if isinstance(format_, str) and format_.startswith("pslab-checkpoint-") and format_ != FORMAT:
        raise ValueError(f"{path} was written by another pslab ({format_}; this one reads "
                         f"{FORMAT}): run it again from the start to checkpoint it anew")
    if format_ != FORMAT:
        raise ValueError(f"{path} is not {WHAT} (no {FORMAT} header)")
    first = json_prefix(start, ("format", "backend", "settings"), where)
    saved = check_shape(first["settings"], SavedSettings, where, field="settings")
    plain = to_builtins(saved)
    if plain.get("processes"):  # where it ran is resume's to judge, not a size
        plain["processes"] = dict(plain["processes"], address=LOOPBACK)
    try:
        settings = Settings.from_dict(plain)
    except ValueError as error:
        raise ValueError(f"{where}: field settings: {error}") from None
    shards, workers = settings.layout.shards, settings.workers
    spans = workers * settings.steps * (settings.accumulate + 3 * shards + 4)
    return 65536 + SPAN_BYTES * spans + len(str(first["settings"])), shards * (1 + 3 * workers)


def _older_format(path: Path) -> str | None:
    """The format name an older (pickled) pslab checkpoint carries, read from its first 4 KB as
    bytes, not unpickled; None if the file holds none (or is no regular file)."""
    try:
        fd, size = open_regular(path, WHAT, 1 << 62)
    except ValueError:
        return None
    try:
        found = re.search(rb"pslab-checkpoint-(\d+)", read_at(fd, 0, min(size, 4096)))
    finally:
        os.close(fd)
    name = found.group(0).decode() if found else None
    return name if name != FORMAT else None  # ours, but damaged: not a pickle


def load(path: str | Path) -> dict[str, Any]:
    """The saved checkpoint's header as plain values, its shape checked: its settings
    (`Settings.to_dict`), the backend, the virtual time and state (simulated) or the rounds
    complete (processes)."""
    header = load_file(path)[0]
    if "state" in header:
        header["state"] = plain_state(header["state"])
    return header
