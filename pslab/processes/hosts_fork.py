"""Start a run's ranks on the hosts in a blink: forked from the launcher's forkserver (torch,
torch.distributed and pslab already imported there) and moved into their host's network
namespace with setns(2), instead of one fresh Python per host under `ip netns exec` that
imports torch again (2-3 s of CPU each: on two cores, most of a live across-hosts check).

What the rank then does is the same as under torchrun: the same command line, the same
RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT variables, its reports in the run folder. Only the
network namespace is entered (the one thing a host is here): the rank's sockets, interfaces
and addresses are its host's, as with `ip netns exec`; files are this machine's, as before.
"""
from __future__ import annotations

import ctypes
import io
import os
import subprocess
from pathlib import Path
from typing import Sequence

CLONE_NEWNET = 0x40000000  # <sched.h>: setns's "this is a network namespace"
NETNS_DIR = Path("/run/netns")  # where `ip netns add NAME` keeps the namespace's handle
# The nice value a host's processes add to their caller's (negative: ahead of the machine's
# other programs). What a run across hosts measures is its links and its own processes' work,
# not the share of two cores that a co-user's programs leave it: at their own priority, each
# message of a rank waits for a core behind two busy loops beside it. Ahead of them, a rank
# that wakes up runs at once. Linux's autogroup scheduling (on here) shares the cores among
# sessions first and weighs nice values only within one, so a host's processes are a session
# of their own and the session's autogroup gets the value too. Needs root (CAP_SYS_NICE), as
# the hosts do (CAP_NET_ADMIN); the caller and the simulated side keep their own priority.
PRIORITY = -10


def enter(namespace: str) -> None:
    """Move the calling thread (the whole process, called before it starts any thread) into
    the network namespace that `ip netns add namespace` made, as `ip netns exec` does, and
    raise its priority as `Hosts.run` raises a command's (`hurry`)."""
    fd = os.open(NETNS_DIR / namespace, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if hasattr(os, "setns"):  # Python >= 3.12
            os.setns(fd, CLONE_NEWNET)
        else:
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.setns(fd, CLONE_NEWNET) != 0:
                errno = ctypes.get_errno()
                raise OSError(errno, f"setns into network namespace {namespace}: "
                                     f"{os.strerror(errno)}")
    finally:
        os.close(fd)
    hurry()


def hurry() -> None:
    """Put the calling process ahead of the machine's other programs: a session of its own
    (unless it leads one), PRIORITY added to the calling thread's nice value (Linux keeps one
    per thread: the threads it starts afterwards, gloo's among them, inherit it) and set as its
    session's autogroup's. Where the process may not raise its priority it runs at its own;
    one that leads a process group cannot start a session and keeps its session's share (the
    caller's, which is never raised here)."""
    try:
        if os.getsid(0) != os.getpid():
            os.setsid()
    except PermissionError:
        pass
    try:
        os.nice(PRIORITY)
    except PermissionError:
        pass
    if os.getsid(0) == os.getpid():
        ahead(os.getpid())


def ahead(pid: int) -> None:
    """Set the autogroup (the session's share of the cores) of process `pid`, which leads its
    session, to PRIORITY; nothing where the kernel has no autogroups or the process is gone."""
    try:
        with open(f"/proc/{pid}/autogroup", "w") as f:
            f.write(str(PRIORITY))
    except OSError:
        pass


def open_log(log: str) -> int:
    """The rank's log, opened for appending; never through a link (a link planted at the path
    in a shared folder would send the rank's output into its target)."""
    try:
        return os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    except OSError as e:
        raise OSError(e.errno, f"{log}: cannot open the rank's log ({e.strerror}; "
                               "a link there is never followed)") from None


def _rank(namespace: str, env: dict[str, str], argv: list[str], log: str, caller: int) -> None:
    """A forked rank's life: its own session (stopped whole, like a Popen'd one), its host's
    network, its output to `log`, gone with the caller, then the rank as torchrun runs it."""
    from .child import watch
    from .torchrun import run_rank

    os.setsid()
    out = open_log(log)
    os.dup2(out, 1)  # first: a failure to enter the host is in the log too
    os.dup2(out, 2)
    os.close(out)
    enter(namespace)
    os.environ.update(env)
    watch(caller)  # the forkserver is its parent: without this a killed kernel would orphan it
    run_rank(argv)


class ForkedRank:
    """A forked rank with the part of Popen's interface the hosts use (pid, poll, wait, and
    stdout: what it printed, read from its log)."""

    def __init__(self, process, log: str):
        self.process, self.log = process, log

    @property
    def pid(self) -> int:
        return self.process.pid

    def poll(self) -> int | None:
        return self.process.exitcode

    def wait(self, timeout: float | None = None) -> int:
        self.process.join(timeout)
        if self.process.exitcode is None:
            raise subprocess.TimeoutExpired(f"rank pid {self.pid}", timeout)
        return self.process.exitcode

    def kill(self) -> None:
        self.process.kill()

    @property
    def stdout(self) -> io.StringIO:
        try:
            return io.StringIO(Path(self.log).read_text(errors="replace"))
        except OSError:
            return io.StringIO("")


def fork_rank(namespace: str, env: dict[str, str], argv: Sequence[str], log: str) -> ForkedRank:
    """Start one rank of `python -m pslab.processes argv` inside `namespace`, from the
    forkserver (started now if it is not running yet)."""
    from .launcher import main_module_hidden
    from .starter import context

    os.close(open_log(log))  # here first: a planted link is refused in the caller, by name
    p = context().Process(target=_rank, args=(namespace, env, list(argv), log, os.getpid()),
                    name=f"pslab-host-{namespace}", daemon=True)
    with main_module_hidden():
        p.start()
    return ForkedRank(p, log)
