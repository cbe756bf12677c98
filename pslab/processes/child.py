"""The life of one process: guard against orphans, join the group, play a role, report.

A process blocked inside a C++ gloo wait never runs Python's SIGINT handler, so SIGINT gets its
default action back (die at once): a Ctrl-C in the terminal of a torchrun reaches every rank
that way. Started from the forkserver, a process is in the forkserver's process group, not the
caller's: a stop button or Ctrl-C reaches the launcher, which kills them. Its parent is the
forkserver too, so if the launcher is killed outright nothing tells the process: a watchdog
thread waits on the launcher's pid and ends the process when it goes.
"""
from __future__ import annotations

import os
import select
import shutil
import signal
import sys
import threading
import time
from datetime import timedelta
from typing import Any, Callable, NamedTuple

import torch
import torch.distributed as dist

from .job import Job
from ..options import interface_of
from .remote import WorkerProcess
from .report import Report
from .shard import Shard, Stuck


STARTUP = 120.0  # seconds: the most the processes of a run may take to all be started


class Meeting(NamedTuple):
    """Where the processes meet (None under torchrun: env://). On one machine (loopback) a
    FileStore in the launcher's private folder: no socket at all for the rendezvous, nothing
    another user can reach. On a network address, the launcher's TCPStore there."""

    host: str
    port: int = 0
    file: str | None = None  # the FileStore's path (loopback runs)

    def store(self, world: int, timeout: timedelta):
        if self.file is not None:
            # torch's FileStore waits (5 min) for a folder that is not there, holding the GIL:
            # no thread of this process runs meanwhile, its watchdog included (watch)
            if not os.path.isdir(os.path.dirname(self.file)):
                raise RuntimeError(f"the run's meeting folder {os.path.dirname(self.file)} is "
                                   f"gone: its launcher has ended")
            return dist.FileStore(self.file, world)
        return dist.TCPStore(self.host, self.port, is_master=False, timeout=timeout)


