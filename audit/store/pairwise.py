"""Pairwise answers → choices → candidate scores (RABBI paper, section 3.2).

Every pair of a pool is asked in both orders. Per prompt, the chosen candidate gets 0.5, a tie gives 0.25 to each,
and an irregular answer (naming no one the parser can tell, see :mod:`audit.store.answer_parser`) gives 0, as in the paper's
code. Summed over a pair's two prompts this is the paper's rule: a consistent win scores 1 (0 for the loser), an
inconsistent (flipped) pair 0.5 each, and a tie 0.25 per prompt. A candidate's score is the sum over its pool
opponents. Generated answers are re-read from their stored text whenever results are read (:func:`with_choices`), so
a store scored with an older parser gets the current classification.
"""
from __future__ import annotations

import json
from functools import lru_cache

import numpy as np
import pandas as pd

from audit.enums import Reading
from audit.store.answer_parser import FIRST, SECOND, TIE, parse_choice

KEYS = ["model", "fingerprint", "task", "subtask", "method", "pool"]


def with_choices(prompts: pd.DataFrame) -> pd.DataFrame:
    """``prompts`` (the store's pairwise table) with ``choice`` re-derived from the raw ``answer`` and the prompt's
    ``options`` (JSON list) for the ``generate`` method; the choice recorded at scoring time is kept as
    ``stored_choice``. Likelihood choices come from log-probabilities and are kept as stored."""
    out = prompts.assign(stored_choice=prompts["choice"])
    generated = (out["method"] == Reading.GENERATE).to_numpy()
    if generated.any():
        cases = out.loc[generated, ["answer", "options"]].drop_duplicates()
        parsed = {(a, o): _parsed(a, o) for a, o in cases.itertuples(index=False)}
        out.loc[generated, "choice"] = [parsed[k] for k in zip(out.loc[generated, "answer"],
                                                                out.loc[generated, "options"])]
    return out


@lru_cache(maxsize=8192)
def _parsed(answer: str, options: str) -> str:
    """:func:`parse_choice` of ``answer`` to the prompt's ``options`` (JSON list), once per process: a store read
    derives the choices for the score table and again for the pair table."""
    return parse_choice(answer, json.loads(options))


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
    choice = prompts["choice"]
    first_credit = np.select([choice == FIRST, choice == TIE], [0.5, 0.25], 0.0)
    second_credit = np.select([choice == SECOND, choice == TIE], [0.5, 0.25], 0.0)
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
    first, second = prompts["first_id"], prompts["second_id"]
    frame = prompts.assign(
        candidate_a=first.where(first <= second, second),  # row-wise min and max (a frame's min(axis=1) of text
        candidate_b=first.where(first >= second, second),  # columns loads pyarrow's query engine)
        chosen=np.select([prompts["choice"] == FIRST, prompts["choice"] == SECOND],
                         [prompts["first_id"], prompts["second_id"]], ""),
    )
    frame["group_a"] = np.where(frame["first_id"] == frame["candidate_a"], frame["first_group"], frame["second_group"])
    frame["group_b"] = np.where(frame["first_id"] == frame["candidate_a"], frame["second_group"], frame["first_group"])
    pair_keys = KEYS + ["candidate_a", "candidate_b", "group_a", "group_b"]
    frame["won_a"], frame["won_b"] = frame["chosen"] == frame["candidate_a"], frame["chosen"] == frame["candidate_b"]
    grouped = frame.groupby(pair_keys, dropna=False)
    summary = grouped.agg(prompts=("choice", "size"), chosen_first=("chosen", "first"), chosen_last=("chosen", "last"),
                          wins_a=("won_a", "sum"), wins_b=("won_b", "sum")).reset_index()
    summary = summary[summary["prompts"] == 2]
    consistent = (summary["chosen_first"] == summary["chosen_last"]) & (summary["chosen_first"] != "")
    summary["outcome"] = np.where(consistent & (summary["chosen_first"] == summary["candidate_a"]), "a",
                                  np.where(consistent, "b", "inconsistent"))
    summary["flipped"] = (summary["wins_a"] + summary["wins_b"] == 2) & ~consistent
    return summary.drop(columns=["prompts", "chosen_first", "chosen_last"])
