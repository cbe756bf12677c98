"""A process target for tests: pslab's FSDP2/DDP worker whose gloo teardown
(`destroy_process_group`) hangs for a minute on rank 1, as it has been seen to do across shaped
links. Imported by the processes by name (the forkserver has this folder on its sys.path, as
pytest puts it there)."""
import time

import torch.distributed as dist

from pslab.processes import fsdp


def worker(member, folder, timeout, *settings):
    if member.rank == 1:
        def hung():  # this process only: a fork of the forkserver
            time.sleep(60.0)

        dist.destroy_process_group = hung
    fsdp._worker(member, folder, timeout, *settings)
