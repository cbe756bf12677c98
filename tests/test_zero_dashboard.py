"""Notebook 07's dashboard (sync, all-reduce, ZeRO-1/2/3; N, bandwidth, model size): every
control re-runs the clock and redraws, the numbers are of the run on show (bytes per worker per
step the paper's, memory per GPU run.memory's, the same accuracy in every mode), bad values
refused by name."""
import pytest

import pslab
from pslab.collectives import bytes_per_worker
from pslab.drawing.dataflow_plot import fmt_bytes
from pslab.notebook.zero_dashboard import ZeroDashboard, zero_dashboard
from pslab.notebook.zero_settings import ZeroSettings, model_bytes


@pytest.fixture(scope="module")
def dash():
    return zero_dashboard(settle_delay=None)


def test_model_bytes_are_the_runs():
    for hidden in (16, 32, 1024):
        run = pslab.train(workers=2, steps=1, hidden=hidden, numerics=False)
        assert model_bytes(hidden) == run.layout.size * 4
    assert model_bytes(32) == 9640


def test_it_starts_ready_with_the_numbers_of_its_run(dash):
    s = dash.settings
    assert s == ZeroSettings() and dash.run.mode == "ZeRO(3)" and dash.run.workers == 4
    assert 'data-state="ready"' in dash.status.value
    text = dash.numbers.value
    assert "ZeRO-3, 4 workers:" in text and f"makespan {dash.run.makespan:.2f} s" in text
    assert fmt_bytes(bytes_per_worker(3, model_bytes(64), 4)) + " sent per worker" in text
    assert fmt_bytes(dash.run.memory[0].total) + " of model states per GPU" in text
    assert dash.snapshot()[:4] == b"\x89PNG" and dash.figures["timeline"].panels
    assert dash.images["memory"].value[:4] == b"\x89PNG"


@pytest.mark.parametrize("change", [dict(workers=8), dict(mode="sync"), dict(mode="ZeRO-1"),
                                    dict(bandwidth=1e6), dict(hidden=256)])
def test_every_control_redraws_the_timeline(dash, change):
    before, numbers = dash.figures["timeline"].panels, dash.numbers.value
    dash.set(**change)
    assert dash.figures["timeline"].panels != before and dash.numbers.value != numbers
    assert dash.run.config["numerics"] and 'data-state="ready"' in dash.status.value
    assert dash.numbers_for == dash.settings and dash.errors == []
    dash.set(**{k: getattr(ZeroSettings(), k) for k in change})  # back to the start


def test_every_mode_ends_with_the_same_accuracy(dash):
    shown = {}
    for mode in ("sync", "allreduce", "ZeRO-1", "ZeRO-2", "ZeRO-3"):
        dash.set(mode=mode)
        shown[mode] = dash.numbers.value.split("test accuracy ")[1]
        assert dash.run.mode in (mode, f"ZeRO({mode[-1]})")
    assert len(set(shown.values())) == 1, shown


@pytest.mark.parametrize("kwargs, name", [(dict(mode="ZeRO-4"), "mode"), (dict(workers=1), "workers"),
                                          (dict(workers=2.5), "workers"), (dict(hidden=100), "hidden"),
                                          (dict(bandwidth=-1.0), "bandwidth"),
                                          (dict(settle_delay=-1), "settle_delay")])
def test_bad_starting_values_are_refused_by_name(kwargs, name):
    with pytest.raises(ValueError, match=name):
        ZeroDashboard(**kwargs)


@pytest.mark.parametrize("kwargs, name", [(dict(workers=17), "workers"), (dict(mode="async"), "mode"),
                                          (dict(shards=2), "shards")])
def test_bad_settings_are_refused_by_set_and_change_nothing(dash, kwargs, name):
    before = dash.settings
    with pytest.raises(ValueError, match=name):
        dash.set(**kwargs)
    assert dash.settings == before
