"""The walker: every public entry of pslab, given bad values by class (types, non-finite numbers,
sizes, lengths, unknown names), refuses each with a ValueError or TypeError raised by pslab's
own code (not deep in numpy, torch, matplotlib or ipywidgets), naming the parameter and what
is allowed, at once, and leaving nothing half-done: no data loaded, no simulation or process
started, no file written, no global torch/numpy/random state changed, a dashboard's settings
as they were. The cases are generated from the signatures (tests/surface.py).

Also: `import pslab` loads no torch, and the CLI refuses a bad argument without it.
"""
from __future__ import annotations

import math
import os
import random
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np
import pytest
import torch

import pslab
from surface import RUN, RUNS, Case, Entry, Slot, cases, settings_hints

PSLAB = str(Path(pslab.__file__).parent)
ALLOWED_WORDS = ("must", "one of", "allowed", "expected", "unexpected keyword", "only ",
                 "are ", "from ", "at most", "at least", "needs", "limit")
SEED = dict(seed=(0,))
PLOT = dict(column=(None,))


def _settings() -> dict[str, str]:
    from pslab.notebook.dashboard_settings import Settings

    return settings_hints(Settings)


def _zero_settings() -> dict[str, str]:
    from pslab.notebook.zero_settings import ZeroSettings

    return settings_hints(ZeroSettings)


ZERO_DASH = dict(seed=(0,), jitter=(0.0,), latency=(0.0,), bandwidth=(1e300,))  # a free network


def _nas_settings() -> dict[str, str]:
    from pslab.notebook.nas_live import START

    return {n: type(v).__name__ for n, v in START.items()}


# allowed on a dashboard as in train: ssp=0 (BSP), a free network, a diverging lr
DASH = dict(seed=(0,), ssp=(0,), jitter=(0.0,), latency=(0.0,), update_time=(0.0,),
            bandwidth=(math.inf, 1e300), lr=(1e300,))
ENTRIES = [
    Entry("pslab.train", allowed=dict(seed=(0,), lr=(1e300,))),
    Entry("pslab.train", label="pslab.train[processes]",
          base=dict(backend="processes", workers=2, steps=2),
          allowed=dict(seed=(0,), lr=(1e300,), time_scale=(0.0,))),
    # burst 0: no token-bucket credit (the default), as latency 0 is no latency
    Entry("pslab.Cluster", allowed=dict(jitter=(0.0,), latency=(0.0,), update_time=(0.0,),
                                        bandwidth=(math.inf, 1e300), burst=(0.0,))),
    # a policy's bound is checked against the run's workers and steps by train, not alone
    Entry("pslab.SSP", allowed=dict(s=(0, 10**30))),
    Entry("pslab.Backup", allowed=dict(b=(0, 10**30))),
    Entry("pslab.SoftSync", allowed=dict(c=(10**30,))),
    Entry("pslab.nas.search", allowed=dict(seed=(0,), lr=(1e300,), decay=(0.0,))),
    Entry("pslab.nas.random_search", allowed=dict(seed=(0,), lr=(1e300,), decay=(0.0,))),
    Entry("pslab.replay.figure000", allowed=SEED),
    Entry("pslab.replay.figure001", allowed=dict(seed=(0,), sync_time=(0.0,))),
    Entry("pslab.replay.figure002", allowed=SEED), Entry("pslab.replay.figure003", allowed=SEED),
    Entry("pslab.drawing.export.tikz", base=dict(run=RUN), allowed=PLOT),
    Entry("pslab.drawing.plot.compare", base=dict(run_a=RUN, run_b=RUN), count=2,
          allowed=PLOT),
    Entry("pslab.drawing.plot.plot_training", base=dict(runs=RUNS), count=2),
    Entry("pslab.drawing.plot.plot_timeline", base=dict(run=RUN), allowed=PLOT),
    Entry("pslab.drawing.plot.plot_staleness", base=dict(run=RUN)),
    Entry("pslab.drawing.plot.plot_dataflow", base=dict(run=RUN)),
    Entry("pslab.drawing.plot.plot_zero_flow", base=dict(run=Slot("zero_run"))),
    Entry("pslab.notebook.widgets.dashboard", hints=_settings(), allowed=DASH),
    Entry("pslab.notebook.widgets.Dashboard", base=dict(settle_delay=None), hints=_settings(),
          allowed=dict(DASH, settle_delay=(0.0,))),
    Entry("pslab.notebook.widgets.Dashboard.set", hints=_settings(), allowed=DASH,
          label="dash.set"),
    Entry("pslab.notebook.zero_dashboard.ZeroDashboard", base=dict(settle_delay=None),
          hints=_zero_settings(), allowed=dict(ZERO_DASH, settle_delay=(0.0,))),
    Entry("pslab.notebook.zero_dashboard.ZeroDashboard.set", hints=_zero_settings(),
          allowed=ZERO_DASH, label="zero_dash.set"),
    Entry("pslab.notebook.nas_live.Dashboard", base=dict(settle_delay=None), hints=_nas_settings(),
          allowed=dict(seed=(0,), settle_delay=(0.0,))),
    Entry("pslab.notebook.nas_live.Dashboard.set", hints=_nas_settings(), label="nas_dash.set"),
    Entry("pslab.notebook.quiz.question"), Entry("pslab.notebook.quiz.questions"),
    Entry("pslab.notebook.quiz.hide_answers"),
    Entry("pslab.checkpoint.Checkpoint", base=dict(path="run.ckpt"),
          allowed=dict(at=(0.0, 1e300))),
    Entry("pslab.resume", base=dict(path="no-such.ckpt")),
    Entry("pslab.notebook.nas_questions.question"),
    Entry("pslab.classic.bounded_delay",
          allowed=dict(seed=(0,), target=(0.0, 1e300), lr=(1e300,), converge=([],))),
    Entry("pslab.classic.softsync_staleness"), Entry("pslab.classic.staleness_aware_lr",
                                                     allowed=dict(lr=(1e300,))),
    Entry("pslab.classic.async_staleness"), Entry("pslab.classic.backup_workers"),
    Entry("pslab.classic.distbelief_scaling"),
]
CASES = cases(ENTRIES)


