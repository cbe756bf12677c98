"""N processes in one gloo group for the collective modes (ZeRO-3 on FSDP2, all-reduce on DDP):
started, watched, and always cleaned up.

There is no server here, so the launcher of the parameter-server modes (launcher.py) does not
apply, but its conventions do: the processes meet through a file store in a private temporary
folder (no port to choose), each tells the caller how far it got over its own pipe (JSON, never
a pickle), and every wait has a limit. A collective needs every worker: when one process dies
or stops answering, the others would wait in their all-gather for ever, so the run stops at
once with a `ProcessFailure` that names the worker, its pid, how far it got and what happened
(a signal, an exception, silence), and the `finally` kills every process still running and
removes the folder: nothing is left behind.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
import time
import traceback
from contextlib import contextmanager
from multiprocessing.connection import Connection, wait
from typing import Annotated, Any, Callable, Iterator, Literal, NamedTuple, Optional, Sequence, \
    Union

from msgspec import Meta, Struct

from ..files import check_shape, parse_json
from .child import STARTUP  # a first forkserver (`import torch`) + the group's set-up, loaded
from .launcher import ProcessFailure, main_module_hidden
from .sigterm import Sigterm
from .starter import context
from .starting import Stalls, stall_limit

MESSAGE_LIMIT = 1 << 22  # bytes: a step's spans (a few hundred profiled ranges) and a few names
Seconds = Annotated[float, Meta(ge=-1e300, le=1e300)]  # finite


class Said(Struct, forbid_unknown_fields=True):
    """A message from a process of the group: its kind and that kind's fields."""
    kind: Literal["arrived", "ready", "step", "scored", "error", "done"]
    step: Annotated[int, Meta(ge=0, le=2**31)] = 0
    spans: list[list[Union[str, int, Seconds, None]]] = []
    score: Optional[tuple[float, float]] = None  # a diverged run scores NaN
    message: str = ""


class Member:
    """A process's side: its rank, its pipe to the caller, and the faults asked of it."""

    def __init__(self, rank: int, conn: Connection, kill_at: int | None, hang_at: int | None):
        self.rank, self.conn, self.kill_at, self.hang_at = rank, conn, kill_at, hang_at

    def say(self, kind: str, **fields: Any) -> None:
        self.conn.send_bytes(json.dumps(dict(kind=kind, **fields)).encode())

    def arrive(self) -> None:
        """Called just before joining the group (`init_process_group`): from here on the
        process may rightly wait for the others without using CPU; before it, one that uses
        none for the run's timeout is stuck (starting.py), and the run stops naming it."""
        self.say("arrived")

    def starting(self, step: int) -> None:
        """Called before each step: the fault on purpose of `kill` / `hang`, if it is now."""
        if step == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        while step == self.hang_at:  # alive, silent, holding up every collective
            time.sleep(1.0)

    def finished(self, step: int, spans: list) -> None:
        self.say("step", step=step, spans=spans)


