"""One bounded reader for every input file: each bound is checked before the memory it guards is spent.

* :func:`read_bytes`: a regular file (never a FIFO, device or folder; opened non-blocking and checked with
  ``fstat`` before a byte is read; inside ``folder`` when one is given, so a link cannot lead out) of at most
  ``limit`` bytes.
* :func:`check_line_rows`: CSV / JSON-lines rows counted on the raw bytes, before a frame or a row list is built.
* :func:`check_columns`: CSV / JSON-lines columns counted on the header line or the first record alone, before a row
  is parsed (Parquet's are counted from its schema by :func:`read_parquet`); a CSV header line is at most
  :data:`MAX_HEADER_BYTES`.
* :func:`check_text`: a CSV / JSON-lines file holds no NUL byte (a binary file, or a sparse one, is refused from one
  scan of its bytes before it is decoded).
* :func:`csv_fields`: the csv module's field limit raised for one parse and restored after it (never process-wide).
* :func:`check_json_depth`: bracket nesting scanned on the raw bytes, before a recursive parser sees them.
* :func:`read_parquet`: Parquet bounded by its row count and by the true decoded size of its columns, read batch by
  batch with text kept dictionary-encoded, so a small file of repeated long strings is refused at the cap.
"""
from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import re
import stat
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import numpy as np

from audit.errors import AuditError

if TYPE_CHECKING:
    import pandas as pd

MAX_DEPTH = 64
"""Deepest JSON nesting accepted in a response or spec file (the formats need 5)."""
MAX_COLUMNS = 10_000
"""Most columns a table file (CSV, JSON lines, Parquet) may hold: counted on its header line, first record or
schema before a row is parsed (a table of the tool's formats needs a few dozen)."""
MAX_HEADER_BYTES = 2**20
"""Longest CSV header line (1 MiB: 10,000 columns of 100-byte names)."""
_BATCH_ROWS = 65_536
_CSV_LIMIT = threading.RLock()  # one parse at a time changes the csv module's process-wide field limit
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_CSV_QUOTED = re.compile(rb'"[^"]*"')
_LEADING = re.compile(rb"(?:\xef\xbb\xbf)?\s*")


def read_bytes(path: Path, limit: int, *, folder: Path | None = None) -> bytes:
    """The content of ``path``: an :class:`AuditError` unless it is a regular file of at most ``limit`` bytes (and,
    with ``folder``, one whose real path lies inside that folder)."""
    if folder is not None and not path.resolve().is_relative_to(folder.resolve()):
        raise AuditError(f"{path}: a link to {path.resolve()}, outside {folder}; copy the file into the folder")
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise AuditError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise AuditError(f"{path}: is a folder, not a file") from None
    except OSError as exc:
        raise AuditError(f"{path}: cannot be opened ({exc.strerror})") from None
    try:
        _check_regular(os.fstat(handle), path, limit)
    except AuditError:
        os.close(handle)
        raise
    with os.fdopen(handle, "rb") as stream:  # after the check: opening a folder as a stream raises
        try:
            data = stream.read(limit + 1)
        except OSError as exc:
            raise AuditError(f"{path}: cannot be read ({exc.strerror})") from None
    if len(data) > limit:  # it grew after the check
        raise AuditError(f"{path}: file is over {_size(limit)}; the limit is {_size(limit)}")
    return data


