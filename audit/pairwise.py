"""Pairwise answers → choices → candidate scores (RABBI paper, section 3.2).

Every pair of a pool is asked in both orders. Per prompt, the chosen candidate gets 0.5 and a tie (or an
answer naming neither or both candidates) gives 0.25 to each. Summed over a pair's two prompts this is the
paper's rule exactly: a consistent win scores 1 (0 for the loser), an inconsistent (flipped) pair 0.5 each,
and a tie 0.25 per prompt. A candidate's score is the sum over its pool opponents.
"""
from __future__ import annotations

import re
from typing import Sequence

import numpy as np
import pandas as pd

FIRST, SECOND, TIE, NONE = "first", "second", "tie", "none"
TIE_WORDS = re.compile(r"\b(both|either|equally|tie|tied|same)\b", re.IGNORECASE)
KEYS = ["model", "fingerprint", "task", "subtask", "method", "pool"]


def parse_choice(answer: str, options: Sequence[str]) -> str:
    """Which option a free-text answer names: ``first``, ``second``, ``tie`` or ``none`` (irregular).

    An option counts as named when its full text or its first word (a first name) appears as a whole word,
    case-insensitively. Exactly one named option is a choice; tie words ("both", "equally", …) make a tie;
    anything else is irregular.
    """
    named = [option_named(answer, option) for option in options]
    if named.count(True) == 1:
        return FIRST if named[0] else SECOND
    if TIE_WORDS.search(answer):
        return TIE
    return NONE


def option_named(answer: str, option: str) -> bool:
    words = option.split()
    forms = {option} | ({words[0]} if len(words) > 1 else set())
    return any(re.search(rf"(?<!\w){re.escape(form)}(?!\w)", answer, re.IGNORECASE) for form in forms)


def choice_from_logprobs(logp_first: float, logp_second: float) -> str:
    """The likelihood method's choice: the option the model finds more probable (exact equality is a tie)."""
    if logp_first == logp_second:
        return TIE
    return FIRST if logp_first > logp_second else SECOND


def complete_pools(prompts: pd.DataFrame) -> pd.DataFrame:
    """Only pools whose every planned prompt has a result (a partial pool would give partial sums)."""
    answered = prompts.groupby(KEYS, dropna=False)["choice"].transform("size")
    return prompts[answered == prompts["pool_prompts"]]


def candidate_scores(prompts: pd.DataFrame) -> pd.DataFrame:
    """One row per candidate of each complete pool: ``score`` = Σ per-prompt credits (see module docstring)."""
    prompts = complete_pools(prompts)
    first_credit = np.select([prompts["choice"] == FIRST, prompts["choice"] == SECOND], [0.5, 0.0], 0.25)
    second_credit = np.select([prompts["choice"] == SECOND, prompts["choice"] == FIRST], [0.5, 0.0], 0.25)
    credits = pd.concat([
        prompts[KEYS].assign(candidate_id=prompts["first_id"], group=prompts["first_group"],
                             qualified=prompts["first_qualified"], score=first_credit),
        prompts[KEYS].assign(candidate_id=prompts["second_id"], group=prompts["second_group"],
                             qualified=prompts["second_qualified"], score=second_credit),
    ])
    return credits.groupby(KEYS + ["candidate_id", "group", "qualified"], dropna=False, as_index=False)["score"].sum()


def pair_outcomes(prompts: pd.DataFrame) -> pd.DataFrame:
    """One row per unordered pair with both orders answered.

    ``outcome`` is ``a`` or ``b`` for a consistent preference (both orders chose that candidate) and
    ``inconsistent`` otherwise; ``wins_a``/``wins_b`` count the two prompts whose answer chose a / b (the signed
    pairwise δ counts these); ``flipped`` marks pairs where both answers were regular but disagree.
    """
    frame = prompts.assign(
        candidate_a=prompts[["first_id", "second_id"]].min(axis=1),
        candidate_b=prompts[["first_id", "second_id"]].max(axis=1),
        chosen=np.select([prompts["choice"] == FIRST, prompts["choice"] == SECOND],
                         [prompts["first_id"], prompts["second_id"]], ""),
    )
    frame["group_a"] = np.where(frame["first_id"] == frame["candidate_a"], frame["first_group"], frame["second_group"])
    frame["group_b"] = np.where(frame["first_id"] == frame["candidate_a"], frame["second_group"], frame["first_group"])
    pair_keys = KEYS + ["candidate_a", "candidate_b", "group_a", "group_b"]
    grouped = frame.groupby(pair_keys, dropna=False)
    frame["won_a"], frame["won_b"] = frame["chosen"] == frame["candidate_a"], frame["chosen"] == frame["candidate_b"]
    summary = grouped.agg(prompts=("choice", "size"), chosen_first=("chosen", "first"), chosen_last=("chosen", "last"),
                          wins_a=("won_a", "sum"), wins_b=("won_b", "sum")).reset_index()
    summary = summary[summary["prompts"] == 2]
    consistent = (summary["chosen_first"] == summary["chosen_last"]) & (summary["chosen_first"] != "")
    summary["outcome"] = np.where(consistent & (summary["chosen_first"] == summary["candidate_a"]), "a",
                                  np.where(consistent, "b", "inconsistent"))
    summary["flipped"] = (summary["wins_a"] + summary["wins_b"] == 2) & ~consistent
    return summary.drop(columns=["prompts", "chosen_first", "chosen_last"])
