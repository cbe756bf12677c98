"""Start the processes of a run from Python (a notebook kernel), watch them, always clean up.

The launcher owns the meeting point (on loopback a FileStore in its private folder, no socket;
on a network address a TCPStore there), starts S + W
processes flat (forkserver with torch preloaded: fast, and safe after torch already ran in the
kernel, where fork can deadlock), and reads each one's reports from its own pipe as they come.
It decides what a death means: a shard's always stops the run; a worker's stops a mode that
waits for every worker (sync) and is survived by the others (async, SSP). Every wait has a
timeout, and a `finally` kills whatever is still running, so no process outlives the call.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import shutil
import signal
import sys
import tempfile
import threading
from contextlib import contextmanager
import time
import warnings
from dataclasses import replace
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any, Iterator

import torch

from ..checkpoint import FORMAT, load_file
from ..tensorfile import save_tensors
from ..result import Run
from ..settings import Settings
from .child import STARTUP, Meeting, main
from .job import Job, make_job
from .measured import assemble
from .rankfile import line_limit, read_message
from .sigterm import Sigterm
from .starter import SERVER, context
from .starting import Stalls, never_ready, not_ready, stall_limit


class ProcessFailure(RuntimeError):
    """The run stopped because a process died or stopped answering. `run` holds what was
    measured until then (a partial Run, `run.complete == False`)."""

    def __init__(self, message: str, run: Run | None = None):
        super().__init__(message)
        self.run = run


@contextmanager
def main_module_hidden() -> Iterator[None]:
    """Start processes without them importing the caller's main module. multiprocessing's
    forkserver and spawn re-import __main__ in every child (by its file or module name), which
    re-runs a script that calls train() without `if __name__ == "__main__":` in each child.
    The children run pslab.processes.child.main, which needs nothing from __main__: so for the
    moment of starting them, __main__ names neither its file nor its spec."""
    main = sys.modules.get("__main__")
    hidden = {k: main.__dict__.pop(k) for k in ("__file__",) if main and k in main.__dict__}
    spec = getattr(main, "__spec__", None)
    if main is not None:
        main.__spec__ = None
    try:
        yield
    finally:
        if main is not None:
            main.__dict__.update(hidden)
            main.__spec__ = spec


@contextmanager
def ctrl_c_held() -> Iterator[list]:
    """A Ctrl-C while processes start waits until the one starting is on the list (at most one
    start: ~6 s for the first, cold one): interrupted inside `Process.start`, a child already
    forked would be unknown to `stop` and live on until its own timeout; likewise while they
    are stopped. Raised as KeyboardInterrupt at the block's end."""
    asked: list = []
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield asked  # not ours to hold (another handler, or Ctrl-C ignored)
        return
    signal.signal(signal.SIGINT, lambda signum, frame: asked.append(signum))
    try:
        yield asked
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if asked:
        raise KeyboardInterrupt


class CheckpointNotWritten(OSError):
    """The launcher could not write a round to the checkpoint file: the run stops at once."""


def launch(settings: Settings, progress: bool = False, checkpoint: Any = None) -> Run:
    """Run checked `settings` on real processes (see pslab.train, backend="processes").
    checkpoint: a pslab.Checkpoint(path): the server's shards are written there after every
    complete round (barrier modes), for `pslab.resume(path, backend="processes")`; one that is
    resuming: new processes start from the file's last complete round, its shards checked
    against these settings' layout before any process starts, and go on writing their rounds
    to the same file."""
    policy, start = settings.mode, {}
    if checkpoint is not None:
        if checkpoint.at is not None or not policy.waits_for_update:
            raise ValueError("with backend='processes' a checkpoint is the server's shards after "
                             "each complete round: Checkpoint(path) without at, in a mode with "
                             f"rounds (sync, SSP(0), Backup) (got {checkpoint!r}, "
                             f"mode={policy.name})")
        if checkpoint.resuming:
            start = resumed(checkpoint.path, settings)
        checkpoint = str(checkpoint.path)
    job = replace(make_job(settings), checkpoint=checkpoint, **start)
    return Launch(job, progress).run()


