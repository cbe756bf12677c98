"""A process target for tests of a loaded machine's start-up: pslab's process entry point, but
worker 1 arrives 6 s late (a loaded machine starting five processes at once, stretched), past
the run's short timeout: working now and then, as a process does that gets a slice of a busy
CPU (one that does no work at all is stuck, and the launcher stops the run: hung_start.py).
Imported by the processes by name (the forkserver has this folder on its sys.path, as pytest
puts it there)."""
import time

from pslab.processes import child

LATE = 6.0  # seconds


def main(job, rank, meeting, sink, launcher=None):
    if rank == job.num_shards + 1:
        end = time.perf_counter() + LATE
        while time.perf_counter() < end:
            time.sleep(0.25)
            spin = time.perf_counter() + 0.03  # 30 ms of CPU every 0.28 s
            while time.perf_counter() < spin:
                pass
    child.main(job, rank, meeting, sink, launcher)
