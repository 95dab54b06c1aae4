"""Reading user task files safely: a size cap, strict UTF-8, and rows numbered for error messages.

Rows are numbered from 1 and do not count a CSV header row, so "row 3" is the third candidate of the file.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

from audit.bounded import (MAX_COLUMNS, check_columns, check_line_rows, check_text, csv_fields, read_bytes,
                            read_parquet)
from audit.errors import AuditError
from audit.paths import cache_dir

MAX_BYTES = 20 * 1024 * 1024
"""Largest task data file accepted (20 MiB): ample for tens of thousands of candidate texts."""
MAX_ROWS = 100_000
"""Most candidates one data file may hold (counted on the raw bytes, before rows are built)."""
MAX_DECODED = 64 * 2**20
"""Most bytes a Parquet file's columns may take once decoded (summed batch by batch; reading stops at the cap)."""
TABLE_SUFFIXES = (".csv", ".parquet", ".jsonl")

Row = dict[str, Any]


def save_upload(name: str, content: bytes, allowed: tuple[str, ...]) -> Path:
    """Keep an uploaded file under the cache, named by the SHA-256 of its content (the user's file name only
    lends its suffix, which must be one of ``allowed``): the same upload is one file, and a run can be repeated."""
    suffix = Path(name).suffix.lower()
    if suffix not in allowed:
        raise AuditError(f"{name}: unsupported file type {suffix or '(none)'!r}; use one of {list(allowed)}")
    if len(content) > MAX_BYTES:
        raise AuditError(f"{name}: file is {len(content) / 2**20:.1f} MiB; the limit is {MAX_BYTES // 2**20} MiB")
    target = cache_dir() / "uploads" / f"{hashlib.sha256(content).hexdigest()[:32]}{suffix}"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(target.suffix + ".partial")
        partial.write_bytes(content)
        partial.replace(target)
    return target


def read_text(path: Path) -> str:
    """The file (a regular file of at most :data:`MAX_BYTES`) as text; an :class:`AuditError` naming the line if it
    is not UTF-8 (a leading BOM is dropped)."""
    return utf8_text(read_bytes(path, MAX_BYTES), path)


def utf8_text(raw: bytes, path: Path) -> str:
    """``raw`` decoded as UTF-8 (a leading BOM dropped); an :class:`AuditError` naming the line of the first bad
    byte if it is not UTF-8."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise AuditError(f"{path}, line {line}: not UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
                         "save the file as UTF-8") from None


def read_rows(path: Path) -> list[Row]:
    """Rows of a CSV (with header), Parquet or JSONL (one object per line) file, values as read."""
    suffix = path.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise AuditError(f"{path}: unsupported file type {suffix or '(none)'!r}; use one of {list(TABLE_SUFFIXES)}")
    raw = read_bytes(path, MAX_BYTES)
    if suffix == ".parquet":
        return read_parquet(raw, path, max_rows=MAX_ROWS, max_decoded=MAX_DECODED).to_dict(orient="records")
    check_text(raw, path)
    check_columns(raw, path, suffix)
    check_line_rows(raw, path, MAX_ROWS, header=suffix == ".csv")
    text = utf8_text(raw, path)
    if suffix == ".csv":
        return _read_csv(path, text)
    rows = _read_jsonl(path, text)
    count = len(columns_of(rows))
    if count > MAX_COLUMNS:  # records after the first may add keys
        raise AuditError(f"{path}: {count:,} columns; the limit is {MAX_COLUMNS:,}")
    return rows


def _read_csv(path: Path, text: str) -> list[Row]:
    """Rows of a CSV file; a repeated header name, a row with more or fewer fields than the header, or a field the
    csv module cannot take is an :class:`AuditError` naming the row."""
    reader = csv.reader(io.StringIO(text, newline=""))
    with csv_fields(MAX_BYTES):  # a field may be as long as the file (the default limit is 128 KiB)
        try:
            header = next(reader, None)
            if not header:
                raise AuditError(f"{path}: empty file (expected a header row)")
            repeated = sorted(name for name, count in Counter(header).items() if count > 1)
            if repeated:
                raise AuditError(f"{path}: header names column(s) {repeated} more than once")
            rows = []
            for number, fields in enumerate(filter(None, reader), start=1):  # blank lines are skipped
                if len(fields) != len(header):
                    raise AuditError(f"{path}, row {number}: {len(fields)} fields but the header names "
                                     f"{len(header)}")
                rows.append(dict(zip(header, fields)))
        except csv.Error as exc:
            raise AuditError(f"{path}, row {reader.line_num}: not valid CSV ({exc})") from None
    return rows


def columns_of(rows: list[Row]) -> set[str]:
    """Every column name that occurs in ``rows``."""
    return {key for row in rows for key in row}


def group_name(name: str, where: str) -> str:
    """``name`` if it holds no control character (NUL, escape, a line break, U+0080–U+009F); else one error naming
    the first, so no group shown on a page, chart or report carries one."""
    bad = next((c for c in name if unicodedata.category(c) == "Cc"), None)
    if bad is not None:
        raise AuditError(f"{where}: group name {name!r} holds a control character (U+{ord(bad):04X}); group names "
                         "are printable text")
    return name


def cell_text(value: Any) -> str:
    """A cell as stripped text in Unicode NFC (so "é" typed two ways is one group); missing values (None, NaN) are
    empty."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return unicodedata.normalize("NFC", str(value).strip())


def _read_jsonl(path: Path, text: str) -> list[Row]:
    rows: list[Row] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise AuditError(f"{path}, line {number}: not valid JSON ({exc.msg})") from None
        except RecursionError:
            raise AuditError(f"{path}, line {number}: JSON nested too deeply") from None
        if not isinstance(row, dict):
            raise AuditError(f"{path}, line {number}: expected a JSON object, got {type(row).__name__}")
        rows.append(row)
    return rows
