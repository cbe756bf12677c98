"""The process backend on a shared machine: it listens only where asked; during a run, every listening TCP
socket of pslab's processes is on the asked address, the rendezvous needs no socket at all (a
FileStore in a private folder), and an address that is not this machine's is refused at once."""
import os
import threading
import time

import pytest

import pslab
from proctree import alive, command, descendants, parent

LISTEN = "0A"


def socket_inodes(pid: int) -> set[str]:
    found = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                found.add(target[8:-1])
    except OSError:
        pass
    return found


def listening(inodes: set[str]) -> set[str]:
    """Local addresses of the LISTEN sockets among `inodes` (IPv4 and IPv6 tables)."""
    out = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            next(f)
            for line in f:
                fields = line.split()
                local, state, inode = fields[1], fields[3], fields[9]
                if state == LISTEN and inode in inodes:
                    out.add(_address(local.split(":")[0]))
    return out


def _address(hexed: str) -> str:
    import ipaddress

    raw = bytes.fromhex(hexed)
    if len(raw) == 4:
        return str(ipaddress.IPv4Address(raw[::-1]))
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
    return str(ipaddress.IPv6Address(words))


@pytest.mark.processes
def test_a_process_run_listens_on_loopback_only():
    seen, stop = set(), threading.Event()

    def watch():
        while not stop.is_set():
            pids = {os.getpid(), *descendants(os.getpid())}
            inodes = set().union(*(socket_inodes(p) for p in pids))
            seen.update(listening(inodes))
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        run = pslab.train(workers=3, steps=12, backend="processes", timeout=5, time_scale=0.05)
    finally:
        stop.set()
        watcher.join()
    assert run.complete
    assert seen, "no listening socket seen: the watcher missed the run"
    assert seen == {"127.0.0.1"}, f"pslab listened on {sorted(seen)}"


@pytest.mark.parametrize("address, words", [("0.0.0.0", "every interface"),
                                            ("::", "every interface"),
                                            ("192.0.2.7", "not an address of this machine")])
def test_an_address_that_is_not_one_of_this_machine_is_refused_at_once(address, words):
    # "at once": no process started, no wait; the library's own first import (torch: ~1-4 s
    # cold under load) is not the refusal's time, and run first in a pytest it fell inside it
    import pslab.training  # noqa: F401

    started = time.perf_counter()
    with pytest.raises(ValueError, match=words):
        pslab.train(workers=2, steps=2, backend="processes", address=address)
    assert time.perf_counter() - started < 1.0


NO_GUARD = """
import pslab
run = pslab.train(workers=2, steps=4, backend="processes", timeout=30, start_method="{method}")
print("DONE", run.complete, run.updates)
"""


@pytest.mark.processes
@pytest.mark.parametrize("method", ["forkserver", "spawn"])
def test_a_script_without_the_main_guard_works(tmp_path, method):
    import subprocess
    import sys

    script = tmp_path / "no_guard.py"
    script.write_text(NO_GUARD.format(method=method))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert out.returncode == 0 and "DONE True 4" in out.stdout, out.stderr[-1500:]
    assert "bootstrapping phase" not in out.stderr


COLD_START = """
import pslab, signal, sys
# Ctrl-C as in a terminal: a suite started in the background (`&`, nohup, a CI runner) hands
# SIGINT on ignored (then the run rightly finishes: bench.flakes' loop once, 'FINISHED' 22 s on)
signal.signal(signal.SIGINT, signal.default_int_handler)
try:
    # long enough that a test starved under load still finds it running (the Ctrl-C ends it)
    pslab.train(workers=3, steps=200, backend="processes", timeout=5, time_scale=0.05)
    print("FINISHED")
except KeyboardInterrupt:
    print("INTERRUPTED")
"""


def _when(what: str, ready, timeout: float = 60.0):
    """Polls ready() until it returns something true (that value), at most timeout seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = ready()
        if found:
            return found
        time.sleep(0.01)
    raise AssertionError(f"{what} not seen in {timeout:g} s")


def _forkserver(pid: int) -> int | None:
    """The forkserver among pid's children (multiprocessing.forkserver's main), or None; the
    processes it forks carry its command line too, but are its children, not pid's."""
    return next((kid for kid in descendants(pid) if parent(kid) == pid
                 and "multiprocessing.forkserver" in command(kid)), None)


