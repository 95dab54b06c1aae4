"""Validation of score and pair tables: every failure is an AuditError naming the column, group or value at fault."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from audit.enums import Mode
from audit.errors import AuditError

SCORE_COLUMNS = ("model", "task", "subtask", "mode", "candidate_id", "group", "qualified", "score")
PAIR_COLUMNS = ("model", "task", "subtask", "mode", "pool", "candidate_a", "candidate_b", "group_a", "group_b",
                "outcome")
KEY = ("model", "task", "subtask", "mode")  # task too: two datasets may both name a subtask "default"
OUTCOMES = ("a", "b", "inconsistent")
_TEXT = ("model", "task", "subtask", "mode", "candidate_id", "group")
#: text columns kept as text, not made categories: an id per row (a category would sort every id; they are only
#: ever factorised, which codes them in order of appearance either way)
_IDS = ("candidate_id",)
#: candidate ids factorised: (each row's code, the distinct ids)
Ids = tuple[np.ndarray, pd.Index]


def is_pairwise(mode: str) -> bool:
    """``pairwise`` and its variants (e.g. ``pairwise-likelihood``) are scored from pair comparisons."""
    return str(mode).startswith(Mode.PAIRWISE)


def key_label(key: tuple) -> str:
    """``model=…, task=…, subtask=…, mode=…`` for messages."""
    return ", ".join(f"{name}={value}" for name, value in zip(KEY, key))


def _require_columns(table: pd.DataFrame, columns: tuple[str, ...], what: str) -> None:
    if not isinstance(table, pd.DataFrame):
        raise AuditError(f"{what} must be a pandas DataFrame, got {type(table).__name__}")
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise AuditError(f"{what} is missing column(s): {', '.join(missing)}")
    if table.empty:
        raise AuditError(f"{what} has no rows")


def _text_columns(table: pd.DataFrame, columns: tuple[str, ...], what: str) -> None:
    for column in columns:
        empty = table[column].isna().to_numpy()
        if empty.any():
            row = int(np.flatnonzero(empty)[0]) + 1
            raise AuditError(f"{what}: column '{column}' is empty in row {row}")
        table[column] = _as_text(table[column]) if column in _IDS else _as_text_category(table[column])


def _as_text(column: pd.Series) -> pd.Series:
    """``column`` as str (text columns as they are)."""
    if pd.api.types.is_string_dtype(column.dtype) and column.dtype != object:
        return column
    return column.astype(str)


def _as_text_category(column: pd.Series) -> pd.Series:
    """``column`` as a categorical of str (text columns are converted straight, without a copy as Python str)."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        if pd.api.types.is_string_dtype(column.cat.categories):
            return column
        names = column.cat.categories.astype(str)
        if names.is_unique:
            return column.cat.rename_categories(names)
    if pd.api.types.is_string_dtype(column.dtype) and column.dtype != object:
        return column.astype("category")
    return column.astype(str).astype("category")


