"""The package's folders show its layers, and every old module name still imports: it is the
same module object as the new one, so a monkeypatch or an isinstance check sees one module."""
import importlib

import pytest

import pslab
from pslab.layers import MOVED


@pytest.mark.parametrize("name", sorted(MOVED))
def test_old_module_names_are_the_new_modules(name):
    old = importlib.import_module(f"pslab.{name}")
    new = importlib.import_module(f"pslab.{MOVED[name]}.{name}")
    assert old is new and new.__name__ == f"pslab.{MOVED[name]}.{name}"


def test_public_names_still_resolve_from_the_top():
    from pslab.notebook.widgets import Dashboard
    from pslab.drawing.export import tikz

    assert pslab.Dashboard is Dashboard and pslab.tikz is tikz
    assert pslab.widgets.Dashboard is Dashboard and pslab.plot.plot_timeline is pslab.plot_timeline


def test_a_name_that_never_was_a_module_is_still_an_error():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("pslab.no_such_module")
