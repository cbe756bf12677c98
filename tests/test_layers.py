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


def test_import_pslab_nas_loads_no_plotting_or_widget_library():
    import subprocess
    import sys

    code = ("import sys, pslab.nas\nprint([m for m in ('matplotlib', 'ipywidgets', "
            "'anywidget', 'IPython') if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.strip() == "[]", done.stderr
