"""The forkserver that every real process is started from: one per Python session, with torch,
gloo and pslab imported in it once, so that a run's process is a fork of it (~0.1 s) and not a
new Python importing torch (1.3-2 s of CPU each, on two cores shared by all of them).

This module imports nothing heavy: `warm()` starts the server while the caller (a notebook's
first cell) is still importing its own modules, so the two imports run side by side instead of
one after the other when the first run starts.

The server and multiprocessing's resource tracker (started with it, or alone for the spawn start
method) each run in a process group of their own. A notebook kernel, asked to shut down, signals every process of its own group and
waits until none is left: the server would die of it without being reaped (the kernel only
reaps it when it starts processes again) and the tracker ignores SIGTERM, so the kernel would
wait ~30 s and be killed, its atexit hooks (temporary folders) never run. Out of its group, both
are left alone and end by themselves when the caller ends, however it ends: each waits on a pipe
from it, which the end of the caller closes. The server then removes the caller's temporary
pymp-* folder (where its socket is): a caller killed without its atexit hooks (a notebook kernel
that nbval or a kernel restart kills) would leave it behind in /tmp.
"""
from __future__ import annotations

import atexit
import multiprocessing as mp
import os
import socket
import subprocess
import sys
import threading
import warnings
from typing import Any

# what the forkserver imports before its first fork: the parameter-server processes' modules,
# and for the collective modes (ZeRO-3 on FSDP2, all-reduce on DDP) theirs too, with
# torch._dynamo, which FSDP2's first fully_shard imports (and DDP's constructor): 217 modules,
# ~1.3 s of CPU in each process otherwise, 5-10 s at load 15 (once here instead)
SERVER = ["pslab.processes.preload"]
FOLDER = "PSLAB_FORKSERVER_FOLDER"  # tells the forkserver the caller's pymp-* folder
CALLER = "PSLAB_FORKSERVER_CALLER"  # and the caller's pid (it may end before the server looks)
PRELOAD = SERVER + ["pslab.processes.fsdp", "torch.distributed.fsdp", "torch._dynamo"]


def context(preload: list[str] = PRELOAD, method: str = "forkserver") -> Any:
    """multiprocessing's context of start `method` with its helpers running, each in a process
    group of its own: for "forkserver" the server (`preload` is what a server started now
    holds; the first start decides what the session's server holds) and the resource tracker,
    for "spawn" the resource tracker."""
    ctx = mp.get_context(method)
    if method == "forkserver":
        ctx.set_forkserver_preload(preload)
    _ensure_helpers(method)
    return ctx


_servers: list[subprocess.Popen] = []  # the helpers started here, still running
_starting = threading.Lock()


@atexit.register
def _let_go() -> None:
    """The helpers outlive their Popen objects by design (they end when this process has
    ended): no "subprocess is still running" warning for them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        _servers.clear()


def _ensure_helpers(method: str) -> None:
    """multiprocessing's own start of the forkserver (and of the resource tracker, which it
    starts first) or, for spawn, of the resource tracker alone (a spawned process would start
    it in the caller's group), with each helper put in a process group of its own as it is
    spawned."""
    from multiprocessing import forkserver, resource_tracker, util

    with _starting:
        spawn, util.spawnv_passfds = util.spawnv_passfds, _spawn_in_own_group
        try:  # each spawns only what is not running yet
            (forkserver if method == "forkserver" else resource_tracker).ensure_running()
        finally:
            util.spawnv_passfds = spawn


def _spawn_in_own_group(path: str, args: list[str], passfds: Any) -> int:
    """multiprocessing.util.spawnv_passfds (start `args`, keep `passfds` open in it, return
    its pid), the new process in a process group of its own."""
    group = dict(process_group=0) if sys.version_info >= (3, 11) else \
        dict(start_new_session=True)
    # a notebook kernel shows whatever its child processes write in the cell that runs at that
    # moment: the helpers' own output (an import's warning, a fork's error) belongs to no cell,
    # and every error that matters reaches the caller (a failed fork, a run's reports), as with
    # the processes themselves (child.quiet); PSLAB_PROCESS_OUTPUT=1 keeps it
    if os.environ.get("PSLAB_PROCESS_OUTPUT") != "1":
        group.update(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    folder = _socket_folder(passfds)
    if folder is not None:  # the forkserver: it removes the folder of its socket (preload.py)
        group.update(env=dict(os.environ, **{FOLDER: folder, CALLER: str(os.getpid())}))
    p = subprocess.Popen(args, executable=path, pass_fds=tuple(sorted(map(int, passfds))),
                         close_fds=True, restore_signals=False, **group)
    _servers.append(p)
    return p.pid


def _socket_folder(passfds: Any) -> str | None:
    """The folder of the Unix socket among `passfds` (the forkserver's listener: multiprocessing
    makes it in its temporary pymp-* folder of the caller), or None (the tracker: pipes only)."""
    for fd in passfds:
        try:
            with socket.socket(fileno=os.dup(int(fd))) as sock:
                name = sock.getsockname()
        except OSError:
            continue
        if isinstance(name, str) and os.path.basename(os.path.dirname(name)).startswith("pymp-"):
            return os.path.dirname(name)
    return None


def warm(fsdp: bool = True) -> threading.Thread:
    """Start the forkserver now; it imports torch, pslab and (fsdp=True) FSDP2 in its own
    process, in the background, so that a notebook's first process run, cells later, starts in
    about a second. fsdp=False where no run will use the collective modes (ZeRO(3),
    "allreduce"): 0.6 s less CPU, and the first run waits that much less. Returns the (daemon)
    thread that started it; calling it again does nothing more."""
    if not isinstance(fsdp, bool):
        raise TypeError(f"fsdp must be True or False (got {fsdp!r})")

    def start() -> None:
        context(PRELOAD if fsdp else SERVER)  # spawns the server: its imports go on there

    thread = threading.Thread(target=start, name="pslab-warm", daemon=True)
    thread.start()
    return thread
