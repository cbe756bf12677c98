"""The settings only the process backend has, checked before any process starts.

`train(..., backend="processes")` hands these to `check_options`, which raises one clear
ValueError naming the bad setting (an address that is not an address, a negative timeout, ...)
or returns them as an `Options`. It imports nothing heavy, so `import pslab` stays fast.
"""
from __future__ import annotations

import ipaddress
import socket
import sys
from dataclasses import dataclass, field
from typing import Any

from ..checks import integer, number, one_of

LOOPBACK = "127.0.0.1"  # the literal, never "localhost": c10d may try IPv6 for a name
START_METHODS = ("forkserver", "spawn")
TRANSFERS = ("model", "wire")
DEFAULTS = dict(time_scale=0.01, timeout=10.0, address=LOOPBACK, start_method="forkserver",
                kill=None, hang=None, transfers="model")


@dataclass(frozen=True)
class Options:
    """time_scale: real seconds a worker sleeps per virtual second of the timing model (0: no
    sleeping, raw speed). timeout: seconds without any sign of progress before the run stops
    with an error (gloo's own default is 30 minutes). address: the IPv4/IPv6 address the
    processes meet on (loopback unless asked). start_method: how processes start.
    kill / hang: {worker: step}: that worker process kills itself (SIGKILL) / stops responding
    when it reaches that step, to see what each mode does with a fault.
    transfers: "model" (a shard holds its link for the timing model's transfer time, scaled,
    on top of what the real message takes: the timeline looks like the simulated one) or
    "wire" (no such wait: a transfer takes what the network takes, drawn from the moment the
    sender sent it to the moment it arrived; compute and updates still sleep the model's
    times, scaled). "wire" is how a run across shaped links is compared with the simulation."""

    time_scale: float = DEFAULTS["time_scale"]
    timeout: float = DEFAULTS["timeout"]
    address: str = LOOPBACK
    start_method: str = "forkserver"
    kill: dict[int, int] = field(default_factory=dict)
    hang: dict[int, int] = field(default_factory=dict)
    transfers: str = "model"

    @property
    def wire(self) -> bool:
        return self.transfers == "wire"

    @property
    def loopback(self) -> bool:
        return ipaddress.ip_address(self.address).is_loopback


# a run sleeps time_scale real seconds per virtual one and waits up to timeout for a message:
# beyond these it would only look hung
LONGEST_SCALE, LONGEST_WAIT = 60.0, 86400.0
MAX_PROCESSES = 64  # shards + workers: each is a whole Python process with torch loaded


def check_options(backend: str, workers: int, steps: int, shards: int = 1,
                  **given: Any) -> Options | None:
    """Options for `backend` ("simulated": None; process-only settings are then refused)."""
    one_of("backend", backend, ("simulated", "processes"))
    if backend == "processes" and shards + workers > MAX_PROCESSES:
        raise ValueError(f"workers + shards must be at most {MAX_PROCESSES} with backend="
                         f"'processes', one OS process each (got {workers} + {shards})")
    unknown = sorted(set(given) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"unknown process option(s) {', '.join(unknown)}; allowed: "
                         f"{', '.join(DEFAULTS)}")
    if backend == "simulated":
        used = [k for k, v in given.items() if v is not None]
        if used:
            raise ValueError(f"{', '.join(used)} only apply to backend='processes' "
                             f"(got backend='simulated')")
        return None
    v = {k: (DEFAULTS[k] if given.get(k) is None else given[k]) for k in DEFAULTS}
    return Options(time_scale=number("time_scale", v["time_scale"], high=LONGEST_SCALE),
                   timeout=number("timeout", v["timeout"], positive=True, high=LONGEST_WAIT),
                   address=_address(v["address"]),
                   start_method=one_of("start_method", v["start_method"], START_METHODS),
                   kill=check_faults("kill", v["kill"], workers, steps),
                   hang=check_faults("hang", v["hang"], workers, steps),
                   transfers=one_of("transfers", v["transfers"], TRANSFERS))


def _address(value: Any) -> str:
    try:
        if not isinstance(value, str):  # ip_address(5) is 0.0.0.5: a number is a mistake
            raise ValueError
        address = ipaddress.ip_address(value)
    except ValueError:
        raise ValueError(f"address must be an IP address such as '127.0.0.1' (loopback, the "
                         f"default) or this machine's address on a network (got {value!r})"
                         ) from None
    if address.is_unspecified:
        raise ValueError(f"address {value!r} means every interface: the processes would listen "
                         f"wherever the machine can be reached; give one address of this "
                         f"machine, e.g. '127.0.0.1' (the default, loopback)")
    if interface_of(str(address)) is None:
        raise ValueError(f"address {value!r} is not an address of this machine (no interface "
                         f"holds it): the processes listen there, so it must be one of its own")
    return str(address)


def interface_of(address: str) -> str | None:
    """The name of the network interface holding `address` (gloo binds to an interface), or
    None when no interface of this machine holds it."""
    ip = ipaddress.ip_address(address)
    if ip.is_loopback:
        return "lo" if sys.platform.startswith("linux") else None
    for _, name in socket.if_nameindex():
        if ip in _addresses(name):
            return name
    return None


def _addresses(name: str) -> set:
    """The IPv4 and IPv6 addresses of one interface (Linux: ioctl and /proc/net/if_inet6)."""
    found = set()
    try:
        import fcntl
        import struct

        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            packed = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", name.encode()[:15]))
            found.add(ipaddress.ip_address(packed[20:24]))  # SIOCGIFADDR: the sockaddr_in
    except (OSError, ImportError):
        pass
    try:
        with open("/proc/net/if_inet6") as f:
            for line in f:
                fields = line.split()
                if fields[-1] == name:
                    found.add(ipaddress.ip_address(bytes.fromhex(fields[0])))
    except OSError:
        pass
    return found


def check_faults(name: str, value: Any, workers: int, steps: int) -> dict[int, int]:
    """{worker: step} of a fault on purpose (kill, hang): workers 0..N-1, steps 0..steps-1."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"{name} must be a dict {{worker: step}} (got {value!r})")
    return {integer(f"{name} worker", w, low=0, high=workers - 1):
            integer(f"{name} step", s, low=0, high=steps - 1) for w, s in value.items()}