def _entry(rank: int, target: Callable[..., None], folder: str, conn: Connection,
           faults: tuple[int | None, int | None], timeout: float, settings: tuple,
           host: str | None = None) -> None:
    # torch.profiler's own lines ("USDT: ... profiler_start") would land in the notebook cell
    # that started the run: a process writes to its log in the run's folder (removed after);
    # what went wrong reaches the caller over the pipe
    log = os.open(os.path.join(folder, f"rank{rank}.log"), os.O_WRONLY | os.O_CREAT, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    member = Member(rank, conn, *faults)
    if host is not None:  # a Hosts' network namespace: its sockets, its address (hosts.py)
        from .hosts_fork import enter

        enter(host)
        os.environ["GLOO_SOCKET_IFNAME"] = "eth0"
    try:
        target(member, folder, timeout, *settings)
        member.say("done")
    except BaseException as exc:  # say what happened, then exit non-zero
        last = traceback.extract_tb(exc.__traceback__)[-1:]
        where = f" (at {os.path.basename(last[0].filename)}:{last[0].lineno})" if last else ""
        member.say("error", message=f"{type(exc).__name__}: {exc}{where}")
        raise SystemExit(1)
    finally:
        _leave_group()


def _leave_group() -> None:
    """Tear down the gloo group the target joined, after its last word to the caller: the
    teardown is not part of the run, and across shaped links it has been seen to take over 30 s
    (1 run in 8 of a 6-worker DDP case): said before it, the caller would count the silence as
    a hung worker and throw the whole run away; said after, the caller kills a slow exit."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_initialized():
        dist.destroy_process_group()


class Finished(NamedTuple):
    """A group that ran to its end: its folder (still there) and each rank's measured spans."""

    folder: str
    spans: list[list]
    scores: dict[int, tuple[float, float]]  # step -> (training loss, test accuracy) after it


@contextmanager
def group(target: Callable[..., None], settings: tuple, workers: int, mode: str,
          timeout: float, kill: dict[int, int], hang: dict[int, int],
          partial: Callable[[Finished], Any] | None = None,
          hosts: Sequence[str] | None = None) -> Iterator[Finished]:
    """Run `target(member, folder, timeout, *settings)` in `workers` processes (process r in
    the network namespace hosts[r] where given: a `Hosts` host, gloo on its eth0); yields
    once all have finished (read the folder inside the `with`), raises ProcessFailure if one
    dies or all fall silent for `timeout` seconds (STARTUP while they start), its `.run` what
    `partial` makes of what had arrived (None if it cannot: nothing measured yet).
    `target` calls `member.finished(step)` only once every process has sent and kept what
    `partial` needs of that step: then, with every pipe drained when a death is seen, the
    steps the error names for a worker are updates its `.run` holds, whatever the timing."""
    with Sigterm() as term:  # SIGTERM: the processes stopped and the folder removed first
        yield from _group(target, settings, workers, mode, timeout, kill, hang, partial, hosts,
                          term)


def _group(target: Callable[..., None], settings: tuple, workers: int, mode: str,
           timeout: float, kill: dict[int, int], hang: dict[int, int],
           partial: Callable[[Finished], Any] | None,
           hosts: Sequence[str] | None, term: Sigterm) -> Iterator[Finished]:
    folder = tempfile.mkdtemp(prefix="pslab-group-")
    # the launcher's way to start: a forkserver with torch, pslab and FSDP2 loaded once (a
    # second run in a notebook starts in ~0.1 s a process, not ~1.3 s of `import torch`), safe
    # where torch already ran in the caller, where a plain fork can deadlock
    ctx = context()
    procs, watch = [], Watch(workers, mode, timeout)
    try:
        with main_module_hidden():
            for rank in range(workers):
                reader, writer = ctx.Pipe(duplex=False)
                faults = (kill.get(rank), hang.get(rank))
                p = ctx.Process(target=_entry, daemon=True, name=f"pslab-{mode}-{rank}",
                                args=(rank, target, folder, writer, faults, timeout, settings,
                                      None if hosts is None else hosts[rank]))
                with term.held():  # a process forked is on the list before a SIGTERM acts
                    p.start()
                    procs.append(p)
                writer.close()  # the child's copy alone: its death is an end of file here
                watch.readers[reader] = rank
        try:
            watch.run(procs)
        except ProcessFailure as failure:
            run = _partial(partial, Finished(folder, watch.spans, watch.scores))
            said = "" if run is None else (f" The {len(run.history)} update(s) finished before "
                                          f"are this error's .run (run.complete is False).")
            raise ProcessFailure(f"{failure}{said}", run) from None
        yield Finished(folder, watch.spans, watch.scores)
    finally:
        with term.held():  # (a SIGTERM now: acted on once all is cleaned up)
            _clean_up(procs, watch, folder)


def _clean_up(procs: list, watch: "Watch", folder: str) -> None:
    grace = time.monotonic() + 2.0  # a finished process gets a moment to exit by itself
    for rank, p in enumerate(procs):
        if rank in watch.done:
            p.join(max(0.0, grace - time.monotonic()))
        if p.exitcode is None:
            p.kill()
    for p in procs:
        p.join(5.0)
    for reader in watch.readers:
        reader.close()
    shutil.rmtree(folder, ignore_errors=True)


class Watch:
    """The caller's side: reads every pipe until all processes are done, or explains why not."""

    def __init__(self, workers: int, mode: str, timeout: float):
        self.mode, self.timeout = mode, timeout
        self.readers: dict[Connection, int] = {}
        self.ended: set[Connection] = set()  # pipes at their end: no longer waited on
        self.steps = [0] * workers  # steps each worker has finished
        self.spans: list[list] = [[] for _ in range(workers)]
        self.ready: set[int] = set()
        self.done: set[int] = set()
        self.errors: dict[int, str] = {}
        self.scores: dict[int, tuple[float, float]] = {}
        self.arrived: set[int] = set()  # ranks that said they join the group (Member.arrive)
        self.stuck: dict[int, str] = {}  # rank -> its state, found stuck while starting

    def run(self, procs: list) -> None:
        last, stalls = time.monotonic(), Stalls()
        while True:
            open_ = [conn for conn in self.readers if conn not in self.ended]
            sentinels = [p.sentinel for p in procs if p.exitcode is None]
            for ready in wait(open_ + sentinels, timeout=0.2):
                if ready in self.readers and self._read(ready):
                    last = time.monotonic()
            if any(p.exitcode not in (None, 0) for r, p in enumerate(procs)
                   if r not in self.done):
                self._drain()  # the others' last words, and every update already reported
                raise ProcessFailure(self.explain(procs, silent=False))
            if len(self.done) == len(procs):  # all measured and written; a slow exit (torch
                return  # tearing down under load) is not waited for: the caller reaps them
            limit = self.timeout if len(self.ready) == len(procs) else STARTUP
            if time.monotonic() - last > limit:
                raise ProcessFailure(self.explain(procs, silent=True))
            if len(self.ready) < len(procs):  # one stuck while starting: said within timeout
                late = {r: p.pid for r, p in enumerate(procs) if r not in self.ready}
                # until a process says where it joins (a target that never does), any of them
                # may be waiting for the others: then only a stopped one is stuck
                waiting = self.arrived if self.arrived else set(late)
                self.stuck = stalls.stuck(late, waiting, stall_limit(self.timeout))
                if self.stuck:
                    raise ProcessFailure(self.explain(procs, silent=True))

    def _read(self, conn: Connection) -> bool:
        """Take every message waiting on `conn` (bytes of JSON, never unpickled; at most
        MESSAGE_LIMIT bytes, its shape checked before use: a ValueError naming the rank and
        the field otherwise); False at its end (the process is gone)."""
        rank = self.readers[conn]
        where = f"rank {rank}'s message"
        try:
            while conn.poll():
                line = conn.recv_bytes(MESSAGE_LIMIT)
                message = check_shape(parse_json(line, where), Said, where)
                kind = message.kind
                if kind == "arrived":
                    self.arrived.add(rank)
                elif kind == "ready":
                    self.ready.add(rank)
                elif kind == "step":
                    self.steps[rank] = message.step + 1
                    self.spans[rank] += message.spans
                elif kind == "scored":  # rank 0: loss and accuracy after an update
                    self.scores[message.step] = message.score
                elif kind == "error":
                    self.errors[rank] = message.message
                elif kind == "done":
                    self.done.add(rank)
        except OSError as error:
            if str(error) == "bad message length":  # multiprocessing's words: read no further
                raise ValueError(f"{where}: longer than {MESSAGE_LIMIT} bytes") from None
            self.ended.add(conn)
            return False
        except EOFError:
            self.ended.add(conn)  # (waited on, an ended pipe is always ready: a busy loop)
            return False
        return True

    def _drain(self) -> None:
        for conn in list(self.readers):
            self._read(conn)

    def explain(self, procs: list, silent: bool) -> str:
        """The root cause first: a process killed from outside, then one that fell silent, then
        one that raised, then any other exit."""
        def who(rank: int) -> str:
            return f"worker {rank} (pid {procs[rank].pid})"

        killed = [r for r, p in enumerate(procs) if (p.exitcode or 0) < 0 and r not in self.done]
        if killed:
            r = killed[0]
            cause = (f"{who(r)} was killed by signal {signal.Signals(-procs[r].exitcode).name} "
                     f"after {_steps(self.steps[r])}")
        elif self.stuck:
            r = min(self.stuck)
            limit, pid = stall_limit(self.timeout), procs[r].pid
            cause = (f"{who(r)} was stopped (SIGSTOP, Ctrl-Z, a debugger) for {limit:g} s before "
                     f"it became ready (`kill -CONT {pid}` lets it go on)"
                     if self.stuck[r].startswith("stopped") else
                     f"{who(r)} was {self.stuck[r]}, using no CPU time, for {limit:g} s before it "
                     f"joined the group: it waits for something in its start-up (`py-spy dump "
                     f"--pid {pid}` shows where)")
        elif silent:
            waiting = [r for r in range(len(procs)) if r not in self.done]
            r = min(waiting, key=lambda k: (self.steps[k], k))
            cause = (f"{who(r)} stopped answering after {_steps(self.steps[r])} (nothing from any "
                     f"worker for {self.timeout if self.ready else STARTUP:g} s)")
        elif self.errors:
            r = min(self.errors)
            cause = f"{who(r)} failed after {_steps(self.steps[r])}: {self.errors[r]}"
        else:
            r = next(r for r, p in enumerate(procs) if p.exitcode)
            cause = f"{who(r)} exited with code {procs[r].exitcode} after {_steps(self.steps[r])}"
        others = sum(1 for k, p in enumerate(procs) if k != r and p.exitcode is None)
        return (f"{self.mode} on real processes stopped: {cause}. Every collective needs every "
                f"worker, so the run cannot go on; the {others} other process(es) still running "
                f"were stopped and the temporary folder removed (nothing is left behind).")


def _partial(make: Callable[[Finished], Any] | None, done: Finished) -> Any:
    """What was measured before the failure, as the caller assembles it; None where nothing
    was (no update finished: no weights on disk, no spans)."""
    if make is None:
        return None
    try:
        return make(done)
    except (ValueError, KeyError):
        return None


def _steps(n: int) -> str:
    return f"{n} step" if n == 1 else f"{n} steps"
