"""Imported once by the forkserver before it forks any process, so every process starts with
torch, torch.distributed, the digits and pslab already in memory (~0.1 s instead of ~1.3 s of
`import torch` per process). The forkserver, when it ends (its caller has ended), removes the
caller's temporary pymp-* folder that starter.py names (PSLAB_FORKSERVER_FOLDER): a caller
killed without its atexit hooks leaves it otherwise; one that ran them has removed it already."""
import atexit
import os
import shutil

import torch  # noqa: F401
import torch.distributed  # noqa: F401

from ..data import _digits
from . import child, remote, shard  # noqa: F401
from .starter import FOLDER


def _remove(server: int, folder: str) -> None:
    if os.getpid() == server:  # the forkserver itself (its children end by os._exit anyway)
        shutil.rmtree(folder, ignore_errors=True)


_folder = os.environ.pop(FOLDER, None)  # (not passed on to the processes)
if _folder and os.path.basename(_folder).startswith("pymp-"):
    atexit.register(_remove, os.getpid(), _folder)
_digits()
