"""Which processes of a run, still starting, make no progress: a hang before "ready" found
within the run's timeout instead of the start-up's allowance (child.STARTUP, 120 s).

A process starting does work (its imports, the digits, a worker's first backward), so it uses
CPU time or is runnable, however loaded the machine: at load 25 on two cores a runnable process
still gets tens of milliseconds a second. One that has not reached the meeting point yet
(its "arrived") and used no CPU time for the run's whole timeout, while neither runnable nor
in a disk wait, is stuck: stopped (SIGSTOP, Ctrl-Z, a debugger) or blocked in a wait of its
own. The processes that have arrived wait for the others without using CPU, rightly: of them
only one stopped (state T) for the whole timeout is stuck. Read from /proc (Linux); where there
is none, nothing is ever found stuck here and the start-up's allowance still ends every wait.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from .job import Job

STATES = {"T": "stopped", "t": "stopped by a debugger", "S": "asleep", "I": "idle"}
FLOOR = 1.0  # seconds: the shortest stall looked for, whatever the run's timeout (a lock or a
# page read may hold a starting process a few milliseconds; 0.1 s would be a stall on its own)


def stall_limit(timeout: float) -> float:
    """How long a process starting may show no progress before it is stuck: the run's
    timeout, at least FLOOR."""
    return max(timeout, FLOOR)


def cpu_and_state(pid: int) -> tuple[int, str] | None:
    """Process `pid`'s CPU time so far (clock ticks, user + system) and its state letter
    (R running, S sleeping, D disk wait, T stopped, Z ended...); None when it cannot be read."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # after the command's name, which may hold spaces
    return int(fields[11]) + int(fields[12]), fields[0]


class Stalls:
    """For each process watched, since when it has shown no sign of progress."""

    def __init__(self) -> None:
        self.seen: dict[int, tuple[int, float]] = {}  # pid -> (CPU ticks, when they last moved)

    def stuck(self, pids: dict[int, int], arrived: set[int], seconds: float) -> dict[int, str]:
        """Of `pids` (rank -> pid: the processes not yet ready), those with no progress for
        `seconds`, `arrived` ones (at the meeting point) only if stopped: rank -> their state
        (see STATES)."""
        now, out = time.monotonic(), {}
        for rank, pid in pids.items():
            found = cpu_and_state(pid)
            if found is None or found[1] in "ZX":
                continue  # gone: its exit is the launcher's to judge
            ticks, state = found
            last = self.seen.get(pid)
            waits = rank in arrived and state not in "Tt"
            if last is None or ticks != last[0] or state in "RD" or waits:
                self.seen[pid] = (ticks, now)
            elif now - last[1] >= seconds:
                out[rank] = STATES.get(state, f"in state {state}")
        return out


def never_ready(job: Job, procs: list[Any], stuck: dict[int, str]) -> str:
    """Why a run stopped while starting: the processes in `stuck` (rank -> state, from
    `Stalls.stuck`) made no progress for the run's timeout before reaching the meeting point."""
    timeout, pids = job.options.timeout, ", ".join(str(procs[r].pid) for r in stuck)
    names = "; ".join(f"{_named(job, procs, r)}, {how}," for r, how in stuck.items())
    return (f"{names} never became ready: no CPU time used for {stall_limit(timeout):g} s "
            f"(timeout={timeout:g}) before joining the group, and no process of a run can "
            f"start without all the others, so the run stopped. Check what holds pid {pids}: "
            f"a process stopped (SIGSTOP, Ctrl-Z, a debugger) goes on after `kill -CONT <pid>`; "
            f"one asleep waits for something in its start-up (`py-spy dump --pid <pid>` shows "
            f"where)")


def not_ready(job: Job, procs: list[Any], ready: Any, arrived: set[int]) -> str:
    """Words to add to a run's error: the processes alive that never became ready (not in
    `ready`) and are not simply waiting for the others at the meeting point (in `arrived`,
    asleep), with their state ("" when there is none)."""
    words = []
    for r, p in enumerate(procs):
        found = cpu_and_state(p.pid) if r not in ready and p.exitcode is None else None
        if found is not None and (r not in arrived or found[1] in "Tt"):
            state = STATES.get(found[1], f"in state {found[1]}")
            words.append(f"{_named(job, procs, r)}, {state}")
    return f" (never ready: {'; '.join(words)})" if words else ""


def _named(job: Job, procs: list[Any], rank: int) -> str:
    role, index = job.role(rank)
    return f"{role} {index} (pid {procs[rank].pid})"
