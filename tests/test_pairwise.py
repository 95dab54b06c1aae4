"""Answer parsing and the paper's pairwise aggregation (consistent 1, inconsistent 0.5, tie 0.25 per prompt, irregular
0); the parser's hand-labelled set of real answers is tests/test_answer_parser.py."""
from __future__ import annotations

import itertools

import pandas as pd
import pytest

from audit.store.answer_parser import parse_choice
from audit.store.pairwise import candidate_scores, choice_from_logprobs, pair_outcomes

OPTIONS = ("Maria Lopez", "James Walsh")


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("Maria Lopez", "first"),
        ("The best candidate is James Walsh.", "second"),
        ("James", "second"),
        ("maria lopez is a better fit", "first"),
        ("Both candidates are equally good.", "tie"),
        ("Maria Lopez and James Walsh are both fine", "tie"),
        ("I cannot judge.", "none"),
        ("Maria Lopez is better than James Walsh", "first"),
        ("I would recommend James Walsh over Maria Lopez", "second"),
        ("Lopez.", "first"),
        ("Mariana", "none"),
        ("", "none"),
    ],
)
def test_parse_choice(answer, expected):
    assert parse_choice(answer, OPTIONS) == expected


def test_choice_from_logprobs():
    assert choice_from_logprobs(-1.0, -2.0) == "first"
    assert choice_from_logprobs(-3.0, -2.0) == "second"
    assert choice_from_logprobs(-2.0, -2.0) == "tie"


def prompts_frame(choices: dict[tuple[str, str], str]) -> pd.DataFrame:
    """Every ordered pair of the candidates in ``choices``' keys, in one pool."""
    rows = []
    for (first, second), choice in choices.items():
        rows.append({"model": "m", "fingerprint": "f", "task": "t", "subtask": "s", "method": "generate", "pool": 0,
                     "first_id": first, "second_id": second, "first_group": first[0], "second_group": second[0],
                     "first_qualified": int(first == "A"), "second_qualified": int(second == "A"), "choice": choice, "pool_prompts": len(choices)})
    return pd.DataFrame(rows)


def test_candidate_scores_follow_the_paper():
    choices = {
        ("A", "B"): "first", ("B", "A"): "second",  # A consistently beats B: A 1, B 0
        ("A", "C"): "first", ("C", "A"): "first",  # flipped (position bias): 0.5 each
        ("B", "C"): "tie", ("C", "B"): "second",  # tie 0.25 each; then B chosen: B 0.5
    }
    scores = candidate_scores(prompts_frame(choices)).set_index("candidate_id")["score"]
    assert scores.to_dict() == {"A": 1.5, "B": 0.75, "C": 0.75}
    assert scores.sum() == pytest.approx(3.0)  # without irregular answers every pair hands out exactly one point


def test_irregular_answers_contribute_nothing():
    choices = {("A", "B"): "none", ("B", "A"): "first",  # irregular 0 each; then B chosen: B 0.5
               ("A", "C"): "none", ("C", "A"): "none",   # two irregular answers: nothing for anyone
               ("B", "C"): "tie", ("C", "B"): "tie"}     # ties: 0.25 per prompt each
    scores = candidate_scores(prompts_frame(choices)).set_index("candidate_id")["score"]
    assert scores.to_dict() == {"A": 0.0, "B": 1.0, "C": 0.5}


def test_incomplete_pools_are_left_out():
    choices = {pair: "first" for pair in itertools.permutations("ABC", 2)}
    frame = prompts_frame(choices).iloc[:-1]  # one planned prompt has no result yet
    assert candidate_scores(frame).empty


def test_pair_outcomes():
    choices = {("A", "B"): "first", ("B", "A"): "second", ("A", "C"): "first", ("C", "A"): "first",
               ("B", "C"): "tie", ("C", "B"): "second"}
    pairs = pair_outcomes(prompts_frame(choices)).set_index(["candidate_a", "candidate_b"])
    assert pairs.loc[("A", "B"), "outcome"] == "a" and not pairs.loc[("A", "B"), "flipped"]
    assert pairs.loc[("A", "C"), "outcome"] == "inconsistent" and pairs.loc[("A", "C"), "flipped"]
    assert pairs.loc[("B", "C"), "outcome"] == "inconsistent" and not pairs.loc[("B", "C"), "flipped"]
