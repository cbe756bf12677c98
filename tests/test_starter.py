"""The forkserver every real process starts from (pslab/processes/starter.py): `warm()` starts it
before any run, without importing torch in the caller, and it holds what it was asked to
preload (FSDP2's modules only with fsdp=True); the runs then start from it. Each case runs in a
fresh Python: a session has one forkserver, and the first start decides what it holds."""
import subprocess
import sys
import textwrap

import pytest

import pslab

PROBE = """
import sys


def probe(conn):
    conn.send(sorted(m for m in ("torch", "torch.distributed", "pslab.processes.shard",
                                 "torch.distributed.fsdp") if m in sys.modules))
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


@pytest.mark.parametrize("args, held", [
    ("fsdp=False", "['pslab.processes.shard', 'torch', 'torch.distributed']"),
    ("", "['pslab.processes.shard', 'torch', 'torch.distributed', 'torch.distributed.fsdp']"),
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
