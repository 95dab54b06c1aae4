"""The SQL of an imported decision log or ranking run beyond its decisions (:func:`audit.store.database.save_recorded`
writes those): its model row and details, its systems, and what an appended chunk reads; each call runs inside the
caller's transaction ``db``."""
from __future__ import annotations

import json
import sqlite3
import time

from audit.store.database import APPLICANT_INDEX


def save_model(db: sqlite3.Connection, fingerprint: str, label: str, details: dict) -> None:
    """Store (or replace) the system's model row: its fingerprint, label and details, registered now."""
    db.execute("INSERT OR REPLACE INTO models VALUES (?, ?, ?, ?)",
               (fingerprint, label, json.dumps(details, sort_keys=True), time.time()))


def update_details(db: sqlite3.Connection, fingerprint: str, details: dict) -> None:
    """Replace the details of the model ``fingerprint``."""
    db.execute("UPDATE models SET details = ? WHERE fingerprint = ?", (json.dumps(details, sort_keys=True),
                                                                       fingerprint))


def stored_log(db: sqlite3.Connection, label: str, task: str) -> tuple[str | None, dict, dict[str, int]]:
    """(fingerprint, details, subtask → system id) of the system ``label`` in ``task``; (None, {}, {}) for none."""
    found = db.execute("SELECT fingerprint, details FROM models WHERE label = ?", (label,)).fetchone()
    if not found:
        return None, {}, {}
    systems = dict(db.execute("SELECT subtask, id FROM recorded_systems WHERE model = ? AND task = ?",
                              (found[0], task)).fetchall())
    return found[0], json.loads(found[1]), systems


def add_system(db: sqlite3.Connection, fingerprint: str, task: str, subtask: str, outcome: str) -> int:
    """A new recorded system of ``fingerprint`` for ``task`` and ``subtask``; its id."""
    return db.execute("INSERT INTO recorded_systems (model, task, subtask, outcome) VALUES (?, ?, ?, ?)",
                      (fingerprint, task, subtask, outcome)).lastrowid


def next_pool(db: sqlite3.Connection, system: int) -> int:
    """One more than the largest stored pool of ``system`` (0 for none; a primary-key lookup)."""
    return int(db.execute("SELECT COALESCE(MAX(pool) + 1, 0) FROM recorded_decisions WHERE system = ?",
                          (system,)).fetchone()[0])


def next_position(db: sqlite3.Connection, system: int) -> int:
    """One more than the largest stored position in pool 0 of ``system`` (a log whose subtask is one pool)."""
    return int(db.execute("SELECT COALESCE(MAX(position) + 1, 0) FROM recorded_decisions WHERE system = ? AND "
                          "pool = 0", (system,)).fetchone()[0])


def stored_applicants(db: sqlite3.Connection, systems: list[int], ids: list[str]) -> set[str]:
    """Those of ``ids`` already stored for one of ``systems`` (looked up by the applicant index, made here by the
    first append; at most 900 ids a query)."""
    db.execute(APPLICANT_INDEX)
    marks, stored = ",".join("?" * len(systems)), set()
    for start in range(0, len(ids), 900):
        chunk = ids[start:start + 900]
        stored |= {row[0] for row in db.execute(
            f"SELECT applicant FROM recorded_decisions WHERE system IN ({marks}) AND applicant IN "
            f"({','.join('?' * len(chunk))})", (*systems, *chunk))}
    return stored
