"""Read a decision log (CSV, Parquet or JSONL; one row per applicant) into recorded decisions, checked whole before
anything is stored. Vectorised (pandas), bounded by :data:`MAX_LOG_BYTES` and :data:`MAX_LOG_ROWS`.

Rows are numbered from 1 without the CSV header (blank lines skipped), as the task loaders number them. Demographic
values that are missing, blank or ``unknown`` (any case) become the LL144 *unknown category* (``unknown`` in the
group code); values may not contain ``_`` (it joins the parts of an intersectional code). Outcomes: ``selected``
0/1, ``score`` a number, ``rank`` 1 … n within each pool of n (each rank once).
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyarrow import csv as pa_csv

from audit.errors import AuditError
from audit.metrics.ll144 import UNKNOWN, unknown_mask
from audit.store.recorded import OUTCOMES
from audit.recorded.log_arrays import Pools, dense_codes, distinct, distinct_cells, sorted_codes
from audit.recorded.log_spec import LogSpec
from audit.bounded import (MAX_COLUMNS, MAX_HEADER_BYTES, check_columns, check_line_rows, check_text, column_list,
                            csv_fields, read_bytes, read_parquet)
from audit.tasks.loaders import TABLE_SUFFIXES, utf8_text

MAX_LOG_BYTES = 256 * 2**20
"""Largest decision log file accepted (256 MiB: a few million applicants of a few short columns)."""
MAX_LOG_ROWS = 2_000_000
"""Most applicants one decision log may hold (counted on the raw bytes or the Parquet metadata, before a frame is
built)."""
MAX_LOG_DECODED = 1024 * 2**20
"""Most bytes a Parquet log's columns may take once decoded (summed batch by batch; reading stops at the cap)."""
DEFAULT_SUBTASK = "all"


@dataclass(frozen=True)
class DecisionLog:
    """A checked log: ``decisions`` (subtask, pool, position, group (a categorical of the group codes), value,
    applicant, date: ``YYYY-MM-DD`` or missing; pools numbered in sorted order of their names, positions in file
    order), its ``outcome`` kind, the ``references`` (subtask → reference
    category, given or most-selected), the ``unknown`` count of each demographic column, the source's SHA-256, row
    count and date range."""

    path: Path
    spec: LogSpec
    outcome: str
    decisions: pd.DataFrame
    references: dict[str, str]
    comparison: str  # "reference" (given in the spec) or "most-selected"
    unknown: dict[str, int]
    digest: str
    rows: int
    first_date: str
    last_date: str
    parts: dict[str, np.ndarray]  # subtask → its rows in pool and position order (as stored: no sort at import)


def read_table(path: Path) -> tuple[pd.DataFrame, str]:
    """(the log as a frame, SHA-256 of the file): CSV and JSONL cells as text, Parquet as stored."""
    suffix = path.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise AuditError(f"{path}: unsupported file type {suffix or '(none)'!r}; use one of {list(TABLE_SUFFIXES)}")
    raw = read_bytes(path, MAX_LOG_BYTES)
    digest = hashlib.sha256(raw).hexdigest()
    if suffix == ".parquet":
        frame = read_parquet(raw, path, max_rows=MAX_LOG_ROWS, max_decoded=MAX_LOG_DECODED)
    else:
        check_text(raw, path)
        check_columns(raw, path, suffix)
        check_line_rows(raw, path, MAX_LOG_ROWS, header=suffix == ".csv")
        text = utf8_text(raw, path)
        if not text.strip():
            raise AuditError(f"{path}, row 1: empty file (expected a header row naming the spec's columns)")
        frame = _read_csv(path, text, raw) if suffix == ".csv" else _read_jsonl(path, text)
    if len(frame) > MAX_LOG_ROWS:
        raise AuditError(f"{path}: {len(frame):,} rows; the limit is {MAX_LOG_ROWS:,}")
    if len(frame.columns) > MAX_COLUMNS:  # JSON lines: records after the first may add keys
        raise AuditError(f"{path}: {len(frame.columns):,} columns; the limit is {MAX_COLUMNS:,}")
    if frame.empty:
        raise AuditError(f"{path}, row 1: no decisions (the file has a header but no rows)")
    return frame.reset_index(drop=True), digest


