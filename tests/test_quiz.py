"""The "predict, then run" checker: answers and explanations come from live runs, and teachers
can hide them."""
from __future__ import annotations

import pytest

import pslab
from pslab import quiz, replay
from pslab.model import single_thread
from pslab.notebook import question as asking  # where a question's pieces and state live
from pslab.drawing.plot import flows


@pytest.fixture(autouse=True)
def answers_follow_the_environment(monkeypatch):
    monkeypatch.delenv("PSLAB_HIDE_ANSWERS", raising=False)
    asking._hidden = None
    yield
    asking._hidden = None


def wrong_answer(q: quiz.Question):
    truth = q.truth().value
    if q.kind == "number":
        return truth + 10 * (q.tolerance + 1)
    return next(c for c in q.choices if c != truth)


@pytest.mark.parametrize("key", list(quiz.QUESTIONS))
def test_every_question_checks_right_and_wrong(key, capsys):
    q = quiz.question(key)
    assert key in repr(q) and "Answer with" in repr(q)
    truth = q.truth()
    assert truth.why and len(truth.why) > 40
    why = " ".join(truth.why.split())  # printed wrapped between words (asking.WIDTH)
    q.check(truth.value)
    out = capsys.readouterr().out
    assert out.startswith("✔ Right") and why in " ".join(out.split()) and q.last is True
    q.check(wrong_answer(q))
    out = capsys.readouterr().out
    assert out.startswith("✘ Not quite") and q._show(truth.value) in out
    assert why in " ".join(out.split()) and q.last is False
    # no line wider than a projector's cell, and no word cut in two to get there
    for text in (out, repr(q)):
        assert all(len(line) <= asking.WIDTH or " " not in line for line in text.splitlines())
    words = set(" ".join(truth.why.split()).split())
    assert set(out.split()) >= words


def test_answers_are_read_off_the_runs():
    """The checker's truths agree with the runs computed here independently."""
    with single_thread():
        fig2 = replay.figure002()
        sync, asyn = replay.figure000()
        every, _ = replay.figure001(sync_time=0.0)
        three = pslab.train(mode="async", workers=3, steps=4, numerics=False)
    assert quiz.question("002.rows").truth().value == flows(fig2)[0].rows
    assert quiz.question("002.bytes").truth().value == sum(fig2.shard_bytes)
    g1 = next(r for r in asyn.history if r.worker == 0 and r.step == 0)
    assert quiz.question("000.stale").truth().value == g1.staleness
    finish = quiz.question("000.finish").truth().value
    assert finish == ("same" if sync.makespan == pytest.approx(asyn.makespan)
                      else min(("sync", sync.makespan), ("async", asyn.makespan),
                               key=lambda p: p[1])[0])
    assert quiz.question("001.idle").truth().value == pytest.approx(every.idle_time)
    assert quiz.question("start.updates").truth().value == three.updates


def test_tolerance_and_aliases(capsys):
    q = quiz.question("001.idle")
    q.check(q.truth().value + 0.04)
    assert capsys.readouterr().out.startswith("✔ Right")
    q = quiz.question("000.finish")
    q.check("  The   SAME ")  # case and spaces do not matter
    assert q.last is (q.truth().value == "same")


def test_no_prediction_and_bad_answers(capsys):
    q = quiz.question("000.stale")
    q.check(...)
    assert capsys.readouterr().out.startswith("No prediction yet") and q.last is None
    q.check("two")
    assert "Cannot check that: answer with a number" in capsys.readouterr().out
    q = quiz.question("000.finish")
    q.check("faster")
    assert "one of 'sync', 'async', 'same'" in capsys.readouterr().out


def test_teachers_can_hide_answers(capsys):
    q = quiz.question("002.rows")
    truth = q.truth()
    quiz.hide_answers()
    assert quiz.answers_hidden()
    q.check(truth.value + 1)
    out = capsys.readouterr().out
    assert "Not right" in out and str(truth.value) not in out and "Hint:" in out
    q.answer()
    assert str(truth.value) not in capsys.readouterr().out
    q.check(truth.value)  # a right answer may still be explained
    assert capsys.readouterr().out.startswith("✔ Right")
    quiz.show_answers()
    q.answer()
    assert str(truth.value) in capsys.readouterr().out


def test_environment_variable_hides_answers(monkeypatch, capsys):
    monkeypatch.setenv("PSLAB_HIDE_ANSWERS", "1")
    assert quiz.answers_hidden()
    q = quiz.question("000.stale")
    q.check(q.truth().value + 3)
    assert "hidden" in capsys.readouterr().out
    quiz.show_answers()  # an explicit call wins over the environment
    assert not quiz.answers_hidden()


def test_questions_by_notebook():
    assert {q.key for q in quiz.questions("000")} == {"000.finish", "000.stale", "000.accuracy",
                                                      "000.ssp"}
    with pytest.raises(ValueError, match="no question"):
        quiz.question("nope")


def test_each_bank_hands_out_a_fresh_question_every_time():
    from pslab.notebook import nas_questions

    for bank, key in ((quiz, "000.stale"), (nas_questions, "003.updates")):
        first = bank.question(key)
        first.check(first.truth().value)
        again = bank.question(key)
        assert again is not first and again.last is None and again._truth is None
        assert first.last is True and bank.QUESTIONS[key]._truth is None
