"""The pairwise answer parser on real answers of the bundled model labelled by hand, and re-parsing at read time.

tests/data/pairwise_answers.csv holds 70 distinct answers of SmolLM2-135M-Instruct (the bundled offline model) to the
resume and essay pairwise prompts: as the tasks write them (``resume/task``, ``essay/task``: from
``python -m audit score --mode pairwise --pairwise-mode generate`` and the collection script) and with the last
instruction varied to draw out other phrasings (scripts/collect_pairwise_answers.py). ``expected`` was written by
hand, reading each answer; the parser was then extended until it agreed (headings echoing both options and a negated
mention are irregular, the article "A" opening a sentence is not the letter A).
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from audit.store.answer_parser import parse_choice
from audit.store.tables import answer_table, score_table
from audit.store.database import CHOICE_RESULTS, Store
from audit.tasks.base import ChatPrompt

ANSWERS = pd.read_csv(Path(__file__).parent / "data" / "pairwise_answers.csv", keep_default_na=False)


def test_the_labelled_set_is_real_and_covers_every_phrasing():
    assert len(ANSWERS) >= 60 and not ANSWERS.duplicated(["answer", "first", "second"]).any()
    assert set(ANSWERS["expected"]) == {"first", "second", "tie", "none"}
    text, chosen = ANSWERS["answer"], ANSWERS["expected"].isin(["first", "second"])
    for phrase in (r"\bover\b", r"\bis a better fit\b.*\bthan\b", r"^I would recommend", r"^Both\b"):
        assert text.str.contains(phrase).any(), phrase
    letters = ANSWERS["first"] == "A"
    assert (letters & chosen).sum() >= 3 and (letters & ~chosen).sum() >= 3  # letters, and the article "A …"
    assert text.str.match(r"^[AB][:.)]").any()
    names = ANSWERS[~letters & chosen]
    by_one_word = [not any(o.lower() in a.lower() for o in (f, s)) for a, f, s in
                   zip(names["answer"], names["first"], names["second"])]
    assert any(by_one_word)  # named by first name or surname alone


@pytest.mark.parametrize("row", ANSWERS.to_dict("records"), ids=lambda r: f"{r['variant']}:{r['answer'][:30]!r}")
def test_every_labelled_answer_is_classified_as_labelled(row):
    assert parse_choice(row["answer"], (row["first"], row["second"])) == row["expected"]


def test_generated_answers_are_re_read_from_the_store(tmp_path):
    """A result stored with an older classification ("none") is read with the current parser; the export shows the
    raw answer, both options, the current and the stored classification, and the scores follow the current one."""
    prompt = ChatPrompt(system="s", user="u", options=("Maria Garcia", "Emily Walsh"))
    reverse = ChatPrompt(system="s", user="u2", options=("Emily Walsh", "Maria Garcia"))
    with Store(tmp_path / "r.db") as store:
        store.register_model("fp", "m", {})
        store.save_plan(candidates=[("resume", "se", "c1", "W_F", 1, "Maria Garcia", "x"),
                                    ("resume", "se", "c2", "W_M", 1, "Emily Walsh", "y")],
                        prompts=[(p.key(), json.dumps(p.__dict__)) for p in (prompt, reverse)],
                        pairwise=[("fp", "resume", "se", "generate", 0, "c1", "c2", prompt.key()),
                                  ("fp", "resume", "se", "generate", 0, "c2", "c1", reverse.key())])
        store.save_results(CHOICE_RESULTS, ("fp", "generate"), [
            (prompt.key(), "I would recommend Emily Walsh over Maria Garcia", "none", None, None),
            (reverse.key(), "Neither", "none", None, None)])
        answers = answer_table(store).set_index("first_id")
        scores = score_table(store).set_index("candidate_id")["score"]
    assert answers.loc["c1", ["first_option", "second_option"]].tolist() == ["Maria Garcia", "Emily Walsh"]
    assert answers.loc["c1", ["answer", "choice", "stored_choice"]].tolist() == [
        "I would recommend Emily Walsh over Maria Garcia", "second", "none"]
    assert answers.loc["c2", ["choice", "stored_choice", "tie"]].tolist() == ["tie", "none", True]
    assert scores.to_dict() == {"c1": 0.25, "c2": 0.75}  # c2 chosen once (0.5) + the tie (0.25 each)
