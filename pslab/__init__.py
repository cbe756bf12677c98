"""pslab — the parameter-server lab: the classic figures of distributed training, runnable.

    run = pslab.train(mode="sync", workers=3, steps=50, cluster=pslab.Cluster())
    run.timeline, run.history, run.weights, run.makespan

Every name loads on first use (PEP 562): `import pslab` alone imports no torch, numpy or
matplotlib, so `python -m pslab` refuses a mistyped command at once, and a script that only
trains never pays for matplotlib or ipywidgets.
"""
from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType
from typing import Any

from .layers import install as _old_names

_old_names()  # pslab.widgets, pslab.timeline_plot, ... still import (now in drawing/, notebook/)

_LAZY = {
    # the core: lazy too, so `import pslab` (and `python -m pslab` refusing a typo) loads no torch
    "Cluster": ".cluster", "SSP": ".modes", "Async": ".modes", "Backup": ".modes",
    "Policy": ".modes", "SoftSync": ".modes", "Sync": ".modes", "ZeRO": ".modes",
    "Pipeline": ".pipeline",
    "Run": ".result", "train": ".training",
    "ParameterServer": ".server", "Record": ".simulation", "KINDS": ".timeline",
    "Span": ".timeline", "Worker": ".worker",
    # submodules
    "classic": ".classic",  # the papers' numbers re-derived (notebook 05)
    "plot": ".drawing.plot", "quiz": ".notebook.quiz", "replay": ".replay",
    "widgets": ".notebook.widgets", "nas": ".nas",
    # name -> the module that defines it
    "tikz": ".drawing.export", "Dashboard": ".notebook.widgets", "dashboard": ".notebook.widgets",
    "StalenessPlot": ".drawing.plot", "TimelinePlot": ".drawing.plot",
    "TrainingPlot": ".drawing.plot",
    "compare": ".drawing.plot", "plot_dataflow": ".drawing.plot", "plot_staleness": ".drawing.plot",
    "plot_timeline": ".drawing.plot", "plot_training": ".drawing.plot",
    # real processes, Chrome traces, checkpoints
    "processes": ".processes", "trace": ".drawing.trace", "chrome_trace": ".drawing.trace",
    "Checkpoint": ".checkpoint", "resume": ".training",
}


def __getattr__(name: str) -> Any:
    """Load a name the first time it is asked for (PEP 562)."""
    if name not in _LAZY:
        return _submodule(name)
    module = importlib.import_module(_LAZY[name], __name__)
    value = module if name == _LAZY[name].rsplit(".", 1)[1] else getattr(module, name)
    globals()[name] = value
    return value


def _submodule(name: str) -> ModuleType:
    """`pslab.run`, `pslab.data`, ...: a module the eager imports used to load as a side effect."""
    if name.startswith("_") or importlib.util.find_spec(f"{__name__}.{name}") is None:
        raise AttributeError(f"module 'pslab' has no attribute {name!r}")
    return importlib.import_module(f".{name}", __name__)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = ["Cluster", "SSP", "Sync", "Async", "Policy", "Run", "train", "ParameterServer",
           "Backup", "SoftSync", "ZeRO", "Pipeline", "classic", "Record", "Span", "KINDS", "Worker", "plot", "replay",
           "tikz", "TimelinePlot",
           "TrainingPlot", "StalenessPlot", "plot_timeline", "compare", "plot_training",
           "plot_staleness", "plot_dataflow", "quiz", "widgets", "Dashboard", "dashboard", "nas",
           "processes", "trace", "chrome_trace", "Checkpoint", "resume"]
