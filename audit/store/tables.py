"""Tables read out of the store in the columns every consumer (CLI export, metrics, pages) relies on."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from audit.enums import Reading
from audit.store.answer_parser import FIRST, SECOND, TIE
from audit.store.pairwise import candidate_scores, pair_outcomes, with_choices
from audit.store.database import Store
from audit.store.recorded import stacked

SCORE_COLUMNS = ["model", "task", "subtask", "mode", "candidate_id", "group", "qualified", "score",
                 "pool", "label_mass", "fingerprint", "date"]
"""The decision table's columns; ``date`` is a recorded decision's date (``YYYY-MM-DD``), missing elsewhere."""
ANSWER_COLUMNS = ["model", "task", "subtask", "mode", "pool", "first_id", "second_id", "first_group", "second_group",
                  "first_option", "second_option", "answer", "choice", "stored_choice", "regular", "tie",
                  "fingerprint"]
ANSWER_FLAGS = ["model", "task", "subtask", "mode", "regular", "tie"]
"""An answer's flags without its texts (:func:`answer_flags`): the pairwise diagnostics read nothing else."""
PAIR_COLUMNS = ["model", "task", "subtask", "mode", "pool", "candidate_a", "candidate_b", "group_a", "group_b",
                "outcome", "wins_a", "wins_b", "flipped", "fingerprint"]


def design_table(store: Store) -> pd.DataFrame:
    """One row per (task, subtask): the audit design stored with its results (see :mod:`audit.design`)."""
    rows = [(*design.row()[:4], " ".join(f"{label}={value:g}" for label, value in zip(design.labels, design.relevance)),
             design.qualification, ", ".join(design.groupings), design.prompt_hash)
            for design in store.designs().values()]
    return pd.DataFrame(rows, columns=["task", "subtask", "reference", "pools", "labels", "qualification", "groupings",
                                       "prompt_hash"]).sort_values(["task", "subtask"], ignore_index=True)


def pairwise_mode(method: pd.Series) -> pd.Series:
    """``pairwise`` for the paper's generate-and-parse method, ``pairwise-likelihood`` for the fast one."""
    return method.map({reading: reading.pairwise_mode for reading in Reading})


def pairwise_prompts(store: Store) -> pd.DataFrame:
    """The store's pairwise prompts with generated answers classified by the current parser (see
    :func:`audit.store.pairwise.with_choices`)."""
    return with_choices(store.pairwise_table())


def score_table(store: Store) -> pd.DataFrame:
    """One row per (model, task, subtask, mode, candidate): pointwise Σ P_n(y)·γ_y, pairwise summed credits."""
    return scores_of(store.pointwise_table(), store.pairwise_table())


def scores_of(pointwise: pd.DataFrame, prompts: pd.DataFrame) -> pd.DataFrame:
    """:func:`score_table` from the store's pointwise and pairwise tables, already read."""
    return dated_scores(pointwise, prompts)[0]


def dated_scores(pointwise: pd.DataFrame, prompts: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    """:func:`scores_of` and each of its rows' time of record (the pointwise table's ``created``; NaN for the rows
    of pairwise modes)."""
    prompts = with_choices(prompts)
    pairwise = candidate_scores(prompts).assign(label_mass=pd.NA) if len(prompts) else pd.DataFrame()
    if len(pairwise):
        pairwise["mode"] = pairwise_mode(pairwise["method"])
    frames = [f.reindex(columns=SCORE_COLUMNS) for f in (pointwise, pairwise) if len(f)]
    table = stacked(frames) if frames else pd.DataFrame(columns=SCORE_COLUMNS)
    table["qualified"] = table["qualified"].astype(int)
    table["pool"] = table["pool"].astype("Int64")
    table["date"] = table["date"].astype(object).where(table["date"].notna(), None)
    created = np.r_[pointwise["created"].to_numpy(dtype=float, na_value=np.nan) if len(pointwise) else [],
                    np.full(len(pairwise), np.nan)]
    order = sorted_order(table, ["model", "task", "subtask", "mode", "group", "candidate_id"])
    return table.take(order).reset_index(drop=True), created[order]


def sorted_order(table: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """The row positions of ``table`` sorted by ``columns`` as ``sort_values`` sorts them (stable, missing values
    last), by Arrow's multi-column sort (about twice as fast on a big log's text columns; a categorical of text
    whose categories are sorted by its codes); pandas' own where a column is not text."""
    try:
        keys = pa.table({name: _sort_key(table[name]) for name in columns})
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return table.reset_index(drop=True).sort_values(columns).index.to_numpy()
    if not all(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_integer(t)
               for t in keys.schema.types):
        return table.reset_index(drop=True).sort_values(columns).index.to_numpy()
    return pc.sort_indices(keys, sort_keys=[(name, "ascending") for name in columns]).to_numpy()


def _sort_key(column: pd.Series) -> pa.Array:
    """``column`` as Arrow sorts it: a categorical of text with sorted categories and no missing value as its codes
    (the same order, no text per row); any other column as it is (a non-text one sends :func:`sorted_order` to
    pandas)."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        names, codes = column.cat.categories, column.cat.codes.to_numpy()
        if pd.api.types.is_string_dtype(names) and names.is_monotonic_increasing and (codes >= 0).all():
            return pa.array(codes)
        return pa.array(column.astype(object))
    return pa.array(column)


def pair_table(store: Store) -> pd.DataFrame:
    """One row per unordered pairwise pair asked in both orders, with its consistent outcome."""
    return pairs_of(store.pairwise_table())


def pairs_of(prompts: pd.DataFrame) -> pd.DataFrame:
    """:func:`pair_table` from the store's pairwise table, already read."""
    prompts = with_choices(prompts)
    if prompts.empty:
        return pd.DataFrame(columns=PAIR_COLUMNS)
    pairs = pair_outcomes(prompts)
    pairs["mode"] = pairwise_mode(pairs["method"])
    return pairs.reindex(columns=PAIR_COLUMNS).sort_values(PAIR_COLUMNS[:7], ignore_index=True)


def answer_table(store: Store) -> pd.DataFrame:
    """One row per pairwise prompt (each order): the two options, the raw answer, its choice by the current parser
    (``stored_choice``: as classified when scored), regular and tie flags."""
    prompts = _flagged(pairwise_prompts(store))
    options = [json.loads(o) for o in prompts["options"]]
    prompts["first_option"], prompts["second_option"] = [o[0] for o in options], [o[1] for o in options]
    return prompts.reindex(columns=ANSWER_COLUMNS).sort_values(ANSWER_COLUMNS[:7], ignore_index=True)


def answer_flags(prompts: pd.DataFrame) -> pd.DataFrame:
    """:func:`answer_table`'s :data:`ANSWER_FLAGS` (no texts, unsorted) from the store's pairwise table, already
    read."""
    return _flagged(with_choices(prompts)).reindex(columns=ANSWER_FLAGS)


def _flagged(prompts: pd.DataFrame) -> pd.DataFrame:
    """Pairwise prompts with their choices, with ``mode`` and the ``regular`` (first or second) and ``tie`` flags."""
    return prompts.assign(mode=pairwise_mode(prompts["method"]), regular=prompts["choice"].isin([FIRST, SECOND]),
                          tie=prompts["choice"] == TIE)
