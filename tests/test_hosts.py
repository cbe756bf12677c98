"""Across machines for real: hosts with their own addresses and shaped links (network
namespaces, veth, a bridge, tc tbf), a pslab run under torchrun across them with the simulated
weights, and nothing left behind — also when a host's worker is killed mid-run, when two sets of
hosts are up at once, and when SIGTERM stops the script inside `with Hosts(...)`. Root only: the
tests skip with the reason elsewhere. Each test looks for what its own process made (other
processes on the machine may be making hosts of their own meanwhile)."""
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import torch

import pslab
from pslab.processes.hosts import (Hosts, leftovers, own_prefix, torchrun_across, unavailable,
                                   wait_all)

pytestmark = pytest.mark.skipif(unavailable() is not None, reason=str(unavailable()))


def alive(procs) -> list[int]:
    return [p.pid for p in procs if p.poll() is None]


def private_temp(folder: Path, monkeypatch) -> Path:
    """The temporary folder of this process and of what it starts, for this test alone: other
    processes on the machine make pslab-hosts-* and torchelastic_* folders in /tmp meanwhile.
    (A forkserver started meanwhile keeps its pymp-* folder there until the session ends.)"""
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.mark.processes
@pytest.mark.parametrize("launcher", ["torchrun", "fork"])
def test_sync_across_three_hosts_gives_the_simulated_weights(tmp_path, launcher, monkeypatch):
    shared = private_temp(tmp_path / "tmp", monkeypatch)
    with Hosts(3, bandwidth=50e6) as hosts:
        assert len(set(hosts.addresses)) == 3 and all(a.startswith("10.77.")
                                                        for a in hosts.addresses)
        procs = torchrun_across(hosts, tmp_path, shards=1, steps=6, launcher=launcher)
        codes = wait_all(procs, 180)
        logs = [p.stdout.read()[-1500:] for p in procs]
        assert codes == [0, 0, 0], logs
        namespaces = [hosts.namespace(i) for i in range(3)]
    assert leftovers(own_prefix()) == [] and not alive(procs)
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not any(ns in listed for ns in namespaces)
    # torchrun's agent logs go to the hosts' own folder, removed with them, not the shared /tmp
    assert [*shared.glob("torchelastic_*"), *shared.glob("pslab-hosts-*")] == []
    run = pslab.processes.load_run(tmp_path)
    sim = pslab.train(mode="sync", workers=2, shards=1, steps=6)
    assert run.complete and run.updates == 6
    assert all(torch.equal(run.weights[n], sim.weights[n]) for n in sim.weights)


@pytest.mark.processes
@pytest.mark.parametrize("launcher", ["torchrun", "fork"])
def test_a_killed_worker_host_leaves_nothing_behind(tmp_path, launcher):
    with Hosts(3, bandwidth=50e6) as hosts:
        procs = torchrun_across(hosts, tmp_path, shards=1, steps=400, time_scale=0.05,
                                timeout=3, launcher=launcher)
        report = tmp_path / "rank2.jsonl"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (report.exists() and report.stat().st_size):
            time.sleep(0.2)
        assert report.exists(), [p.stdout.read()[-800:] for p in procs if p.poll() is not None]
        time.sleep(1.0)
        for pid in hosts.pids(2):  # worker 1's host goes down mid-run
            os.kill(pid, signal.SIGKILL)
        codes = wait_all(procs, 60)
        assert codes[2] is not None and any(c not in (0, None) for c in codes[:2]), codes
    assert leftovers(own_prefix()) == [] and not alive(procs)


