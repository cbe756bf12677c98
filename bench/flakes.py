"""`python -m bench.flakes [--passes 50] [--busy 2] [--log FILE] [-- PYTEST ARGS]`: the tests that
start processes (`@pytest.mark.processes`, tests/processwatch.py), pass after pass, beside busy
loops, until one pass fails.

The tests run from a snapshot of the repository's last commit (`git archive HEAD` into a
temporary folder: edits made meanwhile do not change what is counted), one pytest a pass, with
PYTHONPATH set to the snapshot. `--busy N` Python busy loops run beside every pass (2 on a
2-core machine: load about 4 with the pass itself). Each pass prints one line, also appended to
--log: the time it began, the commit, the pass, its seconds, the 1-minute load average before,
during (min-max of samples every 5 s) and after, the busy loops, and pytest's last line; a failed
pass adds its FAILED/ERROR lines, keeps its whole output beside the log, and ends the loop. The
last line says how many passes in a row passed. The busy loops and the pytest are stopped on
every way out (end, failure, Ctrl-C, SIGTERM, SIGHUP); a busy loop also ends by itself within
about a second of this process dying by SIGKILL.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARK = "processes"
# A busy loop that ends once its parent is gone (checked every ~10^6 iterations).
BUSY = ("import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n"
        "    for _ in range(1_000_000):\n        pass\n")
GRACE = 30  # s between Ctrl-C to the pytest (its fixtures clean up) and SIGKILL to its group


def loadavg() -> float:
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def snapshot(repo: Path, into: Path) -> str:
    """Extracts `git archive HEAD` of repo into `into`; returns the commit's short hash."""
    commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short=12", "HEAD"],
                            capture_output=True, text=True, check=True).stdout.strip()
    archive = into / "snapshot.tar"
    with open(archive, "wb") as out:
        subprocess.run(["git", "-C", str(repo), "archive", "HEAD"], stdout=out, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into / "tree", filter="data")
    archive.unlink()
    return commit


def stop(proc: subprocess.Popen, group: bool) -> None:
    """Ends proc (and its process group if group): Ctrl-C first for a pytest, then SIGKILL."""
    if proc.poll() is None and group:
        try:
            os.killpg(proc.pid, signal.SIGINT)
            proc.wait(GRACE)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
    if group:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # what the tests left in the group, too
        except ProcessLookupError:
            pass
    elif proc.poll() is None:
        proc.kill()
    proc.wait()


def one_pass(cmd: list[str], tree: Path, out: Path) -> tuple[int, float, float, float]:
    """Runs cmd in tree, output to out; returns (exit code, seconds, min load, max load)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(tree)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    started = time.monotonic()
    seen = [loadavg()]
    with open(out, "wb") as log:
        proc = subprocess.Popen(cmd, cwd=tree, env=env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            while True:
                try:
                    rc = proc.wait(5)
                    break
                except subprocess.TimeoutExpired:
                    seen.append(loadavg())
        finally:
            stop(proc, group=True)
    return rc, time.monotonic() - started, min(seen), max(seen)


def last_line(text: str) -> str:
    lines = [line.strip("= ") for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


def ended(signum, frame):
    raise SystemExit(128 + signum)  # unwinds through the finally blocks that stop everything


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.flakes",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--passes", type=int, default=50, help="passes to run at most (default 50)")
    parser.add_argument("--busy", type=int, default=2,
                        help="busy loops beside each pass (default 2)")
    parser.add_argument("--log", type=Path, help="append each pass's line to this file")
    parser.add_argument("--until", help="HH:MM UTC: start no pass that the last one's time would "
                                        "take past it")
    parser.add_argument("--keep", type=Path, help="keep every pass's whole output in this folder "
                                                  "(a failed pass's is kept beside the log anyway)")
    parser.add_argument("--repo", type=Path, default=ROOT,
                        help="the git repository (default: this one)")
    parser.add_argument("pytest_args", nargs="*", help="after --: more pytest arguments "
                                                       "(e.g. --deselect ID, --ignore FILE)")
    args = parser.parse_args(argv)
    if args.passes < 1:
        parser.error(f"--passes must be at least 1, got {args.passes}")
    if not 0 <= args.busy <= 64:
        parser.error(f"--busy must be 0-64, got {args.busy}")
    until = None
    if args.until:
        try:
            hm = dt.datetime.strptime(args.until, "%H:%M").time()
        except ValueError:
            parser.error(f"--until must be HH:MM (UTC), got {args.until!r}")
        until = dt.datetime.combine(dt.datetime.now(dt.timezone.utc).date(), hm, dt.timezone.utc)

    def say(line: str) -> None:
        print(line, flush=True)
        if args.log:
            with open(args.log, "a") as f:
                f.write(line + "\n")

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, ended)
    # Ctrl-C as a terminal has it, whoever started the loop: a shell's background job (`cmd &`,
    # nohup) ignores SIGINT, an ignored signal stays ignored across exec, and the tests that
    # press Ctrl-C on a run would then see it ignored (a handled one is reset to the default)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    busy: list[subprocess.Popen] = []
    in_row, last, failed = 0, None, False
    with tempfile.TemporaryDirectory(prefix="pslab-flakes-") as tmp:
        try:
            commit = snapshot(args.repo, Path(tmp))
            tree = Path(tmp) / "tree"
            # the whole of tests/ is collected: a test may be marked by its fixtures
            cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", MARK,
                   "tests", *args.pytest_args]
            # each busy loop in its own session, as a co-user's program is: where the kernel
            # groups CPU time by session (autogroup), loops sharing one session would weigh as
            # one co-user, and the pass would see load ~2 however many loops run
            busy = [subprocess.Popen([sys.executable, "-c", BUSY], stdin=subprocess.DEVNULL,
                                     start_new_session=True) for _ in range(args.busy)]
            say(f"# {commit}: {' '.join(cmd[1:])} (busy loops: {args.busy}, pids "
                f"{' '.join(str(p.pid) for p in busy) or '-'})")
            for n in range(1, args.passes + 1):
                now = dt.datetime.now(dt.timezone.utc)
                if until and last and now + dt.timedelta(seconds=last) > until:
                    say(f"# stopped before pass {n}: the last pass's {last:.0f} s would end "
                        f"after {args.until}")
                    break
                before = loadavg()
                out = Path(tmp) / f"pass{n}.out"
                rc, last, low, high = one_pass(cmd, tree, out)
                text = out.read_text(errors="replace")
                if args.keep:
                    args.keep.mkdir(parents=True, exist_ok=True)
                    (args.keep / f"flakes-{commit}-pass{n}.out").write_text(text)
                result = "PASS" if rc == 0 else f"FAIL(rc={rc})"
                say(f"{now:%Y-%m-%dT%H:%M:%SZ} {commit} pass {n}: {result} {last:.0f} s, load "
                    f"before {before:.1f} during {low:.1f}-{high:.1f} after {loadavg():.1f}, "
                    f"busy {args.busy}: {last_line(text)}")
                if rc != 0:
                    for line in text.splitlines():
                        if line.startswith(("FAILED ", "ERROR ")):
                            say(f"  {line[:300]}")
                    folder = args.log.parent if args.log else Path.cwd()
                    kept = folder / f"flakes-{commit}-pass{n}.out"
                    kept.write_text(text)
                    say(f"  whole output: {kept}")
                    failed = True
                    break
                in_row += 1
        finally:
            for proc in busy:
                stop(proc, group=False)
            say(f"# {in_row} passes in a row passed")
    return 1 if failed or in_row == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
