"""pslab — the parameter-server lab: the classic figures of distributed training, runnable.

    run = pslab.train(mode="sync", workers=3, steps=50, cluster=pslab.Cluster())
    run.timeline, run.history, run.weights, run.makespan
    pslab.plot.plot_timeline(run)

Every name loads on first use (PEP 562): `import pslab` alone imports no torch, numpy or
matplotlib, so `python -m pslab` refuses a mistyped command at once, and a script that only
trains never pays for matplotlib or ipywidgets. Each public thing has one name, grouped below.
"""
from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType
from typing import Any

# name -> the module that defines it (a module's own name: the module itself)
_GROUPS = {
    "runs": {"train": ".training", "resume": ".training", "Settings": ".settings",
             "Cluster": ".cluster", "Checkpoint": ".checkpoint"},
    "modes": {**{name: ".modes" for name in ("Sync", "Async", "SSP", "Backup", "SoftSync",
                                             "ZeRO", "Policy")}, "Pipeline": ".pipeline"},
    "results": {"Run": ".result", "Span": ".timeline", "Record": ".timeline",
                "KINDS": ".timeline"},
    "plots": {"plot": ".drawing.plot", "tikz": ".drawing.export"},
    "notebooks": {"widgets": ".notebook.widgets", "quiz": ".notebook.quiz"},
    "figures and tiers": {"replay": ".replay", "classic": ".classic", "nas": ".nas",
                          "processes": ".processes"},
}
_LAZY = {name: module for group in _GROUPS.values() for name, module in group.items()}


def __getattr__(name: str) -> Any:
    """Load a name the first time it is asked for (PEP 562)."""
    if name not in _LAZY:
        return _submodule(name)
    module = importlib.import_module(_LAZY[name], __name__)
    value = module if name == _LAZY[name].rsplit(".", 1)[1] else getattr(module, name)
    globals()[name] = value
    return value


def _submodule(name: str) -> ModuleType:
    """`pslab.zero`, `pslab.data`, ...: any module of the package, loaded on first use."""
    if name.startswith("_") or importlib.util.find_spec(f"{__name__}.{name}") is None:
        raise AttributeError(f"module 'pslab' has no attribute {name!r}")
    return importlib.import_module(f".{name}", __name__)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = list(_LAZY)
