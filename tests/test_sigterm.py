"""SIGTERM inside a block that cleans up (pslab/processes/sigterm.py), the one mechanism of the
launcher, the collective group and Hosts: raised as Terminated where the program is, the
cleanup runs whole, and the process ends by the signal. Each case is a fresh Python (a SIGTERM
of default action ends it), the signal sent by the script itself at a known point."""
import signal
import subprocess
import sys
import textwrap

import pytest

from pslab.processes.sigterm import Sigterm, Terminated

HEAD = """
import os, signal, sys
from pslab.processes.sigterm import Sigterm, Terminated
def term():
    os.kill(os.getpid(), signal.SIGTERM)
def say(*words):
    print(*words, flush=True)
"""

CASES = {
    # raised inside the block, where the program is; the cleanup runs; the end is the signal's
    "default": ("""
with Sigterm():
    try:
        term()
        say("not reached")
    except Terminated as e:
        say("raised", e.signum, e.code)
        raise
    finally:
        say("cleaned")
say("not reached either")
""", ["raised 15 143", "cleaned"], -signal.SIGTERM),
    # inside held(): acted on at the end of the section, not before
    "held": ("""
with Sigterm() as t:
    try:
        with t.held():
            term()
            say("section ends")
        say("not reached")
    finally:
        say("cleaned")
""", ["section ends", "cleaned"], -signal.SIGTERM),
    # a second SIGTERM while cleaning up: the cleanup goes on to its end
    "twice": ("""
with Sigterm():
    try:
        term()
    finally:
        term()
        say("cleaned whole")
""", ["cleaned whole"], -signal.SIGTERM),
    # the first SIGTERM during a held cleanup on the normal way out still ends the process
    "while-closing": ("""
with Sigterm() as t:
    try:
        say("work done")
    finally:
        with t.held():
            term()
            say("cleaned whole")
    say("not reached")
""", ["work done", "cleaned whole"], -signal.SIGTERM),
    # nested blocks: the inner passes it on; the process ends when the outer one is left
    "nested": ("""
with Sigterm():
    try:
        with Sigterm():
            try:
                term()
            finally:
                say("inner cleaned")
    finally:
        say("outer cleaned")
""", ["inner cleaned", "outer cleaned"], -signal.SIGTERM),
    # the program's own handler decides; one that returns lets the block go on, and is back
    "own-returns": ("""
seen = []
mine = lambda signum, frame: seen.append(signum)
signal.signal(signal.SIGTERM, mine)
with Sigterm() as t:
    with t.held():
        term()
        say("held", seen)
    term()
    say("inside", seen)
say("after", seen, signal.getsignal(signal.SIGTERM) is mine)
""", ["held []", "inside [15, 15]", "after [15, 15] True"], 0),
    # the program's own handler that raises: its exit, the cleanup done first
    "own-raises": ("""
def mine(signum, frame):
    raise SystemExit(7)
signal.signal(signal.SIGTERM, mine)
with Sigterm():
    try:
        term()
    finally:
        say("cleaned")
""", ["cleaned"], 7),
    # SIGTERM ignored: left ignored
    "ignored": ("""
signal.signal(signal.SIGTERM, signal.SIG_IGN)
with Sigterm():
    term()
    say("went on")
say("after", signal.getsignal(signal.SIGTERM) is signal.SIG_IGN)
""", ["went on", "after True"], 0),
    # a block left without a SIGTERM puts the default action back
    "quiet": ("""
with Sigterm():
    say("inside", signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)
say("after", signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)
""", ["inside False", "after True"], 0),
}


@pytest.mark.processes
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_sigterm_inside_the_block(case):
    code, said, status = CASES[case]
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(HEAD) + code],
                         capture_output=True, text=True, timeout=60)
    assert (out.stdout.splitlines(), out.returncode) == (said, status), out.stderr[-2000:]


def test_outside_the_main_thread_nothing_is_installed():
    import threading

    seen = []

    def enter() -> None:
        with Sigterm():
            seen.append(signal.getsignal(signal.SIGTERM))

    before = signal.getsignal(signal.SIGTERM)
    thread = threading.Thread(target=enter)
    thread.start()
    thread.join()
    assert seen == [before] and signal.getsignal(signal.SIGTERM) is before


def test_terminated_is_a_system_exit_with_the_shells_status():
    ended = Terminated(signal.SIGTERM)
    assert isinstance(ended, SystemExit) and ended.code == 128 + 15 and ended.signum == 15
