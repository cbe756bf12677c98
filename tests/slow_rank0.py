"""A process target for tests that need one order of events every time: pslab's FSDP2/DDP
worker whose rank 0 takes a second longer to keep each update (a loaded machine, stretched),
so that another rank's death lands while rank 0 is still writing. Imported by the processes
by name (the forkserver has this folder on its sys.path, as pytest puts it there)."""
import time

from pslab.processes import fsdp


def worker(member, folder, timeout, *settings):
    save = fsdp.save_tensors

    def slow_save(*args, **kwargs):  # this process only: a fork of the forkserver
        time.sleep(1.0)
        return save(*args, **kwargs)

    fsdp.save_tensors = slow_save
    fsdp._worker(member, folder, timeout, *settings)
