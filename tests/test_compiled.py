"""pslab.compiled: a compiled twin of a loop runs only while it is built from the loop's file as
it is now, PSLAB_COMPILED=0 keeps to the Python loops, and where CI installs pslab (a C
compiler and Cython at hand) the twins are built and in use. That the twins' runs are the
actors' bit for bit, tests/test_fastloop.py shows: each of its tests runs on both loops."""
import hashlib
import os
import subprocess
import sys
import types

import pytest

from pslab import compiled, fastduplex, fastloop, simulation


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A module `fakepkg.loop` with its source file, and a twin `fakepkg._loop` built from it."""
    source = tmp_path / "loop.py"
    source.write_text("x = 1\n")
    module = types.ModuleType("fakepkg.loop")
    module.__file__ = str(source)
    twin = types.ModuleType("fakepkg._loop")
    twin.SOURCE_SHA256 = hashlib.sha256(source.read_bytes()).hexdigest()
    monkeypatch.setitem(sys.modules, "fakepkg", types.ModuleType("fakepkg"))
    monkeypatch.setitem(sys.modules, "fakepkg._loop", twin)
    monkeypatch.delenv("PSLAB_COMPILED", raising=False)
    return module, twin, source


def test_a_twin_built_from_the_file_as_it_is_runs(fake):
    module, twin, _ = fake
    assert compiled.twin(module) is twin and compiled.in_use(module)


def test_a_twin_built_from_another_version_of_the_file_does_not(fake):
    module, twin, source = fake
    source.write_text("x = 2\n")  # edited after the build: the twin would run the old code
    assert compiled.twin(module) is module and not compiled.in_use(module)
    del twin.SOURCE_SHA256  # a module that says nothing of its source
    source.write_text("x = 1\n")
    assert compiled.twin(module) is module


def test_no_twin_or_pslab_compiled_0_keeps_the_python_loop(fake, monkeypatch):
    module, twin, _ = fake
    monkeypatch.setenv("PSLAB_COMPILED", "0")
    assert compiled.twin(module) is module
    monkeypatch.delenv("PSLAB_COMPILED")
    monkeypatch.delitem(sys.modules, "fakepkg._loop")  # not built: nothing to import
    assert compiled.twin(module) is module


@pytest.mark.skipif(os.environ.get("CI") != "true", reason="CI installs with a C compiler")
def test_ci_runs_the_compiled_twins():
    assert compiled.in_use(fastduplex) and compiled.in_use(fastloop)
    assert simulation.run_duplex is compiled.twin(fastduplex).run_duplex
    assert simulation.run_inline is compiled.twin(fastloop).run_inline


@pytest.mark.processes
def test_pslab_compiled_0_runs_the_python_loops_in_a_fresh_process():
    env = {**os.environ, "PSLAB_COMPILED": "0"}
    out = subprocess.run([sys.executable, "-c", "from pslab import simulation as s; "
                          "print(s.run_duplex.__module__, s.run_inline.__module__)"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.split() == ["pslab.fastduplex", "pslab.fastloop"], out.stderr


CTRL_C = """
import os, signal, sys, threading, time, warnings
signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal
import pslab
from pslab import simulation
pslab.train(mode="async", workers=2, steps=2, numerics=False)  # imported and warm
sent = []
def ctrl_c():
    time.sleep(0.3)
    sent.append(time.perf_counter())
    os.kill(os.getpid(), signal.SIGINT)
def started(loop):  # the Ctrl-C 0.3 s after the loop starts
    def run(*args):
        threading.Thread(target=ctrl_c, daemon=True).start()
        return loop(*args)
    return run
simulation.run_duplex = started(simulation.run_duplex)
simulation.run_inline = started(simulation.run_inline)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    run = pslab.train(mode="async", workers=800, steps=5000, numerics=False, seed=1,
                      cluster=pslab.Cluster(jitter=0.3, links=sys.argv[1]))
print(run.complete, len(run.history), time.perf_counter() - sent[0])
"""


@pytest.mark.processes
@pytest.mark.parametrize("links", ["duplex", "one-at-a-time"])
def test_ctrl_c_stops_a_run_on_the_loop_in_use_at_once(links):
    """The compiled loop runs no bytecode of its own, so a signal's Python handler runs when it
    next calls Python code (Rows.add, every ~1,500 events): Ctrl-C must still stop the run in
    well under a second and hand back what was run (800 x 5000 would take ~20 s)."""
    out = subprocess.run([sys.executable, "-c", CTRL_C, links], capture_output=True,
                         text=True, timeout=300)
    complete, updates, after = out.stdout.split()
    assert complete == "False" and int(updates) > 0, out.stderr
    assert float(after) < 1.0, f"stopped {float(after):.2f} s after the Ctrl-C"
