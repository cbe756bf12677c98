"""One pipeline step on the virtual clock: every rank runs its action list in order, each action
as soon as the rank is free and its input has arrived.

Because a rank's list fixes its order, each start follows from two numbers, when the rank is
free and when the input arrived (Lindley's recursion, as engine.Resource books a shard): no
event heap is needed. Activations go down the pipeline and gradients back up over the links
between ranks; each directed link is an engine.Resource serving one transfer at a time (links
are full duplex: the two directions do not share), a transfer taking the Cluster's latency +
bytes / bandwidth. Sends do not stop the sender's compute (PyTorch's isend). Two stages on
the same rank (the tip of ZB-V's V) hand over in memory, at no cost.

By default a message moves as soon as it is sent (the papers' figures). On gloo it moves only
once it is sent and its receiver's "ready" notice has come back, so where a receive is posted
counts (`receives`): PyTorch's single-stage schedule classes (GPipe, 1F1B) post it just before
the action that needs it ("late"), its multi-stage runtime where its own plan puts it (the
posts given: processes.receives_of). That notice leaves the
receiving host behind whatever the host is sending then (one queue out of a host: tc's token
bucket), so a rank that has just sent its output asks for its next input a transfer later.
Then ranks run one action at a time in the order of their clocks, so that every receive is
posted, every message sent and every notice sent in time order (measured across hosts:
bench/pipeline_speed.py).
"""
from __future__ import annotations

from heapq import heappop, heappush
from typing import Callable, NamedTuple

from ..engine import Resource
from .schedules import Action


class Op(NamedTuple):
    """One action as run: its rank, virtual stage, kind (F, B, I, W), micro-batch and times."""

    rank: int
    stage: int
    kind: str
    micro: int
    start: float
    end: float


class Transfer(NamedTuple):
    """Bytes on a link: an activation (down) or a gradient (up) of one micro-batch."""

    src: int
    dst: int
    what: str  # "activation" or "gradient"
    micro: int
    start: float
    end: float


class Deadlock(RuntimeError):
    """A schedule whose ranks all wait for inputs that never come."""


Key = tuple[str, int, int]  # (what, stage, micro-batch): an input of an action
# "F": the stage's input activation is there; "B": the gradient of its output is there;
# "E": its own forward has ended (the last stage's loss); "I": its input-gradient half has ended


def execute(lists: list[list[Action]], where: list[int], seconds: dict[tuple[int, str], float],
            link_time: float, links: dict[tuple[int, int], Resource], start: float,
            on_action: Callable[[Action], None] | None = None,
            receives: str | list[dict[int, list[Key]]] = "early", after: float = 0.0
            ) -> tuple[list[Op], list[Transfer]]:
    """Run one step's lists from time `start`; returns the ops and the transfers, each rank's
    ops in its list's order. seconds[(stage, kind)]: an action's duration; link_time: one
    transfer's seconds (0: free links); links: the directed links' resources, (src, dst) ->
    Resource, made on first use and kept across steps. on_action(action) runs each action's
    arithmetic, in an order where every input exists (the order they are timed in).
    receives: where each receive is posted: "early" (before the step: a message moves once
    sent), "late" (when its rank reaches the action that needs it: PyTorch's single-stage
    classes), or per rank {action index: the inputs (Key) asked for on reaching it} (PyTorch's
    multi-stage runtime: processes.receives_of); a message moves once sent and asked for.
    after: seconds a rank spends after each action's outputs have left, before its next
    action (a process's work between actions; pipeline.overhead)."""
    if isinstance(receives, str):
        if receives not in RECEIVES:
            raise ValueError(f"receives must be one of {', '.join(map(repr, RECEIVES))} or "
                             f"each rank's posts (got {receives!r})")
        posts = None if receives == "early" else late_posts(lists, len(where) - 1)
    else:
        posts = receives
    step = _Step(lists, where, seconds, link_time, links, start, on_action, posts, after)
    while step.ready:  # each rank runs until an input is missing, then waits for that one
        step.run(heappop(step.ready)[1] if posts else step.ready.pop())
    stuck = {r: str(lists[r][i]) for r, i in enumerate(step.next) if i < len(lists[r])}
    if stuck:
        raise Deadlock(f"every rank waits for an input that never comes: {stuck}")
    return step.ops, step.transfers