@pytest.mark.processes
def test_ctrl_c_during_a_cold_start_leaves_no_process_behind(tmp_path):
    """Ctrl-C while the forkserver starts (its pymp-* folder made, the server itself still
    importing torch), and again among the first workers it forks: no process lives on.
    Each moment is waited for (the caller's own temporary folder, its process tree), not
    guessed from a clock: under load the import of pslab alone takes seconds."""
    import signal
    import subprocess
    import sys

    script = tmp_path / "cold.py"
    script.write_text(COLD_START)
    for moment in ("the forkserver's start", "the first processes"):
        folder = tmp_path / moment.split()[-1]  # the caller's temporary folder, no one else's
        folder.mkdir()
        launcher = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True,
                                    start_new_session=True, env=dict(os.environ,
                                                                     TMPDIR=str(folder)))
        try:
            server = _when("the forkserver's pymp-* folder and process",
                           lambda: list(folder.glob("pymp-*")) and _forkserver(launcher.pid))
            if moment == "the first processes":  # a worker or shard forked by the server
                _when("a process forked by the forkserver",
                      lambda: descendants(server) and launcher.poll() is None)
            kids = descendants(launcher.pid)  # those seen before the interrupt
            run = descendants(server)  # the run's processes, forked by the server
            seen = [(p, command(p)[:60]) for p in kids]  # for a failure's message
            sent = time.monotonic()
            launcher.send_signal(signal.SIGINT)
            out, err = launcher.communicate(timeout=60)
            took = time.monotonic() - sent
        finally:
            if launcher.poll() is None:
                os.killpg(launcher.pid, signal.SIGKILL)
                launcher.wait()
        # the interrupt reached the run (it returns the partial run, or raises), not its end
        assert "run interrupted" in err or "INTERRUPTED" in out, (
            moment, out, err[-1500:], f"ended {took:.1f} s after the Ctrl-C, exit status "
            f"{launcher.returncode} (-2: killed by the SIGINT itself)", seen)
        # the run's processes are killed by the launcher before it returns: gone within 3 s;
        # the forkserver and multiprocessing's resource tracker end once they see their caller
        # gone, a forkserver still starting only after its `import torch` (seconds of CPU,
        # longer under load: 60 s, as test_starter bounds it)
        for which, bound in ((run, 3.0), (kids, 60.0)):
            deadline = time.monotonic() + bound
            while time.monotonic() < deadline and any(alive(p) for p in which):
                time.sleep(0.1)
            left = {p: command(p) for p in which if alive(p)}
            assert not left, f"after Ctrl-C at {moment}, processes {left} live on {bound:g} s"


@pytest.mark.processes
def test_a_ctrl_c_at_any_moment_of_a_start_stops_the_run(tmp_path):
    """A Ctrl-C sent at exact points of a cold start (tests/ctrl_c_moments.py: hooks, not
    timing): while the run is planned (make_job's simulation, whose clock has a Ctrl-C handler
    of its own: the Ctrl-C was lost there, the run started on an empty plan), inside
    multiprocessing's start of its resource tracker (SIGINT blocked: the signal waits),
    right after the forkserver is spawned, as the first process is asked of the still-cold
    forkserver, and a second one while the launcher stops the processes after a first (it cut
    the stop short: a process and the run's folder were left). Each time the run stops (a
    partial run with its warning, or KeyboardInterrupt), with no process and no folder left."""
    import json
    import signal
    import subprocess
    import sys
    from pathlib import Path

    folder = tmp_path / "tmp"  # the script's temporary folder: nobody else's
    folder.mkdir()
    script = Path(__file__).with_name("ctrl_c_moments.py")
    launcher = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True,
                                env=dict(os.environ, TMPDIR=str(folder)))
    try:
        out, err = launcher.communicate(timeout=240)
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
            launcher.wait()
    assert launcher.returncode == 0, err[-2000:]
    found = json.loads(out.strip().splitlines()[-1])
    helpers = found.pop("descendants")
    # moment: [what train did, where the Ctrl-Cs were sent, processes left, folders left]
    assert found == {"planning": ["KeyboardInterrupt", ["planning"], [], []],
                     "tracker": ["partial run", ["tracker"], [], []],
                     "server": ["partial run", ["server"], [], []],
                     "fork": ["partial run", ["fork"], [], []],
                     "fork, then stopping": ["KeyboardInterrupt", ["fork", "stopping"], [], []]
                     }, err[-2000:]
    # its forkservers and resource tracker end once they see it gone (a forkserver it left
    # still importing torch, after that import: 60 s, as test_starter bounds it); then nothing
    # is left in its temporary folder
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(alive(p) for p in helpers):
        time.sleep(0.1)
    assert [command(p)[:120] for p in helpers if alive(p)] == []
    assert list(folder.iterdir()) == []


