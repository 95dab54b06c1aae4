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
from pathlib import Path
from typing import Any

from audit.errors import AuditError
from audit.paths import cache_dir

MAX_BYTES = 20 * 1024 * 1024
MAX_ROWS = 100_000
"""Most candidates one data file may hold (checked before a Parquet file is decoded)."""
MAX_DECODED = 64 * 2**20
"""Most bytes a Parquet file's columns may take uncompressed (its metadata says, before anything is decoded)."""
"""Largest task data file accepted (20 MiB): ample for tens of thousands of candidate texts."""
TABLE_SUFFIXES = (".csv", ".parquet", ".jsonl")

Row = dict[str, Any]


def check_size(path: Path, limit: int = MAX_BYTES) -> None:
    """An :class:`AuditError` unless ``path`` is a file of at most ``limit`` bytes."""
    if not path.is_file():
        raise AuditError(f"{path}: no such file")
    size = path.stat().st_size
    if size > limit:
        raise AuditError(f"{path}: file is {size / 2**20:.1f} MiB; the limit is {limit // 2**20} MiB")


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
    """The file as text; an :class:`AuditError` naming the line if it is not UTF-8 (a leading BOM is dropped)."""
    check_size(path)
    return utf8_text(path.read_bytes(), path)


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
    if suffix == ".parquet":
        return _read_parquet(path)
    text = read_text(path)
    return check_rows(path, _read_csv(path, text) if suffix == ".csv" else _read_jsonl(path, text))


def _read_csv(path: Path, text: str) -> list[Row]:
    """Rows of a CSV file; a repeated header name, a row with more or fewer fields than the header, or a field the
    csv module cannot take is an :class:`AuditError` naming the row."""
    csv.field_size_limit(MAX_BYTES)  # a field may be as long as the file (the default limit is 128 KiB)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        if not header:
            raise AuditError(f"{path}: empty file (expected a header row)")
        repeated = sorted({name for name in header if header.count(name) > 1})
        if repeated:
            raise AuditError(f"{path}: header names column(s) {repeated} more than once")
        rows = []
        for number, fields in enumerate(filter(None, reader), start=1):  # blank lines are skipped
            if len(fields) != len(header):
                raise AuditError(f"{path}, row {number}: {len(fields)} fields but the header names {len(header)}")
            rows.append(dict(zip(header, fields)))
    except csv.Error as exc:
        raise AuditError(f"{path}, row {reader.line_num}: not valid CSV ({exc})") from None
    return rows


def columns_of(rows: list[Row]) -> set[str]:
    """Every column name that occurs in ``rows``."""
    return {key for row in rows for key in row}


def cell_text(value: Any) -> str:
    """A cell as stripped text in Unicode NFC (so "é" typed two ways is one group); missing values (None, NaN) are
    empty."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return unicodedata.normalize("NFC", str(value).strip())


def check_parquet(path: Path, *, max_rows: int = MAX_ROWS, max_bytes: int = MAX_DECODED) -> None:
    """Refuse a Parquet file whose metadata promises more than ``max_rows`` rows or ``max_bytes`` of uncompressed
    column data, before any of it is decoded (a small dictionary-encoded file can expand to gigabytes)."""
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(path).metadata
    except Exception as exc:  # pyarrow raises several types for damaged files
        raise AuditError(f"{path}: cannot be read as Parquet ({exc})") from None
    if meta.num_rows > max_rows:
        raise AuditError(f"{path}: {meta.num_rows:,} rows; the limit is {max_rows:,}")
    decoded = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    if decoded > max_bytes:
        raise AuditError(f"{path}: {decoded / 2**20:,.0f} MiB of column data once decompressed; the limit is "
                         f"{max_bytes // 2**20} MiB")


def check_rows(path: Path, rows: list[Row]) -> list[Row]:
    """``rows`` unless there are more than :data:`MAX_ROWS` of them."""
    if len(rows) > MAX_ROWS:
        raise AuditError(f"{path}: {len(rows):,} rows; the limit is {MAX_ROWS:,}")
    return rows


def _read_parquet(path: Path) -> list[Row]:
    check_size(path)
    check_parquet(path)
    import pandas as pd

    try:
        frame = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises several types for damaged files
        raise AuditError(f"{path}: cannot be read as Parquet ({exc})") from None
    return frame.to_dict(orient="records")


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
