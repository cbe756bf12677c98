"""The forkserver that every real process is started from: one per Python session, with torch,
gloo and pslab imported in it once, so that a run's process is a fork of it (~0.1 s) and not a
new Python importing torch (1.3-2 s of CPU each, on two cores shared by all of them).

This module imports nothing heavy: `warm()` starts the server while the caller (a notebook's
first cell) is still importing its own modules, so the two imports run side by side instead of
one after the other when the first run starts.
"""
from __future__ import annotations

import multiprocessing as mp
import threading
from typing import Any

# what the forkserver imports before its first fork: the parameter-server processes' modules,
# and for the collective modes (ZeRO-3 on FSDP2, all-reduce on DDP) theirs too (0.6 s more CPU)
SERVER = ["pslab.processes.preload"]
PRELOAD = SERVER + ["pslab.processes.fsdp", "torch.distributed.fsdp"]


def context(preload: list[str] = PRELOAD) -> Any:
    """multiprocessing's forkserver context, its preload set (no effect once the server runs:
    the first start decides what the session's server holds)."""
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(preload)
    return ctx


def warm(fsdp: bool = True) -> threading.Thread:
    """Start the forkserver now; it imports torch, pslab and (fsdp=True) FSDP2 in its own
    process, in the background, so that a notebook's first process run, cells later, starts in
    about a second. fsdp=False where no run will use the collective modes (ZeRO(3),
    "allreduce"): 0.6 s less CPU, and the first run waits that much less. Returns the (daemon)
    thread that started it; calling it again does nothing more."""
    if not isinstance(fsdp, bool):
        raise TypeError(f"fsdp must be True or False (got {fsdp!r})")

    def start() -> None:
        from multiprocessing import forkserver

        context(PRELOAD if fsdp else SERVER)
        forkserver.ensure_running()  # spawns the server and returns: the imports go on there

    thread = threading.Thread(target=start, name="pslab-warm", daemon=True)
    thread.start()
    return thread
