"""pslab — the parameter-server lab: the classic figures of distributed training, runnable.

    run = pslab.train(mode="sync", workers=3, steps=50, cluster=pslab.Cluster())
    run.timeline, run.history, run.weights, run.makespan

The core (train, the server, workers, clock) loads at once; plots, widgets and the replays load
on first use, so a script that only trains never pays for matplotlib or ipywidgets.
"""
from __future__ import annotations

import importlib
from typing import Any

from .layers import install as _old_names

_old_names()  # pslab.widgets, pslab.timeline_plot, ... still import (now in drawing/, notebook/)

from .cluster import Cluster  # noqa: E402
from .modes import SSP, Async, Backup, Policy, SoftSync, Sync
from .run import Run, train
from .server import ParameterServer
from .simulation import Record
from .timeline import KINDS, Span
from .worker import Worker

_LAZY = {
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
    "Checkpoint": ".checkpoint", "resume": ".checkpoint",
}


def __getattr__(name: str) -> Any:
    """Load a plotting or widget name the first time it is asked for (PEP 562)."""
    if name not in _LAZY:
        raise AttributeError(f"module 'pslab' has no attribute {name!r}")
    module = importlib.import_module(_LAZY[name], __name__)
    value = module if name == _LAZY[name].rsplit(".", 1)[1] else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = ["Cluster", "SSP", "Sync", "Async", "Policy", "Run", "train", "ParameterServer",
           "Backup", "SoftSync", "classic", "Record", "Span", "KINDS", "Worker", "plot", "replay",
           "tikz", "TimelinePlot",
           "TrainingPlot", "StalenessPlot", "plot_timeline", "compare", "plot_training",
           "plot_staleness", "plot_dataflow", "quiz", "widgets", "Dashboard", "dashboard", "nas",
           "processes", "trace", "chrome_trace", "Checkpoint", "resume"]