def _read_csv(path: Path, text: str, raw: bytes) -> pd.DataFrame:
    end = text.find("\n")
    with csv_fields(MAX_HEADER_BYTES):
        header = next(csv.reader([text if end < 0 else text[:end]]), [])
    repeated = sorted({name.strip() for name, count in Counter(header).items() if count > 1})
    if repeated:
        raise AuditError(f"{path}, header row, column {repeated[0]!r}: named more than once")
    frame = _arrow_csv(raw.removeprefix(b"\xef\xbb\xbf"), header)
    if frame is not None:
        return frame
    try:
        return pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, na_filter=False,
                           skip_blank_lines=True)
    except pd.errors.ParserError as exc:
        raise AuditError(f"{path}: not valid CSV ({' '.join(str(exc).split())})") from None


def _arrow_csv(raw: bytes, header: list[str]) -> pd.DataFrame | None:
    """The CSV ``raw`` read by Arrow (every cell as text, columns of Arrow strings: no Python object per cell), as
    pandas reads it; None where Arrow and pandas may differ (a row of another width, a quoted line break, an unnamed
    column), for pandas to read it and name any error."""
    if not header or not all(header):
        return None
    try:
        table = pa_csv.read_csv(io.BytesIO(raw), parse_options=pa_csv.ParseOptions(newlines_in_values=False),
                                convert_options=pa_csv.ConvertOptions(
                                    column_types={name: pa.string() for name in header}, strings_can_be_null=False,
                                    quoted_strings_can_be_null=False))
    except pa.ArrowInvalid:
        return None
    if table.column_names != header:
        return None
    return table.to_pandas(types_mapper={pa.string(): pd.StringDtype("pyarrow", na_value=np.nan)}.get)


def _read_jsonl(path: Path, text: str) -> pd.DataFrame:
    try:
        frame = pd.read_json(io.StringIO(text), lines=True, dtype=False)
    except (ValueError, RecursionError):
        for number, line in enumerate(filter(str.strip, text.splitlines()), start=1):  # only to name the line
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):
                raise AuditError(f"{path}, row {number}: not valid JSON") from None
            if not isinstance(record, dict):
                raise AuditError(f"{path}, row {number}: expected one JSON object per line")
        raise AuditError(f"{path}: cannot be read as JSON lines") from None
    nested = [c for c in frame.columns if frame[c].dtype == object
              and frame[c].map(lambda v: isinstance(v, (dict, list))).any()]
    if nested:
        row = int(np.flatnonzero(frame[nested[0]].map(lambda v: isinstance(v, (dict, list))))[0]) + 1
        raise AuditError(f"{path}, row {row}, column {nested[0]!r}: nested value; a decision log's cells are text "
                         "or numbers")
    return frame


def _text(values: pd.Series) -> pd.Series:
    """Cells as stripped text, in Unicode NFC (so "é" typed two ways is one category); missing values empty. Only
    the non-ASCII cells are normalised (normalising is per cell)."""
    text = values.astype("string").fillna("").str.strip()
    other = ~text.str.isascii()
    if other.any():
        text = text.where(~other, text[other].str.normalize("NFC"))
    return text


def _fail(path: Path, index: int, column: str, message: str) -> AuditError:
    return AuditError(f"{path}, row {index + 1}, column {column!r}: {message}")


def _first(mask: pd.Series | np.ndarray) -> int:
    return int(np.flatnonzero(np.asarray(mask))[0])


