"""The text that :func:`audit.store.data_hash` hashes for one recorded system, made column by column: each decision
as the JSON array ``json.dumps(row, ensure_ascii=False)`` writes, one per line, with no Python object per row.

SQLite joins each column of the system's decisions into one text in a single scan (``group_concat``, in the order
of the primary key: pool, then position); Arrow splits them and joins each row's JSON text element-wise. Where a
text needs JSON escaping (a quote, a backslash, a control character) or a value is not a whole number below 10¹⁶
(Python writes those as ``1e+16`` or with decimals), :func:`rows_text` returns None and the caller encodes the rows
one by one.

At import the same text is made from the decisions just written (:func:`columns_text`, from the columns
:func:`audit.store.database.decision_columns` stores), so the run record's hash needs no second read of the store.
"""
from __future__ import annotations

import json
import math
import sqlite3

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

SEPARATOR = "\x1f"  # joins the texts in SQLite (a control character: a text holding it needs escaping anyway)
_ESCAPED = r'["\\\x00-\x1f]'  # what JSON escapes in a text written with ensure_ascii=False
COLUMNS_QUERY = """SELECT COUNT(*), group_concat(pool), group_concat(position), group_concat(grp, char(31)),
    group_concat(CAST(value AS INTEGER)), SUM(value != CAST(value AS INTEGER) OR ABS(value) >= 1e16),
    group_concat(COALESCE(applicant, ''), char(31)), SUM(applicant IS NULL), COUNT({decided})
    FROM recorded_decisions WHERE system = ?"""  # a primary-key range (group and value are in no index): read in
#                                                   pool, position order
#: read only where some decisions lack an applicant id and others have one, in the same order (ordered explicitly:
#: the applicant index covers this query, in its own order)
MISSING_QUERY = """SELECT group_concat(missing) FROM (SELECT applicant IS NULL AS missing FROM recorded_decisions
    WHERE system = ? ORDER BY pool, position)"""
#: read only where some decision has a date, in the same order
DATES_QUERY = """SELECT group_concat(COALESCE(day, ''), char(31)), group_concat(day IS NULL) FROM (SELECT {decided} AS
    day FROM recorded_decisions WHERE system = ? ORDER BY pool, position)"""


def rows_text(db: sqlite3.Connection, system: int, model: str, subtask: str, decided: str) -> bytes | None:
    """The hashed text (UTF-8) of the decisions of recorded system ``system`` (fingerprint ``model``, ``subtask``):
    per decision ``[model, subtask, pool, position, group, value, applicant]`` plus its date where it has one, in
    pool and position order, each line ending in a newline; None where a row needs the row-by-row encoder."""
    found = db.execute(COLUMNS_QUERY.format(decided=decided), (system,)).fetchone()
    count, pools, positions, groups, values, inexact, applicants, missing, dated = found
    if not count:
        return b""
    if inexact or _escaped(model) or _escaped(subtask):
        return None
    texts = [_split(groups, SEPARATOR), _split(applicants, SEPARATOR)]
    if dated:
        dates, undated = db.execute(DATES_QUERY.format(decided=decided), (system,)).fetchone()
        texts.append(_split(dates, SEPARATOR))
    if any(len(text) != count for text in texts) or any(pc.any(pc.match_substring_regex(text, _ESCAPED)).as_py()
                                                       for text in texts):
        return None
    missing = (pa.array(np.zeros(count, dtype=bool)) if not missing else pa.array(np.ones(count, dtype=bool))
               if missing == count else _flags(db.execute(MISSING_QUERY, (system,)).fetchone()[0]))
    text = lambda value: pa.scalar(value, pa.large_string())
    head = f"[{json.dumps(model, ensure_ascii=False)}, {json.dumps(subtask, ensure_ascii=False)}, "
    quoted = pc.binary_join_element_wise(text('"'), texts[1], text('"'), text(""))
    parts = [text(head), _split(pools, ","), text(", "), _split(positions, ","), text(', "'), texts[0], text('", '),
             _split(values, ","), text(".0, "), pc.if_else(missing, text("null"), quoted)]
    if dated:  # a date where the decision has one (a row without is hashed as before dates were stored)
        parts.append(pc.if_else(_flags(undated), text(""),
                                pc.binary_join_element_wise(text(', "'), texts[2], text('"'), text(""))))
    lines = pc.binary_join_element_wise(*parts, text("]\n"), text(""))
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int64)[lines.offset:lines.offset + len(lines) + 1]
    return memoryview(lines.buffers()[2])[offsets[0]:offsets[-1]].tobytes()


