"""Hosts with their own addresses and shaped links, on one machine: a run "across machines" for
real (figure 000's server and workers on separate hosts), without leaving this one.

`Hosts(3, bandwidth=8e6)` makes three Linux network namespaces, each a host with its own
address (10.77.x.1, .2, ...) on a veth link to one bridge, every link shaped by a token bucket
(`tc tbf`) to `bandwidth` bits per second in both directions (or one rate per host, None for a
link left at the veth's own speed: a worker's link in the timing model's terms). `hosts.run(i, cmd)` starts a
command on host i. Leaving the `with` block — normally, on an error, on Ctrl-C or on SIGTERM —
kills what was started and removes every namespace, link and the bridge. Every `Hosts` names its
own (this process's pid and a count), so several can be up at once, in one process or many. It
needs root (CAP_NET_ADMIN):
elsewhere it says so at once (`HostsUnavailable`). Latency is what a veth link gives (tens of
µs): this kernel has no `netem` to add delay. Traffic stays inside the namespaces made here.

`torchrun_across(hosts, ...)` launches a pslab run there with torchrun, one node per host (a
static rendezvous at host 0, so node r is rank r): shards on the first hosts, workers on the
rest, each listening on its own host's address.
"""
from __future__ import annotations

import ipaddress
import itertools
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

from ..checks import integer, number, one_of
from .hosts_fork import PRIORITY, ahead
from .sigterm import Sigterm

PREFIX = "pslab"  # every namespace, link and bridge made here starts with it
SUBNET = "10.77"  # host i of run k: 10.77.k.(i+1)
MOST_HOSTS = 16
QUEUE = 1 << 20  # bytes a shaped link's queue holds at least (see Hosts._shape)
_made_here = itertools.count()  # Hosts made by this process so far
_up_here: set[str] = set()  # the tags of this process's Hosts now up (sweep leaves them alone)
# a name Hosts makes: the prefix, its process's pid and count (base 36), then b (the bridge),
# h<i> (host i's namespace) or v<i in hex> (host i's link outside)
_OURS = re.compile(rf"{PREFIX}([0-9a-z]{{5}})[0-9a-z]{{2}}(b|h[0-9]{{1,2}}|v[0-9a-f])")


