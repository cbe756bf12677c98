"""`python -m pslab`: its help names every subcommand, and the demo's words agree with its
own numbers."""
import pytest
import subprocess
import sys

from pslab.cli import demo, time_to, verdict


@pytest.mark.processes
def test_help_describes_every_subcommand():
    out = subprocess.run([sys.executable, "-m", "pslab", "--help"], capture_output=True,
                         text=True, check=True).stdout
    usage = subprocess.run([sys.executable, "-m", "pslab", "nonsense"], capture_output=True,
                           text=True).stderr  # argparse lists the valid choices here
    choices = usage.split("choose from ")[1].replace("'", "").rstrip(")\n").split(", ")
    assert {"figures", "demo"} <= set(choices)
    for name in choices:
        line = next((ln for ln in out.splitlines() if ln.strip().startswith(name + " ")), "")
        assert len(line.split()) > 4, f"no description of {name!r} in --help:\n{out}"


def test_demo_summary_is_true_of_its_runs(capsys):
    sync, asyn = demo()
    printed = capsys.readouterr().out
    words = verdict(sync, asyn, 0.8)
    assert words in printed
    rate = (asyn.updates / asyn.makespan) / (sync.updates / sync.makespan)
    assert f"{rate:.1f}x the updates per second" in words
    faster = "async" if time_to(asyn, 0.8) < time_to(sync, 0.8) else "sync"
    assert f"{faster} reaches 80% first" in words
    assert ("async still finishes later" in words) == (asyn.makespan > sync.makespan)
    assert "more updates per second" not in printed or rate > 1


@pytest.mark.processes
@pytest.mark.parametrize("out, words", [("/etc/hostname", "a file is there, not a folder"),
                                        ("/proc/no/such", "cannot make the folder")])
def test_figures_out_that_cannot_be_written_is_a_usage_error(out, words):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "pslab", "figures", "--out", out],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert f"error: --out {out}: {words}" in done.stderr.strip().splitlines()[-1]
    assert "Traceback" not in done.stderr