def _split(joined: str, separator: str) -> pa.Array:
    """``joined`` split at ``separator`` as large strings (Arrow: no Python string per part)."""
    return pc.split_pattern(pa.array([joined], type=pa.large_string()), separator)[0].values


def _flags(joined: str) -> pa.Array:
    """The 0/1 flags ``joined`` by commas (SQLite's ``group_concat`` of a condition) as booleans."""
    return pa.array(np.fromstring(joined, dtype=np.int8, sep=",").astype(bool))


def _escaped(text: str) -> bool:
    """Whether JSON writes ``text`` other than between two quotes as it is."""
    return json.dumps(text, ensure_ascii=False) != f'"{text}"'


def columns_text(model: str, subtask: str, columns: list[np.ndarray | pa.Array]) -> bytes:
    """The hashed text of :func:`rows_text` made from the stored ``columns`` of one system's decisions in pool and
    position order (:func:`audit.store.database.decision_columns`: pool, position, group, value, applicant and
    optionally date; finite values): whole numbers below 10¹⁶ written as integers with ``.0``, other values and texts
    that JSON escapes encoded one by one, as ``json.dumps`` writes them."""
    if not len(columns[0]):
        return b""
    text = lambda value: pa.scalar(value, pa.large_string())
    head = f"[{json.dumps(model, ensure_ascii=False)}, {json.dumps(subtask, ensure_ascii=False)}, "
    parts = [text(head), _integers(columns[0]), text(", "), _integers(columns[1]), text(", "), _quoted(columns[2]),
             text(", "), _numbers(columns[3]), text(", "), pc.fill_null(_quoted(columns[4]), text("null"))]
    if len(columns) > 5:  # a date where the decision has one (a row without is hashed as before dates were stored)
        parts.append(pc.fill_null(pc.binary_join_element_wise(text(", "), _quoted(columns[5]), text("")), text("")))
    lines = pc.binary_join_element_wise(*parts, text("]\n"), text(""))
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int64)[lines.offset:lines.offset + len(lines) + 1]
    return memoryview(lines.buffers()[2])[offsets[0]:offsets[-1]].tobytes()


def _integers(values: np.ndarray) -> pa.Array:
    return pc.cast(pa.array(values, type=pa.int64()), pa.large_string())


def _numbers(values: np.ndarray) -> pa.Array:
    """Each float as JSON writes it (``repr``; ``Infinity`` for an infinite one)."""
    whole = (values == np.floor(values)) & (np.abs(values) < 1e16)
    texts = pc.binary_join_element_wise(_integers(np.where(whole, values, 0).astype(np.int64)),
                                        pa.scalar(".0", pa.large_string()), pa.scalar("", pa.large_string()))
    if whole.all():
        return texts
    other = [repr(value) if math.isfinite(value) else json.dumps(value) for value in values[~whole].tolist()]
    return pc.replace_with_mask(texts, pa.array(~whole), pa.array(other, type=pa.large_string()))


def _quoted(texts: pa.Array) -> pa.Array:
    """Each text (Arrow large strings, or dictionary-encoded: each category quoted once) as a JSON string
    (``ensure_ascii=False``), null as null: between quotes, or encoded one by one where JSON escapes it (looked for in
    the bytes of all the texts at once)."""
    if isinstance(texts, pa.DictionaryArray):
        return _quoted(texts.dictionary).take(texts.indices)
    quote = pa.scalar('"', pa.large_string())
    quoted = pc.binary_join_element_wise(quote, texts, quote, pa.scalar("", pa.large_string()))
    data = texts.buffers()[2]
    data = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, dtype=np.uint8)
    if not ((data < 0x20) | (data == 0x22) | (data == 0x5C)).any():  # control characters, '"' and '\\'
        return quoted
    escaped = pc.fill_null(pc.match_substring_regex(texts, _ESCAPED), False)
    encoded = [json.dumps(value, ensure_ascii=False) for value in texts.filter(escaped).to_pylist()]
    return pc.replace_with_mask(quoted, escaped, pa.array(encoded, type=pa.large_string()))
