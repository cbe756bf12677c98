"""The clock of async runs on duplex links, timing only, in one Python loop.

The same run as the actors (simulation.py) on `Cluster(links="duplex")`, as four steps of the
lesson. A worker's step starts: it fetches from every shard (each answers once the updates it
has taken are applied, then in its fetch line) and computes. Its compute ends: it pushes to
every shard (in each shard's push line) and starts its next step when the pushes are sent.
A push arrives: the shard takes it (an urgent event, before the ordinary ones of its moment)
and books the update on its own line; when every shard has taken it, it is in the history.

A shard's push line is first come first served and only arrivals book its update line, so what
a push finds when it arrives (the shard's version, so its lag; where its update goes) is known
the moment it is sent, and pushes complete in the order they were sent. The loop books each
arrival when its push is sent, on its shard's books (fastbooks.Books: a FIFO of arrivals per
shard), and the push joins the history then; a fetch reads each shard's books up to its
moment. Only a worker's two events are left: its compute ends in a heap of their times alone
(fastlog.take_hot), its starts in a FIFO, since they come due in the order the pushes schedule
them (`_events`). Where the loop stops before the last arrival (a moment `until`, a stop,
another kind of event), the arrivals after the cut are taken back (`Books.cut`): the shards,
the pushes on their way, the history and the rows are the actors' at that moment, and those
arrivals wait on the clock.

Each worker's event logs its transfers' starts and numpy makes its rows (fastlog.Rows), the
updates' rows placed among them by their arrival. The rows, the history, the staleness and
the clock are the actors' bit for bit (tests/test_fastloop.py compares them on many schedules).

Simulation.run uses it only where it is exactly the actors' work: the base Simulation's
handlers, no numerics, no barrier and no staleness bound (async, SoftSync).
Layer: actors (below simulation.py, which calls it), above the clock and the timeline.
"""
from __future__ import annotations

import math
from collections import deque
from heapq import heappop, heappush, heapreplace
from typing import Any

from .engine import Stopped
from .fastbooks import Books, gathered, last_key
from .fastlog import FLUSH, Rows, accumulated, pending, same_costs, take_hot
from .server import ParameterServer
from .timeline import Record

FIRST = -2**63  # the clock order of a worker's first step: before every event, urgent ones too


def run_duplex(sim: Any, until: float | None, first: list | tuple = ()) -> bool:
    """Start the workers of `first` (ranks) on their first step now, before any event, then
    run the events up to `until` (all: None) as the clock would; returns True when it stopped
    for another event, which it then ran (the caller goes on), False when done."""
    clock = sim.clock
    exact = _exact(sim)  # the first steps' fetches change nothing it asks
    if first and (not exact or until is not None and until < clock.now):
        for rank in first:  # the actors start them: the loop would not run them now
            sim.start_step(rank, 0)
        first = ()
    if not exact:  # not the shape the loop needs: the clock runs the actors
        clock.run(until)
        return False
    foreign = _segment(sim, until, first)
    if foreign:
        try:
            clock.step()
        except Stopped:  # the clock stays at the last event run, as it would in Clock.run
            clock.stopped = True
            return False
    return foreign


def _exact(sim: Any) -> bool:
    """The loop does the actors' work exactly: the server's own push, a push costs what a
    fetch does, every route goes to every shard in shard order, and each shard has one push
    line, whose pending arrivals end by its free time: they arrive in the order they wait in
    it."""
    pushes, shards = sim.routes["push"], list(range(len(sim.updates)))
    if type(sim.server).push is not ParameterServer.push or not same_costs(sim):
        return False
    if any([s for s, _, _ in route] != shards for route in pushes + sim.routes["fetch"]):
        return False
    lines = [{id(line) for _, line, _ in shard} for shard in zip(*pushes)]
    if any(len(ids) != 1 for ids in lines):
        return False
    free = [line.free_at for _, line, _ in pushes[0]] if pushes else []
    return all(args[2] < len(free) and t <= free[args[2]]
               for t, _, fn, args in sim.clock.queue if fn == sim.push_arrived)


