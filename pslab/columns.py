"""A timeline kept as columns: the same spans as figure 000's list, without an object per span.

A timing-only run of 800 workers x 100 steps makes ~760k spans; as `Span` tuples they take
~125 MB. `Columns` keeps each span as three doubles (24 bytes): its start, its end and one whole
number that packs the six small fields (worker, shard, kind, step, micro, note) in mixed radix,
exact while it stays below 2^53. It makes a `Span` only when one is read, so `run.timeline`
still reads as a list of Spans (len, index, slices, iteration, ==) and every plot and export is
unchanged. Kinds and notes are numbered as they first appear: a backend may add new kinds
(collectives, ...) without touching this file.
"""
from __future__ import annotations

from array import array
from typing import Iterable, Iterator, overload

from .timeline import KINDS, NOTES, Span

WIDTH = 3  # per span: code, start, end
CODE, START, END = 0, 1, 2
NONE = -1  # worker, shard or micro that is None
NAMES = 64  # kinds, and notes, a timeline can tell apart
EXACT = 2**53  # every whole number below this is exact in a double
CHUNK = 1 << 16  # spans decoded at once when iterating


class Columns:
    """A list of Spans stored as rows of 3 doubles. `append`/`extend` take Spans (or 8-tuples).
    The engine's hot loop fills `rows` directly with `code(...)`s it computed once per worker
    and shard plus `step * step_unit`: for that, size the columns to the run
    (`workers`, `shards`, `micros`: one more than the largest index each field takes), which
    also fixes them; unsized columns grow their radices as spans need."""

    def __init__(self, spans: Iterable[Span] = (), workers: int = 0, shards: int = 0,
                 micros: int = 0):
        self.rows = array("d")
        self.kinds: list[str] = list(KINDS)
        self.notes: list[str | None] = [None, *NOTES]
        self._kind = {k: i for i, k in enumerate(self.kinds)}
        self._note = {n: i for i, n in enumerate(self.notes)}
        self.fixed = bool(workers or shards or micros)
        self._radix(workers + 1, shards + 1, micros + 1)
        self.extend(spans)

    def _radix(self, workers: int, shards: int, micros: int) -> None:
        """Field sizes: None is 0, index i is i + 1. code = ((((step * micros + micro) * workers
        + worker) * shards + shard) * NAMES + kind) * NAMES + note."""
        self.radix = (workers, shards, micros)
        self._bases: dict[tuple, int] = {}  # add()'s codes of step 0, by the other fields
        self.shard_unit = NAMES * NAMES
        self.worker_unit = self.shard_unit * shards
        self.micro_unit = self.worker_unit * workers
        self.step_unit = self.micro_unit * micros

    def kind_code(self, kind: str) -> int:
        if kind not in self._kind:
            if len(self.kinds) == NAMES:
                raise ValueError(f"a timeline tells at most {NAMES} kinds apart (new: {kind!r})")
            self._kind[kind] = len(self.kinds)
            self.kinds.append(kind)
        return self._kind[kind]

    def note_code(self, note: str | None) -> int:
        if note not in self._note:
            if len(self.notes) == NAMES:
                raise ValueError(f"a timeline tells at most {NAMES} notes apart (new: {note!r})")
            self._note[note] = len(self.notes)
            self.notes.append(note)
        return self._note[note]

    def code(self, worker: int | None, shard: int | None, kind: str, step: int,
             micro: int | None = None, note: str | None = None) -> int:
        """The packed number of a span's six small fields (growing unsized columns to fit)."""
        w = 0 if worker is None else worker + 1
        s = 0 if shard is None else shard + 1
        m = 0 if micro is None else micro + 1
        if min(w, s, m) < 0 or w >= self.radix[0] or s >= self.radix[1] or m >= self.radix[2]:
            self._grow(w, s, m)
        c = (step * self.step_unit + m * self.micro_unit + w * self.worker_unit
             + s * self.shard_unit + self.kind_code(kind) * NAMES + self.note_code(note))
        if not -EXACT < c < EXACT:
            raise OverflowError(f"step {step} is past what this timeline can hold exactly")
        return c

    def _grow(self, w: int, s: int, m: int) -> None:
        if self.fixed or min(w, s, m) < 0:
            raise ValueError(f"span (worker, shard, micro) = ({w - 1}, {s - 1}, {m - 1}) is "
                             f"outside this timeline's range {tuple(r - 1 for r in self.radix)}")
        old = self._fields()
        self._radix(*(max(2 * r, v + 1) if v >= r else r
                      for r, v in zip(self.radix, (w, s, m))))
        if len(self):
            import numpy as np

            step, m0, w0, s0, kind, note = old
            codes = (((((step * self.radix[2] + m0) * self.radix[0] + w0) * self.radix[1] + s0)
                      * NAMES + kind) * NAMES + note)
            if np.abs(codes).max() >= EXACT:
                raise OverflowError("these spans' steps are past what a timeline holds exactly")
            self._table()[:, CODE] = codes

    def _table(self):
        import numpy as np

        return np.frombuffer(self.rows, dtype=np.float64).reshape(-1, WIDTH)

    def _fields(self, lo: int = 0, hi: int | None = None) -> tuple:
        """(step, micro, worker, shard, kind, note) arrays of spans lo:hi, as stored (+1)."""
        import numpy as np

        c = self._table()[lo:hi, CODE].astype(np.int64)
        c, note = np.divmod(c, NAMES)
        c, kind = np.divmod(c, NAMES)
        c, shard = np.divmod(c, self.radix[1])
        c, worker = np.divmod(c, self.radix[0])
        step, micro = np.divmod(c, self.radix[2])
        return step, micro, worker, shard, kind, note

    def add(self, worker: int | None, shard: int | None, kind: str, start: float, end: float,
            step: int, micro: int | None = None, note: str | None = None) -> None:
        """Append the span of these fields (a Span's, in its order), without making one."""
        key = (worker, shard, kind, micro, note)
        base = self._bases.get(key)
        if base is None:
            base = self._bases[key] = self.code(worker, shard, kind, 0, micro, note)
        code = base + step * self.step_unit
        if code >= EXACT:
            raise OverflowError(f"step {step} is past what this timeline can hold exactly")
        self.rows.fromlist([code, start, end])

    def append(self, span: Iterable) -> None:
        worker, shard, kind, start, end, step, *rest = span
        micro, note = (rest + [None, None])[:2]
        self.rows.fromlist([self.code(worker, shard, kind, step, micro, note), start, end])

    def clear(self) -> None:
        del self.rows[:]

    def extend(self, spans: Iterable) -> None:
        for span in spans:
            self.append(span)

    def __len__(self) -> int:
        return len(self.rows) // WIDTH

    def _span(self, i: int) -> Span:
        c, start, end = self.rows[i * WIDTH:(i + 1) * WIDTH]
        c, note = divmod(int(c), NAMES)
        c, kind = divmod(c, NAMES)
        c, s = divmod(c, self.radix[1])
        c, w = divmod(c, self.radix[0])
        step, m = divmod(c, self.radix[2])
        return Span(w - 1 if w else None, s - 1 if s else None, self.kinds[kind], start, end,
                    step, m - 1 if m else None, self.notes[note])

    def _spans(self, lo: int, hi: int) -> list[Span]:
        """Spans lo:hi (lo < hi), decoded with numpy: far faster than one by one."""
        step, micro, worker, shard, kind, note = (a.tolist() for a in self._fields(lo, hi))
        times = self._table()[lo:hi]
        kinds, notes = self.kinds, self.notes
        return [Span(w - 1 if w else None, s - 1 if s else None, kinds[k], a, b, t,
                     m - 1 if m else None, notes[n])
                for w, s, k, a, b, t, m, n in zip(worker, shard, kind, times[:, START].tolist(),
                                                  times[:, END].tolist(), step, micro, note)]

    @overload
    def __getitem__(self, i: int) -> Span: ...
    @overload
    def __getitem__(self, i: slice) -> list[Span]: ...

    def __getitem__(self, i):
        n = len(self)
        if isinstance(i, slice):
            start, stop, stride = i.indices(n)
            if stride == 1:
                return self._spans(start, stop) if start < stop else []
            return [self._span(j) for j in range(start, stop, stride)]
        if not isinstance(i, int):
            raise TypeError(f"timeline indices must be integers or slices, not {type(i).__name__}")
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("timeline index out of range")
        return self._span(i)

    def __iter__(self) -> Iterator[Span]:
        for lo in range(0, len(self), CHUNK):
            yield from self._spans(lo, min(lo + CHUNK, len(self)))

    def __reversed__(self) -> Iterator[Span]:
        return (self._span(i) for i in range(len(self) - 1, -1, -1))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Columns, list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __bool__(self) -> bool:
        return len(self) > 0

    def __add__(self, other: Iterable[Span]) -> list[Span]:
        return list(self) + list(other)

    def __radd__(self, other: Iterable[Span]) -> list[Span]:
        return list(other) + list(self)

    def index(self, span: Span) -> int:
        for i, s in enumerate(self):
            if s == span:
                return i
        raise ValueError(f"{span!r} is not in the timeline")

    def count(self, span: Span) -> int:
        return sum(1 for s in self if s == span)

    def __contains__(self, span: object) -> bool:
        return any(s == span for s in self)

    def __repr__(self) -> str:
        return f"Columns({list(self)!r})"

    def total(self, kind: str, note: str | None = None) -> float:
        """Summed duration of the spans of one kind (and one note), read off the columns."""
        if kind not in self._kind or (note is not None and note not in self._note) or not self:
            return 0.0
        import numpy as np

        rows = self._table()
        names = np.mod(rows[:, CODE].astype(np.int64), NAMES * NAMES)  # kind * NAMES + note
        pick = names // NAMES == self._kind[kind]
        if note is not None:
            pick &= names % NAMES == self._note[note]
        # summed in span order, as timeline.total's sum() does, so the float is the same
        return float(sum((rows[pick, END] - rows[pick, START]).tolist()))

    def arrays(self) -> dict:
        """The spans as whole arrays, for readers that draw them all (the browser timeline):
        worker, shard, micro (-1 for None), kind and note (codes into `kinds`, `notes`), step,
        start, end."""
        step, micro, worker, shard, kind, note = self._fields()
        rows = self._table()
        return dict(worker=worker - 1, shard=shard - 1, micro=micro - 1, kind=kind, note=note,
                    step=step, start=rows[:, START].copy(), end=rows[:, END].copy())
