"""Bad input: a ValueError at the public entry naming the parameter, before any work starts."""
import math

import pytest

import pslab
from pslab.data import dataset_size

BAD_TRAIN = [
    (dict(workers=0), "workers"),
    (dict(workers=2.5), "workers"),
    (dict(workers=True), "workers"),
    (dict(lr=0), "lr"),
    (dict(lr=-0.1), "lr"),
    (dict(lr=math.inf), "lr"),
    (dict(lr=math.nan), "lr"),
    (dict(lr="0.1"), "lr"),
    (dict(accumulate=0), "accumulate"),
    (dict(batch=0), "batch"),
    (dict(batch=10**6), "batch"),
    (dict(steps=0), "steps"),
    (dict(mode="bsp"), "mode"),
    (dict(mode=None), "mode"),
    (dict(shards=0), "shards"),
    (dict(shards=257), "shards"), (dict(shards="rows"), "shards"), (dict(shards=2.0), "shards"),
    (dict(seed=-1), "seed"),
    (dict(numerics="yes"), "numerics"),
    (dict(hidden=0), "hidden"),
    (dict(cluster="fast"), "cluster"),
    (dict(workers=3, cluster=pslab.Cluster(speeds=[1, 1])), "speeds"),
    (dict(workers=2, steps=2, cluster=pslab.Cluster(durations=[[1, 1], [1, 1], [1, 1]])),
     "durations"),
    (dict(workers=2, steps=2, accumulate=2, cluster=pslab.Cluster(durations=[[1, 1], [1, 1]])),
     "durations"),
]


@pytest.mark.parametrize("kwargs, name", BAD_TRAIN)
def test_train_rejects_bad_arguments_by_name(kwargs, name, monkeypatch):
    # "before any work starts": no data is loaded and no simulation is built
    import pslab.simulate as run_module  # where train's simulated backend builds its run

    def no_work(*a, **k):
        raise AssertionError("work started before validation")

    monkeypatch.setattr(run_module.Digits, "load", no_work)
    for schedule in run_module.ACTORS:
        monkeypatch.setitem(run_module.ACTORS, schedule, no_work)
    with pytest.raises(ValueError, match=name) as err:
        pslab.train(**kwargs)
    assert "must be" in str(err.value)


BAD_CLUSTER = [
    (dict(compute_time=0), "compute_time"),
    (dict(speeds=[1, 0]), "speeds"),
    (dict(speeds=[1, -2]), "speeds"),
    (dict(speeds=[1, math.nan]), "speeds"),
    (dict(speeds=[]), "speeds"),
    (dict(jitter=-1), "jitter"),
    (dict(durations=[1, 2, 3]), "durations"),
    (dict(durations=[[1, 0]]), "durations"),
    (dict(durations=[[1, 2], [3]]), "durations"),
    (dict(latency=-1), "latency"),
    (dict(latency=math.inf), "latency"),
    (dict(bandwidth=0), "bandwidth"),
    (dict(update_time=-0.1), "update_time"),
]


@pytest.mark.parametrize("kwargs, name", BAD_CLUSTER)
def test_cluster_rejects_bad_arguments_by_name(kwargs, name):
    with pytest.raises(ValueError, match=name):
        pslab.Cluster(**kwargs)


@pytest.mark.parametrize("s", [-1, 1.5, "2", None])
def test_ssp_rejects_bad_bounds(s):
    with pytest.raises(ValueError, match="SSP"):
        pslab.SSP(s)


def test_edges_that_are_allowed():
    n = dataset_size()
    assert pslab.train(workers=1, batch=n, steps=1, numerics=False).updates == 1
    assert pslab.train(shards=4, steps=1).weights.keys() == {"W_h", "b_h", "W_o", "b_o"}
    assert pslab.Cluster(bandwidth=math.inf, latency=0).transfer_time(10**9) == 0.0


BAD_DASHBOARD = [
    (dict(workers=0), "workers"), (dict(workers=17), "workers"), (dict(accumulate=9), "accumulate"),
    (dict(lr=0), "lr"), (dict(mode="bsp"), "mode"), (dict(ssp=-1), "ssp"), (dict(ssp=11), "ssp"),
    (dict(slowdown=0.5), "slowdown"), (dict(slowdown=5), "slowdown"), (dict(shards=9), "shards"),
    (dict(bandwidth=0), "bandwidth"), (dict(palette="neon"), "palette"),
    (dict(speed=2), "speed"),  # not a setting: the error lists the ones there are
]


