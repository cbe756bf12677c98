"""Where the modules live now that the package has folders per layer, and their old names.

The drawing layer moved to `pslab.drawing` and the notebook layer to `pslab.notebook` (as the
package passed 30 modules). Code and notebooks that say `import pslab.widgets` or
`from pslab.timeline_plot import ...` keep working: the old name is the same module object as
the new one (not a copy), so monkeypatching or isinstance checks see one module.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from types import ModuleType

DRAWING = ("timeline_plot", "training_plot", "dataflow_plot", "busy_plot", "export", "tex",
           "palette", "trace", "plot")
NOTEBOOK = ("widgets", "liveview", "livefigure", "dashboard_settings", "progress", "quiz")
MOVED = {name: "drawing" for name in DRAWING} | {name: "notebook" for name in NOTEBOOK}


class OldNames(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports `pslab.<old>` as the module `pslab.<layer>.<old>`."""

    def find_spec(self, fullname: str, path: object = None, target: object = None):
        parent, _, name = fullname.rpartition(".")
        if parent != "pslab" or name not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec) -> ModuleType:
        name = spec.name.rpartition(".")[2]
        return importlib.import_module(f"pslab.{MOVED[name]}.{name}")

    def exec_module(self, module: ModuleType) -> None:
        pass  # already executed under its new name


def install() -> None:
    if not any(isinstance(f, OldNames) for f in sys.meta_path):
        sys.meta_path.append(OldNames())
