"""The forkserver every real process starts from (pslab/processes/starter.py): `warm()` starts it
before any run, without importing torch in the caller, and it holds what it was asked to
preload (FSDP2's modules only with fsdp=True); the runs then start from it. Each case runs in a
fresh Python: a session has one forkserver, and the first start decides what it holds."""
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
import uuid

import pytest

import pslab
from marked import marked

PROBE = """
import sys


def probe(conn):
    conn.send(sorted(m for m in ("torch", "torch.distributed", "pslab.processes.shard",
                                 "torch.distributed.fsdp", "torch._dynamo") if m in sys.modules))
"""

SESSION = """
import sys, time
sys.path.insert(0, {folder!r})
import pslab
from pslab import processes
from pslab.processes import starter
started = time.perf_counter()
thread = processes.warm({args})
print("torch in the caller after warm:", "torch" in sys.modules)
print("warm returned in under 1 s:", time.perf_counter() - started < 1.0)
thread.join(60)
import probe
reader, writer = starter.context().Pipe(duplex=False)
p = starter.context().Process(target=probe.probe, args=(writer,))
p.start()
print("the server holds:", reader.recv())
p.join(60)
run = pslab.train("sync", workers=2, steps=2, backend="processes")
print("a run started from it:", run.complete and run.updates == 2)
"""


@pytest.mark.processes
@pytest.mark.parametrize("args, held", [
    ("fsdp=False", "['pslab.processes.shard', 'torch', 'torch.distributed']"),
    ("", "['pslab.processes.shard', 'torch', 'torch._dynamo', 'torch.distributed', "
         "'torch.distributed.fsdp']"),
])
def test_warm_starts_the_server_with_what_it_was_asked_to_hold(tmp_path, args, held):
    (tmp_path / "probe.py").write_text(PROBE)
    code = textwrap.dedent(SESSION).format(folder=str(tmp_path), args=args)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.stdout.splitlines() == [
        "torch in the caller after warm: False", "warm returned in under 1 s: True",
        f"the server holds: {held}", "a run started from it: True"], out.stderr[-2000:]


def test_warm_refuses_a_fsdp_that_is_not_true_or_false():
    with pytest.raises(TypeError, match="fsdp must be True or False"):
        pslab.processes.warm(fsdp="no")


KERNEL_CELL = """
import atexit, os
import psutil
import pslab
run = pslab.train("sync", workers=2, steps=2, backend="processes", start_method={method!r})
helpers = [p.pid for p in psutil.Process().children(recursive=True)]
atexit.register(lambda: open({flag!r}, "w").write("ran"))
print(run.complete, os.getpgrp(), *helpers)
"""