def read_log(path: str | Path, spec: LogSpec) -> DecisionLog:
    """The checked decisions of the log at ``path`` read with ``spec``; any bad cell is an :class:`AuditError`
    naming the file, row and column. Columns of few distinct cells (demographics, pool, subtask, outcome, date) are
    made text and checked once per distinct cell (:func:`audit.recorded.log_arrays.distinct_cells`)."""
    path = Path(path)
    frame, digest = read_table(path)
    columns = [str(c) for c in frame.columns]
    frame.columns = columns
    kind, outcome_column = _outcome(path, spec, columns)
    for role, column in (("applicant", spec.applicant), *(("demographic", c) for c in spec.demographics),
                         ("pool", spec.pool), ("subtask", spec.subtask), ("date", spec.date)):
        if column is not None and column not in columns:
            raise AuditError(f"{path}, header row, column {column!r}: the spec's {role} column is not in the log; "
                             f"{column_list(columns)}")
    applicant = _text(frame[spec.applicant])
    if (applicant == "").any():
        raise _fail(path, _first(applicant == ""), spec.applicant, "missing applicant id")
    if not distinct(applicant):
        row = _first(applicant.duplicated())
        earlier = _first(applicant == applicant.iloc[row])
        raise _fail(path, row, spec.applicant, f"applicant {applicant.iloc[row]!r} also on row {earlier + 1}")
    group, unknown = _groups(path, frame, spec.demographics)
    subtasks = _names(path, frame, spec.subtask, "subtask", DEFAULT_SUBTASK)
    pools_named = _names(path, frame, spec.pool, "pool", "")
    value = _values(path, frame[outcome_column], kind, outcome_column)
    (subtask, subtask_names), (codes, pool_names) = subtasks, pools_named
    pools = Pools.of(subtask * len(pool_names) + codes)
    decisions = pd.DataFrame({"subtask": _texts(subtask_names, subtask, frame.index), "pool": codes,
                              "group": pd.Categorical.from_codes(group[0], categories=group[1]), "value": value,
                              "applicant": applicant, "position": pools.position}, index=frame.index)
    if kind == "rank" and not pools.ranked(value.to_numpy()):
        _check_ranks(path, decisions, _texts(pool_names, codes, frame.index), outcome_column)
    decisions["date"], first, last = _dates(path, frame, spec.date)
    references, comparison = _references(path, kind, spec.reference, subtasks, group, value.to_numpy())
    return DecisionLog(path, spec, kind, decisions, references, comparison, unknown, digest, len(frame), first, last,
                       pools.parts(subtask, subtask_names))


def _texts(names: list[str], codes: np.ndarray, index: pd.Index) -> pd.Series:
    """Each row's text ``names[code]`` as a pandas string column (taken by Arrow: no Python text per row)."""
    return pd.Series(pd.arrays.ArrowStringArray(pa.array(names, type=pa.large_string()).take(codes)), index=index)


def _groups(path: Path, frame: pd.DataFrame, demographics: tuple[str, ...]) -> tuple[tuple[np.ndarray, list[str]],
                                                                                       dict[str, int]]:
    """((each row's group code, the group codes' texts in sorted order), the unknown count of each demographic
    column): a row's group is its demographic values joined by ``_``, an unknown value (missing, blank or
    ``unknown``) written ``unknown``."""
    parts, unknown = [], {}
    for column in demographics:
        codes, cells = distinct_cells(frame[column])
        missing = unknown_mask(cells).to_numpy()
        if missing[codes].all():
            raise AuditError(f"{path}, rows 1–{len(frame)}, column {column!r}: every value is missing or unknown")
        values = _text(cells).where(~missing, UNKNOWN)
        joined = values.str.contains("_", regex=False).to_numpy()[codes]
        if joined.any():
            raise _fail(path, _first(joined), column, f"value {values.iloc[codes[_first(joined)]]!r} contains '_' (it "
                        "joins the parts of an intersectional code); rename the category")
        parts.append((codes, values.tolist()))
        unknown[column] = int(missing[codes].sum())
    combined = np.zeros(len(frame), dtype=np.int64)  # each row's combination of cells so far, numbered densely
    for codes, values in parts:
        used, combined = dense_codes(combined * len(values) + codes)
    first = np.empty(len(used), dtype=np.int64)  # the first row of each combination
    first[combined[::-1]] = np.arange(len(frame) - 1, -1, -1)
    texts = ["_".join(values[codes[row]] for codes, values in parts) for row in first.tolist()]
    names = sorted(set(texts))
    code = {name: number for number, name in enumerate(names)}
    return (np.array([code[text] for text in texts], dtype=np.int64)[combined], names), unknown


