"""pslab's public surface as data, for tests/test_public_surface.py: each entry, the parameters
its signature declares (or, for `**settings`, the fields it accepts), and the bad values a
parameter of that type can get, by class. The cases are the product: entry x parameter x value.

A parameter's kind comes from its type hint ("int", "float | None", "Sequence[int]", ...), so a
new parameter is walked as soon as it is declared; an entry lists only what its signature
cannot say: the cheap valid arguments the bad one is added to, and the values of a class that
are *allowed* there (seed=0, jitter=0, bandwidth=inf), each a statement of the entry's contract.
"""
from __future__ import annotations

import dataclasses
import importlib
import inspect
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

NAN, INF = math.nan, math.inf


class Slot:
    """A value only the test can make (a Run, a folder): named at collection, filled at call."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}>"


RUN, RUNS = Slot("run"), Slot("runs")

# (class, value): what a careless or curious student passes, by the parameter's kind
BAD: dict[str, list[tuple[str, Any]]] = {
    "int": [("type", "3"), ("type", 2.5), ("type", True), ("type", [3]), ("non-finite", NAN),
            ("non-finite", INF), ("non-finite", -INF), ("size", 0), ("size", -1),
            ("size", 10**30)],
    "float": [("type", "0.5"), ("type", True), ("type", [0.5]), ("non-finite", NAN),
              ("non-finite", INF), ("non-finite", -INF), ("size", 0.0), ("size", -1.0),
              ("size", 1e300)],
    "bool": [("type", "yes"), ("type", 2), ("type", 0.5)],
    "name": [("unknown", "bogus"), ("type", 5)],
    "text": [("type", 5)],
    "ints": [("type", 5), ("type", "ab"), ("size", []), ("non-finite", [NAN]), ("type", [2.5]),
             ("size", [-1]), ("size", [10**30])],
    "floats": [("type", 5), ("type", "ab"), ("size", []), ("non-finite", [NAN]),
               ("non-finite", [INF]), ("size", [-1.0])],
    "pair": [("type", 5), ("length", (4.0,)), ("length", (4.0, 3.0, 2.0)),
             ("non-finite", (NAN, 3.0)), ("size", (0.0, 3.0)), ("size", (1e300, 3.0))],
    "grid": [("type", 5), ("type", [1.0, 2.0]), ("length", []), ("non-finite", [[NAN]]),
             ("size", [[-1.0]])],
    "mapping": [("type", 5), ("type", [1]), ("size", {-1: 1}), ("size", {0: -1}),
                ("type", {"a": 1})],
    "runs": [("type", "run"), ("type", 5), ("size", []), ("type", [RUN, 3])],
    "object": [("type", "x"), ("type", 5)],
    "path": [("type", 5), ("type", 2.5)],
}
TEXT = ("label", "title", "prefix")  # free text: any string, so only other types are bad


def kind(name: str, hint: str) -> str:
    """The kind of a parameter, read from its type hint (a string: `from __future__`)."""
    h = hint.replace(" ", "")
    if "Run" in h or "Search" in h.split("|")[0]:
        return "runs"
    if h.startswith("tuple[float,float]"):
        return "pair"
    if "Sequence[Sequence[float]]" in h:
        return "grid"
    if h.startswith(("Sequence[", "list[", "tuple[")):
        return "ints" if "int" in h else "floats" if "float" in h else "labels"
    if h.startswith("dict[") and "None" in h or h.startswith("dict[int"):
        return "mapping"
    if "Path" in h:
        return "path"
    for word in ("bool", "float", "int"):
        if word in h.split("|"):
            return word
    if "str" in h.split("|"):
        return "text" if name in TEXT else "name"
    return "object"


def resolve(dotted: str) -> Any:
    """The object a dotted name names, as a user typing it reaches it: attributes from the top
    package down (so `pslab.nas.search` is the function the package exports), a submodule
    imported where no attribute has the name yet; LookupError naming what is missing."""
    parts = dotted.split(".")
    obj = importlib.import_module(parts[0])
    for i, attr in enumerate(parts[1:], start=2):
        try:
            obj = getattr(obj, attr)
        except AttributeError:
            try:
                obj = importlib.import_module(".".join(parts[:i]))
            except ModuleNotFoundError:
                raise LookupError(f"{'.'.join(parts[:i])} (in {dotted})") from None
    return obj


@dataclass(frozen=True)
class Entry:
    """One public entry. target: dotted name of the callable, or a Slot the test fills (a
    built dashboard's `set`). base: valid, cheap arguments. allowed: param -> values of a bad
    class that are fine here. hints: the fields a `**settings` entry takes, with their types.
    count: runs a `labels` parameter must match."""

    target: str
    base: dict[str, Any] = field(default_factory=dict)
    allowed: dict[str, tuple] = field(default_factory=dict)
    hints: dict[str, str] = field(default_factory=dict)
    count: int = 1
    label: str = ""

    @property
    def name(self) -> str:
        return self.label or self.target

    def resolve(self) -> Callable[..., Any]:
        return resolve(self.target)

    def parameters(self) -> dict[str, str]:
        """name -> type hint, from the signature (and `hints` for **settings)."""
        params = {}
        for p in inspect.signature(self.resolve()).parameters.values():
            if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL) or p.name == "self":
                continue
            hint = p.annotation if isinstance(p.annotation, str) else getattr(
                p.annotation, "__name__", "object")
            if p.default is None and "None" not in hint:
                hint += " | None"
            params[p.name] = hint
        return {**params, **self.hints}


@dataclass(frozen=True)
class Case:
    entry: Entry
    param: str
    cls: str
    value: Any

    @property
    def id(self) -> str:
        return f"{self.entry.name}-{self.param}-{self.cls}-{self.value!r}"[:90]


def bad_values(entry: Entry, name: str, hint: str) -> Iterator[tuple[str, Any]]:
    k = kind(name, hint)
    if k == "labels":  # one per run: a list of another length drops or misnames a run
        yield from [("length", ["a"] * (entry.count + 1)), ("length", ["a"] * (entry.count - 1)),
                    ("type", 5), ("type", "ab")]
    else:
        yield from BAD[k]
    if "None" not in hint.replace(" ", "").split("|"):
        yield ("type", None)


def same(a: Any, b: Any) -> bool:
    """Equality that treats nan as nan and tells True from 1 (a bad value may equal an allowed
    one otherwise: 0.0 == False)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def cases(entries: list[Entry]) -> list[Case]:
    out = []
    for entry in entries:
        for name, hint in entry.parameters().items():
            allowed = entry.allowed.get(name, ())
            out += [Case(entry, name, cls, v) for cls, v in bad_values(entry, name, hint)
                    if not any(same(v, ok) for ok in allowed)]
        out.append(Case(entry, "bogus_option", "unknown", 1))  # an option it does not have
    return out


def settings_hints(cls: type) -> dict[str, str]:
    """The fields of a settings dataclass, as **kwargs hints."""
    return {f.name: str(f.type) for f in dataclasses.fields(cls)}