@pytest.mark.parametrize("overrides, name", BAD_DASHBOARD)
def test_dashboard_settings_are_checked_against_the_controls_ranges(overrides, name):
    from pslab.notebook.dashboard_settings import preset

    with pytest.raises(ValueError, match=name):
        preset("000", **overrides)


def test_dashboard_preset_names_the_presets():
    from pslab.notebook.dashboard_settings import preset

    with pytest.raises(ValueError, match="preset_name must be one of 'default', '000'"):
        preset("004")


def test_plots_and_export_say_what_a_run_is():
    run = pslab.train(steps=1, numerics=False)
    calls = [lambda: pslab.tikz("run"), lambda: pslab.tikz([]), lambda: pslab.tikz([run, 3]),
             lambda: pslab.plot.plot_timeline(None), lambda: pslab.plot.compare(run, "b"),
             lambda: pslab.plot.plot_training([]), lambda: pslab.plot.plot_staleness(3),
             lambda: pslab.plot.plot_dataflow({})]
    for call in calls:
        with pytest.raises(ValueError, match=r"run(_a|_b|s)? must be a pslab\.Run"):
            call()


def test_replay_names_its_own_parameter():
    with pytest.raises(ValueError, match="sync_time"):
        pslab.replay.figure001(sync_time=-1)


@pytest.mark.parametrize("kwargs, name", [
    (dict(jitter=1000), "jitter"), (dict(compute_time=1e300), "compute_time"),
    (dict(latency=1e20), "latency"), (dict(update_time=float("inf")), "update_time"),
    (dict(bandwidth=1e-310), "bandwidth"), (dict(bandwidth=0), "bandwidth"),
    (dict(speeds=[1, 1e-300]), "speeds"), (dict(durations=[[1.0, 1e300]]), "durations")])
def test_cluster_refuses_what_makes_the_timing_model_non_finite(kwargs, name):
    with pytest.raises(ValueError, match=name):
        pslab.Cluster(**kwargs)


def test_the_largest_allowed_cluster_still_gives_finite_numbers():
    run = pslab.train(workers=3, steps=5, numerics=False, cluster=pslab.Cluster(
        jitter=5, compute_time=1e9, latency=1e9, update_time=1e9, bandwidth=1e-6))
    assert math.isfinite(run.makespan) and math.isfinite(run.idle_fraction)


@pytest.mark.processes
def test_refusing_bad_arguments_loads_no_data():
    """The size of the digits is known without loading them, and it is right."""
    import sys

    from pslab import data

    assert data.DIGITS_ROWS == len(data._digits()[1])
    code = ("import sys, pslab\ntry:\n    pslab.train(steps=0)\nexcept ValueError:\n    pass\n"
            "print('sklearn' in sys.modules)")
    import subprocess
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "False", out.stderr


def _bad(fn, name):
    with pytest.raises(ValueError, match=name) as err:
        fn()
    assert "must" in str(err.value)


def test_drawing_and_quiz_entries_name_the_parameter():
    run = pslab.train(steps=2, numerics=False)
    _bad(lambda: pslab.plot.compare(run, run, labels=("one",)), "labels")
    _bad(lambda: pslab.plot.plot_training([run, run], labels=["a"]), "labels")
    _bad(lambda: pslab.plot.plot_staleness(run, ax="x"), "ax")
    _bad(lambda: pslab.quiz.questions(5), "prefix")
    _bad(lambda: pslab.quiz.hide_answers("no"), "hidden")
    _bad(lambda: pslab.widgets.sweep([1], make=5), "make")
    # None means "no labels" everywhere, and matching lengths are drawn in full
    assert len(pslab.plot.compare(run, run, labels=None).pslab_plots) == 2
    fig = pslab.plot.plot_training([run, run], labels=["a", "b"])
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["a", "b"]


def test_a_dashboard_is_set_by_the_rule_it_is_built_by():
    from pslab.notebook.widgets import Dashboard

    dash = Dashboard(settle_delay=None)
    _bad(lambda: dash.set(workers=100), "workers")  # was clamped to 16 without a word
    _bad(lambda: dash.set(mode="bsp"), "mode")
    _bad(lambda: Dashboard(settle_delay="x"), "settle_delay")
    assert dash.settings.workers != 100
    dash.set(lr=0.3)  # off the slider's grid, accepted as when building with lr=0.3
    assert dash.settings.lr == 0.3 == Dashboard(lr=0.3, settle_delay=None).settings.lr
    assert dash.run.settings.lr == 0.3
