"""A timeline kept as columns: the same spans as figure 000's list, without an object per span.

A timing-only run of 800 workers x 100 steps makes ~760k spans; as `Span` tuples they take
~125 MB. `Columns` keeps them in one flat array of doubles, eight per span (64 bytes; the six
small ints are exact in a double, and one array call per span is cheaper than two), and makes a
`Span` only when one is read, so
`run.timeline` still reads as a list of Spans (len, index, slices, iteration, ==) and every plot
and export is unchanged. Kinds and notes are numbered as they first appear: a backend may add
new kinds (collectives, ...) without touching this file.
"""
from __future__ import annotations

from array import array
from typing import Iterable, Iterator, overload

from .timeline import KINDS, NOTES, Span

WIDTH = 8  # per span: worker, shard, kind, step, micro, note, start, end
START, END = 6, 7
NONE = -1  # worker, shard or micro that is None


class Columns:
    """A list of Spans stored as rows of 8 doubles. `append`/`extend` take Spans (or
    8-tuples); the engine's hot loop fills `rows` directly (fromlist: faster than extend with a
    tuple), with codes from `kind_code`/`note_code` (None is NONE; note None is 0)."""

    def __init__(self, spans: Iterable[Span] = ()):
        self.rows = array("d")
        self.kinds: list[str] = list(KINDS)
        self.notes: list[str | None] = [None, *NOTES]
        self._kind = {k: i for i, k in enumerate(self.kinds)}
        self._note = {n: i for i, n in enumerate(self.notes)}
        self.extend(spans)

    def kind_code(self, kind: str) -> int:
        if kind not in self._kind:
            self._kind[kind] = len(self.kinds)
            self.kinds.append(kind)
        return self._kind[kind]

    def note_code(self, note: str | None) -> int:
        if note not in self._note:
            self._note[note] = len(self.notes)
            self.notes.append(note)
        return self._note[note]

    def append(self, span: Iterable) -> None:
        worker, shard, kind, start, end, step, *rest = span
        micro, note = (rest + [None, None])[:2]
        self.rows.fromlist([NONE if worker is None else worker,
                            NONE if shard is None else shard, self.kind_code(kind), step,
                            NONE if micro is None else micro, self.note_code(note), start, end])

    def clear(self) -> None:
        del self.rows[:]

    def extend(self, spans: Iterable) -> None:
        for span in spans:
            self.append(span)

    def __len__(self) -> int:
        return len(self.rows) // WIDTH

    def _span(self, i: int) -> Span:
        w, s, k, step, micro, note, start, end = self.rows[i * WIDTH:(i + 1) * WIDTH]
        return Span(None if w == NONE else int(w), None if s == NONE else int(s),
                    self.kinds[int(k)], start, end, int(step),
                    None if micro == NONE else int(micro), self.notes[int(note)])

    @overload
    def __getitem__(self, i: int) -> Span: ...
    @overload
    def __getitem__(self, i: slice) -> list[Span]: ...

    def __getitem__(self, i):
        n = len(self)
        if isinstance(i, slice):
            return [self._span(j) for j in range(*i.indices(n))]
        if not isinstance(i, int):
            raise TypeError(f"timeline indices must be integers or slices, not {type(i).__name__}")
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("timeline index out of range")
        return self._span(i)

    def __iter__(self) -> Iterator[Span]:
        return (self._span(i) for i in range(len(self)))

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
        import numpy as np

        if kind not in self._kind or (note is not None and note not in self._note):
            return 0.0
        rows = np.frombuffer(self.rows, dtype=np.float64).reshape(-1, WIDTH)
        pick = rows[:, 2] == self._kind[kind]
        if note is not None:
            pick &= rows[:, 5] == self._note[note]
        # summed in span order, as timeline.total's sum() does, so the float is the same
        return float(sum((rows[pick, END] - rows[pick, START]).tolist()))