def _base36(n: int, width: int) -> str:
    digits = ""
    for _ in range(width):
        n, d = divmod(n, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[d] + digits
    return digits


def own_prefix(pid: int | None = None) -> str:
    """The start of every name the Hosts of process `pid` (this one by default) make: a link's
    name holds 15 characters, so the pid is written in base 36 (5 characters hold any pid)."""
    return f"{PREFIX}{_base36(os.getpid() if pid is None else pid, 5)}"


class HostsUnavailable(RuntimeError):
    """Network namespaces cannot be made here (not root, no `ip`, no `tc`)."""


def unavailable() -> str | None:
    """Why hosts cannot be made on this machine, or None when they can."""
    if os.geteuid() != 0:
        return "network namespaces need root (CAP_NET_ADMIN); this process is not root"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return f"the `{tool}` command (Debian's iproute2) is not installed"
    return None


def leftovers(prefix: str = PREFIX) -> list[str]:
    """Namespaces and links of ours whose names start with `prefix` that still exist (every
    process's by default; `own_prefix(pid)` for one process's): a test asserts there are none."""
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    found = [line.split()[0] for line in names.splitlines() if line.startswith(prefix)]
    found += [line.split(":")[1].strip().split("@")[0] for line in links.splitlines()
              if line.split(":")[1].strip().startswith(prefix)]
    return found


def sweep() -> list[str]:
    """Remove what the Hosts of processes that have ended left behind (a process killed
    outright, SIGKILL or out of memory, cannot clean up): every namespace and link named as
    Hosts names them whose pid is no live process's, and this process's own that none of its
    Hosts holds now (left by an ended process that had the same pid); processes still inside
    such a namespace are killed first. Names of live processes, and names pslab does not make,
    are left alone. Returns the names removed. `Hosts` sweeps before it makes its own."""
    found = [(name, _OURS.fullmatch(name)) for name in leftovers(PREFIX)]
    gone = [name for name, ours in found if ours and not _owned(int(ours.group(1), 36),
                                                                 name[:len(PREFIX) + 7])]
    order = {"v": 0, "h": 1, "b": 2}  # a link outside, then its namespace, then the bridge
    for name in sorted(set(gone), key=lambda n: order[n[len(PREFIX) + 7]]):
        if name[len(PREFIX) + 7] == "h":
            pids = subprocess.run(["ip", "netns", "pids", name], capture_output=True,
                                  text=True).stdout
            for pid in map(int, pids.split()):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        subprocess.run(["ip", "netns", "del", name] if name[len(PREFIX) + 7] == "h"
                       else ["ip", "link", "del", name], capture_output=True)
    return sorted(set(gone))


def _owned(pid: int, tag: str) -> bool:
    """Is a name with `pid` and `tag` held by a live process's Hosts?"""
    if pid == os.getpid():
        return tag in _up_here
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended
    except OSError:
        return False


class Hosts:
    """H hosts (network namespaces) with shaped links; a context manager that cleans up."""

    def __init__(self, count: int, bandwidth: float | Sequence[float | None] = 8e6):
        self.count = integer("count (hosts)", count, low=2, high=MOST_HOSTS)
        self.rates = _rates(bandwidth, self.count)
        self.bandwidth = bandwidth
        # names of their own: pid, then a count (two Hosts at once never collide); the longest,
        # a link's "<tag>v<hex>", is 14 of the 15 characters a link's name may have
        self.tag = f"{own_prefix()}{_base36(next(_made_here) % 36 ** 2, 2)}"
        self.procs: list[subprocess.Popen] = []
        self.addresses: list[str] = []
        self._made: list[tuple[str, str]] = []
        self._term = Sigterm()  # SIGTERM inside the block: everything removed first

    def namespace(self, i: int) -> str:
        return f"{self.tag}h{i}"

    def __enter__(self) -> "Hosts":
        why = unavailable()
        if why:
            raise HostsUnavailable(why)
        sweep()
        _up_here.add(self.tag)
        self._term.__enter__()
        try:
            net = self._free_subnet()
            self._made.append(("link", f"{self.tag}b"))  # before: a SIGTERM may end `ip` here
            self._ip("link", "add", f"{self.tag}b", "type", "bridge")
            self._ip("link", "set", f"{self.tag}b", "up")
            for i in range(self.count):
                self._add_host(i, f"{net}.{i + 1}")
        except BaseException as exc:
            self.__exit__(type(exc), exc, exc.__traceback__)
            raise
        return self

    def _add_host(self, i: int, address: str) -> None:
        ns, outside = self.namespace(i), f"{self.tag}v{i:x}"
        # each name is listed before it is made: a SIGTERM between the two leaves nothing
        self._made.append(("netns", ns))
        self._ip("netns", "add", ns)
        self._made.append(("link", outside))  # deleted first: a namespace's end goes later
        self._ip("link", "add", outside, "type", "veth", "peer", "name", "eth0", "netns", ns)
        self._ip("link", "set", outside, "master", f"{self.tag}b", "up")
        self._ip("-n", ns, "addr", "add", f"{address}/24", "dev", "eth0")
        self._ip("-n", ns, "link", "set", "eth0", "up")
        self._ip("-n", ns, "link", "set", "lo", "up")
        if self.rates[i] is not None:
            self._shape(ns, outside, self.rates[i])
        self.addresses.append(address)

    def _shape(self, ns: str, outside: str, bits: float) -> None:
        rate, burst = f"{int(bits)}bit", f"{bucket(bits)}b"
        # The queue holds 200 ms of the rate and at least QUEUE bytes: everything pslab's ranks
        # put on one link at once (a round's answers to every worker), so that no frame is
        # dropped. The timing model's links lose nothing; a dropped frame is sent again only
        # after TCP's retransmission timeout (0.2-0.5 s here), measured: six 9.6 KB answers
        # at 1.7 Mbit/s overflowed a 200 ms queue (42 KB), and a Backup(1) step took 600-630 ms
        # where the clock says 408 (418 with this queue).
        limit = str(max(QUEUE, int(bits / 8 * 0.2)))
        shape = ["qdisc", "add", "dev", "eth0", "root", "tbf", "rate", rate, "burst", burst,
                 "limit", limit]
        _run(["ip", "netns", "exec", ns, "tc", *shape])  # out of the host
        _run(["tc", *shape[:3], outside, *shape[4:]])  # into the host

    def _free_subnet(self) -> str:
        used = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True).stdout
        for k in range(1, 255):
            net = f"{SUBNET}.{k}"
            if f" {net}." not in used and not self._subnet_in_namespaces(net):
                return net
        raise HostsUnavailable(f"no free subnet under {SUBNET}.0.0/16")

    def _subnet_in_namespaces(self, net: str) -> bool:
        names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        for line in names.splitlines():
            if line.startswith(PREFIX):
                inside = subprocess.run(["ip", "-n", line.split()[0], "-o", "addr"],
                                        capture_output=True, text=True).stdout
                if f" {net}." in inside:
                    return True
        return False

    def run(self, i: int, cmd: Sequence[str], **popen) -> subprocess.Popen:
        """Start `cmd` on host i (its own process group, so that it can be stopped whole),
        ahead of the machine's other programs (hosts_fork.PRIORITY added to this process's
        nice value; every process it starts inherits it): the link and the host's own work
        are what is measured there, not a co-user's share of the cores. This process keeps
        its own priority."""
        p = subprocess.Popen(["nice", "-n", str(PRIORITY), "ip", "netns", "exec",
                              self.namespace(i), *cmd], start_new_session=True, **popen)
        ahead(p.pid)  # its session's share too (hosts_fork.PRIORITY says why)
        self.procs.append(p)
        return p

    def pids(self, i: int) -> list[int]:
        out = subprocess.run(["ip", "netns", "pids", self.namespace(i)], capture_output=True,
                             text=True).stdout
        return [int(p) for p in out.split()]

    def close(self) -> None:
        """Stop every process started on the hosts, then remove the namespaces and links (a
        SIGTERM meanwhile waits for the end); the SIGTERM handler before ours is back, and a
        SIGTERM of default action inside the block ends the process now."""
        try:
            with self._term.held():
                self._remove()
        finally:
            self._term.__exit__(None, None, None)

    def _remove(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:  # no group of its own yet (a rank forked just now)
                    _kill(p)
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        for i in range(self.count):  # anything else still inside a namespace
            if ("netns", self.namespace(i)) in self._made:
                for pid in self.pids(i):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
        for kind, name in reversed(self._made):  # links, then namespaces, then the bridge
            if kind == "folder":
                shutil.rmtree(name, ignore_errors=True)
                continue
            subprocess.run(["ip", "netns", "del", name] if kind == "netns"
                           else ["ip", "link", "del", name], capture_output=True)
        self._made.clear()
        _up_here.discard(self.tag)

    def scratch(self) -> str:
        """A private folder for what the hosts' processes write beside the run (torchrun's agent
        logs, which torchrun would otherwise leave in the temporary folder), removed with them."""
        path = tempfile.mkdtemp(prefix="pslab-hosts-")
        self._made.append(("folder", path))
        return path

    def __exit__(self, kind, error, trace) -> None:
        self.close()

    def _ip(self, *args: str) -> None:
        # A SIGTERM is acted on only once `ip` has ended: raised inside subprocess.run while the
        # child starts, it leaves `ip` running unwaited, and that `ip` could make its link after
        # the cleanup deleted it (a bridge left behind, 1 run in ~30 at load 4).
        with self._term.held():
            _run(["ip", *args])


def bucket(bits: float) -> int:
    """Bytes a link shaped to `bits` per second lets through at once after a pause: its
    token bucket's depth (tbf's burst), 0.5 ms of the rate and at least one full frame
    (1600 B: tbf drops a frame larger than its bucket). A bucket as large as a message would
    let a whole message through at the veth's own speed after each pause, and a 10 KB weights
    message would then cost no time at all. What is left, a frame's worth after each pause
    (12.8 ms at 1 Mbit/s, 0.64 ms at 20), the timing model takes as the link's burst
    (Cluster's burst; measured: a 2.4 or 9.6 KB message 12.3 ms sooner at 1 Mbit/s after
    16 ms idle than right behind another, 6.0 ms at 2, 2.2 ms at 5)."""
    return max(1600, int(bits / 8 * 0.0005))


def _rates(bandwidth, count: int) -> list[float | None]:
    """Bits per second of each host's link (None: not shaped, the veth's own speed)."""
    name = "bandwidth (bits per second)"
    if isinstance(bandwidth, (list, tuple)):
        if len(bandwidth) != count:
            raise ValueError(f"{name} must be one number, or one per host ({count}; None for "
                             f"a link left unshaped) (got {bandwidth!r})")
        return [None if b is None else number(name, b, low=1e5, high=1e11) for b in bandwidth]
    return [number(name, bandwidth, low=1e5, high=1e11)] * count


def _kill(p) -> None:
    try:
        p.kill()
    except ProcessLookupError:
        pass


def _run(cmd: list[str]) -> None:
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        raise HostsUnavailable(f"{' '.join(cmd)} failed: {out.stderr.strip()}")


def torchrun_across(hosts: Hosts, out: str | Path, shards: int = 1, mode: str = "sync",
                    steps: int = 6, timeout: float = 10.0, time_scale: float = 0.01,
                    port: int = 29500, extra: Sequence[str] = (), launcher: str = "torchrun"
                    ) -> list[subprocess.Popen]:
    """Start one pslab run across the hosts under torchrun, one rank per host: shards on hosts
    0..shards-1 (figure 000's server), workers on the rest. Returns the torchrun processes
    (each writes its reports into `out`, a folder every host sees: they share this machine's
    files); `pslab.processes.load_run(out)` reads the run once they are done.
    launcher="direct": each host runs the rank itself with the variables torchrun would set
    (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT): the same run without torchrun's agent
    processes, half the Pythons to start.
    launcher="fork": the same ranks forked from the warm forkserver into each host's network
    namespace (hosts_fork.py): no Python to start, no torch to import (the measured-vs-simulated
    cases use it; each rank's output goes to `out`/rank<r>.out)."""
    shards = integer("shards", shards, high=hosts.count - 1)
    one_of("launcher", launcher, ("torchrun", "direct", "fork"))
    workers = hosts.count - shards
    out = Path(out).resolve()  # a forked rank's working folder is the forkserver's, not ours
    torchrun = Path(sys.executable).with_name("torchrun")
    master = str(ipaddress.ip_address(hosts.addresses[0]))
    procs, logs = [], ""
    for r, address in enumerate(hosts.addresses):
        rank = ["--shards", str(shards), "--workers", str(workers), "--mode", mode,
                "--steps", str(steps), "--timeout", str(timeout), "--time-scale",
                str(time_scale), "--address", address, "--out", str(out), *extra]
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        ranks = dict(RANK=str(r), WORLD_SIZE=str(hosts.count), MASTER_ADDR=master,
                     MASTER_PORT=str(port), LOCAL_RANK="0")
        if launcher == "fork":
            from .hosts_fork import fork_rank

            out.mkdir(parents=True, exist_ok=True)
            procs.append(fork_rank(hosts.namespace(r), ranks, rank,
                                   str(out / f"rank{r}.out")))
            hosts.procs.append(procs[-1])
            continue
        if launcher == "torchrun":
            logs = logs or hosts.scratch()
            cmd = [str(torchrun), "--nnodes", str(hosts.count), "--nproc-per-node", "1",
                   "--node-rank", str(r), "--rdzv-backend", "static", "--master-addr", master,
                   "--master-port", str(port), "--log-dir", logs, "-m", "pslab.processes",
                   *rank]
        else:
            cmd = [sys.executable, "-m", "pslab.processes", *rank]
            env.update(ranks)
        procs.append(hosts.run(r, cmd, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True))
    return procs


def wait_all(procs: list[subprocess.Popen], seconds: float) -> list[int | None]:
    """Wait up to `seconds` for every process; their exit codes (None: still running)."""
    end = time.monotonic() + seconds
    for p in procs:
        try:
            p.wait(timeout=max(0.0, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    return [p.poll() for p in procs]


def run_across(hosts: int = 3, bandwidth: float = 8e6, shards: int = 1, mode: str = "sync",
               steps: int = 6, timeout: float = 10.0, time_scale: float = 0.01,
               out: str | Path | None = None, extra: Sequence[str] = (),
               launcher: str = "torchrun"):
    """One call: make `hosts` hosts with links of `bandwidth` bits/s, run pslab across them
    under torchrun (shards on the first hosts, workers on the rest), remove everything, and
    return the measured Run (extra: more of `python -m pslab.processes`'s options, e.g.
    ["--transfers", "wire"]). Raises HostsUnavailable where namespaces cannot be made (not root),
    and RuntimeError with the ranks' last words when a rank fails. The ranks' report files go
    to `out`, kept; without it, to a temporary folder removed once the Run is read."""
    import tempfile

    if out is None:
        with tempfile.TemporaryDirectory(prefix="pslab-hosts-") as folder:
            return run_across(hosts, bandwidth, shards, mode, steps, timeout, time_scale,
                              folder, extra, launcher)
    from .torchrun import load_run

    with Hosts(hosts, bandwidth) as made:
        procs = torchrun_across(made, out, shards=shards, mode=mode, steps=steps,
                                timeout=timeout, time_scale=time_scale, extra=extra,
                                launcher=launcher)
        codes = wait_all(procs, 3 * timeout + steps * 10 * time_scale + 120)
        if any(c != 0 for c in codes):
            words = [p.stdout.read()[-600:] if p.poll() is not None else "(still running)"
                     for p in procs]
            raise RuntimeError(f"a rank failed across hosts (exit codes {codes}): {words}")
    return load_run(out)
