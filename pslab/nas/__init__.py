"""Figure 003: neural architecture search by REINFORCE on a parameter server (Zoph & Le 2017).

S parameter-server shards hold the controller's parameters Θ; K controller replicas pull Θ,
sample m child networks each, wait for their m children to train and report their held-out
accuracy R, and push a policy gradient back. Everything runs on the core's clock, shards and
server; children are real MLPs trained on the digits.

    result = pslab.nas.search(servers=2, controllers=3, children=2, rounds=10, seed=0)
    baseline = pslab.nas.random_search(controllers=3, children=2, rounds=10, seed=0)
    pslab.plot.plot_figure(result)

Layer: a tier above the front door and the core, headless: its figures are drawn by
pslab/drawing/nas_*.py (reached through `pslab.plot`), its dashboard and questions are
pslab/notebook/nas_*.py. Every name loads on first use (PEP 562), as `pslab`'s do, so
`import pslab.nas` loads no torch, numpy or plotting library until a name is asked for.
"""
from __future__ import annotations

import importlib
import importlib.util
from typing import Any

# name -> the module of this folder that defines it; no name is also a module's name, so a
# submodule imported later (which Python binds on the package) never hides a function
_NAMES = {
    **{name: ".front" for name in ("search", "random_search")},
    **{name: ".result" for name in ("Search", "Found")},
    "SearchSettings": ".settings",
    **{name: ".space" for name in ("Space", "Arch", "ACTIVATIONS", "describe")},
    **{name: ".child" for name in ("Budget", "clear_cache")},
    **{name: ".schedule" for name in ("Sample", "Update")},
    **{name: ".compare" for name in ("duels", "format_table")},
    **{name: ".scale" for name in ("PAPER", "paper_scale", "sweep_servers", "lower_bound",
                                   "format_sweep", "server_busy")},
}


def __getattr__(name: str) -> Any:
    """Load a name the first time it is asked for (PEP 562); `pslab.nas.child` and the
    other modules of the folder load the same way."""
    if name in _NAMES:
        value = getattr(importlib.import_module(_NAMES[name], __name__), name)
        globals()[name] = value
        return value
    if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_NAMES))


__all__ = list(_NAMES)