def _check_regular(info: os.stat_result, path: Path, limit: int) -> None:
    """Refuse a folder, a FIFO, device or socket, or a file over ``limit`` bytes, from its ``fstat``."""
    if stat.S_ISDIR(info.st_mode):
        raise AuditError(f"{path}: is a folder, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise AuditError(f"{path}: not a regular file (a FIFO, device or socket); give a file")
    if info.st_size > limit:
        raise AuditError(f"{path}: file is {info.st_size / 2**20:.1f} MiB; the limit is {_size(limit)}")


def _size(count: int) -> str:
    return f"{count / 2**20:g} MiB"


def check_line_rows(raw: bytes, path: Path, limit: int, *, header: bool) -> None:
    """Refuse ``raw`` (CSV with a ``header`` row, or JSON lines) if it holds more than ``limit`` rows (blank lines
    not counted). Newlines are counted first (one pass, no copy); only a file with more newlines than the limit is
    read row by row (quoted fields may span lines), stopping at the first row past the limit."""
    if raw.count(b"\n") <= limit + header:
        return
    lines = io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8", errors="replace", newline="")
    rows = csv.reader(lines) if header else (line for line in lines if line.strip())
    count = -1 if header else 0
    with csv_fields(len(raw)):
        try:
            for fields in rows:
                count += bool(fields)
                if count > limit:
                    raise AuditError(f"{path}, row {count:,}: more than {limit:,} rows; the limit is {limit:,}")
        except csv.Error as exc:
            raise AuditError(f"{path}, row {count + 2:,}: not valid CSV ({exc})") from None


@contextlib.contextmanager
def csv_fields(limit: int) -> Iterator[None]:
    """The csv module reads fields of up to ``limit`` characters inside the block (its default is 128 KiB), and its
    limit is what it was after it: the limit is process-wide, so parses that change it take turns."""
    with _CSV_LIMIT:
        before = csv.field_size_limit(max(limit, 1))
        try:
            yield
        finally:
            csv.field_size_limit(before)


def check_text(raw: bytes, path: Path) -> None:
    """Refuse a CSV / JSON-lines ``raw`` holding a NUL byte: a binary (or sparse) file, not a text table. One scan of
    the bytes, no copy."""
    at = raw.find(b"\0")
    if at >= 0:
        line = raw.count(b"\n", 0, at) + 1
        raise AuditError(f"{path}, line {line:,}: a NUL byte (offset {at:,}), so not UTF-8 text (a UTF-16 or binary "
                         "file?); save the file as UTF-8 CSV or JSON lines")


def check_columns(raw: bytes, path: Path, suffix: str, limit: int = MAX_COLUMNS) -> None:
    """Refuse the ``.csv`` or ``.jsonl`` table ``raw`` if its header line (commas outside quotes, counted on the
    bytes) or its first record (keys) names more than ``limit`` columns. Only that line is read; a line that is
    not JSON is left to the parser to name."""
    first = _first_line(raw)
    if suffix == ".csv":
        count, where = _csv_columns(raw, *first), "header row"
    else:
        try:
            record = json.loads(raw[slice(*first)])
        except (ValueError, RecursionError):
            return
        count, where = (len(record) if isinstance(record, dict) else 0), "row 1"
    if count > limit:
        raise AuditError(f"{path}, {where}: {count:,} columns; the limit is {limit:,}")
    if suffix == ".csv" and first[1] - first[0] > MAX_HEADER_BYTES:
        raise AuditError(f"{path}, header row: {(first[1] - first[0]) / 2**20:.1f} MiB long; the limit is "
                         f"{_size(MAX_HEADER_BYTES)}")


def column_list(columns: list[str]) -> str:
    """The header's names for an error line (``columns: [...]``), or only their count where the header does not look
    like one (a single field, a name over 64 characters or holding control characters): the first line of a file
    that is not a table (``/proc/self/maps``, a key file) is never echoed."""
    if len(columns) > 1 and all(len(name) <= 64 and name.isprintable() for name in columns):
        return f"columns: {columns}"
    return f"its first line is {len(columns)} field(s) that do not look like column names (is it a CSV file?)"


def _first_line(raw: bytes) -> tuple[int, int]:
    """(start, end) of the first line of ``raw`` that is not blank (a leading BOM skipped)."""
    start = _LEADING.match(raw).end()
    end = raw.find(b"\n", start)
    return start, len(raw) if end < 0 else end


def _csv_columns(raw: bytes, start: int, end: int) -> int:
    """Fields of the CSV line ``raw[start:end]``: its commas outside quoted fields, plus one (nothing is copied)."""
    commas = raw.count(b",", start, end)
    if raw.find(b'"', start, end) >= 0:
        commas -= sum(raw.count(b",", *match.span()) for match in _CSV_QUOTED.finditer(raw, start, end))
    return commas + 1


def check_json_depth(raw: bytes, path: Path, limit: int = MAX_DEPTH) -> None:
    """Refuse JSON text nested more than ``limit`` deep (brackets outside strings), before it is parsed."""
    bare = _STRING.sub(b'""', raw)  # strings hold no raw newline in valid JSON, so lines keep their numbers
    codes = np.frombuffer(bare, np.uint8)
    depth = np.cumsum((codes == ord("[")).astype(np.int32) + (codes == ord("{")) - (codes == ord("]"))
                      - (codes == ord("}")))
    if len(depth) and depth.max() > limit:
        line = bare[: int(np.argmax(depth > limit))].count(b"\n") + 1
        raise AuditError(f"{path}, line {line}: JSON nested more than {limit} deep")


def read_parquet(raw: bytes, path: Path, *, max_rows: int, max_decoded: int) -> "pd.DataFrame":
    """The Parquet file ``raw`` as a frame, refused (an :class:`AuditError`) past ``max_rows`` rows or
    :data:`MAX_COLUMNS` columns (both from the metadata), past ``max_decoded`` bytes of decoded columns, or with
    nested (list, struct, map) columns.

    The row count and the fixed-width columns are bounded from the metadata; text and binary columns are read batch
    by batch as dictionaries, their decoded length summed from the dictionary's value lengths, and reading stops at
    the cap: a few kilobytes of repeated long strings never expand."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        source = pq.ParquetFile(pa.BufferReader(raw))
        meta, schema = source.metadata, source.schema_arrow
    except Exception as exc:  # pyarrow raises several types for damaged files
        raise AuditError(f"{path}: cannot be read as Parquet ({exc})") from None
    if meta.num_rows > max_rows:
        raise AuditError(f"{path}: {meta.num_rows:,} rows; the limit is {max_rows:,}")
    if len(schema) > MAX_COLUMNS:
        raise AuditError(f"{path}: {len(schema):,} columns; the limit is {MAX_COLUMNS:,}")
    for field in schema:
        if pa.types.is_nested(field.type):
            raise AuditError(f"{path}, rows 1–{meta.num_rows}, column {field.name!r}: nested values ({field.type}); "
                             "cells are text or numbers")
    text = [f.name for f in schema if _is_text(f.type.value_type if pa.types.is_dictionary(f.type) else f.type)]
    decoded = sum(meta.num_rows * _width(f.type) for f in schema if f.name not in text)
    batches = []
    try:
        source = pq.ParquetFile(pa.BufferReader(raw), read_dictionary=text)
        for batch in source.iter_batches(batch_size=_BATCH_ROWS, use_pandas_metadata=True):
            decoded += sum(int(pc.sum(pc.take(pc.binary_length(column.dictionary), column.indices)).as_py() or 0)
                           + 8 * len(column) for column in batch.columns if pa.types.is_dictionary(column.type))
            if decoded > max_decoded:
                raise AuditError(f"{path}: more than {max_decoded // 2**20:,} MiB of column data once decoded "
                                 f"(by row {sum(map(len, batches)) + len(batch):,}); the limit is "
                                 f"{max_decoded // 2**20:,} MiB")
            batches.append(batch)
    except AuditError:
        raise
    except Exception as exc:
        raise AuditError(f"{path}: cannot be read as Parquet ({exc})") from None
    table = pa.Table.from_batches(batches) if batches else schema.empty_table()
    plain = pa.table([column.cast(column.type.value_type) if pa.types.is_dictionary(column.type) else column
                      for column in table.columns], names=table.column_names)
    return plain.replace_schema_metadata(schema.metadata).to_pandas()


def _is_text(kind) -> bool:
    import pyarrow as pa

    return any(test(kind) for test in (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary,
                                       pa.types.is_large_binary))


def _width(kind) -> int:
    """Bytes per value of a fixed-width Arrow type (at least one)."""
    try:
        return max(1, kind.bit_width // 8)
    except ValueError:
        return 1
