"""The audit trail: the store's append-only ``runs`` table, one row per command or page action that wrote results or
a report. Each row says what ran (``action``), when (``at``, UTC ISO), by which version of the tool, with which
options (JSON, secrets left out), on which data (``reads``: the fingerprints the store computes for systems and data)
and what it wrote (``wrote``: rows the store gained per table, files with their SHA-256); ``note`` says when a run
was stopped part-way or the row was backfilled.

Rows are only added: triggers refuse to change or delete one. The table is outside every fingerprint of the store's
content (:func:`audit.store.database.data_hash`, model fingerprints, designs), so recording a run changes none of them.
Commands that only print are not recorded."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence
from urllib.parse import urlsplit, urlunsplit

import pandas as pd

from audit import __version__
from audit.errors import AuditError
from audit.store.output import write_atomic
from audit.store.database import Store, data_hash
from audit.store.files import is_demo

COLUMNS = ["run", "at", "action", "version", "options", "reads", "wrote", "note"]
SECRET_WORDS = ("key", "token", "secret", "password", "credential")
NOT_STORED = "(not stored)"


def tool_version() -> str:
    """``git <commit>`` (12 hex digits, ``-dirty`` when tracked files differ from it) where the tool runs from a git
    checkout, else ``audit <package version>``."""
    return _version(_describe())


def _describe() -> subprocess.Popen | None:
    """``git describe`` of the tool's checkout, started (read by :func:`_version`: a run starts it first, so it runs
    beside the run's own work); None where git cannot be started."""
    try:
        return subprocess.Popen(["git", "describe", "--always", "--dirty", "--abbrev=12", "--exclude=*"],
                                cwd=Path(__file__).parent, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    except OSError:
        return None


def _version(describing: subprocess.Popen | None) -> str:
    """:func:`tool_version` from the ``git describe`` ``describing`` (waited for, 10 s at most)."""
    commit = ""
    if describing is not None:
        try:
            out, _ = describing.communicate(timeout=10)
            commit = out.strip() if describing.returncode == 0 else ""
        except subprocess.TimeoutExpired:
            describing.kill()
            describing.communicate()
    return f"git {commit}" if commit else f"audit {__version__}"


def now() -> str:
    """The current UTC time as ISO 8601, to the second."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def clean_options(options: Mapping[str, object]) -> dict:
    """``options`` as JSON-ready values without secrets: functions dropped, a secret-named option (API key, token,
    password; not the *name* of an environment variable, ``…_env``) stored as ``(not stored)``, and a URL without its
    user, password and query."""
    clean = {}
    for name, value in sorted(options.items()):
        if callable(value):
            continue
        if value is not None and any(word in name.lower() for word in SECRET_WORDS) and not name.endswith("_env"):
            clean[name] = NOT_STORED
        elif isinstance(value, str) and "://" in value:
            parts = urlsplit(value)
            host = (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
            clean[name] = urlunsplit((parts.scheme, host, parts.path, "", ""))
        else:
            clean[name] = json.loads(json.dumps(value, default=str))
    return clean


@dataclass
class Run:
    """One run being recorded: its action and options; the caller adds what it read and the files it wrote."""

    action: str
    options: dict
    reads: dict = field(default_factory=dict)
    files: list[dict] = field(default_factory=list)

    def wrote_file(self, path: str | Path, data: bytes) -> None:
        """Note a file written (its absolute path, or ``download: NAME``, with its SHA-256 and size)."""
        shown = str(path) if str(path).startswith("download:") else str(Path(path).resolve())
        self.files.append({"path": shown, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)})


@contextmanager
def recording(store: Store, action: str, options: Mapping[str, object]) -> Iterator[Run]:
    """Record the work done inside the block as one run of ``action``: appended when the block ends, with the rows
    the store gained meanwhile; a block that fails is recorded only if it wrote rows (``note``: stopped, and why)."""
    before = store.row_counts()
    run = Run(action, clean_options(options))
    describing = _describe()
    try:
        yield run
    except BaseException as exc:
        added = _added(before, store)
        version = _version(describing)
        if added:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            try:
                append(store, run, added, note=f"stopped: {reason}", version=version)
            except AuditError:
                pass  # the store cannot be written: the original error is the one to report
        raise
    append(store, run, _added(before, store), version=_version(describing))


def _added(before: dict[str, int], store: Store) -> dict[str, int]:
    after = store.row_counts()
    return {name: after[name] - before.get(name, 0) for name in sorted(after)
            if name != "runs" and after[name] != before.get(name, 0)}


def append(store: Store, run: Run, rows: Mapping[str, int], *, note: str = "", at: str | None = None,
           version: str | None = None) -> int:
    """Append ``run`` to the store's trail (``rows``: rows gained per table) and return its number."""
    with store.transaction() as db:
        return _insert(db, run, rows, note, at or now(), version or tool_version())


def _insert(db, run: Run, rows: Mapping[str, int], note: str, at: str, version: str) -> int:
    wrote = {**({"rows": dict(rows)} if rows else {}), **({"files": run.files} if run.files else {})}
    cursor = db.execute("INSERT INTO runs (at, action, version, options, reads, wrote, note) VALUES "
                        "(?, ?, ?, ?, ?, ?, ?)", (at, run.action, version, *(json.dumps(part, ensure_ascii=False)
                                                  for part in (run.options, run.reads, wrote)), note))
    return int(cursor.lastrowid)


def next_run(db) -> int:
    """The number the next run appended to the store will get."""
    return int(db.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM runs").fetchone()[0])


def recordable(path: str | Path) -> bool:
    """Whether a report on the store at ``path`` is recorded in it: an existing store this process may write, not
    the shipped demo store (which is only ever read)."""
    path = Path(path)
    return path.is_file() and not is_demo(str(path)) and os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


def record_report(path: str, action: str, options: Mapping[str, object], build: Callable[[int | None], bytes],
                  reads: Callable[[Store], dict], out: str | None = None,
                  download: str = "") -> tuple[bytes, int | None]:
    """Build a report that names the run recording it, and record that run: ``build(n)`` makes the report of run
    #n, written to ``out`` (or offered as the download ``download``) in the transaction that appends the run, so
    the file and the trail agree. A store the report may not write (:func:`recordable`) gets a report of no run
    (``build(None)``). Returns the report and its run number."""
    if not recordable(path):
        data = build(None)
        if out is not None:
            write_atomic(out, data, path)
        return data, None
    for _ in range(3):  # another process appending a run meanwhile takes the number: build again with the next
        with Store(path, create=False) as reader:
            number = next_run(reader.db)
        data = build(number)
        run = Run(action, clean_options(options))
        run.wrote_file(out if out is not None else f"download: {download}", data)
        with Store(path) as store, store.transaction() as db:
            if next_run(db) != number:
                continue
            run.reads = reads(store)
            _insert(db, run, {}, "", now(), tool_version())
            if out is not None:
                write_atomic(out, data, path)
            return data, number
    raise AuditError(f"result store {path}: other runs kept being recorded while the report was built; build it again")


def data_reads(store: Store, task: str, subtasks: Sequence[str] = (), labels: Sequence[str] = (),
               known: Mapping[tuple[str, str], bytes] | None = None) -> dict:
    """What a run of ``task`` read, by fingerprint: each system (``labels``, default every system of the task) and
    the SHA-256 of the task's data in ``subtasks`` (default all) as :func:`audit.store.database.data_hash` computes it
    (with the texts ``known`` of the systems just written)."""
    db = store.db
    subtasks = list(subtasks) or [row[0] for row in db.execute(
        "SELECT subtask FROM candidates WHERE task = ? UNION SELECT subtask FROM recorded_systems WHERE task = ? "
        "ORDER BY 1", (task, task))]
    systems = dict(db.execute(
        "SELECT label, fingerprint FROM models WHERE fingerprint IN (SELECT model FROM pointwise_plan WHERE task = ? "
        "UNION SELECT model FROM pairwise_plan WHERE task = ? UNION SELECT model FROM recorded_systems WHERE task = ?) "
        "ORDER BY label", (task, task, task)).fetchall())
    if labels:
        systems = {label: fingerprint for label, fingerprint in systems.items() if label in set(labels)}
    digest, rows, _ = data_hash(store, task, subtasks, known)
    return {"task": task, "subtasks": subtasks, "systems": systems, "data_sha256": digest, "data_rows": rows}


def trail(store: Store, task: str | None = None) -> pd.DataFrame:
    """The store's runs, oldest first, in :data:`COLUMNS` (``options``, ``reads`` and ``wrote`` as JSON text); with
    ``task``, only the runs whose options name that task."""
    where, params = ("WHERE json_extract(options, '$.task') = ?", (task,)) if task is not None else ("", ())
    table = store.query(f"SELECT id AS run, at, action, version, options, reads, wrote, note FROM runs {where} "
                        "ORDER BY id", params)
    return table.reindex(columns=COLUMNS)
