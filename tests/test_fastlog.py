"""pslab.fastlog.Rows._place puts the duplex updates' rows among the events' rows where they
arrive. tests/test_fastloop.py compares whole runs with the actors; this one also reaches what
those runs never meet (an update that arrives at its own push's moment behind later events,
ties, notes not due yet), against np.insert's placement, which _place replaced."""
from types import SimpleNamespace

import numpy as np
import pytest

from pslab.columns import Columns
from pslab.fastlog import Rows

W, S = 4, 2  # workers, shards


def rows() -> Rows:
    """A duplex Rows of W workers on S shards (what Rows reads of a Simulation)."""
    sim = SimpleNamespace(routes={"fetch": [[(s, None, 0.5) for s in range(S)]] * W},
                          updates=[(s, None, 0.25 + s) for s in range(S)],
                          timeline=Columns(workers=W, shards=S, micros=2),
                          durations=[[1.0] * 10] * W, accumulate=1)
    return Rows(sim, "apart")


def by_insert(r: Rows, items, keep, now, updates: list, upto: float):
    """_place as it was (np.insert): the reference."""
    U = np.frombuffer(_packed(updates)).reshape(-1, 6)
    due = U[:, 0] <= upto
    left = [v for i in np.flatnonzero(~due).tolist() for v in updates[6 * i:6 * i + 6]]
    U = U[due]
    U = U[np.lexsort((U.view(np.int64)[:, 1], U[:, 0]))]
    mark, s, step = U.view(np.int64)[:, 2:5].T
    start = U[:, 5]
    out = np.empty((len(U), 3))
    out[:, 0] = step * r.step_unit + r.update_codes[s]
    out[:, 1], out[:, 2] = start, start + r.update_cost[s]
    sender = (mark - r.logged) // r.width
    at = np.maximum(np.searchsorted(now, U[:, 0], "left"), sender + 1)
    ends = np.concatenate(([0], np.cumsum(keep.sum(axis=1))))
    return np.insert(items, ends[np.minimum(at, len(keep))], out.view("V24").ravel()), left


def _packed(updates: list) -> bytes:
    """The notes as _place reads them: arrival, order, mark, shard, step (int64), start."""
    out = np.empty((len(updates) // 6, 6))
    flat = np.array(updates, dtype=object).reshape(-1, 6)
    out[:, [0, 5]] = flat[:, [0, 5]].astype(float)
    out.view(np.int64)[:, 1:5] = flat[:, 1:5].astype(np.int64)
    return out.tobytes()


@pytest.mark.parametrize("seed", range(12))
def test_updates_go_where_np_insert_put_them(seed):
    rng = np.random.default_rng(seed)
    r = rows()
    E = int(rng.integers(5, 60))
    now = np.sort(rng.integers(0, E // 2 + 1, E).astype(float))  # many events at a moment
    keep = rng.random((E, 2 * S + 1)) < 0.5
    keep[:, :S] = True  # every transfer is kept
    items = np.arange(keep.sum() * 3, dtype=float).reshape(-1, 3).view("V24").ravel()
    r.logged = 6000  # the log's values before this flush
    upto = float(now[-1]) + rng.choice([0.0, 3.0, np.inf])
    notes = []
    for order in rng.permutation(4 * E):  # the clock's order: unique, in any order here
        sender = int(rng.integers(-3, E))  # < 0: a push of an earlier flush
        base = now[sender] if sender >= 0 else -1.0
        arrival = base + float(rng.choice([0.0, 0.0, 1.0, 2.5, 40.0]))  # 0: at its moment
        notes += [arrival, int(order), r.logged + sender * r.width + 3, int(rng.integers(S)),
                  int(rng.integers(9)), arrival + float(rng.integers(3))]
    want, left = by_insert(r, items, keep, now, list(notes), upto)
    got = r._place(items, keep, now, notes, upto)
    assert got.tobytes() == want.tobytes()
    assert notes == left  # those not due stay, in their order


def test_a_flush_with_no_events_places_the_earlier_pushes_updates_first():
    r = rows()
    r.logged = 6000
    keep = np.ones((0, 2 * S + 1), dtype=bool)
    items, now = np.empty(0, dtype="V24"), np.empty(0)
    notes = [5.0, 9, r.logged - r.width + 3, 1, 2, 5.5,  # the last push's, then an older one
             4.0, 7, r.logged - 2 * r.width + 3, 0, 1, 4.0,
             9.0, 8, r.logged - r.width + 3, 0, 2, 9.0]  # not due by 6.0
    want, left = by_insert(r, items, keep, now, list(notes), 6.0)
    got = r._place(items, keep, now, notes, 6.0)
    assert got.tobytes() == want.tobytes() and len(got) == 2
    assert notes == left == [9.0, 8, r.logged - r.width + 3, 0, 2, 9.0]