@pytest.fixture(scope="module")
def slots():
    """The values a case names but cannot make at collection: runs, built dashboards."""
    from pslab.notebook.nas_live import Dashboard as NasDashboard
    from pslab.notebook.widgets import Dashboard

    from pslab.notebook.zero_dashboard import ZeroDashboard

    run = pslab.train(workers=2, steps=2, numerics=False)
    return {"run": run, "runs": [run, run], "dash.set": Dashboard(settle_delay=None), "nas_dash.set": NasDashboard(
                settle_delay=None, servers=1, controllers=1, children=1, rounds=2),
            "zero_run": pslab.train(mode=pslab.ZeRO(3), workers=2, steps=2, numerics=False),
            "zero_dash.set": ZeroDashboard(settle_delay=None, steps=2)}


def _fill(value, slots):
    if isinstance(value, Slot):
        return slots[value.name]
    if isinstance(value, list):
        return [_fill(v, slots) for v in value]
    return value


def _children() -> set[str]:
    """This process's child processes (Linux: /proc), to see that none was started."""
    out = set()
    for task in Path("/proc/self/task").iterdir():
        out |= set((task / "children").read_text().split())
    return out


def _global_state() -> tuple:
    return (torch.get_num_threads(), torch.get_default_dtype(), torch.random.get_rng_state(),
            np.random.get_state()[1].tobytes(), random.getstate(), os.getcwd())


def _no_work(*args, **kwargs):
    raise AssertionError("work started before the arguments were checked")


