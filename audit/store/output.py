"""Writing exports safely: never onto the result store, never half a file, and CSV cells a spreadsheet cannot run.

Every file is written to a temporary file in the target's folder and renamed into place, so a failed export leaves
whatever was there before. Text cells starting with ``=``, ``+``, ``-``, ``@`` (or a tab / carriage return) would be
run as formulas by spreadsheet programs; they get a leading ``'``. Numbers are left as numbers.
"""
from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pandas as pd

from audit.errors import AuditError

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
STORE_SIDECARS = ("", "-wal", "-shm", "-journal")
SQLITE_HEADER = b"SQLite format 3\x00"


def is_store_file(path: Path) -> bool:
    """Whether ``path`` is a SQLite database or the ``-wal``/``-shm``/``-journal`` file of one (by content, so a
    store named ``store.html`` is recognised too)."""
    candidates = [path] + [Path(str(path)[: -len(suffix)]) for suffix in STORE_SIDECARS[1:] if str(path).endswith(suffix)]
    for candidate in candidates:
        try:
            with candidate.open("rb") as handle:
                if handle.read(len(SQLITE_HEADER)) == SQLITE_HEADER:
                    return True
        except OSError:
            continue
    return False


def check_target(out: str | Path, store: str | Path | None = None) -> Path:
    """``out`` as a path an export may write to: not a folder, in an existing folder, not the store or its files."""
    target = Path(out)
    if target.is_dir():
        raise AuditError(f"--out {target} is a folder; give a file name")
    if target.exists() and not stat.S_ISREG(target.stat().st_mode):
        raise AuditError(f"--out {target} is not a regular file (a FIFO, device or socket); give a file name")
    if is_store_file(target.resolve()):
        raise AuditError(f"--out {target} is a result store (or one of its -wal/-shm/-journal files); "
                         "write the export elsewhere")
    if not target.parent.is_dir():
        raise AuditError(f"--out {target}: folder {target.parent} does not exist")
    if store is not None:
        resolved = target.resolve()
        for suffix in STORE_SIDECARS:
            if resolved == Path(f"{Path(store).resolve()}{suffix}"):
                raise AuditError(f"--out {target} is the result store{f' {suffix} file' if suffix else ''}; "
                                 "write the export elsewhere")
    return target


def write_atomic(out: str | Path, data: bytes | str, store: str | Path | None = None) -> None:
    """Write ``data`` to ``out`` through a temporary file renamed into place (see :func:`check_target`)."""
    target = check_target(out, store)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    partial = None
    try:
        handle, partial = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
        with os.fdopen(handle, "wb") as stream:
            stream.write(payload)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(partial, 0o666 & ~umask)  # mkstemp makes 0600; an export gets the usual mode
        os.replace(partial, target)
    except OSError as exc:
        if partial is not None and os.path.lexists(partial):  # a full disk: no half-written file is left behind
            os.unlink(partial)
        raise AuditError(f"cannot write {target}: {exc.strerror or exc}") from None


def neutralise(table: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``table`` whose text cells cannot start a spreadsheet formula (numeric columns untouched)."""
    out = table.copy()
    for column in out.columns:
        values = out[column]
        if isinstance(values.dtype, pd.StringDtype):  # text columns in one pass, changed only where a cell starts so
            starts = values.str.startswith(FORMULA_START).fillna(False).to_numpy(dtype=bool)
            if starts.any():
                out[column] = values.where(~starts, "'" + values)
        elif not pd.api.types.is_numeric_dtype(values):
            out[column] = values.map(lambda v: "'" + v if isinstance(v, str) and v.startswith(FORMULA_START) else v)
    return out


def csv_text(table: pd.DataFrame) -> str:
    """``table`` as CSV without the index, text cells neutralised."""
    return neutralise(table).to_csv(index=False)


def restore(table: pd.DataFrame) -> pd.DataFrame:
    """Undo :func:`neutralise` on a CSV read back (our exports feed ``audit metrics``)."""
    for column in table.columns:
        if not pd.api.types.is_numeric_dtype(table[column]):
            table[column] = table[column].map(
                lambda v: v[1:] if isinstance(v, str) and v[:1] == "'" and v[1:2] in FORMULA_START and v[1:2] else v)
    return table