@pytest.mark.processes
@pytest.mark.parametrize("method, helpers", [("forkserver", 2), ("spawn", 1)])
def test_a_kernel_that_ran_processes_shuts_down_cleanly_and_leaves_nothing(tmp_path, method,
                                                                           helpers):
    """A notebook kernel asked to shut down signals its own process group and waits until no
    child of it is left: the forkserver and the resource tracker (spawn: the tracker alone) run
    in groups of their own, so the kernel exits by itself (its atexit hooks run: a
    TemporaryDirectory is removed), and they end with it."""
    expected = helpers
    psutil = pytest.importorskip("psutil")
    from jupyter_client import KernelManager

    flag, said = tmp_path / "atexit-ran", []
    km = KernelManager(kernel_name="python3")
    km.start_kernel(env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    kc = km.client()
    try:
        kc.start_channels()
        kc.wait_for_ready(timeout=120)
        reply = kc.execute_interactive(KERNEL_CELL.format(flag=str(flag), method=method),
                                       timeout=240,
                                       output_hook=lambda m: said.append(m))
        assert reply["content"]["status"] == "ok", reply["content"]
        out = "".join(m["content"].get("text", "") for m in said if m["msg_type"] == "stream")
        complete, group, *helpers = out.split()
        helpers = [int(pid) for pid in helpers]
        assert complete == "True" and len(helpers) == expected, out  # server and/or tracker
        assert all(os.getpgid(pid) != int(group) for pid in helpers)
        km.shutdown_kernel(now=False)  # what JupyterLab and nbconvert do: ask, then kill
    finally:
        kc.stop_channels()
        if km.is_alive():
            km.shutdown_kernel(now=True)
    assert flag.read_text() == "ran"  # the kernel ended by itself, not killed
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(psutil.pid_exists(p) for p in helpers):
        time.sleep(0.1)
    assert not any(psutil.pid_exists(p) for p in helpers)


KILLED = """
import os, signal, psutil, pslab
run = pslab.train("sync", workers=2, steps=2, backend="processes", start_method={method!r})
print(*[p.pid for p in psutil.Process().children()], flush=True)
os.kill(os.getpid(), signal.SIGKILL)  # as nbval or a kernel restart ends a kernel: no atexit
"""


@pytest.mark.processes
@pytest.mark.parametrize("method", ["forkserver", "spawn"])
def test_a_caller_killed_without_its_atexit_hooks_leaves_no_temporary_folder(method, tmp_path):
    """multiprocessing's pymp-* folder (the forkserver's socket) is removed by the forkserver
    when its caller has ended, however: a killed notebook kernel leaves nothing in /tmp."""
    psutil = pytest.importorskip("psutil")
    out = subprocess.run([sys.executable, "-c", KILLED.format(method=method)],
                         capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, TMPDIR=str(tmp_path)))
    assert out.returncode == -9, out.stderr[-2000:]
    helpers = [int(p) for p in out.stdout.split()]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (list(tmp_path.iterdir()) or
                                           any(psutil.pid_exists(p) for p in helpers)):
        time.sleep(0.1)
    assert list(tmp_path.iterdir()) == [] and len(helpers) == (2 if method == "forkserver" else 1)
    assert not any(psutil.pid_exists(p) for p in helpers)



COLD = {
    "train": """
import pslab
print("imported", flush=True)
# 1000 steps outlast the SIGTERM (the run waits for its server); 100000 were worked out (the
# run's timing) for 12 s at load 7 before the server even started
pslab.train("sync", workers=2, steps=1000, backend="processes", timeout=30)
""",
    "warm": """
import time
from pslab import processes
print("imported", flush=True)
processes.warm()  # a notebook's first cell; the kernel is then shut down (SIGTERM)
time.sleep(120)
"""}


@pytest.mark.processes
@pytest.mark.parametrize("caller", ["train", "warm"])
def test_a_caller_stopped_by_sigterm_while_its_forkserver_starts_leaves_nothing(tmp_path,
                                                                                 caller):
    """SIGTERM reaches the caller at a seeded moment after its forkserver was spawned and while
    that server still imports torch (well over a second): in a run, or after `warm()` with
    nothing running. The caller ends by the signal and, once the server has ended too, its
    temporary folder holds nothing (no pymp-* folder, no run folder)."""
    delay = random.Random(f"37-{caller}").uniform(0.0, 0.5)
    folder = tmp_path / "tmp"  # the caller's temporary folder: nobody else writes there
    folder.mkdir()
    mark = uuid.uuid4().hex  # in the environment of the caller and of every helper it starts
    script = subprocess.Popen([sys.executable, "-c", COLD[caller]], stdout=subprocess.PIPE,
                              text=True, env=dict(os.environ, TMPDIR=str(folder),
                                                  PSLAB_TEST_MARK=mark))
    assert script.stdout.readline() == "imported\n"
    deadline = time.monotonic() + 60
    while not list(folder.glob("pymp-*")) and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(delay)
    script.send_signal(signal.SIGTERM)
    assert script.wait(60) == -signal.SIGTERM, delay
    deadline = time.monotonic() + 60  # the server ends once it has imported torch; the tracker after
    while time.monotonic() < deadline and (list(folder.iterdir()) or marked(mark)):
        time.sleep(0.1)
    assert list(folder.iterdir()) == [] and marked(mark) == [], delay

