"""The settings only the process backend has: `ProcessOptions`, the nested part of a run's
`Settings` (pslab/settings.py) that is None on the simulated clock.

Each option's own rule is checked here, when the object is made (a ValueError naming it: an
address that is not one of this machine's, a negative timeout, ...); the rules that need the
rest of the run (a fault's worker and step, how many processes) are `Settings`' own. It imports
nothing heavy, so `import pslab` stays fast.
"""
from __future__ import annotations

import ipaddress
import socket
import sys
from dataclasses import dataclass, field
from typing import Any

from .checks import integer, number, one_of

LOOPBACK = "127.0.0.1"  # the literal, never "localhost": c10d may try IPv6 for a name
START_METHODS = ("forkserver", "spawn")
TRANSFERS = ("model", "wire")
# a run sleeps time_scale real seconds per virtual one and waits up to timeout for a message:
# beyond these it would only look hung
LONGEST_SCALE, LONGEST_WAIT = 60.0, 86400.0


@dataclass(frozen=True)
class ProcessOptions:
    """time_scale: real seconds a worker sleeps per virtual second of the timing model (0: no
    sleeping, raw speed). timeout: seconds without any sign of progress before the run stops
    with an error (gloo's own default is 30 minutes). address: the IPv4/IPv6 address the
    processes meet on (loopback unless asked). start_method: how processes start.
    kill / hang: {worker: step}: that worker process kills itself (SIGKILL) / stops responding
    when it reaches that step, to see what each mode does with a fault (their range is checked
    by `Settings`, which knows the workers and steps).
    transfers: "model" (a shard holds its link for the timing model's transfer time, scaled,
    on top of what the real message takes: the timeline looks like the simulated one) or
    "wire" (no such wait: a transfer takes what the network takes, drawn from the moment the
    sender sent it to the moment it arrived; compute and updates still sleep the model's
    times, scaled). "wire" is how a run across shaped links is compared with the simulation."""

    time_scale: float = 0.01
    timeout: float = 10.0
    address: str = LOOPBACK
    start_method: str = "forkserver"
    kill: dict[int, int] = field(default_factory=dict)
    hang: dict[int, int] = field(default_factory=dict)
    transfers: str = "model"

    def __post_init__(self) -> None:
        put = object.__setattr__  # frozen: the checked values replace the given ones once
        put(self, "time_scale", number("time_scale", self.time_scale, high=LONGEST_SCALE))
        put(self, "timeout", number("timeout", self.timeout, positive=True, high=LONGEST_WAIT))
        put(self, "address", _address(self.address))
        one_of("start_method", self.start_method, START_METHODS)
        one_of("transfers", self.transfers, TRANSFERS)
        for name in ("kill", "hang"):
            if getattr(self, name) is None:
                put(self, name, {})

    @property
    def wire(self) -> bool:
        return self.transfers == "wire"

    @property
    def loopback(self) -> bool:
        return ipaddress.ip_address(self.address).is_loopback

    def to_dict(self) -> dict[str, Any]:
        """The options as JSON values (kill/hang keys as strings, as JSON has them)."""
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        return dict(out, kill={str(k): v for k, v in self.kill.items()},
                    hang={str(k): v for k, v in self.hang.items()})

    @classmethod
    def from_dict(cls, values: Any) -> "ProcessOptions":
        """The options `to_dict` wrote, checked again (kill/hang keys back to ints)."""
        if not isinstance(values, dict) or set(values) - set(cls.__dataclass_fields__):
            raise ValueError(f"process options must be a dict of "
                             f"{', '.join(cls.__dataclass_fields__)} (got {values!r})")
        faults = {name: {int(k) if isinstance(k, str) and k.isdigit() else k: v
                         for k, v in values[name].items()}
                  for name in ("kill", "hang") if isinstance(values.get(name), dict)}
        return cls(**dict(values, **faults))


def check_faults(name: str, value: Any, workers: int, steps: int) -> dict[int, int]:
    """{worker: step} of a fault on purpose (kill, hang): workers 0..N-1, steps 0..steps-1."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"{name} must be a dict {{worker: step}} (got {value!r})")
    return {integer(f"{name} worker", w, low=0, high=workers - 1):
            integer(f"{name} step", s, low=0, high=steps - 1) for w, s in value.items()}


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