def text_categories(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with its string-typed text columns already categories of str (what :func:`check_scores` makes of
    them; empty cells stay empty, for it to report), so that one conversion serves the score table's every regrouping
    (:func:`audit.engine.metric_pass.regroup` coarsens a categorical ``group`` through its categories)."""
    out = table.copy(deep=False)  # columns are replaced, never written into
    for column in (c for c in _TEXT if c in out and c not in _IDS):
        if pd.api.types.is_string_dtype(out[column].dtype) and out[column].dtype != object:
            out[column] = _as_text_category(out[column])
    return out


def _numeric(table: pd.DataFrame, column: str, what: str) -> np.ndarray:
    raw = table[column]
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(values)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        shown = raw.iloc[row]
        detail = "is empty (NaN)" if pd.isna(shown) else f"has a non-numeric or infinite value {shown!r}"
        who = f" (candidate_id={table['candidate_id'].iloc[row]})" if "candidate_id" in table else ""
        raise AuditError(f"{what}: column '{column}' {detail} in row {row + 1}{who}")
    return values


def check_scores(scores: pd.DataFrame, *, reference: str, needs_qualified: bool = True,
                 keys: tuple[np.ndarray, list[tuple[str, ...]]] | None = None) -> pd.DataFrame:
    """:func:`checked_scores`' table."""
    return checked_scores(scores, reference=reference, needs_qualified=needs_qualified, keys=keys)[0]


def checked_scores(scores: pd.DataFrame, *, reference: str, needs_qualified: bool = True,
                   keys: tuple[np.ndarray, list[tuple[str, ...]]] | None = None) -> tuple[pd.DataFrame, Ids | None]:
    """(the validated table, its candidate ids factorised by the duplicate check (None where ``keys`` were known),
    for the caller to reuse). The table is a validated copy of ``scores``: text columns as categories of str
    (candidate ids as str), ``score`` float, ``qualified`` bool.

    Checks: required columns, non-empty text fields, mode pointwise or pairwise[-variant], finite numeric scores, qualified
    in {0, 1}, no duplicate candidate (per pool), the reference group exists, and
    every group of the task (the reference included) has candidates in every (model, task, subtask, mode), and a
    qualified candidate unless ``needs_qualified`` is False (impact ratios and verdicts read no qualification label:
    only ΔEO and the metrics over qualified candidates do). ``keys``: :func:`key_codes` of these rows, already found
    free of duplicate candidates (the same rows checked under another grouping).
    """
    what = "score table"
    _require_columns(scores, SCORE_COLUMNS, what)
    table = scores.copy(deep=False)  # columns are replaced, never written into
    _text_columns(table, _TEXT, what)
    modes = table["mode"].cat.categories
    bad_modes = [m for m in modes if m != Mode.POINTWISE and not is_pairwise(m)]
    if bad_modes:
        raise AuditError(f"{what}: column 'mode' has value {bad_modes[0]!r}; expected pointwise or pairwise[-…]")
    table["score"] = _numeric(table, "score", what)
    qualified = _numeric(table, "qualified", what)
    bad = ~np.isin(qualified, (0.0, 1.0))
    if bad.any():
        value = table["qualified"].iloc[int(np.flatnonzero(bad)[0])]
        raise AuditError(f"{what}: column 'qualified' has value {value!r}; expected 0 or 1")
    table["qualified"] = qualified.astype(bool)
    return table, _check_keys(table, reference, needs_qualified, keys)


def _check_keys(table: pd.DataFrame, reference: str, needs_qualified: bool,
                known: tuple[np.ndarray, list[tuple[str, ...]]] | None) -> Ids | None:
    what = "score table"
    groups = groups_of(table)
    if reference not in groups:
        raise AuditError(f"reference group {reference!r} not found in column 'group'; "
                         f"groups are: {', '.join(groups)}")
    if len(groups) < 2:
        raise AuditError(f"{what}: column 'group' has one group ({reference!r}); bias and allocation gaps compare "
                         "each group with the reference, so at least two groups are needed")
    key_id, keys = known or key_codes(table)
    task, _ = pd.factorize(table["task"])
    group = pd.factorize(table["group"], sort=True)[0]
    ids = None if known is not None else _check_unique(table, key_id, keys)
    shape = (len(keys), len(groups))
    size = np.bincount(key_id * shape[1] + group, minlength=shape[0] * shape[1]).reshape(shape)
    n_qualified = np.bincount(key_id * shape[1] + group, weights=table["qualified"].to_numpy(),
                              minlength=shape[0] * shape[1]).reshape(shape)
    in_task = np.zeros((task.max() + 1, shape[1]), dtype=bool)
    in_task[task, group] = True
    key_task = np.zeros(shape[0], dtype=int)
    key_task[key_id] = task
    expected = in_task[key_task]
    expected[:, groups.index(reference)] = True
    checks = [(size, "no candidates")] + ([(n_qualified, "no qualified candidate")] if needs_qualified else [])
    for found, problem in checks:
        missing = np.argwhere(expected & (found == 0))
        if len(missing):
            k, g = missing[0]
            raise AuditError(f"group {groups[g]!r} has {problem} for {key_label(keys[k])}")
    return ids


def _check_unique(table: pd.DataFrame, key_id: np.ndarray, keys: list[tuple[str, ...]]) -> Ids:
    """No candidate twice in one key (and pool); the candidate ids factorised (codes, names)."""
    ids = pd.factorize(table["candidate_id"])
    ident = {"key": key_id, "id": ids[0]}
    if "pool" in table:
        ident["pool"] = pd.factorize(table["pool"])[0] + 1
    bases = [int(codes.max()) + 1 for codes in ident.values()]
    if math.prod(bases) < 2**62:  # each row packed into one integer: a sort finds a repeat (rows in order below)
        packed = np.ravel_multi_index(tuple(ident.values()), bases)
        packed.sort()
        if not (packed[1:] == packed[:-1]).any():
            return ids
    dup = pd.DataFrame(ident).duplicated().to_numpy()
    if dup.any():
        row = int(np.argmax(dup))
        raise AuditError(f"score table: candidate_id {table['candidate_id'].iloc[row]!r} appears twice for "
                         f"{key_label(keys[key_id[row]])}")
    return ids


def key_codes(table: pd.DataFrame) -> tuple[np.ndarray, list[tuple[str, ...]]]:
    """Index of each row's (model, task, subtask, mode) in the sorted list of keys, and that list."""
    combined = np.zeros(len(table), dtype=np.int64)
    for column in KEY:
        codes, uniques = pd.factorize(table[column], sort=True)
        combined = combined * len(uniques) + codes
    _, first, key_id = np.unique(combined, return_index=True, return_inverse=True)
    return key_id.ravel(), list(zip(*(table[column].iloc[first] for column in KEY)))


def groups_of(table: pd.DataFrame) -> list[str]:
    """The sorted group codes present in ``table``."""
    return sorted(table["group"].unique())


def check_pairs(pairs: pd.DataFrame) -> pd.DataFrame:
    """Validated copy of a pair table (ids and groups as str, outcome in {a, b, inconsistent}, wins in {0, 1, 2}).

    ``wins_a``/``wins_b`` count the pair's two prompts whose answer chose candidate a / b. A table without them (an
    export from before they existed) gets them from ``outcome``: a → 2/0, b → 0/2, inconsistent → 1/1, exact unless a
    pair mixes a choice with a tie or an irregular answer.
    """
    what = "pair table"
    _require_columns(pairs, PAIR_COLUMNS, what)
    table = pairs.copy()
    _text_columns(table, tuple(c for c in PAIR_COLUMNS if c != "pool"), what)
    bad = ~table["outcome"].isin(OUTCOMES)
    if bad.any():
        raise AuditError(f"{what}: column 'outcome' has value {table['outcome'][bad].iloc[0]!r}; "
                         "expected a, b or inconsistent")
    for column, side in (("wins_a", "a"), ("wins_b", "b")):
        if column not in table:
            table[column] = np.where(table["outcome"] == side, 2, np.where(table["outcome"] == "inconsistent", 1, 0))
        wins = _numeric(table, column, what)
        if not np.isin(wins, (0, 1, 2)).all():
            raise AuditError(f"{what}: column '{column}' has value {wins[~np.isin(wins, (0, 1, 2))][0]:g}; "
                             "expected 0, 1 or 2")
        table[column] = wins.astype(int)
    if (table["wins_a"] + table["wins_b"] > 2).any():
        raise AuditError(f"{what}: wins_a + wins_b exceeds the pair's 2 prompts")
    return table
