"""What travels between a worker process and a shard process: one flat float32 tensor.

distbelief's layout: a short header, then the payload. Worker -> shard:
`[kind, step, version fetched, sent, *gradient slice]`; shard -> worker: `[REPLY, step,
version, sent, *weights slice]`. Steps and versions are small integers, exact in float32 up to
2^24; `sent` (seconds since time zero when the message left, two float32s: high and low part,
exact to ~1e-12 s) lets the receiver draw a transfer that the wire alone timed
(transfers="wire"). Every message on one worker-shard pair has the same length, so a receiver
always knows what to post.

Why no separate "pull" after each push: gloo's send is a rendezvous (the sender waits for the
receiver's recv), so a round trip per message is what costs. A push is answered by the weights
of the worker's next step, sent when the mode lets that worker go on: that answer *is* the pull
(ps-lite's push-then-pull), and in sync mode the waiting for it is the barrier.
"""
from __future__ import annotations

from typing import NamedTuple

import torch

HEADER = 5
PULL, PUSH, LAST, REPLY = 0.0, 1.0, 2.0, 3.0  # LAST: a push that wants no answer


class Header(NamedTuple):
    kind: float
    step: int
    version: int
    sent: float


def message(keys: int) -> torch.Tensor:
    """An empty message buffer for a shard of `keys` parameters."""
    return torch.zeros(HEADER + keys)


def pack(buffer: torch.Tensor, kind: float, step: int, version: int,
         payload: torch.Tensor | None = None, sent: float = 0.0) -> torch.Tensor:
    high = float(torch.tensor(sent, dtype=torch.float32))
    buffer[0], buffer[1], buffer[2], buffer[3], buffer[4] = kind, step, version, high, sent - high
    if payload is not None:
        buffer[HEADER:] = payload.detach().reshape(-1).to("cpu")
    return buffer


def header(buffer: torch.Tensor) -> Header:
    kind, step, version, high, low = buffer[:HEADER].tolist()
    return Header(kind, int(step), int(version), high + low)


def payload(buffer: torch.Tensor) -> torch.Tensor:
    """The payload as a fresh tensor (the buffer is reused for the next message)."""
    return buffer[HEADER:].clone()