def _segment(sim: Any, until: float | None, first: list | tuple) -> bool:
    """Take the loop's events off the clock, run them (`_events`), and put back on the clock
    and the simulation what is left: the events not run, the rows, the clock's time. The
    first steps of `first` start before any event (their order, FIRST, is below all)."""
    clock = sim.clock
    fns = sim.start_step, sim.computed  # the very objects the loop tells them apart by
    hot = take_hot(clock, fns)
    # the starts the loop's pushes schedule, in time order (_events), after the first steps
    starts = deque([(clock.now, FIRST, fns[0], (rank, 0)) for rank in first])
    rows = Rows(sim, "apart")
    books = Books(sim, rows, clock.take((sim.push_arrived,)))
    log: list = []  # per worker's event: who (rank; ~(W + rank): a push), step, now, starts
    moment = [clock.now, clock.scheduled, None]  # as the loop leaves them, and its cut
    try:
        return _events(sim, fns, hot, starts, books, log, moment, until)
    finally:
        cut = moment[2] or (moment[0], math.inf)  # None: cut short (a 2nd Ctrl-C)
        clock.put_back(pending(*hot[1:]) + list(starts) + books.cut(cut))
        rows.add(log, books.notes)
        clock.now, clock.scheduled = max(moment[0], books.last_arrival()), moment[1]


