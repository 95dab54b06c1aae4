"""The recorded decisions read column by column: SQLite joins each column of the table into one text in a single
scan (``group_concat``), and NumPy or Arrow parse it, so no Python object is made per row (a big decision log's
800,000 rows read in a fraction of the time and memory of a row-by-row fetch)."""
from __future__ import annotations

import sqlite3

import numpy as np
import pandas as pd

SEPARATOR = "\x1f"  # the unit separator: joins the text columns (a text holding it is read row by row instead)
#: the columns of :data:`audit.store.RECORDED_QUERY`, each joined in one scan; values as integers where all are
COLUMNS_QUERY = """SELECT COUNT(*), group_concat(system), group_concat(pool), group_concat(grp, char(31)),
    group_concat(COALESCE(applicant, pool || '.' || position), char(31)), group_concat(CAST(value AS INTEGER)),
    SUM(value != CAST(value AS INTEGER)), SUM(instr(grp, char(31)) + instr(COALESCE(applicant, ''), char(31)) > 0)
    FROM recorded_decisions"""
VALUES_QUERY = "SELECT value FROM recorded_decisions"  # the same scan, same order: non-integer values read as they are


def recorded_columns(db: sqlite3.Connection, rows_query: str) -> pd.DataFrame:
    """The table of ``rows_query`` (:data:`audit.store.RECORDED_QUERY`: system, pool, group, value, candidate_id),
    read as columns; ``rows_query`` itself (row by row) where a text holds the separator."""
    count, systems, pools, groups, candidates, values, fractional, separated = db.execute(COLUMNS_QUERY).fetchone()
    if separated:
        return pd.read_sql_query(rows_query, db)
    if not count:
        return pd.DataFrame({"system": np.zeros(0, np.int64), "pool": np.zeros(0, np.int64),
                             "group": pd.array([], dtype="str"), "value": np.zeros(0),
                             "candidate_id": pd.array([], dtype="str")})
    if fractional:
        value = np.array(db.execute(VALUES_QUERY).fetchall(), dtype=float).reshape(-1)
    else:
        value = np.fromstring(values, dtype=np.int64, sep=",").astype(float)
    return pd.DataFrame({"system": np.fromstring(systems, dtype=np.int64, sep=","),
                         "pool": np.fromstring(pools, dtype=np.int64, sep=","),
                         "group": pd.array(groups.split(SEPARATOR), dtype="str"), "value": value,
                         "candidate_id": pd.array(candidates.split(SEPARATOR), dtype="str")})
