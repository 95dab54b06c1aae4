"""What every sub-command shares: reading score and pair files (and a store or score file into tables,
:func:`tables_from`), parsing quotas, printing or writing tables."""
from __future__ import annotations

import argparse
import io
import json
import math
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from audit.design import WHOLE, PoolDesign
from audit.enums import Mode
from audit.errors import AuditError
from audit.store.database import Store
from audit.store.output import csv_text, restore, write_atomic
from audit.bounded import check_columns, check_line_rows, check_text, read_bytes, read_parquet

if TYPE_CHECKING:
    from audit.engine.tables import StoreTables

MAX_TABLE_ROWS = 5_000_000
MAX_TABLE_BYTES = 1 << 30
"""Bounds on a score or pair table: rows (counted on the raw bytes or the Parquet metadata) and bytes (of the file,
and of a Parquet file's decoded columns), each checked before the memory it guards is spent."""
MAX_QUOTA = 10_000
"""Largest quota --k may name (pools are far smaller; the metrics check k against each pool size)."""
_TEXT = ("model", "task", "subtask", "mode", "candidate_id", "group", "candidate_a", "candidate_b", "group_a",
         "group_b", "outcome")


def parse_quotas(text: str) -> list[int]:
    """``2`` → [2], ``1-8`` → [1..8], ``1,3,5`` → [1, 3, 5] (parts may mix)."""
    quotas: set[int] = set()
    for part in str(text).split(","):
        low, dash, high = part.strip().partition("-")
        if not _digits(low) or (dash and not _digits(high)):
            raise AuditError(f"--k: {text!r} is not a quota; use 2, 1-8 or 1,3,5 (digits 0-9)")
        if int(high if dash else low) > MAX_QUOTA:  # checked before a range is built
            raise AuditError(f"--k: {text!r} goes past {MAX_QUOTA}; a quota cannot exceed the pool size")
        quotas.update(range(int(low), int(high if dash else low) + 1))
    if not quotas or min(quotas) < 1:
        raise AuditError(f"--k: {text!r} must name quotas of at least 1")
    return sorted(quotas)


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def read_table_file(path: str, what: str) -> pd.DataFrame:
    """A CSV or Parquet file as a DataFrame (id and group columns as text; recorded systems' rows, exported as
    ``recorded ranking`` or ``decision log``, read back as the pointwise scores they are inside the tool); an
    AuditError if it cannot be read."""
    from audit.tasks.recorded import read_as_pointwise  # here, not above: a command that reads no table starts faster

    suffix = Path(path).suffix.lower()
    if suffix not in (".csv", ".parquet", ".pq"):
        raise AuditError(f"{what} {path}: unsupported file type {suffix or '(none)'!r}; use .csv or .parquet")
    try:
        raw = read_bytes(Path(path), MAX_TABLE_BYTES)
        if suffix != ".csv":
            return read_as_pointwise(needed(read_parquet(raw, Path(path), max_rows=MAX_TABLE_ROWS,
                                                         max_decoded=MAX_TABLE_BYTES), path, what))
        check_text(raw, Path(path))
        check_columns(raw, Path(path), suffix)
        check_line_rows(raw, Path(path), MAX_TABLE_ROWS, header=True)
        frame = restore(pd.read_csv(io.BytesIO(raw), dtype={column: str for column in _TEXT}))
        return read_as_pointwise(needed(frame, path, what))
    except AuditError as exc:
        raise AuditError(f"cannot read {what} {exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise AuditError(f"cannot read {what} {path}: {exc}") from None


SCORE_NEEDS = ("model", "task", "subtask", "group", "score")
"""Columns every score table holds (the others, e.g. ``mode``, ``qualified``, ``pool``, have defaults)."""


def needed(frame: pd.DataFrame, path: str, what: str) -> pd.DataFrame:
    """``frame`` if it holds the columns a ``what`` needs (a score table: :data:`SCORE_NEEDS`); else one error that
    names the missing ones (never the file's own header, which may not be a header at all)."""
    missing = [c for c in SCORE_NEEDS if c not in frame.columns] if what == "score table" else []
    if missing:
        raise AuditError(f"{path}: no column(s) {missing}; a score table needs {list(SCORE_NEEDS)}")
    return frame


def tables_from(args: argparse.Namespace, *, pools: str | None = "per-group", whole: bool = False) -> StoreTables:
    """The tables a command reads: the store's (``--db``, read once), or the ``--scores`` file's (with ``--pairs``
    where the command takes it), each (task, subtask) under its declared design with ``pools`` (None: the declared
    pools). ``whole``: a file's pointwise rows only, their group codes compared whole (no groupings, no names)."""
    from audit.engine.tables import StoreTables  # here, not above: the tasks' modules, only for a command that reads
    from audit.tasks.designs import declared_design

    scores, pairs = getattr(args, "scores", None), getattr(args, "pairs", None)
    if (args.db is None) == (scores is None):
        raise AuditError("give exactly one of --db (a result store) and --scores (a score table)")
    if args.db is not None:
        if pairs is not None:
            raise AuditError("--pairs only goes with --scores; --db reads the store's pairs")
        with Store(args.db, create=False) as store:
            return StoreTables.read(store)
    frame = read_table_file(scores, "score table")
    if whole:
        frame = frame[frame["mode"].astype(str) == Mode.POINTWISE] if "mode" in frame else frame
        if frame.empty:
            raise AuditError(f"score table {scores} has no pointwise scores")
        frame = frame.assign(mode=Mode.POINTWISE)
    designs = {}
    for key, rows in frame.groupby(["task", "subtask"]):
        design = declared_design(rows)
        if pools is not None:
            design = replace(design, pools=PoolDesign.parse(pools))
        designs[key] = replace(design, groupings={WHOLE: None}, names={}) if whole else design
    return StoreTables.from_scores(frame, designs, pairs=read_table_file(pairs, "pair table") if pairs else None)


def _plain(value: object) -> object:
    if value is pd.NA:
        return None
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else float(value)
    return int(value) if isinstance(value, np.integer) else value


def records(frame: pd.DataFrame) -> list[dict]:
    """Rows as JSON-ready dicts (NaN and NA become null, NumPy numbers plain numbers)."""
    return [{key: _plain(value) for key, value in row.items()} for row in frame.to_dict("records")]


def cli_options(args: argparse.Namespace) -> dict:
    """A command's options as its run records them (:func:`audit.store.runs.recording` leaves out secrets)."""
    return {name: value for name, value in vars(args).items() if name not in ("command", "handler", "explicit_flags")}


def emit(text: str, out: str | None) -> None:
    """``text`` to standard output, or written atomically to ``out``."""
    if out is None:
        write_stdout(text)
        return
    write_atomic(out, text)


def write_stdout(text: str) -> None:
    """``text`` to standard output, flushed; a closed or full standard output (``>&-``, ``> /dev/full``, a closed
    pipe) is one :class:`AuditError`, and what is left in the buffer goes to the null device at exit."""
    if sys.stdout is None:
        if text:
            raise AuditError("standard output is closed; give --out FILE")
        return
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except OSError as exc:
        raise stdout_error(exc) from None


def stdout_error(exc: OSError) -> AuditError:
    """The error of a failed write to standard output; what is left in its buffer goes to the null device."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return AuditError(f"cannot write to standard output: {exc.strerror or exc}; give --out FILE")


def emit_table(table: pd.DataFrame, fmt: str, out: str | None) -> None:
    """``table`` as CSV (formula-safe) or JSON records, to standard output or ``out``."""
    emit(csv_text(table) if fmt == "csv" else json.dumps(records(table), indent=1) + "\n", out)