@pytest.mark.processes
def test_forked_ranks_write_a_relative_run_folder_where_the_caller_is(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the forkserver's working folder is where it was started
    with Hosts(3, bandwidth=50e6) as hosts:
        procs = torchrun_across(hosts, "runs/a", shards=1, steps=2, launcher="fork")
        assert wait_all(procs, 120) == [0, 0, 0], [p.stdout.read()[-800:] for p in procs]
    assert pslab.processes.load_run(tmp_path / "runs/a").updates == 2
    assert leftovers(own_prefix()) == []


@pytest.mark.processes
def test_a_forked_ranks_log_is_never_written_through_a_planted_link(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("untouched\n")
    out = tmp_path / "run"
    out.mkdir()
    (out / "rank1.out").symlink_to(victim)  # planted in a shared --out before the run
    with Hosts(2, bandwidth=50e6) as hosts:  # rank 0, forked, waits for rank 1: stopped here
        with pytest.raises(OSError, match="rank1.out: cannot open the rank's log"):
            torchrun_across(hosts, out, shards=1, steps=2, launcher="fork")
        assert len(hosts.procs) == 1  # rank 1 was refused before it was forked
    assert victim.read_text() == "untouched\n"
    assert leftovers(own_prefix()) == []


@pytest.mark.processes
def test_a_process_that_enters_a_host_sees_only_that_hosts_network():
    code = ("import socket, sys\nfrom pslab.processes.hosts_fork import enter\n"
            "enter(sys.argv[1])\nprint(sorted(n for _, n in socket.if_nameindex()))\n"
            "s = socket.socket(); s.bind((sys.argv[2], 0)); print('bound')\n")
    with Hosts(2, bandwidth=50e6) as hosts:
        inside = subprocess.run([sys.executable, "-c", code, hosts.namespace(1),
                                 hosts.addresses[1]], capture_output=True, text=True)
        outside = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True).stdout
    assert inside.stdout.split("\n")[:2] == ["['eth0', 'lo']", "bound"], inside.stderr
    assert hosts.addresses[1] not in outside  # the host's address exists only in its namespace
    assert leftovers(own_prefix()) == []


def test_entering_a_host_that_does_not_exist_names_it():
    from pslab.processes.hosts_fork import enter

    with pytest.raises(FileNotFoundError, match="pslab-no-such-host"):
        enter("pslab-no-such-host")


@pytest.mark.processes
def test_a_forked_rank_that_is_stopped_at_once_leaves_nothing_behind(tmp_path):
    with Hosts(3, bandwidth=50e6) as hosts:  # closed while the ranks may still be starting
        procs = torchrun_across(hosts, tmp_path, shards=1, steps=400, launcher="fork")
    assert leftovers(own_prefix()) == [] and not alive(procs)


@pytest.mark.processes
def test_a_shaped_link_carries_what_was_asked(tmp_path):
    """1 MB through a link shaped to 8 Mbit/s arrives at the asked rate of frames on the wire:
    tbf counts whole frames, and a 1514 B frame carries 1448 B of data (Ethernet, IP and TCP
    with timestamps take the rest), so the data arrives at 8 x 1448 / 1514 = 7.65 Mbit/s
    (measured: 7.65-7.66 on 15 tries at load 4). The receiver's buffer holds the whole transfer,
    so that a receiver kept off the CPU for a while on a busy machine does not close TCP's
    window and leave the link idle."""
    size, asked = 1_000_000, 8e6
    server = ("import socket,time\ns=socket.socket()\n"
              "s.setsockopt(socket.SOL_SOCKET,socket.SO_RCVBUF,{size})\n"
              "s.bind(('{a}',5601));s.listen(1)\n"
              "c,_=s.accept();n=0\nt=None\nwhile n<{size}:\n d=c.recv(65536)\n"
              " t=t or time.perf_counter();n+=len(d)\nprint(time.perf_counter()-t)\n")
    client = ("import socket,time\ntime.sleep(0.5)\nc=socket.create_connection(('{a}',5601))\n"
              "c.sendall(b'x'*{size});c.close()\n")
    with Hosts(2, bandwidth=asked) as hosts:
        a = hosts.addresses[0]
        rx = hosts.run(0, [sys.executable, "-c", server.format(a=a, size=size)],
                       stdout=subprocess.PIPE, text=True)
        tx = hosts.run(1, [sys.executable, "-c", client.format(a=a, size=size)])
        assert wait_all([rx, tx], 60) == [0, 0]
        seconds = float(rx.stdout.read())
    measured, data = size * 8 / seconds, asked * 1448 / 1514
    assert abs(measured - data) / data < 0.10, f"{measured / 1e6:.2f} Mbit/s of data for 7.65"
    assert leftovers(own_prefix()) == []


def test_bad_sizes_are_refused_at_once():
    with pytest.raises(ValueError, match="count"):
        Hosts(1)
    with pytest.raises(ValueError, match="bandwidth"):
        Hosts(3, bandwidth=0)


@pytest.mark.processes
def test_one_call_runs_across_hosts_and_cleans_up(tmp_path, monkeypatch):
    from pslab.processes.hosts import run_across

    shared = private_temp(tmp_path / "tmp", monkeypatch)
    run = run_across(hosts=3, bandwidth=50e6, shards=1, mode="async", steps=5)
    assert run.complete and run.updates == 10 and run.mode == "async"
    assert leftovers(own_prefix()) == []
    assert list(shared.glob("pslab-hosts-*")) == []  # its folder went


@pytest.mark.processes
def test_two_sets_of_hosts_at_once_in_one_process_each_work():
    with Hosts(2, bandwidth=50e6) as a, Hosts(3, bandwidth=50e6) as b:
        assert a.tag != b.tag
        assert not set(a.addresses) & set(b.addresses)
        for hosts in (a, b):  # host 1 reaches host 0 over its own bridge
            server = ("import socket,sys\ns=socket.socket();s.bind((sys.argv[1],5602));"
                      "s.listen(1)\nprint('up',flush=True)\nc,_=s.accept();print(c.recv(9))\n")
            rx = hosts.run(0, [sys.executable, "-c", server, hosts.addresses[0]],
                           stdout=subprocess.PIPE, text=True)
            assert rx.stdout.readline() == "up\n"
            tx = hosts.run(1, [sys.executable, "-c", "import socket,sys\n"
                               "socket.create_connection((sys.argv[1],5602)).sendall(b'hello')",
                               hosts.addresses[0]])
            assert wait_all([rx, tx], 60) == [0, 0] and rx.stdout.read() == "b'hello'\n"
    assert leftovers(own_prefix()) == []


SCRIPT = """
import signal, sys, time
from pslab.processes.hosts import Hosts
if sys.argv[1] == "chained":  # the script's own handler: it decides, and it raises
    def stop(signum, frame):
        print("handler", flush=True)
        raise SystemExit(7)
    signal.signal(signal.SIGTERM, stop)
print("entering", flush=True)
with Hosts(3, bandwidth=50e6) as hosts:
    sleeper = hosts.run(1, ["sleep", "60"])
    print("inside", sleeper.pid, flush=True)
    time.sleep(60)
"""


@pytest.mark.processes
@pytest.mark.parametrize("handler", ["default", "chained"])
def test_sigterm_inside_hosts_removes_everything_then_ends_as_asked(handler):
    """SIGTERM at seeded random moments: while the hosts are being made, or inside the block
    with a process running on a host. The script ends as SIGTERM (or its own handler) says,
    and its namespaces, bridge, veth links and processes are gone."""
    rng = random.Random(31)
    for delay in [rng.uniform(0.0, 0.8) for _ in range(4)] + [None]:  # None: once inside
        script = subprocess.Popen([sys.executable, "-c", SCRIPT, handler],
                                  stdout=subprocess.PIPE, text=True)
        assert script.stdout.readline() == "entering\n"
        if delay is None:
            words = script.stdout.readline().split()
            assert words[0] == "inside", words
        else:
            time.sleep(delay)
        script.send_signal(signal.SIGTERM)
        script.wait(60)
        rest = script.stdout.read()
        if handler == "default":
            assert script.returncode == -signal.SIGTERM, (delay, rest)
        else:
            assert script.returncode == 7 and "handler" in rest, (delay, rest)
        assert leftovers(own_prefix(script.pid)) == [], delay
        if delay is None:
            assert not Path(f"/proc/{words[1]}").exists()  # the host's process is gone too


@pytest.mark.processes
def test_the_sigterm_handler_before_is_back_and_one_that_returns_lets_the_block_go_on():
    seen = []
    before = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    try:
        mine = signal.getsignal(signal.SIGTERM)
        with Hosts(2, bandwidth=50e6) as hosts:
            assert signal.getsignal(signal.SIGTERM) is not mine
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.1)
            listed = subprocess.run(["ip", "netns", "list"], capture_output=True,
                                    text=True).stdout
            assert hosts.namespace(1) in listed  # the program's handler said: go on
        assert seen == [signal.SIGTERM] and signal.getsignal(signal.SIGTERM) is mine
        assert leftovers(own_prefix()) == []
    finally:
        signal.signal(signal.SIGTERM, before)


