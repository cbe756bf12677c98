"""The package's folders show its layers, and each public thing has one name: `pslab.__all__`
grouped (runs, modes, results, plots, notebooks, figures and tiers), no old module names."""
import importlib

import pytest

import pslab


def test_public_names_are_grouped_and_each_reachable_once():
    groups = pslab._GROUPS
    assert list(groups) == ["runs", "modes", "results", "plots", "notebooks", "figures and tiers"]
    names = [n for group in groups.values() for n in group]
    assert pslab.__all__ == names and len(set(names)) == len(names)
    for name in names:  # a plot, a trace or a dashboard is not reachable under two names
        assert getattr(pslab, name) is not None
    plots = {n for n in dir(pslab.plot) if n.startswith("plot_")}
    assert plots and not plots & set(names)
    from pslab.notebook.widgets import Dashboard

    assert pslab.widgets.Dashboard is Dashboard and "Dashboard" not in names


@pytest.mark.parametrize("old", ["widgets", "timeline_plot", "palette", "tex", "trace", "run",
                                 "liveview", "export"])
def test_no_old_module_name_imports(old):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(f"pslab.{old}")


def test_a_name_that_never_was_a_module_is_an_error():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("pslab.no_such_module")
    with pytest.raises(AttributeError):
        pslab.chrome_trace


HEAVY = ("torch", "numpy", "matplotlib", "ipywidgets", "anywidget", "IPython", "tqdm")


@pytest.mark.processes
def test_import_pslab_nas_is_as_light_as_import_pslab():
    """`import pslab.nas` adds its own package module and nothing else: no torch (1.1 s and
    ~1,100 modules), numpy or plotting library until a name is asked for."""
    import json
    import subprocess
    import sys

    code = ("import json, sys\nbefore = set(sys.modules)\nimport pslab\n"
            "top = set(sys.modules)\nimport pslab.nas\n"
            f"print(json.dumps([len(top - before), sorted(set(sys.modules) - top), "
            f"[m for m in {HEAVY!r} if m in sys.modules]]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    top, added, heavy = json.loads(done.stdout)
    assert added == ["pslab.nas"] and heavy == [], done.stderr
    assert top < 150  # `import pslab` itself: 74 modules, stdlib's included


def test_every_nas_name_stays_itself_after_every_nas_module_loads():
    """A submodule Python imports binds its name on the package: no public name of pslab.nas
    is also a module's, so `pslab.nas.search` is the function whatever was imported first."""
    import pkgutil
    import types

    import pslab.nas

    modules = [m.name for m in pkgutil.iter_modules(pslab.nas.__path__)]
    for module in modules:
        importlib.import_module(f"pslab.nas.{module}")
    assert not set(modules) & set(pslab.nas.__all__)
    for name in pslab.nas.__all__:
        assert not isinstance(getattr(pslab.nas, name), types.ModuleType), name
    assert callable(pslab.nas.search) and callable(pslab.nas.random_search)
    assert pslab.nas.child.__name__ == "pslab.nas.child"  # a module of the folder, on first use
    with pytest.raises(AttributeError):
        pslab.nas.no_such_name