def _events(sim: Any, fns: tuple, hot: tuple, starts: deque, books: Books, log: list,
            moment: list, until: float | None) -> bool:
    """Run events until the next one is another kind (return True: the caller runs it) or
    none is left before `until` (return False); `moment` gets the clock's time, its count and
    the cut: the arrivals before it have happened. Everything the loop reads is local.

    The heap (`hot`, fastlog.take_hot) holds the compute ends and the events taken off the
    clock; the starts the pushes schedule wait in `starts`, in the order they are scheduled,
    which is their clock order: a start is due when its push's last transfer is sent, each
    shard's push line is first come first served and pushes are sent in time order, so these
    moments never go down. Half the heap's work, and no `at` entry, per step."""
    (times, at, tied), (now, seq, _) = hot, moment
    (start_event, computed_event), queue, ticks = fns, sim.clock.queue, books.ticks
    steps, k, durations, fetched = sim.steps, sim.accumulate, sim.durations, sim.fetched
    fifos, arrived, shards, rows = books.fifos, books.arrived, books.shards, books.rows
    # per worker, per shard: its fetch job and the shard's books, looked up once, not per fetch
    fetches = [[(*job, fifos[job[0]]) for job in route] for route in sim.routes["fetch"]]
    pushers = [~len(fetches) - rank for rank in range(len(fetches))]  # who: Rows.add, made once
    # the shards as the pushes sent so far leave them (fastbooks.py), and each push's plan
    sent, counts, free, last, plans = books.versions, books.counts, books.free, books.last, \
        books.plans
    aggregate, staleness, history, progress = (sim.server.aggregate, sim.push_staleness,
                                               sim.history, sim.progress)
    each = aggregate == 1  # every push completes an update
    stalest, before, notes, logged = books.stalest[0], books.before, books.notes, rows.logged
    flush = logged + FLUSH  # when the log holds FLUSH values: its rows are made (Rows.add)
    made = len(history)  # the records so far: the next one's number is made + 1
    new, nan, none = tuple.__new__, math.nan, -math.inf  # nan: the actors' very object
    inf = math.inf
    limit = inf if until is None else until
    beyond = math.nextafter(limit, inf)  # an event at or after it comes after `until`
    times.append(inf)  # last in the heap: an empty heap's first time is inf
    head = starts[0][0] if starts else inf  # when the first of `starts` is due (inf: none)
    try:
        while True:
            t = times[0]  # the next event: the heap's first, or the first start if earlier
            early = head < t or head == t != inf and starts[0][1] < at[t][1]
            if early:
                t = head
            if queue or ticks:  # the clock's own events, the progress bar's ticks
                mine = (t, (starts[0] if early else at[t])[1]) if t < beyond else (limit, inf)
                stop = books.between(queue, mine, now)
                if stop is not None:
                    moment[2], theirs = stop
                    return theirs
            if t >= beyond:  # none left by `until`
                moment[2] = (limit, inf)
                return False
            now = t
            if early:
                _, _, fn, args = starts.popleft()
                head = starts[0][0] if starts else inf
            else:
                _, _, fn, args = at.pop(now)
                if tied and now in tied:  # events at the same time: the next in line
                    at[now] = tied[now].pop(0)
                    if not tied[now]:
                        del tied[now]
            rank, step = args
            if fn is start_event:  # fetch from every shard, then compute
                if step == steps:  # the worker is done
                    if not early:
                        heappop(times)
                    continue
                log += args  # (rank, step): no tuple made
                log.append(now)
                end, mine = now, fetched[rank]  # mine: the versions it computes on
                # each shard first takes the pushes that have arrived by now (its books), then
                # answers once their updates are applied, in its fetch line (Resource.book,
                # inlined: a call per fetch cost ~1.3 % of the run); log each start. The
                # server's versions are the books' (Books.cut sets them when the loop stops)
                for s, line, seconds, fifo in fetches[rank]:  # every shard (_exact)
                    if fifo and fifo[0][0] <= now:  # urgent: arrivals at now come first
                        book = fifo.popleft()
                        while fifo and fifo[0][0] <= now:
                            book = fifo.popleft()
                        arrived[s] = book
                    else:
                        book = arrived[s]
                    mine[s] = book[2]  # one by one: a slice assignment costs ~4x more
                    ready = book[3]
                    a = ready if ready > now else now
                    if line.free_at > a:
                        a = line.free_at
                    b = line.free_at = a + seconds
                    log.append(a)
                    if b > end:
                        end = b
                t = end + durations[rank][step] if k == 1 else \
                    accumulated(end, durations[rank], step, k)
                item = t, seq, computed_event, args  # the same worker and step
                seq += 1
                if at.setdefault(t, item) is not item:  # another event is due then: after it
                    tied.setdefault(t, []).append(item)
                if early:
                    heappush(times, t)
                else:
                    heapreplace(times, t)
            else:  # push to every shard, start the next step once they are sent
                log += (pushers[rank], step, now)
                # each in its shard's push line, logging its start; its arrival is known now
                # (fastbooks.py): book it, as Simulation.take would (inlined: ~2 % of the run)
                mine, mylast = fetched[rank], last[rank]
                mark, end, stale, applied = logged + len(log), now, 0, none  # none: no update
                for s, line, cost, seconds, book_it in plans[rank]:  # shard order (_exact)
                    a = line.free_at
                    if a < now:
                        a = now
                    log.append(a)
                    b = line.free_at = a + cost
                    if b > end:
                        end = b
                    version, ready, q = sent[s], free[s], seq + s  # q: the clock's count for it
                    lag = version - mine[s]  # what it finds when it arrives at b
                    if lag > stale:
                        stale = lag
                    if each or gathered(counts, s, aggregate):
                        version = sent[s] = version + 1
                        u0 = ready if ready > b else b
                        u1 = ready = free[s] = u0 + seconds
                        notes += (b, q, mark, s, step, u0)  # no call: a list's +=
                        if u1 > applied:
                            applied = u1
                    else:
                        u1 = None
                    mylast[s] = book = (b, q, version, ready, counts[s], rank, step, lag, u1)
                    book_it(book)
                # every shard will have taken it: Simulation.pushed and record, timing only
                before[rank] = stalest
                staleness.append(stale)
                if stale > stalest:
                    stalest = stale
                if applied != none:
                    if progress is not None:
                        ticks.append(last_key(mylast))
                    made += 1
                    history.append(new(Record, (applied, nan, nan, stalest, made, rank, step)))
                    stalest = 0
                seq += shards
                starts.append((end, seq, start_event, (rank, step + 1)))  # in order: see above
                seq += 1
                if head == inf:
                    head = end
                heappop(times)  # its compute end, the heap's first
                if mark > flush:  # mark: the log's length as this push began, counted
                    rows.add(log, notes, now)
                    logged = rows.logged
                    flush = logged + FLUSH
    finally:
        moment[:2] = now, seq
        books.stalest[0] = stalest