class _Step:
    """One step's state: when each input is (or will be) there, which rank waits for which
    input, and where each rank is in its list."""

    def __init__(self, lists: list[list[Action]], where: list[int],
                 seconds: dict[tuple[int, str], float], link_time: float,
                 links: dict[tuple[int, int], Resource], start: float,
                 on_action: Callable[[Action], None] | None,
                 posts: list[dict[int, list[Key]]] | None, after: float = 0.0):
        self.lists, self.where, self.seconds, self.after = lists, where, seconds, after
        self.link_time, self.links, self.start = link_time, links, start
        self.on_action, self.posts = on_action, posts
        self.late = posts is not None
        self.last = len(where) - 1
        self.there: dict[Key, float] = {}  # an input -> when it is there
        self.sent: dict[Key, tuple[int, int, str, float]] = {}  # late: sent, not asked for
        self.asked: dict[Key, float] = {}  # late: asked for, not sent: its notice's arrival
        self.posting = [0] * len(lists)  # late: each rank's receives posted up to this action
        self.ended: list[Action | None] = [None] * len(lists)  # late: outputs not made yet
        self.waiting: dict[Key, int] = {}  # an input not there yet -> the rank waiting for it
        # ranks that can go on: rank 0 first; late, a heap by the time each is free, one
        # action at a time, so that a receive is posted (and its notice sent) in time order
        self.ready: list = [(start, r) for r in range(len(lists))] if self.late else \
            list(range(len(lists)))[::-1]
        self.next = [0] * len(lists)  # each rank's next action
        self.free = [start] * len(lists)  # when each rank is free
        self.ops: list[Op] = []
        self.transfers: list[Transfer] = []
        self.out: list[list[tuple[float, float]]] = [[] for _ in lists]  # each rank's sends

    def needs(self, action: Action) -> Key:
        """The input `action` waits for."""
        k, kind, mb = action
        if kind == "F":
            return "F", k, mb
        if kind == "W":
            return "I", k, mb
        return ("E" if k == self.last else "B"), k, mb  # B or I: the loss, or the gradient

    def run(self, r: int) -> None:
        """Rank r's actions, from its next one, until one needs an input not there yet."""
        actions, i, t = self.lists[r], self.next[r], self.free[r]
        if self.ended[r] is not None:  # late: the last action's outputs leave at its end, now
            self.outputs(r, self.ended[r], t)
            self.ended[r] = None
            t += self.after
        while i < len(actions):
            if self.posts is not None and self.posting[r] <= i:  # the receives due here
                for key in self.posts[r].get(i, ()):
                    self.ask(r, key, t)
                self.posting[r] = i + 1
            action = actions[i]
            k, kind, mb = action
            key = self.needs(action)
            dep = self.start if key[0] == "F" and k == 0 else self.there.get(key)
            if dep is None:
                self.waiting[key] = r
                break
            begin = t if t > dep else dep
            t = begin + self.seconds[(k, kind)]
            self.ops.append(Op(r, k, kind, mb, begin, t))
            if self.on_action is not None:
                self.on_action(action)
            i += 1
            if self.late:  # the others catch up to `t` first: sends are made in time order
                self.ended[r] = action
                heappush(self.ready, (t, r))
                break
            self.outputs(r, action, t)
            t += self.after
        self.next[r], self.free[r] = i, t

    def outputs(self, r: int, action: Action, end: float) -> None:
        """What `action`, ended at `end`, makes: a forward its activation (sent down) and
        the last stage's loss; a backward (B or I) its input's gradient (sent up)."""
        k, kind, mb = action
        if kind == "F":
            self.arrived(("E", k, mb), end)
            if k < self.last:
                self.send(r, ("F", k + 1, mb), end, "activation")
        elif kind != "W":
            if kind == "I":
                self.arrived(("I", k, mb), end)
            if k:
                self.send(r, ("B", k - 1, mb), end, "gradient")

    def send(self, src: int, key: Key, now: float, what: str) -> None:
        """Rank `src` sends the input `key` at `now`: it moves at once, or (late) once its
        receiver asks for it; in memory when both stages are on one rank or links are free."""
        dst = self.where[key[1]]
        if dst != src and self.link_time:
            if not self.late:
                now = self.move(src, dst, what, key[2], now)
            elif key in self.asked:  # its receive's notice is there: it moves now
                ask = self.asked.pop(key)
                now = self.move(src, dst, what, key[2], now if now > ask else ask)
            else:  # it moves when its receiver asks
                self.sent[key] = (src, dst, what, now)
                return
        self.arrived(key, now)

    def ask(self, r: int, key: Key, now: float) -> None:
        """Rank r posts the receive of `key` at `now` (late): a message sent already moves
        once the notice is back; else the notice waits for the send."""
        ask = self.notice(r, now)
        if key in self.sent:
            src, dst, what, sent = self.sent.pop(key)
            self.arrived(key, self.move(src, dst, what, key[2], ask if ask > sent else sent))
        else:
            self.asked[key] = ask

    def notice(self, rank: int, ask: float) -> float:
        """When `rank`'s receive, posted at `ask`, reaches the sender (late): gloo's "ready"
        notice leaves behind the messages `rank` is sending then (one queue out of a host)."""
        for a, b in reversed(self.out[rank]):
            if a <= ask < b:
                return b
            if b <= ask:
                break
        return ask

    def move(self, src: int, dst: int, what: str, micro: int, now: float) -> float:
        """A transfer from `now` on the directed link src -> dst; returns its end."""
        link = self.links.get((src, dst))
        if link is None:
            link = self.links[(src, dst)] = Resource()
        a, b = link.book(now, self.link_time)
        self.transfers.append(Transfer(src, dst, what, micro, a, b))
        self.out[src].append((a, b))
        return b

    def arrived(self, key: Key, when: float) -> None:
        """`key` is there at `when` (late: sent then); a rank waiting for it can go on."""
        self.there[key] = when
        if key in self.waiting:
            r = self.waiting.pop(key)
            if self.late:
                heappush(self.ready, (self.free[r], r))
            else:
                self.ready.append(r)


RECEIVES = ("early", "late")


def late_posts(lists: list[list[Action]], last: int) -> list[dict[int, list[Key]]]:
    """Each rank's receives posted just before the action that needs them (PyTorch's
    single-stage classes): rank -> {action index: the inputs asked for there}."""
    out: list[dict[int, list[Key]]] = []
    for actions in lists:
        mine: dict[int, list[Key]] = {}
        for i, (k, kind, mb) in enumerate(actions):
            if kind == "F" and k:
                mine[i] = [("F", k, mb)]
            elif kind in "BI" and k < last:
                mine[i] = [("B", k, mb)]
        out.append(mine)
    return out
