"""Notebook 05's knobs (pslab.notebook.classic_explore.Knob): while the next picture is drawn
(1-2 s for the lr knob) the one before shows faded and the status beside the last control says
"drawing…", then "ready": the slider never sits over an older picture without a word."""
from __future__ import annotations

import ipywidgets as W
import pytest

from pslab.notebook import classic_explore as explore
from pslab.notebook.dashboard import is_faded


def _seen_while_drawing(knob_of):
    """The knob, and (values, status, whether the picture is faded) as each draw began (the first one,
    made while the knob is built, without them)."""
    seen, made = [], []

    def draw(**values):
        seen.append((values, made[0].status.value, is_faded(made[0].out)) if made
                    else (values, None, None))
        return values

    made.append(knob_of(draw))
    return made[0], seen


@pytest.mark.parametrize("moves", [[3], [1, 16, 0]], ids=["one", "several"])
def test_a_knob_says_drawing_while_it_draws_and_ready_after(moves):
    knob, seen = _seen_while_drawing(lambda draw: explore.knob(
        draw, tau=W.IntSlider(0, 0, 16, description="τ")))
    slider = knob.panel.children[0].children[0]
    for value in moves:
        slider.value = value
    assert [v["tau"] for v, _, _ in seen] == [0, *moves]  # the first at once, then each move
    for _, status, faded in seen[1:]:  # the picture before, faded, and the word
        assert 'data-state="busy"' in status and "drawing…" in status and faded
    assert 'data-state="ready"' in knob.status.value and not is_faded(knob.out)


def test_a_knob_whose_picture_fails_says_so():
    """(In a kernel the Output widget shows the traceback under the controls; here it is
    raised.)"""
    def draw(lr):
        if lr == 0:
            raise ValueError("no picture for lr 0")
        return lr

    knob = explore.knob(draw, lr=W.FloatSlider(0.5, min=0, max=1))
    with pytest.raises(ValueError, match="lr 0"):
        knob.panel.children[0].children[0].value = 0
    assert 'data-state="error"' in knob.status.value and "no picture for lr 0" in \
        knob.status.value


def test_the_status_sits_beside_the_last_control_and_is_a_pslab_status():
    knob = explore.explore_lr_rule()
    rule, row, out = knob.panel.children
    assert isinstance(rule, W.ToggleButtons) and isinstance(out, W.Output)
    assert row.children[1] is knob.status and "pslab-status" in knob.status._dom_classes
