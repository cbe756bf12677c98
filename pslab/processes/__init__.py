"""Real processes: the same parameter server and workers as OS processes on torch.distributed.

`pslab.train(..., backend="processes")` runs each server shard and each worker as its own
process (gloo point-to-point, loopback by default) and returns a `Run` whose timeline is
measured with real clocks, so every plot of the simulated runs draws it unchanged. Layers:
job (what each process needs, from the run's Settings) -> launcher (start, watch, clean up) ->
child (one process: join, role, report) -> shard / remote (the roles, over protocol) ->
measured (reports -> Run). `python -m pslab.processes` is the same run under torchrun.
"""
from __future__ import annotations

import importlib
from typing import Any

_LAZY = {"ProcessFailure": ".launcher", "launch": ".launcher", "load_run": ".torchrun",
         "scaled": ".measured",
         "same_weights": ".measured", "Hosts": ".hosts", "run_across": ".hosts",
         "HostsUnavailable": ".hosts", "load_comparison": ".comparison",
         "calibrate": ".calibrate", "live_check": ".network", "warm": ".starter"}


def __getattr__(name: str) -> Any:
    # torch.distributed loads only when processes are really used: `import pslab` stays fast
    if name not in _LAZY:
        raise AttributeError(f"module 'pslab.processes' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value
    return value


__all__ = list(_LAZY)