def _names(path: Path, frame: pd.DataFrame, column: str | None, role: str, default: str) -> tuple[np.ndarray,
                                                                                                   list[str]]:
    """(each row's code, the texts in sorted order) of the pool or subtask column (codes number the texts in that
    order); every row ``default`` where the spec names no such column."""
    if column is None:
        return np.zeros(len(frame), dtype=np.int64), [default]
    codes, cells = distinct_cells(frame[column])
    text = _text(cells)
    empty = (text == "").to_numpy()[codes]
    if empty.any():
        raise _fail(path, _first(empty), column, f"missing {role}")
    order, names = sorted_codes(text)
    return order[codes], names


def _outcome(path: Path, spec: LogSpec, columns: list[str]) -> tuple[str, str]:
    """(kind, column) of the log's one outcome."""
    if spec.outcome is not None:
        kind, column = spec.outcome
        if column not in columns:
            raise AuditError(f"{path}, header row, column {column!r}: the spec's {kind} outcome column is not in the "
                             f"log; {column_list(columns)}")
        return kind, column
    found = [c for c in OUTCOMES if c in columns]
    if not found:
        raise AuditError(f"{path}, header row, column (none): no outcome column; name one of {list(OUTCOMES)} in the "
                         "log, or give the spec's outcome: {rank: COLUMN} (or selected / score)")
    if len(found) > 1:
        raise AuditError(f"{path}, header row, columns {found}: two outcomes; a log has exactly one (give the spec's "
                         f"outcome: {{{found[0]}: {found[0]}}} to choose)")
    return found[0], found[0]


def _values(path: Path, cells: pd.Series, kind: str, column: str) -> pd.Series:
    """The outcome of every row as numbers, checked for ``kind`` (each distinct cell once)."""
    codes, distinct_text = distinct_cells(cells)
    text = _text(distinct_text)

    def check(bad_cell: np.ndarray, message: str) -> None:
        bad = bad_cell[codes]
        if bad.any():
            row = _first(bad)
            raise _fail(path, row, column, message.format(text.iloc[codes[row]]))

    check((text == "").to_numpy(), f"missing outcome (the {kind} of every applicant is needed)")
    numbers = _numbers(text)
    check(~np.isfinite(numbers.to_numpy()), f"{kind} {{!r}} is not a number")
    if kind == "selected":
        check(~numbers.isin([0.0, 1.0]).to_numpy(), "selected {!r} is not 0 or 1")
    if kind == "rank":
        check(((numbers < 1) | (numbers != numbers.round())).to_numpy(), "rank {!r} is not a whole number from 1")
    return pd.Series(numbers.to_numpy()[codes], index=cells.index)