def main(job: Job, rank: int, meeting: Meeting | None, sink: Any,
         launcher: int | None = None) -> None:
    """Entry point of every process (a module-level function, so spawn/forkserver can find it).
    sink: the pipe to the launcher, or under torchrun the path of this rank's report file."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    if launcher is not None:  # (from a forkserver the forkserver removes the folder: launcher)
        mine = meeting and meeting.file and job.options.start_method != "forkserver"
        watch(launcher, os.path.dirname(meeting.file) if mine else None)
        quiet()
    torch.set_num_threads(1)  # 2 cores, many processes: one thread each (PyTorch's advice)
    role, index = job.role(rank)
    report = Report(path=sink) if isinstance(sink, (str, os.PathLike)) else Report(conn=sink)
    try:
        player = Shard(job, index, report) if role == "shard" else WorkerProcess(job, index, report)
        # at the meeting point: the launcher stops watching its start-up for a stall
        here = (lambda: report("arrived", dict(rank=rank))) if launcher is not None else None
        clock, launch = join(job, rank, meeting, here)
        report("ready", dict(rank=rank, pid=os.getpid(), role=role, index=index, job=launch))
        player.run(clock)
        report("done", dict(rank=rank))
    except BaseException as e:  # say why before going: the launcher shows it to the user
        words = str(e) if isinstance(e, Stuck) else f"{type(e).__name__}: {e}"
        report("error", dict(rank=rank, role=role, index=index, message=words))
        if launcher is None:  # under torchrun nobody reads the pipe: say it here too
            print(f"pslab rank {rank} ({role} {index}): {words}", file=sys.stderr)
        raise SystemExit(1)
    finally:
        report.close()
        if dist.is_initialized():
            dist.destroy_process_group()


def join(job: Job, rank: int, meeting: Meeting | None,
         here: Callable[[], None] | None = None) -> tuple[Callable[[], float], str]:
    """Join the gloo group and agree on time zero and on the launch's own name; returns the
    clock (seconds since then) and the name (12 hex digits, drawn by rank 0 once the group
    has formed: before, ranks on other hosts share nothing but the command line, which two
    launches may repeat exactly; each rank's "ready" report carries it, so the files of two
    launches gathered into one folder are told apart by `load_run`). here: called once this
    process is at the meeting point, waiting for the others."""
    # gloo's own timeout a little longer than the shards' waits, so that a shard, which knows
    # whose push is missing, speaks first
    timeout = timedelta(seconds=job.options.timeout + 2)
    # gloo listens on the address of an interface: the one that holds the asked address (it
    # would take the hostname's address otherwise, which may face the network)
    os.environ["GLOO_SOCKET_IFNAME"] = interface_of(job.options.address)
    os.environ["TORCH_GLOO_LAZY_INIT"] = "1"  # a star needs W+S pairs, not a full mesh
    startup = timedelta(seconds=max(STARTUP, job.options.timeout + 2))
    if meeting is None:  # torchrun: RANK, WORLD_SIZE, MASTER_ADDR/PORT in the environment
        store = next(dist.rendezvous("env://", rank, job.world, timeout=startup))[0]
    else:
        store = meeting.store(job.world, startup)
    arrived(store, job.world, startup, here)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=job.world,
                            timeout=timeout)
    handshake(job, rank)
    # Wall-clock time zero from rank 0: on one host every process reads the same clock; across
    # hosts time.time() is the one NTP keeps in step (perf_counter's origin is per machine).
    # The launch's name is not drawn from the run's seed: two launches of one command line
    # (the same seed) must differ. 48 bits: a float64 holds them exactly, in the same message.
    zero = torch.tensor([time.time(), float(int.from_bytes(os.urandom(6), "big"))],
                        dtype=torch.float64)
    dist.broadcast(zero, src=0)
    t0, launch = zero[0].item(), int(zero[1].item())
    return (lambda: time.time() - t0), f"{launch:012x}"


def arrived(store: Any, world: int, startup: timedelta,
            here: Callable[[], None] | None = None) -> None:
    """Wait (at most `startup`) until all `world` processes are here, each done with its own
    start-up (torch, the digits, a worker's first backward: seconds on a loaded machine, and
    more for the last of many): the run's timeout, which gloo keeps from now on, is for a
    step, and a slow start must not pass for a silent worker."""
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")  # torchrun's store outlives one
    if store.add(f"pslab-arrived-{attempt}", 1) == world:
        store.set(f"pslab-all-arrived-{attempt}", "1")
    if here is not None:
        here()
    store.wait([f"pslab-all-arrived-{attempt}"], startup)


def handshake(job: Job, rank: int) -> None:
    """One tiny message on every worker-shard pair: with lazy init each pair connects on its
    first message (~0.1 s here), which belongs to start-up, not to the first fetch."""
    hello = torch.zeros(1)
    role, index = job.role(rank)
    peers = range(job.num_shards, job.world) if role == "shard" else range(job.num_shards)
    for peer in peers:  # shards hear workers in rank order, workers greet shards in rank order
        try:
            (dist.recv if role == "shard" else dist.send)(hello, peer)
        except RuntimeError as error:  # gloo's words name no process: say which one is missing
            other = "{} {}".format(*job.role(peer))
            raise RuntimeError(f"{other} (rank {peer}) never greeted {role} {index} after all "
                               f"had arrived: it never became ready ({error})") from None


def quiet() -> None:
    """Send this process's own output (gloo's C++ warnings, a dying thread's traceback) to
    /dev/null: a notebook kernel shows its children's output in whatever cell runs, and every
    error that matters reaches the launcher as a report. PSLAB_PROCESS_OUTPUT=1 keeps it."""
    if os.environ.get("PSLAB_PROCESS_OUTPUT") == "1":
        return
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)


def watch(pid: int, leftover: str | None = None) -> None:
    """End this process when process `pid` (the launcher) ends, however it ends. A launcher
    killed outright (SIGKILL: an out-of-memory kill, a kernel restart) cannot remove its private
    meeting folder, `leftover`: the children it leaves do (each tries; the first one wins), so
    a course server's /tmp does not fill with them. Only spawned children: one that removes it
    while another is still starting makes that one's FileStore wait 5 min holding the GIL, its
    watchdog unable to end it (Meeting.store), so forked ones leave it to their forkserver
    (Launch.tempdir)."""
    def wait() -> None:
        try:
            fd = os.pidfd_open(pid)
            select.select([fd], [], [])
        except (AttributeError, OSError):  # no pidfd (old kernel, macOS): poll instead
            while _alive(pid):
                time.sleep(0.5)
        if leftover is not None:
            shutil.rmtree(leftover, ignore_errors=True)
        os._exit(3)

    threading.Thread(target=wait, daemon=True, name="pslab-watchdog").start()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
