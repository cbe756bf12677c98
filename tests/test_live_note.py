"""The "not live yet" note of a saved dashboard or knob (pslab.notebook.live_note): the kernel
answers a view's hello, and every dashboard and notebook 05 knob carries one note at its top.
What a browser shows is checked by tests/test_saved_and_presenter_browser.py (saved 02 and 05)."""
from __future__ import annotations

import ipywidgets as W
import pytest

from pslab.notebook import classic_explore as explore
from pslab.notebook.live_note import LiveNote
from pslab.notebook.widgets import dashboard
from pslab.notebook.zero_dashboard import zero_dashboard


def test_the_kernel_answers_a_views_hello_and_nothing_else():
    note, sent = LiveNote(), []
    note.send = lambda content, buffers=None: sent.append(content)
    note._on_page(note, {"other": 1}, [])
    note._on_page(note, "hello", [])
    assert sent == []
    note._on_page(note, {"hello": True}, [])
    assert sent == [{"live": True}]


@pytest.mark.parametrize("make", [lambda: dashboard("000", settle_delay=None),
                                  lambda: zero_dashboard(settle_delay=None)],
                         ids=["core", "zero"])
def test_a_dashboard_has_one_note_at_its_top(make):
    dash = make()
    assert isinstance(dash.widget.children[0], LiveNote)
    assert sum(isinstance(w, LiveNote) for w in _all(dash.widget)) == 1


@pytest.mark.parametrize("make", [explore.explore_delay, explore.explore_backup,
                                  explore.explore_lr_rule])
def test_a_notebook_05_knob_has_its_note_and_plain_text(make):
    knob = make()
    assert "pslab-knob" in knob.widget._dom_classes
    assert isinstance(knob.widget.children[0], LiveNote)
    assert isinstance(knob.widget.children[1].children[-1], W.Output)  # the picture
    bundle = knob._repr_mimebundle_()
    assert bundle["text/plain"] == f"pslab knob: {', '.join(knob.names)}"
    assert "application/vnd.jupyter.widget-view+json" in bundle


def _all(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _all(child)