def resumed(path: Path, settings: Settings) -> dict[str, Any]:
    """start_step and start_keys of a process checkpoint written by a run of `settings` (its
    process options aside: where the processes listen and the faults are the resuming call's)."""
    saved, found = load_file(path)
    written = dict(saved["settings"], processes=None)
    if saved["backend"] != "processes" or written != dict(settings.to_dict(), processes=None):
        raise ValueError(f"checkpoint {path} was written by another run; resume it with "
                         f"pslab.resume(path, backend='processes')")
    if saved["step"] >= settings.steps:
        raise ValueError(f"checkpoint {path} is of a finished run ({saved['step']} of "
                         f"{settings.steps} rounds)")
    layout = settings.layout
    tensors = found.tensors({f"shard.{s}": (layout.keys(s),) for s in range(layout.shards)})
    return dict(start_step=saved["step"],
                start_keys=tuple(tensors[f"shard.{s}"].numpy() for s in range(layout.shards)))


class Launch:
    def __init__(self, job: Job, progress: bool = False):
        self.job = job
        self.rounds: dict[int, dict[int, Any]] = {}  # version -> shard -> keys (checkpoints)
        self.spans: list = []
        self.updates: list[dict] = []
        self.pushes: list[dict] = []  # every push a shard took, with its staleness there
        self.arrived: set[int] = set()  # at the meeting point, waiting for the others
        self.ready: dict[int, dict] = {}
        self.errors: dict[int, str] = {}
        self.done: set[int] = set()
        self.reaped: set[int] = set()  # processes whose exit was looked at
        self.startup_s: float | None = None  # from the launch until every process had joined
        self.failures: list[str] = []  # workers lost in a mode that goes on without them
        self.procs: list[mp.Process] = []
        self.pipes: dict[int, Any] = {}
        self.term = Sigterm()
        self.bar = None
        if progress:
            from tqdm.auto import tqdm

            policy, w = job.policy, job.workers
            total = job.steps if policy.waits_for_update else job.steps * w // policy.aggregate(w)
            self.bar = tqdm(total=total - job.start_step if policy.waits_for_update else total,
                            desc=f"{policy.name} on processes", unit="update")

    def run(self) -> Run:
        # The processes all run on this machine, so they meet in a file of a private folder
        # (a FileStore): no rendezvous socket that anyone on the network could reach.
        # SIGTERM (a notebook kernel shut down, a job killed) ends the caller once every
        # process is stopped and the folder removed
        with self.term:
            folder = tempfile.mkdtemp(prefix="pslab-run-", dir=self.tempdir())
            started = time.perf_counter()
            try:
                self.start(Meeting(self.job.options.address, file=os.path.join(folder, "store")))
                self.watch(started)
                return self.result(True)
            except KeyboardInterrupt:  # the stop button: keep what was measured
                run = self.result(False)
                warnings.warn(f"run interrupted after {run.updates} updates: returning the "
                              f"partial run; every process was stopped", stacklevel=4)
                return run
            except ProcessFailure as e:
                e.run = self.result(False)
                raise
            finally:  # a Ctrl-C here (a second one) waits until all is stopped and removed
                with ctrl_c_held(), self.term.held():
                    self.stop()
                    if self.bar is not None:
                        self.bar.close()
                    shutil.rmtree(folder, ignore_errors=True)

    def tempdir(self) -> str | None:
        """Forkserver: multiprocessing's temporary folder of this process, which the forkserver
        removes once this process and all it forked have ended (preload.py), so no process
        removes it under a sibling still opening its meeting point (child.Meeting.store).
        Spawn: the usual one (its processes remove the run's folder, child.watch)."""
        from multiprocessing import util

        return util.get_temp_dir() if self.job.options.start_method == "forkserver" else None

    def start(self, meeting: Meeting) -> None:
        method = self.job.options.start_method
        ctx = context(SERVER, method)
        with ctrl_c_held() as asked, main_module_hidden():
            for rank in range(self.job.world):
                if asked:  # Ctrl-C: start no more; those started are stopped by run()
                    break
                reader, writer = ctx.Pipe(duplex=False)
                p = ctx.Process(target=main, args=(self.job, rank, meeting, writer, os.getpid()),
                                name=f"pslab-{'-'.join(map(str, self.job.role(rank)))}",
                                daemon=True)
                with self.term.held():  # a process forked is on the list before a SIGTERM acts
                    p.start()
                    self.procs.append(p)
                writer.close()
                self.pipes[rank] = reader

    def watch(self, started: float) -> None:
        """Read reports until every process is done; decide what each exit means."""
        timeout = self.job.options.timeout
        # the processes' own timeouts fire first, with clearer words: a step's (the run's
        # timeout) once all are ready, before that their start-up's (child.STARTUP)
        patience = 2 * timeout + 3
        heard, stalls = time.perf_counter(), Stalls()
        shards = range(self.job.num_shards)
        while len(self.reaped) < len(self.procs):
            sentinels = {p.sentinel: r for r, p in enumerate(self.procs) if r not in self.reaped}
            for ready in wait(list(self.pipes.values()) + list(sentinels), timeout=0.2):
                if ready in sentinels:
                    self.exited(sentinels[ready])
                else:
                    self.read_from(ready)
                heard = time.perf_counter()
            if len(self.ready) == self.job.world and self.startup_s is None:
                self.startup_s = time.perf_counter() - started
            if len(self.ready) < self.job.world:  # a start-up stuck: found within the timeout
                stuck = stalls.stuck({r: p.pid for r, p in enumerate(self.procs) if r not in
                                      self.ready and r not in self.reaped}, self.arrived,
                                     stall_limit(timeout))
                if stuck:
                    raise ProcessFailure(never_ready(self.job, self.procs, stuck))
            if all(r in self.done for r in shards):  # the server is finished: so is the run
                self.stragglers(time.perf_counter() + 1.0)
            waited = time.perf_counter() - heard
            if waited > patience + (STARTUP if len(self.ready) < self.job.world else 0):
                raise ProcessFailure(f"no process reported anything for {waited:.0f} s "
                                     f"(timeout={timeout:g}): stopped the run")

    def read_from(self, conn: Any) -> None:
        """Read the pipe `conn`, unless its process's exit has already read and closed it."""
        rank = next((r for r, c in self.pipes.items() if c is conn), None)
        if rank is not None:
            self.read(rank)

    def read(self, rank: int) -> None:
        """Take every message waiting on rank's pipe: bytes (never unpickled), at most the
        longest line a rank of this job sends, each checked against the job (rankfile) before
        it is used; a ValueError naming the rank and the field otherwise."""
        conn, limit = self.pipes[rank], line_limit(self.job)
        try:
            while conn.poll():
                line = conn.recv_bytes(limit)
                for kind, payload in read_message(line, f"rank {rank}'s message", self.job, rank):
                    self.handle(rank, kind, payload)
        except CheckpointNotWritten:
            raise
        except OSError as error:
            if str(error) == "bad message length":  # multiprocessing's words: read no further
                raise ValueError(f"rank {rank}'s message: longer than {limit} bytes, the most "
                                 f"a rank of this run sends") from None
            self.gone(rank)
        except EOFError:  # the process is gone (what it sent before is kept)
            self.gone(rank)

    def gone(self, rank: int) -> None:
        self.pipes.pop(rank).close()

    def handle(self, rank: int, kind: str, payload: Any) -> None:
        if kind == "spans":
            self.spans.extend(payload)
        elif kind == "push":
            self.pushes.append(payload)
        elif kind == "update":
            self.updates.append(payload)
            if self.job.checkpoint is not None:
                self.keep_round(payload)
            if self.bar is not None and payload["shard"] == 0:  # shard 0's updates count
                self.bar.update(1)
        elif kind == "arrived":
            self.arrived.add(rank)
        elif kind == "ready":
            self.ready[rank] = payload
        elif kind == "error":
            self.errors[rank] = payload["message"]
        elif kind == "done":
            self.done.add(rank)

    def exited(self, rank: int) -> None:
        p = self.procs[rank]
        p.join(0.5)
        self.reaped.add(rank)
        if rank in self.pipes:
            self.read(rank)
        if p.exitcode == 0:
            return
        # (a worker that never joined is not survivable: the group forms with every rank)
        if self.job.role(rank)[0] == "worker" and rank in self.ready and \
                rank not in self.errors and self.survivable():
            self.failures.append(f"{self.where(rank)}; the others went on")
            return
        self.listen(0.5)  # the others' last words: who was killed, whose push is missing
        raise ProcessFailure(self.explain())

    def survivable(self) -> bool:
        """Can the run go on without the workers lost so far? Without a barrier, yes; with
        one, only while enough workers are left to fill a round (backup workers)."""
        policy, w = self.job.policy, self.job.workers
        lost = sum(1 for r, p in enumerate(self.procs) if r >= self.job.num_shards
                   and p.exitcode not in (None, 0))
        return not policy.waits_for_update or w - lost >= policy.aggregate(w)

    def where(self, rank: int) -> str:
        p, (role, index) = self.procs[rank], self.job.role(rank)
        how = (f"was killed by signal {signal.Signals(-p.exitcode).name}" if p.exitcode < 0
               else f"exited with code {p.exitcode}")
        if role == "shard":
            return f"shard {index} (pid {p.pid}) {how}"
        done = len({s.step for s in self.spans if s.worker == index and s.kind == "compute"})
        return f"worker {index} (pid {p.pid}) {how} after {done} steps"

    def explain(self) -> str:
        """Why the run stopped, root cause first: a process killed from outside, then what the
        shards saw (they name the worker whose push is missing), then anything else."""
        name = self.job.policy.name
        killed = [r for r, p in enumerate(self.procs) if (p.exitcode or 0) < 0]
        if killed:
            role = self.job.role(killed[0])[0]
            what = (f"{name} waits for every worker" if role == "worker"
                    else "the server lost part of its parameters")
            if killed[0] not in self.ready:
                what = "no process of a run can start without all the others"
            when = "" if killed[0] in self.ready else " before it became ready"
            return (f"{self.where(killed[0])}{when}. {what[0].upper()}{what[1:]}, so the run "
                    f"stopped; the partial run is this error's .run")
        if self.errors:
            return (f"{name} run stopped: {self.errors[min(self.errors)]}"
                    f"{not_ready(self.job, self.procs, self.ready, self.arrived)}")
        failed = [r for r, p in enumerate(self.procs) if p.exitcode]
        return f"{name} run stopped: {self.where(failed[0])}"

    def keep_round(self, update: dict) -> None:
        """Once every shard has made update v (round v - 1 complete), write them to the
        checkpoint file: replaced whole (written aside, then renamed), never half written."""
        shards = self.rounds.setdefault(update["version"], {})
        shards[update["shard"]] = update["keys"]
        if len(shards) < self.job.num_shards:
            return
        version = update["version"]
        meta = dict(format=FORMAT, backend="processes", settings=self.job.settings.to_dict(),
                    step=version, updates=version)
        keys = {f"shard.{s}": torch.from_numpy(shards[s]) for s in range(self.job.num_shards)}
        try:
            save_tensors(self.job.checkpoint, keys, meta)
        except OSError as error:  # stop the run now, saying why (not as a lost worker later)
            raise CheckpointNotWritten(error.errno, str(error)) from error
        for v in [v for v in self.rounds if v <= version]:
            del self.rounds[v]

    def listen(self, seconds: float) -> None:
        """Read whatever the processes still say for a moment (other errors, last spans), until
        every shard has gone: the shards' words are the ones explain() puts first, and a hung
        worker, silent for good, would otherwise hold up every stopped run for `seconds`."""
        end = time.perf_counter() + seconds
        shards = range(self.job.num_shards)
        while any(r in self.pipes for r in shards) and time.perf_counter() < end:
            for ready in wait(list(self.pipes.values()), timeout=end - time.perf_counter()):
                self.read_from(ready)

    def stragglers(self, deadline: float) -> None:
        """After the server is done, a worker still running is hung: give it a moment, then
        stop it and say so."""
        while time.perf_counter() < deadline and any(p.exitcode is None for p in self.procs):
            time.sleep(0.02)
        for rank, p in enumerate(self.procs):
            if p.exitcode is None:
                p.kill()
                p.join(1.0)
                self.reaped.add(rank)
                # a process that said "done" was only slow to exit (spawn: tearing torch down)
                if rank not in self.done and self.job.role(rank)[0] == "worker":
                    self.failures.append(f"worker {self.job.role(rank)[1]} (pid {p.pid}) "
                                         f"stopped answering; the others finished without it")

    def stop(self) -> None:
        """Kill what still runs (what it measured has already arrived) and reap everything."""
        for p in self.procs:
            if p.exitcode is None:
                p.kill()
        for p in self.procs:
            p.join(2.0)
        for conn in self.pipes.values():
            conn.close()
        self.pipes.clear()

    def result(self, complete: bool) -> Run:
        for rank in list(self.pipes):
            self.read(rank)
        extra = dict(pids=[p.pid for p in self.procs], failures=list(self.failures),
                     startup_s=self.startup_s)
        return assemble(self.job, self.spans, self.updates, complete and not self.failures,
                        extra, self.pushes)
