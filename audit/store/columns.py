"""The recorded decisions read column by column: SQLite joins each column of the table into one text in a single
scan (``group_concat``), and NumPy or Arrow split it, so no Python object is made per row (a big decision log's
800,000 rows read in a fraction of the time and memory of a row-by-row fetch)."""
from __future__ import annotations

import sqlite3

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

SEPARATOR = "\x1f"  # the unit separator: joins the text columns (a text holding it is read row by row instead)
#: the columns of :data:`audit.store.database.RECORDED_QUERY`, each joined in one scan (so in one order); the values as
#: integers, with how many are not
COLUMNS_QUERY = """SELECT COUNT(*), group_concat(system), group_concat(pool), group_concat(grp, char(31)),
    group_concat(COALESCE(applicant, pool || '.' || position), char(31)), group_concat(CAST(value AS INTEGER)),
    SUM(value != CAST(value AS INTEGER)), COUNT({decided}) FROM recorded_decisions"""
#: the dates, joined in the same scan order (read only where some decision has one)
DATES_QUERY = "SELECT group_concat(COALESCE({decided}, ''), char(31)) FROM recorded_decisions"
VALUES_QUERY = "SELECT value FROM recorded_decisions"  # the same scan, same order: non-integer values read as they are


def recorded_columns(db: sqlite3.Connection, rows_query: str, decided: str) -> pd.DataFrame:
    """The table of ``rows_query`` (:data:`audit.store.database.RECORDED_QUERY`: system, pool, group, value, candidate_id,
    date), read as columns; ``rows_query`` itself (row by row) where a text holds the separator. ``decided``: the
    date column's name, or ``NULL`` in a store without one (:func:`audit.store.database.decided_column`)."""
    rows_query = rows_query.format(decided=decided)
    count, systems, pools, groups, candidates, values, fractional, dated = db.execute(
        COLUMNS_QUERY.format(decided=decided)).fetchone()
    if not count:
        return pd.read_sql_query(rows_query, db)
    groups, candidates = _texts(groups), _texts(candidates)
    dates = _texts(db.execute(DATES_QUERY.format(decided=decided)).fetchone()[0]) if dated else None
    if len(groups) != count or len(candidates) != count or (dates is not None and len(dates) != count):
        return pd.read_sql_query(rows_query, db)
    if dates is not None:
        dates[dates == ""] = pd.NA
    if fractional:
        value = np.array(db.execute(VALUES_QUERY).fetchall(), dtype=float).reshape(-1)
    else:
        value = np.fromstring(values, dtype=np.int64, sep=",").astype(float)
    return pd.DataFrame({"system": np.fromstring(systems, dtype=np.int64, sep=","),
                         "pool": np.fromstring(pools, dtype=np.int64, sep=","), "group": groups, "value": value,
                         "candidate_id": candidates, "date": dates})


def _texts(joined: str) -> pd.api.extensions.ExtensionArray:
    """``joined`` split at :data:`SEPARATOR`, as a column of str (split by Arrow: no Python string per row)."""
    return pd.array(pc.split_pattern(pa.array([joined], type=pa.large_string()), SEPARATOR)[0].values, dtype="str")
