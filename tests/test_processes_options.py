"""Bad settings of the process backend: a ValueError naming them before any process starts."""
import pytest

import pslab
from pslab.processes import launcher

BAD = [
    (dict(backend="threads"), "backend"),
    (dict(backend="processes", timeout=-1), "timeout"),
    (dict(backend="processes", timeout=0), "timeout"),
    (dict(backend="processes", time_scale=-0.1), "time_scale"),
    (dict(backend="processes", address="not-an-address"), "address"),
    (dict(backend="processes", address="localhost"), "address"),
    (dict(backend="processes", address="300.1.1.1"), "address"),
    (dict(backend="processes", start_method="fork"), "start_method"),
    (dict(backend="processes", kill={3: 1}), "kill worker"),
    (dict(backend="processes", kill={0: 50}), "kill step"),
    (dict(backend="processes", hang=[1, 2]), "hang"),
    (dict(backend="processes", numerics=False), "numerics"),
    (dict(backend="processes", mode=pslab.ZeRO(2)), "mode=ZeRO\\(2\\)"),  # FSDP2 has no stage 2
    (dict(backend="processes", mode="allreduce", time_scale=0.1), "time_scale"),  # DDP: real time
    (dict(backend="processes", workers=40, shards=30), "workers \\+ shards"),
    (dict(timeout=5), "timeout"),  # a process option on the simulated backend
    (dict(kill={0: 1}), "kill"),
    (dict(backend="processes", transfers="cable"), "transfers"),
    (dict(transfers="wire"), "transfers"),  # the simulated clock has no wire to time
    (dict(backend="processes", mode=pslab.ZeRO(3), transfers="wire"), "transfers"),
]


@pytest.mark.parametrize("kwargs, name", BAD)
def test_bad_process_settings_are_named_before_any_process_starts(kwargs, name, monkeypatch):
    def started(*args, **kwargs):
        raise AssertionError("a process was started")

    monkeypatch.setattr(launcher.Launch, "start", started)
    with pytest.raises(ValueError, match=name):
        pslab.train(**{"workers": 3, "steps": 5, **kwargs})


def test_loopback_is_the_default_and_only_this_machines_addresses_are_taken():
    import socket

    from pslab.options import ProcessOptions, _addresses, interface_of
    from pslab.settings import Settings

    assert ProcessOptions().address == "127.0.0.1"
    assert ProcessOptions().loopback and interface_of("127.0.0.1") == "lo"
    with pytest.raises(ValueError, match="not an address of this machine"):
        ProcessOptions(address="10.0.0.7")  # on no interface here
    own = [a for _, name in socket.if_nameindex() for a in _addresses(name)
           if not a.is_loopback and a.version == 4]
    if own:  # a machine with a network address: taken as given, not loopback
        assert not ProcessOptions(address=str(own[0])).loopback
    assert Settings.build(workers=3, steps=5).processes is None
