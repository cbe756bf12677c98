"""How the launcher tells a process still starting from a stuck one (pslab.processes.starting):
real processes, their CPU time and state read from /proc."""
import signal
import subprocess
import sys
import time

import pytest

from pslab.processes.starting import FLOOR, Stalls, cpu_and_state, stall_limit

pytestmark = pytest.mark.skipif(cpu_and_state(1) is None, reason="no /proc to read")

BUSY = "import time\nend = time.time() + 30\nwhile time.time() < end: pass"


def watched(procs: dict, arrived: set, seconds: float, rounds: int) -> list[dict]:
    stalls, seen = Stalls(), []
    for _ in range(rounds):
        seen.append(stalls.stuck({r: p.pid for r, p in procs.items()}, arrived, seconds))
        time.sleep(seconds / 2)
    return seen


@pytest.mark.processes
def test_a_sleeping_or_stopped_process_is_stuck_a_busy_one_or_one_that_arrived_is_not():
    procs = {0: subprocess.Popen(["sleep", "30"]),
             1: subprocess.Popen([sys.executable, "-c", BUSY]),
             2: subprocess.Popen(["sleep", "30"]),  # arrived: waits for the others, rightly
             3: subprocess.Popen(["sleep", "30"])}  # arrived, then stopped
    try:
        procs[3].send_signal(signal.SIGSTOP)
        seen = watched(procs, {2, 3}, 1.0, 5)  # 2.5 s: a stall of 1 s seen, whatever the load
        assert seen[0] == {}  # nothing is stuck at first sight
        assert seen[-1] == {0: "asleep", 3: "stopped"}, seen
        assert all(1 not in s and 2 not in s for s in seen), seen
    finally:
        for p in procs.values():
            p.kill()
            p.wait()


@pytest.mark.processes
def test_an_ended_process_is_left_to_the_launcher():
    p = subprocess.Popen(["true"])
    p.wait()
    assert watched({0: p}, set(), 0.2, 4) == [{}] * 4


@pytest.mark.parametrize("timeout", [0.01, 0.5, 1.0, 3.0, 600.0])
def test_the_stall_looked_for_is_the_timeout_but_never_under_the_floor(timeout):
    assert stall_limit(timeout) == max(timeout, FLOOR) >= FLOOR