def _numbers(text: pd.Series) -> pd.Series:
    """``text`` as floats, NaN where a cell is not a number: cast by Arrow where every cell is one (no Python object
    per cell), else by ``pd.to_numeric``."""
    try:
        values = pc.cast(pa.array(text), pa.float64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return pd.to_numeric(text, errors="coerce").astype(float)
    return pd.Series(values, index=text.index)


def _check_ranks(path: Path, decisions: pd.DataFrame, pool: pd.Series, column: str) -> None:
    """Each pool of n ranks its applicants 1 … n, each rank once."""
    keys = decisions[["subtask", "pool", "value"]]
    twice = keys.duplicated()
    if twice.any():
        row = _first(twice)
        same = (keys == keys.iloc[row]).all(axis=1)
        where = f"pool {pool.iloc[row]!r}" if pool.iloc[row] else "its subtask (no pool column: one pool per subtask)"
        raise _fail(path, row, column, f"rank {decisions['value'].iloc[row]:g} appears twice in {where} (also row "
                    f"{_first(same) + 1})")
    size = decisions.groupby(["subtask", "pool"], sort=False)["value"].transform("size")
    beyond = decisions["value"] > size
    if beyond.any():
        row = _first(beyond)
        raise _fail(path, row, column, f"rank {decisions['value'].iloc[row]:g} but its pool holds {size.iloc[row]} "
                    "applicants (ranks run 1 … n)")


def _dates(path: Path, frame: pd.DataFrame, column: str | None) -> tuple[pd.Series, str, str]:
    """(each row's decision date as ISO text ``YYYY-MM-DD`` (a time of day dropped), None where the cell is empty or
    the spec names no date column; the first and the last date, "" where none), each distinct cell read once."""
    if column is None:
        return pd.Series(None, index=frame.index, dtype=object), "", ""
    codes, cells = distinct_cells(frame[column])
    text = _text(cells)
    dates = pd.to_datetime(text.where(text != ""), errors="coerce", format="mixed")
    bad = ((dates.isna() | ~text.str.match(r"\d{4}-\d\d-\d\d(?:$|[T ])")) & (text != "")).to_numpy()[codes]
    if bad.any():  # 1/2/3 is no guess
        row = _first(bad)
        raise _fail(path, row, column, f"date {text.iloc[codes[row]]!r} not understood (use YYYY-MM-DD)")
    days = text.str.slice(0, 10).astype(object).where(text != "", None)  # the date as written (its own time zone)
    known = days.dropna()
    first, last = (known.min(), known.max()) if len(known) else ("", "")
    return pd.Series(days.to_numpy()[codes], index=frame.index, dtype=object), first, last


def selected_flags(values: pd.Series, kind: str, *, k: int = 1) -> pd.Series:
    """0/1 per applicant as LL144 counts it: the recorded selection (``selected``), scoring above the median of
    the sample (``score``), or rank ≤ ``k`` (``rank``)."""
    if kind == "selected":
        return values.astype(int)
    if kind == "score":
        return (values > values.median()).astype(int)
    return (values <= k).astype(int)


def _references(path: Path, kind: str, given: str | None, subtasks: tuple[np.ndarray, list[str]],
                groups: tuple[np.ndarray, list[str]], value: np.ndarray) -> tuple[dict[str, str], str]:
    """Subtask → reference category: ``given`` (checked against each subtask's groups), else the most-selected known
    group of the subtask (top-1 share for ranks; the first in sorted order where rates tie). ``subtasks``, ``groups``:
    each row's code and the texts in sorted order (:func:`audit.recorded.log_arrays.sorted_codes`); ``value``: each
    row's outcome."""
    (subtask, names), (group, group_names) = subtasks, groups
    if given is not None:
        holding = np.zeros(len(names), dtype=bool)
        holding[subtask[group == group_names.index(given)] if given in group_names else []] = True
        if not holding.all():
            lacking = int(np.argmin(holding))
            present = ", ".join(group_names[code] for code in np.unique(group[subtask == lacking]))
            raise AuditError(f"{path}: the spec's reference {given!r} is not a category of subtask "
                             f"{names[lacking]!r}: {present}")
        return dict.fromkeys(names, given), "reference"
    unknown = re.compile(f"(?:^|_){UNKNOWN}(?:_|$)")
    known = ~np.array([bool(unknown.search(name)) for name in group_names])[group]
    used = known | (np.bincount(subtask[known], minlength=len(names)) == 0)[subtask]  # else every row of the subtask
    values = pd.Series(value[used])
    if kind == "score":  # above the median of the subtask's scores
        flags = values.to_numpy() > values.groupby(subtask[used]).transform("median").to_numpy()
    else:
        flags = selected_flags(values, kind).to_numpy()
    pair = subtask[used] * len(group_names) + group[used]  # (subtask, group), a few of them
    counts = np.bincount(pair, minlength=len(names) * len(group_names))
    pairs = np.flatnonzero(counts)
    rates = np.bincount(pair, weights=flags, minlength=len(counts))[pairs] / counts[pairs]
    pair_subtask, pair_group = pairs // len(group_names), pairs % len(group_names)
    order = np.lexsort((pair_group, -rates, pair_subtask))  # by subtask, the highest rate first, then by name
    first = order[np.r_[True, pair_subtask[order][1:] != pair_subtask[order][:-1]]]
    return {names[s]: group_names[g] for s, g in zip(pair_subtask[first], pair_group[first])}, "most-selected"