KILLED_MID_SETUP = """
import os, signal, sys
from pslab.processes import hosts
print(os.getpid(), flush=True)
stop, made, run = int(sys.argv[1]), [], hosts._run
def run_then_maybe_die(cmd):  # SIGKILL (an out-of-memory kill) right after the stop-th command
    run(cmd)
    made.append(cmd)
    if len(made) == stop:
        os.kill(os.getpid(), signal.SIGKILL)
hosts._run = run_then_maybe_die
with hosts.Hosts(2, bandwidth=50e6):
    pass
"""


def killed_mid_setup(commands: int) -> tuple[int, list[str]]:
    """A script SIGKILLed after its Hosts(2) ran `commands` of the `ip`/`tc` commands that make
    them: its pid, and what it left."""
    script = subprocess.run([sys.executable, "-c", KILLED_MID_SETUP, str(commands)],
                            capture_output=True, text=True, timeout=120)
    assert script.returncode == -signal.SIGKILL, script.stderr
    pid = int(script.stdout.split()[0])
    return pid, leftovers(own_prefix(pid))


# 18 commands make Hosts(2) with shaped links: the first (a bridge alone, left DOWN, as found on
# this machine), then seeded random ones
@pytest.mark.processes
@pytest.mark.parametrize("commands", [1] + random.Random(31).sample(range(2, 19), 3))
def test_hosts_killed_mid_setup_are_swept_when_hosts_next_start(commands):
    """A process killed outright while its Hosts are being made cannot clean up: the bridge and
    whatever else it made stay. The next Hosts to start (here in this process) removes them,
    every name whose pid is no process's any more."""
    pid, left = killed_mid_setup(commands)
    tag = own_prefix(pid) + "00"
    assert f"{tag}b" in left and set(left) <= {f"{tag}{k}" for k in ("b", "h0", "h1", "v0",
                                                                        "v1")}, left
    with Hosts(2, bandwidth=50e6):
        assert leftovers(own_prefix(pid)) == []
    assert leftovers(own_prefix()) == []


LIVE = """
import sys
from pslab.processes.hosts import Hosts
with Hosts(2, bandwidth=50e6) as hosts:
    print(hosts.tag, flush=True)
    sys.stdin.read()
"""


@pytest.mark.processes
def test_the_sweep_leaves_a_live_processs_hosts_and_names_pslab_does_not_make():
    pid, left = killed_mid_setup(1)
    mine = f"{own_prefix(pid)}00q"  # a dead pid, but not a name Hosts makes: not ours
    subprocess.run(["ip", "link", "add", mine, "type", "bridge"], check=True)
    live = subprocess.Popen([sys.executable, "-c", LIVE], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        tag = live.stdout.readline().strip()
        theirs = leftovers(tag)
        assert len(theirs) == 5, theirs  # a bridge, two namespaces, two links
        with Hosts(2, bandwidth=50e6):
            assert leftovers(own_prefix(pid)) == [mine] and leftovers(tag) == theirs
        live.stdin.close()
        assert live.wait(60) == 0 and leftovers(tag) == []
    finally:
        subprocess.run(["ip", "link", "del", mine], capture_output=True)
        live.kill()
        live.wait()
