"""Imported once by the forkserver before it forks any process, so every process starts with
torch, torch.distributed, the digits and pslab already in memory (~0.1 s instead of ~1.3 s of
`import torch` per process). The forkserver, when it ends (its caller has ended), removes the
caller's temporary pymp-* folder that starter.py names (PSLAB_FORKSERVER_FOLDER): a caller
killed without its atexit hooks leaves it otherwise; one that ran them has removed it already.
torch._dynamo (FSDP2's and DDP's, preloaded for them) makes its cache folder when imported, by
default `torchinductor_<user>` in the shared temporary folder, left there for good (pslab
compiles nothing): here it is made inside that private pymp-* folder, and goes with it."""
import atexit
import os
import shutil
import time

from .starter import CALLER, FOLDER

# (neither passed on to the processes); the caller's pid as starter.py saw it: a caller ended
# while this server still imported torch has a new parent here already
_folder, _caller = os.environ.pop(FOLDER, None), os.environ.pop(CALLER, "")
_ours = bool(_folder and os.path.basename(_folder).startswith("pymp-") and _caller.isdigit())
if _ours:  # before torch: a cache folder the user chose is kept
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(_folder, "torchinductor"))

import torch  # noqa: E402,F401
import torch.distributed  # noqa: E402,F401

from ..data import _digits  # noqa: E402
from . import child, remote, shard  # noqa: E402,F401


def _remove(server: int, caller: int, folder: str) -> None:
    """At the forkserver's exit: its caller's folder, once the caller has ended (a caller that
    is alive, having stopped or restarted its server, keeps its folder and removes it itself)."""
    if os.getpid() != server:  # (the processes end by os._exit: never here, but be sure)
        return
    # the caller's pipe closes as it ends, a moment before this server is handed to a new parent
    deadline = time.monotonic() + 2.0
    while os.getppid() == caller and time.monotonic() < deadline:
        time.sleep(0.02)
    if os.getppid() != caller:
        shutil.rmtree(folder, ignore_errors=True)


if _ours:
    atexit.register(_remove, os.getpid(), int(_caller), _folder)
_digits()