@pytest.mark.processes
def test_async_finishes_without_a_sigstopped_worker_every_time(monkeypatch):
    """docs/processes.md: a worker that stops answering (here SIGSTOP, as a hung machine)
    does not stop async: the others finish, the launcher ends the silent one and says so.
    Each trial waits out the silence that defines "stopped answering" (timeout=2 s): measured
    at load 7, such a run takes 5.3 s where the same run without a silent worker takes 1.3 s.
    So the test is one trial a run, and its "every time" is the runs in a row every process
    test must pass (50 at load 4: 50 trials).
    Worker 2 is found by its rank in the launcher's list, not as the newest pid: pids wrap
    (pid_max 32768 here), and a shard stopped instead stops async too, rightly."""
    import signal

    from pslab.processes.launcher import Launch

    begin, last = Launch.start, []

    def start(self, meeting):
        begin(self, meeting)
        last.append(self)  # its last rank: worker 2 (2 shards, then 3 workers)

    monkeypatch.setattr(Launch, "start", start)
    outcomes = []
    for trial in range(1):  # x the runs in a row a process test must pass (50): 50 trials
        stopped = []
        last.clear()

        def stop_worker_2():
            # mid-run: once worker 2 has joined (its "ready"); stopped before it joined, it
            # stops the run (no process can start without all the others: test_processes)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not (last and 4 in last[0].ready):
                time.sleep(0.02)
            if last and 4 in last[0].ready:
                time.sleep(0.3)
                pid = last[0].procs[4].pid
                os.kill(pid, signal.SIGSTOP)
                stopped.append(pid)

        stopper = threading.Thread(target=stop_worker_2, daemon=True)
        stopper.start()
        run = pslab.train(mode="async", workers=3, steps=30, backend="processes", timeout=2,
                          time_scale=0.02)
        stopper.join()
        failures = run.failures
        outcomes.append((bool(stopped), run.complete, len(failures),
                         "worker 2" in " ".join(failures) and "stopped answering" in
                         " ".join(failures), alive(stopped[0]) if stopped else None))
    assert outcomes == [(True, False, 1, True, False)] * len(outcomes), outcomes


@pytest.mark.parametrize("env, args, words", [
    ({}, ["--out", "x"], "RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT not set"),
    ({"RANK": "0", "WORLD_SIZE": "5"}, ["--out", "x"], "MASTER_ADDR, MASTER_PORT not set"),
    ({"RANK": "0"}, ["--mode", "bogus", "--out", "x"], "mode must be"),
    ({}, ["--steps"], "argument --steps: expected one argument"),
    ({"RANK": "7", "WORLD_SIZE": "5", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"},
     ["--out", "x"], "RANK must be from 0 to WORLD_SIZE - 1"),
])
def test_torchrun_entry_usage_errors_are_one_line_and_exit_2(tmp_path, env, args, words,
                                                            monkeypatch, capsys):
    """What `python -m pslab.processes` runs (run_rank), called here: a fresh Python per case
    would import torch five times; the command itself is run once, below."""
    from pslab.processes.torchrun import run_rank

    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        run_rank(args)
    out, err = capsys.readouterr()
    assert exited.value.code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and "Traceback" not in err, err
    assert list(tmp_path.iterdir()) == []  # nothing written before the mistake was seen


@pytest.mark.processes
def test_the_torchrun_entry_command_says_a_usage_error_in_one_line_and_exits_2(tmp_path):
    import subprocess
    import sys

    clean = {k: v for k, v in os.environ.items()
             if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    out = subprocess.run([sys.executable, "-m", "pslab.processes", "--out", "x"], cwd=tmp_path,
                         env=clean, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT not set" in lines[0]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.processes
def test_notebook_06_run_twice_at_once_never_collides(tmp_path):
    """Two students (or one twice) running notebook 06 at the same time: each writes its
    checkpoint and trace into a folder of its own, so both resume their own run; and each
    removes its folder (none is left in the temporary folder the kernels were given)."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    notebook = Path(__file__).parents[1] / "notebooks" / "06_real_processes.ipynb"
    source = "".join(json.loads(notebook.read_text())["cells"][1]["source"])
    assert "TemporaryDirectory" in source and "gettempdir" not in notebook.read_text()
    scratch = tmp_path / "tmp"  # the kernels' temporary folder: nobody else writes there
    scratch.mkdir()
    runs = [subprocess.Popen([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook",
                              "--execute", "--output-dir", str(tmp_path / f"r{i}"),
                              str(notebook)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=dict(os.environ, TMPDIR=str(scratch)))
            for i in range(2)]
    for i, p in enumerate(runs):
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-2000:]
        done = json.loads((tmp_path / f"r{i}" / notebook.name).read_text())
        text = "".join("".join(o.get("text", "")) for c in done["cells"]
                       for o in c.get("outputs", []))
        assert "resumed from update 5 to 10" in text
        assert "same weights as the uninterrupted simulation: True" in text
    assert list(scratch.glob("pslab-06-*")) == []
