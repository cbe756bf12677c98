"""A predict-then-run question: its text, its choices, and an experiment whose runs give the
answer and the explanation (the pieces `pslab.quiz` and the NAS questions are made of).

It imports no run or figure itself: each Question holds a function that makes its runs, so the
question banks (pslab/notebook/quiz.py, nas_questions.py, pipeline_questions.py) build on it
without importing each other. A bank is a `Bank` of questions by key; `bank.question(key)`
hands out a fresh copy, so each notebook cell checks its own.
"""
from __future__ import annotations

import math
import os
import textwrap
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, NamedTuple

import numpy as np

from ..model import single_thread

_hidden: bool | None = None  # None: follow the environment variable


def hide_answers(hidden: bool = True) -> None:
    """Hide (or, with False, show) the correct answers in this kernel, whatever the env says."""
    global _hidden
    if not isinstance(hidden, bool):  # 'no' is truthy: it would hide the answers
        raise ValueError(f"hidden must be True or False (got {hidden!r})")
    _hidden = hidden


def show_answers() -> None:
    hide_answers(False)


def answers_hidden() -> bool:
    if _hidden is not None:
        return _hidden
    return os.environ.get("PSLAB_HIDE_ANSWERS", "").strip().lower() in {"1", "true", "yes", "on"}


class Truth(NamedTuple):
    """What the runs say: the answer and the reason, with the numbers that show it."""

    value: Any
    why: str


@dataclass
class Question:
    """One "predict, then run" question.

    kind "choice": the answer is one of `choices` (case and spaces ignored; `aliases` maps
    other words to a choice). kind "number": right when within `tolerance` (absolute) of the
    runs' value. `experiment()` returns the Truth; it runs once, on first use.
    """

    key: str
    prompt: str
    experiment: Callable[[], Truth]
    kind: str = "choice"
    choices: tuple[str, ...] = ()
    aliases: dict[str, str] = field(default_factory=dict)
    tolerance: float = 0.0
    unit: str = ""
    hint: str = ""
    last: bool | None = None  # the result of the latest check
    _truth: Truth | None = field(default=None, repr=False)

    def truth(self) -> Truth:
        if self._truth is None:
            with single_thread():  # the same numbers on any machine (see single_thread)
                self._truth = self.experiment()
        return self._truth

    def _normalise(self, answer: Any) -> Any:
        if self.kind == "number":
            if isinstance(answer, bool) or not isinstance(answer, (int, float, np.number)):
                raise ValueError(f"answer with a number{' in ' + self.unit if self.unit else ''}"
                                 f" (got {answer!r})")
            return float(answer)
        text = " ".join(str(answer).strip().lower().split())
        text = self.aliases.get(text, text)
        if text not in self.choices:
            raise ValueError(f"answer with one of {', '.join(map(repr, self.choices))} "
                             f"(got {answer!r})")
        return text

    def is_right(self, answer: Any) -> bool:
        value, truth = self._normalise(answer), self.truth().value
        if self.kind == "number":
            return math.isclose(value, truth, rel_tol=0.0, abs_tol=self.tolerance + 1e-9)
        return value == truth

    def check(self, answer: Any) -> None:
        """Print whether `answer` is right, and why (from the runs)."""
        if answer is Ellipsis or answer is None:
            self.last = None
            _say(f"No prediction yet: replace ... with your answer ({self._form()}) and run "
                  "the cell again.")
            return
        try:
            right = self.is_right(answer)
        except ValueError as exc:
            self.last = None
            _say(f"Cannot check that: {exc}.")
            return
        self.last = right
        truth = self.truth()
        if right:
            _say(f"✔ Right: {self._show(truth.value)}.")
            _say(f"Why: {truth.why}")
        elif answers_hidden():
            _say("✘ Not right. (Answers are hidden: change the set-up, run it, and look "
                  "again.)")
            if self.hint:
                _say(f"Hint: {self.hint}")
        else:
            _say(f"✘ Not quite: you said {self._show(self._normalise(answer))}, the runs say "
                  f"{self._show(truth.value)}.")
            _say(f"Why: {truth.why}")

    def answer(self) -> None:
        """Print the answer and why, unless answers are hidden."""
        if answers_hidden():
            _say("Answers are hidden in this notebook.")
            return
        truth = self.truth()
        _say(f"Answer: {self._show(truth.value)}.\nWhy: {truth.why}")

    def _show(self, value: Any) -> str:
        if self.kind == "number":
            return f"{value:g}{' ' + self.unit if self.unit else ''}"
        return repr(value)

    def _form(self) -> str:
        if self.kind == "number":
            return f"a number{' in ' + self.unit if self.unit else ''}"
        return "one of " + ", ".join(map(repr, self.choices))

    def __repr__(self) -> str:
        return _wrap(f"Question {self.key}: {self.prompt}") + f"\n  Answer with {self._form()}."

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))


class Bank(dict):
    """Questions by their key, each handed out fresh by `question`."""

    def __init__(self, questions: Iterable[Question] = ()):
        super().__init__((q.key, q) for q in questions)

    def add(self, questions: Iterable[Question]) -> None:
        self.update((q.key, q) for q in questions)

    def question(self, key: str) -> Question:
        """A fresh copy of the question `key` (nothing checked, no experiment run yet)."""
        if not isinstance(key, str) or key not in self:
            raise ValueError(f"no question {key!r}: key must be one of {', '.join(self)}")
        return replace(self[key], last=None, _truth=None)


WIDTH = 72  # characters: a notebook cell on a 1024 px screen with the file browser open


def _wrap(text: str) -> str:
    """Lines broken between words at WIDTH, so no output wraps in the middle of a word."""
    return "\n".join(textwrap.fill(line, WIDTH, break_long_words=False, break_on_hyphens=False)
                     for line in text.split("\n"))


def _say(text: str) -> None:
    print(_wrap(text))
