"""`python -m bench.flakes` counts passes in a row of the `processes` tests on a snapshot of the
last commit, stops at the first failed pass, and leaves no busy loop, pytest or snapshot behind,
also when stopped by SIGTERM; `--processes-check` fails a test that starts a process unmarked."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COUNTS = """
import os, pytest
@pytest.mark.processes
def test_fails_on_its_second_run():
    path = os.environ["FLAKES_COUNTER"]
    n = int(open(path).read()) + 1 if os.path.exists(path) else 1
    open(path, "w").write(str(n))
    assert n != 2, "second run"
def test_not_marked_so_never_run():
    assert False
"""
SLEEPS = """
import os, time, pytest
@pytest.mark.processes
def test_sleeps():
    open(os.environ["FLAKES_PID"], "w").write(str(os.getpid()))
    time.sleep(120)
"""


def repo(folder: Path, test: str) -> Path:
    (folder / "tests").mkdir(parents=True)
    (folder / "tests" / "test_x.py").write_text(test)
    for cmd in (["init", "-q"], ["add", "."], ["-c", "user.name=t", "-c", "user.email=t@t",
                                                "commit", "-q", "-m", "x"]):
        subprocess.run(["git", "-C", str(folder), *cmd], check=True, capture_output=True)
    (folder / "tests" / "test_x.py").write_text("edited after the commit: not in the snapshot")
    return folder


# nbval's plugin takes ~2.5 s of CPU to load (10 s at load 9) and none of these tests needs it
NO_NBVAL = ["-p", "no:nbval"]


def runner(tmp_path: Path, test: str, *args: str, **env: str) -> tuple[list[str], dict]:
    (tmp_path / "tmp").mkdir()
    cmd = [sys.executable, "-m", "bench.flakes", "--repo", str(repo(tmp_path / "repo", test)),
           "--log", str(tmp_path / "log"), *args, "--", *NO_NBVAL]
    return cmd, dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(tmp_path / "tmp"), **env)


def gone(pids: list[int], within: float = 5) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if not any(Path(f"/proc/{pid}").exists() for pid in pids):
            return True
        time.sleep(0.05)
    return False


def busy_pids(log: Path) -> list[int]:
    header = log.read_text().splitlines()[0]
    return [int(p) for p in header.rsplit("pids ", 1)[1].rstrip(")").split()]


@pytest.mark.processes
def test_passes_are_counted_until_the_first_failure_and_nothing_is_left(tmp_path):
    cmd, env = runner(tmp_path, COUNTS, "--passes", "3", "--busy", "1",
                      FLAKES_COUNTER=str(tmp_path / "n"))
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    lines = (tmp_path / "log").read_text().splitlines()
    assert done.stdout.splitlines() == lines
    assert " pass 1: PASS " in lines[1] and "1 passed, 1 deselected" in lines[1]
    assert " pass 2: FAIL(rc=1) " in lines[2] and "busy 1:" in lines[2]
    assert lines[3].startswith("  FAILED tests/test_x.py::test_fails_on_its_second_run")
    assert (tmp_path / "n").read_text() == "2"  # no third pass
    assert lines[-1] == "# 1 passes in a row passed"
    kept = next(tmp_path.glob("flakes-*-pass2.out"))
    assert "second run" in kept.read_text()
    assert gone(busy_pids(tmp_path / "log")) and list((tmp_path / "tmp").iterdir()) == []


@pytest.mark.processes
def test_sigterm_stops_the_pass_and_the_busy_loops(tmp_path):
    pid = tmp_path / "pid"
    cmd, env = runner(tmp_path, SLEEPS, "--busy", "1", FLAKES_PID=str(pid))
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        end = time.monotonic() + 120
        while not (pid.exists() and pid.read_text()) and time.monotonic() < end:
            assert proc.poll() is None, proc.stderr.read()
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert gone([int(pid.read_text()), *busy_pids(tmp_path / "log")])
    assert (tmp_path / "log").read_text().splitlines()[-1] == "# 0 passes in a row passed"
    assert list((tmp_path / "tmp").iterdir()) == []


CHECKED = """
import os, subprocess, sys, multiprocessing, pytest
def test_unmarked_subprocess():
    subprocess.run([sys.executable, "-c", "pass"], check=True)
def test_unmarked_fork():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
def test_unmarked_multiprocessing():
    p = multiprocessing.get_context("forkserver").Process(target=os.getpid)
    p.start()
    p.join()
@pytest.mark.processes
def test_marked():
    subprocess.run([sys.executable, "-c", "pass"], check=True)
@pytest.mark.processes
def test_marked_but_idle():
    pass
def test_plain():
    pass
"""


@pytest.mark.processes
def test_the_check_fails_exactly_the_unmarked_tests_that_start_processes(tmp_path):
    (tmp_path / "test_c.py").write_text(CHECKED)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "processwatch",
           *NO_NBVAL, "-rE", str(tmp_path / "test_c.py")]
    env = dict(os.environ, PYTHONPATH=str(ROOT / "tests"))
    plain = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert plain.returncode == 0 and "6 passed" in plain.stdout, plain.stdout
    checked = subprocess.run(cmd + ["--processes-check"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=120)
    errors = sorted(line.split()[1] for line in checked.stdout.splitlines()
                    if line.startswith("ERROR "))
    assert errors == [f"test_c.py::test_unmarked_{n}"
                      for n in ("fork", "multiprocessing", "subprocess")]
    assert "started 1 process(es) without @pytest.mark.processes:\n  fork\n" in checked.stdout
    assert "forkserver" in checked.stdout  # multiprocessing's own start is named
    idle = "marked, started none this session (1):\n  test_c.py::test_marked_but_idle"
    assert idle in checked.stdout


CTRL_C = """
import signal, pytest
@pytest.mark.processes
def test_ctrl_c_as_a_terminal_has_it():
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
"""


@pytest.mark.processes
def test_the_tests_get_ctrl_c_though_the_loop_was_started_in_the_background(tmp_path):
    """Started as a shell's background job starts it (SIGINT ignored, which exec keeps), the
    loop still hands its pytest Ctrl-C as a terminal has it: the tests that interrupt a run
    would otherwise see their Ctrl-C ignored (the cold-start test's 'FINISHED' in session 39)."""
    cmd, env = runner(tmp_path, CTRL_C, "--passes", "1", "--busy", "0")
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    lines = (tmp_path / "log").read_text().splitlines()
    assert " pass 1: PASS " in lines[1], (done.stdout, done.stderr)
