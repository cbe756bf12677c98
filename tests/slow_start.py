"""A process target for tests of a loaded machine's start-up: pslab's process entry point, but
worker 1 arrives 6 s late (a loaded machine starting five processes at once, stretched), past
the run's short timeout. Imported by the processes by name (the forkserver has this folder on
its sys.path, as pytest puts it there)."""
import time

from pslab.processes import child

LATE = 6.0  # seconds


def main(job, rank, meeting, sink, launcher=None):
    if rank == job.num_shards + 1:
        time.sleep(LATE)
    child.main(job, rank, meeting, sink, launcher)
