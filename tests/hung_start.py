"""Process targets for tests of a start-up that never ends: pslab's process entry point, but
worker 2 stops before it reaches the meeting point, the way a process does that a SIGSTOP,
Ctrl-Z or a deadlock in its start-up holds (`stopped`), or is killed there (`killed`). Imported
by the processes by name (the forkserver has this folder on its sys.path, as pytest puts it
there)."""
import os
import signal

from pslab.processes import child


def stopped(job, rank, meeting, sink, launcher=None):
    if rank == job.num_shards + 2:
        os.kill(os.getpid(), signal.SIGSTOP)
    child.main(job, rank, meeting, sink, launcher)


def killed(job, rank, meeting, sink, launcher=None):
    if rank == job.num_shards + 2:
        os.kill(os.getpid(), signal.SIGKILL)
    child.main(job, rank, meeting, sink, launcher)


def stopped_joining(job, rank, meeting, sink, launcher=None):
    """Worker 2 stops after the meeting point, before its first message to the shards."""
    if rank == job.num_shards + 2:
        greet = child.handshake

        def stop_then_greet(*args):
            os.kill(os.getpid(), signal.SIGSTOP)
            greet(*args)

        child.handshake = stop_then_greet  # this process only: a fork of the forkserver
    child.main(job, rank, meeting, sink, launcher)


def fsdp_stopped(member, folder, timeout, *settings):
    """An FSDP2/DDP group's worker 2 (pslab.processes.fsdp) stops before it sets up."""
    from pslab.processes import fsdp

    if member.rank == 2:
        os.kill(os.getpid(), signal.SIGSTOP)
    fsdp._worker(member, folder, timeout, *settings)


def fsdp_asleep(member, folder, timeout, *settings):
    """An FSDP2/DDP group's worker 2 falls asleep before it joins the group: not stopped, it
    waits for something that never comes (here a sleep far past the run)."""
    import time

    from pslab.processes import fsdp

    if member.rank == 2:
        time.sleep(600)
    fsdp._worker(member, folder, timeout, *settings)