def _snapshot(case: Case, slots) -> object:
    dash = slots.get(case.entry.label)
    return repr(dash.settings) if dash is not None else None


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_refused_at_the_entry(case: Case, slots, monkeypatch, tmp_path):
    import pslab.data
    import pslab.processes.launcher
    import pslab.simulate

    monkeypatch.setattr(pslab.data.Digits, "load", _no_work)  # no data loaded ...
    for schedule in pslab.simulate.ACTORS:  # ... no simulation built ...
        monkeypatch.setitem(pslab.simulate.ACTORS, schedule, _no_work)
    monkeypatch.setattr(pslab.processes.launcher, "launch", _no_work)  # ... no process started
    monkeypatch.chdir(tmp_path)
    entry = case.entry
    call = slots[entry.label].set if entry.label in slots else entry.resolve()
    kwargs = {k: _fill(v, slots) for k, v in entry.base.items()}
    kwargs[case.param] = _fill(case.value, slots)
    before, children, dash = _global_state(), _children(), _snapshot(case, slots)

    t0 = time.perf_counter()
    with pytest.raises((ValueError, TypeError)) as err:
        call(**kwargs)
    took = time.perf_counter() - t0

    message = str(err.value)
    frames = list(traceback.walk_tb(err.tb))
    where = frames[-1][0].f_code.co_filename
    # raised by pslab, or by the call itself (an unknown keyword: the interpreter's refusal)
    assert len(frames) == 1 or where.startswith(PSLAB), (
        f"raised in {where}, not by pslab:\n{''.join(traceback.format_tb(err.tb)[-3:])}")
    assert case.param.split("_option")[0] in message, f"no {case.param!r} in: {message}"
    assert any(w in message for w in ALLOWED_WORDS), f"does not say what is allowed: {message}"
    assert took < 5, f"took {took:.1f} s to refuse"  # a hang guard, not a speed test
    assert list(tmp_path.iterdir()) == [], "a file was written"
    assert _children() == children, "a process was left"
    after = _global_state()
    assert all(np.array_equal(a, b) if isinstance(a, torch.Tensor) else a == b
               for a, b in zip(before, after)), "global state changed"
    assert _snapshot(case, slots) == dash, "the dashboard changed"


def test_the_walk_covers_every_entry_and_class():
    walked = {c.entry.name for c in CASES}
    assert walked == {e.name for e in ENTRIES}
    assert {c.cls for c in CASES} == {"type", "non-finite", "size", "length", "unknown"}
    assert len(CASES) > 500


def _cli(*argv: str) -> subprocess.CompletedProcess:
    code = ("import sys, runpy\nsys.argv = ['pslab', *sys.argv[1:]]\ntry:\n"
            "    runpy.run_module('pslab', run_name='__main__')\nfinally:\n"
            "    print('torch' in sys.modules, 'matplotlib' in sys.modules)")
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                          timeout=120)


CLI_CASES = [("bogus",), (), ("demo", "--bogus"), ("figures", "--out"),
             ("figures", "--bogus", "x"), ("figures", "--out", "/etc/hostname"),
             ("figures", "--out", "/proc/no/such"), ("--bogus",)]


@pytest.mark.processes
@pytest.mark.parametrize("argv", CLI_CASES, ids=" ".join)
def test_the_cli_refuses_bad_arguments_in_one_line_without_torch(argv, tmp_path):
    done = _cli(*argv)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    errors = [ln for ln in done.stderr.splitlines() if "error:" in ln]
    assert len(errors) == 1 and done.stderr.splitlines()[-1] == errors[0], done.stderr
    assert done.stdout.split() == ["False", "False"], "torch or matplotlib was imported"


@pytest.mark.processes
def test_import_pslab_loads_no_torch_and_every_public_name_resolves():
    code = ("import sys, pslab\nheavy = [m for m in ('torch', 'numpy', 'matplotlib', "
            "'ipywidgets', 'sklearn') if m in sys.modules]\nprint(heavy)\n"
            "from pslab import *\nfrom pslab import train, Cluster, SSP, Run\n"
            "import pslab.notebook.widgets, pickle\n"
            "r = train(steps=1, numerics=False)\n"
            "print(type(pickle.loads(pickle.dumps(r))).__name__, pslab.result.Run is Run)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.splitlines() == ["[]", "Run True"], done.stderr
    for name in pslab.__all__:
        assert getattr(pslab, name) is not None
    assert pslab.checkpoint.Checkpoint is pslab.Checkpoint  # any module loads on first use
    with pytest.raises(AttributeError):
        pslab.no_such_name
