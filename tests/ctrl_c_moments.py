"""A Ctrl-C at each exact moment of a launcher's cold start, one run a moment, in this fresh
Python (its forkserver and resource tracker not started yet): run by
test_processes_safety.test_a_ctrl_c_at_any_moment_of_a_start_stops_the_run, which reads the
last line printed: {moment: [what train did, points the Ctrl-C was sent at, processes of the
run alive after it, pslab-run-* folders left], "descendants": [pids still below this process
at its end: its forkservers and resource tracker]}.

The Ctrl-C is sent to the launcher's own thread from a hook at that point (signal.pthread_kill),
not by timing luck: where that thread blocks SIGINT (multiprocessing's start of its resource
tracker) it waits there, pending, as the kernel keeps it, until SIGINT is unblocked.
"""
import glob
import json
import os
import signal
import sys
import tempfile
import threading
import warnings

# Ctrl-C as in a terminal: a suite started in the background (`&`, nohup, a CI runner) hands
# SIGINT on ignored, and pslab rightly leaves an ignored Ctrl-C ignored (conftest.ctrl_c_works)
signal.signal(signal.SIGINT, signal.default_int_handler)

from multiprocessing import forkserver  # noqa: E402

import pslab  # noqa: E402
from pslab import engine  # noqa: E402
from pslab.processes import starter  # noqa: E402
from pslab.processes.launcher import Launch  # noqa: E402
from proctree import alive, command, descendants, parent  # noqa: E402

# one run a moment, in this order: the tracker's and the forkserver's starts are cold only
# while they have not started; a moment interrupted there leaves them to be started again
MOMENTS = {
    "planning": ["planning"],  # make_job's timing-only simulation (it has a Ctrl-C handler)
    "tracker": ["tracker"],  # inside the resource tracker's spawn: SIGINT blocked there
    "server": ["server"],  # the forkserver just spawned, before the launcher holds Ctrl-C
    "fork": ["fork"],  # the first process asked of the cold forkserver (still importing)
    "fork, then stopping": ["fork", "stopping"],  # a second Ctrl-C while stopping after one
}
MAIN = threading.main_thread().ident
moment: list = []
sent: list = []


def ctrl_c(point: str) -> None:
    if point in moment and point not in sent:
        sent.append(point)
        signal.pthread_kill(MAIN, signal.SIGINT)


clock_run, spawn, read_signed, stop, start = (
    engine.Clock.run, starter._spawn_in_own_group, forkserver.read_signed, Launch.stop,
    Launch.start)
launches: list = []


def planned(self, until=None):
    ctrl_c("planning")
    return clock_run(self, until)


def spawned(path, args, passfds):
    tracker = "resource_tracker" in " ".join(map(str, args))
    if tracker:
        ctrl_c("tracker")
    pid = spawn(path, args, passfds)
    if not tracker:
        ctrl_c("server")
    return pid


def read(fd):
    ctrl_c("fork")
    return read_signed(fd)


def starting(self, meeting):
    launches.append(self)  # its processes, as the launcher lists them
    start(self, meeting)


def stopping(self):
    ctrl_c("stopping")
    stop(self)


engine.Clock.run, starter._spawn_in_own_group = planned, spawned
forkserver.read_signed, Launch.stop, Launch.start = read, stopping, starting


def run_processes() -> list[int]:
    """The run's processes alive: those the launcher listed, and the children of this
    process's forkservers (one forked but not yet on the list)."""
    servers = [p for p in descendants(os.getpid()) if parent(p) == os.getpid()
               and "multiprocessing.forkserver" in command(p)]
    listed = [p.pid for launch in launches for p in launch.procs]
    return sorted({p for p in listed + [p for s in servers for p in descendants(s)] if alive(p)})


found = {}
for name, points in MOMENTS.items():
    moment[:], sent[:], launches[:] = points, [], []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            # a run long enough (~20 s) that only the Ctrl-C ends it
            run = pslab.train(workers=2, steps=200, backend="processes", timeout=5,
                              time_scale=0.05)
            said = any("run interrupted" in str(w.message) for w in caught)
            how = "partial run" if said else f"finished, {run.updates} updates"
        except KeyboardInterrupt:
            how = "KeyboardInterrupt"
        except Exception as error:  # (a Ctrl-C lost in planning: the run went on, empty)
            how = f"{type(error).__name__}: {error}"[:300]
    left = [f"{p}: {command(p)[:80]}" for p in run_processes()]
    found[name] = [how, list(sent), left, glob.glob(tempfile.gettempdir() + "/**/pslab-run-*",
                                                       recursive=True)]
# what the test waits to see end after this process: the helpers, and whatever else is left
found["descendants"] = descendants(os.getpid())
print(json.dumps(found))
sys.stdout.flush()
