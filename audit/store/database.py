"""The result store: one SQLite file (WAL), the only cache of model outputs.

Results are keyed by model fingerprint + prompt hash, so nothing is scored twice. A run first records its
plan (candidates and which prompt scores which candidate or pair) and then commits results batch by batch,
each batch in one transaction: a run killed at any moment resumes where it stopped, and primary keys make
rows unique, so two processes scoring the same prompts never duplicate anything. Readers (exports, pages)
see only planned items whose results are present.

Recorded systems (decisions a deployed system already made: decision logs, recorded rankings) are kept compactly:
``recorded_systems`` (one row per model fingerprint, task and subtask, with its outcome kind: ``rank``,
``selected`` or ``score``) and ``recorded_decisions`` (one row per decision: system, pool, position in the pool,
group code, outcome value, applicant id or NULL, decision date ``YYYY-MM-DD`` or NULL).
:meth:`Store.pointwise_table` reads them back as pointwise
results (see :func:`audit.store.recorded.decision_scores`).
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, Union

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from audit.design import AuditDesign
from audit.enums import Mode
from audit.errors import AuditError
from audit.store.columns import recorded_columns
from audit.store.digest import columns_text, rows_text
from audit.store.recorded import OUTCOMES, decision_scores, legacy_decisions, stacked

APPLICATION = "allocation-audit"
BUSY_TIMEOUT_S = 120
DATASET_KEY = "dataset:"  # meta key prefix: the content hash of the auditor's data each task was planned from

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS models (
    fingerprint TEXT PRIMARY KEY, label TEXT NOT NULL, details TEXT NOT NULL, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS prompts (key TEXT PRIMARY KEY, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS candidates (
    task TEXT NOT NULL, subtask TEXT NOT NULL, candidate_id TEXT NOT NULL, grp TEXT NOT NULL,
    qualified INTEGER NOT NULL, name TEXT NOT NULL, text TEXT NOT NULL,
    PRIMARY KEY (task, subtask, candidate_id));
CREATE TABLE IF NOT EXISTS pointwise_plan (
    model TEXT NOT NULL, task TEXT NOT NULL, subtask TEXT NOT NULL, candidate_id TEXT NOT NULL,
    prompt TEXT NOT NULL, labels TEXT NOT NULL, relevance TEXT NOT NULL,
    PRIMARY KEY (model, task, subtask, candidate_id));
CREATE TABLE IF NOT EXISTS pairwise_plan (
    model TEXT NOT NULL, task TEXT NOT NULL, subtask TEXT NOT NULL, method TEXT NOT NULL, pool INTEGER NOT NULL,
    first_id TEXT NOT NULL, second_id TEXT NOT NULL, prompt TEXT NOT NULL,
    PRIMARY KEY (model, task, subtask, method, pool, first_id, second_id));
CREATE TABLE IF NOT EXISTS label_results (
    model TEXT NOT NULL, prompt TEXT NOT NULL, labels TEXT NOT NULL, probs TEXT NOT NULL, mass REAL NOT NULL,
    created REAL NOT NULL, PRIMARY KEY (model, prompt, labels));
CREATE TABLE IF NOT EXISTS choice_results (
    model TEXT NOT NULL, prompt TEXT NOT NULL, method TEXT NOT NULL, answer TEXT NOT NULL, choice TEXT NOT NULL,
    logp_first REAL, logp_second REAL, created REAL NOT NULL, PRIMARY KEY (model, prompt, method));
CREATE TABLE IF NOT EXISTS cairo_plan (
    metric TEXT NOT NULL, dimension TEXT NOT NULL, prompt_set TEXT NOT NULL, position INTEGER NOT NULL,
    source TEXT NOT NULL, subgroup TEXT NOT NULL, prompt TEXT NOT NULL, text TEXT NOT NULL,
    PRIMARY KEY (metric, dimension, prompt_set, position));
CREATE TABLE IF NOT EXISTS cairo_continuations (
    model TEXT NOT NULL, prompt TEXT NOT NULL, decoding TEXT NOT NULL, sample INTEGER NOT NULL,
    text TEXT NOT NULL, text_key TEXT NOT NULL, created REAL NOT NULL, PRIMARY KEY (model, prompt, decoding, sample));
CREATE TABLE IF NOT EXISTS designs (
    task TEXT NOT NULL, subtask TEXT NOT NULL, reference TEXT NOT NULL, pools TEXT NOT NULL, labels TEXT NOT NULL,
    relevance TEXT NOT NULL, qualification TEXT NOT NULL, groupings TEXT NOT NULL, prompt_hash TEXT NOT NULL,
    PRIMARY KEY (task, subtask));
CREATE TABLE IF NOT EXISTS recorded_systems (
    id INTEGER PRIMARY KEY, model TEXT NOT NULL, task TEXT NOT NULL, subtask TEXT NOT NULL, outcome TEXT NOT NULL,
    UNIQUE (model, task, subtask));
CREATE TABLE IF NOT EXISTS recorded_decisions (
    system INTEGER NOT NULL, pool INTEGER NOT NULL, position INTEGER NOT NULL, grp TEXT NOT NULL, value REAL NOT NULL,
    applicant TEXT, decided TEXT, PRIMARY KEY (system, pool, position)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS cairo_toxicity (
    scorer TEXT NOT NULL, text_key TEXT NOT NULL, score REAL NOT NULL, created REAL NOT NULL,
    PRIMARY KEY (scorer, text_key));
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY, at TEXT NOT NULL, action TEXT NOT NULL, version TEXT NOT NULL, options TEXT NOT NULL,
    reads TEXT NOT NULL, wrote TEXT NOT NULL, note TEXT NOT NULL);
"""
#: statements run after :data:`SCHEMA` on every store opened for writing: the runs table is append-only
TRIGGERS = [f"CREATE TRIGGER IF NOT EXISTS runs_append_only_{verb.lower()} BEFORE {verb} ON runs "
            f"BEGIN SELECT RAISE(ABORT, 'the runs table is append-only: a run is never changed or removed'); END"
            for verb in ("UPDATE", "DELETE")]
APPLICANT_INDEX = "CREATE INDEX IF NOT EXISTS recorded_applicants ON recorded_decisions (system, applicant)"
"""The index an appended decision log's applicant ids are looked up by (never read whole), made by the first append
(:func:`audit.store.logs.stored_applicants`): a log never appended to is stored without it (on a million decisions,
about 1 s of its import saved)."""
BULK_ROWS = 100_000  # decisions inserted at once from which the applicant index (if any) is made after them (if larger)
ROWS_PER_INSERT = 500
"""Decisions one ``INSERT`` statement writes (at most 6 bound values each, far below SQLite's 32,766): on a million
decisions about twice as fast as ``executemany`` row by row (1.7 s against 3.4 s); much longer statements are slower."""
BLOCK_ROWS = 100 * ROWS_PER_INSERT  # decisions made Python values at once by the insert


Item = Union[str, tuple]  # what one result is stored under: a prompt key, or e.g. (prompt key, sample)


@dataclass(frozen=True)
class ResultTable:
    """A table of model outputs, the store's cache: one row per ``scope`` (model and settings) and ``item``."""

    name: str
    scope: tuple[str, ...]
    item: tuple[str, ...]
    values: tuple[str, ...]


LABEL_RESULTS = ResultTable("label_results", ("model", "labels"), ("prompt",), ("probs", "mass"))
CHOICE_RESULTS = ResultTable("choice_results", ("model", "method"), ("prompt",),
                             ("answer", "choice", "logp_first", "logp_second"))
CONTINUATIONS = ResultTable("cairo_continuations", ("model", "decoding"), ("prompt", "sample"), ("text", "text_key"))


class Store:
    """A handle on one result store file; safe to use from several processes at once."""

    def __init__(self, path: str | Path, *, create: bool = True):
        """Open the store at ``path``: read-only when ``create`` is False (readers never write, so an immutable
        or unwritable store can be read), else for writing. Only a file that is already a store of ours is ever
        opened for writing; a new store is created at the first write, so a run that fails before writing
        leaves no file behind."""
        self.path = Path(path)
        self.readonly = not create
        self._deferred = False
        if self.path.is_dir():
            raise AuditError(f"result store {self.path} is a folder; give the path of a store file (e.g. results.db)")
        check_regular(self.path)
        if not self.path.exists():
            if not create:
                raise AuditError(f"result store {self.path} does not exist")
            self._deferred = True  # reads see an empty store until the first write creates the file
            self.db = sqlite3.connect(":memory:", isolation_level=None)
            self.db.executescript(SCHEMA)
            return
        if self.readonly:
            check_is_store(self.path)
            self._bare = not any(Path(f"{self.path}{end}").exists() for end in ("-wal", "-shm"))
            self.db = _open_readonly(self.path)
            return
        self._open_for_writing()

    def _open_for_writing(self) -> None:
        """Connect read-write to an existing store (never creating one) or create a new one where nothing is."""
        exists = self.path.exists()
        if exists:
            check_is_store(self.path, before_writing=True)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        uri = f"{self.path.resolve().as_uri()}?mode={'rw' if exists else 'rwc'}"
        try:
            self.db = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None)
            self.db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_S * 1000}")
            _set_wal(self.db)
            self.db.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.DatabaseError as exc:
            raise AuditError(f"cannot open result store {self.path} for writing: {exc}") from None
        self._initialise()

    def _initialise(self) -> None:
        with self.transaction() as db:
            for statement in [*filter(str.strip, SCHEMA.split(";")), *TRIGGERS]:
                db.execute(statement)
            db.execute("INSERT OR IGNORE INTO meta VALUES ('application', ?)", (APPLICATION,))
            db.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        version = _schema_version(self.db, self.path) or SCHEMA_VERSION
        if version < SCHEMA_VERSION:
            with self.transaction() as db:
                _migrate(db, version)
        elif version != SCHEMA_VERSION:
            raise AuditError(f"result store {self.path} has schema version {version}; this tool reads {SCHEMA_VERSION}")

    def close(self) -> None:
        """Close the connection; a read that left an empty ``-wal``/``-shm`` beside a store that had none has them
        removed (:func:`_tidy`)."""
        self.db.close()
        if self.readonly and getattr(self, "_bare", False):
            _tidy(self.path)

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One atomic write: ``BEGIN IMMEDIATE`` waits for other writers instead of failing on a lock.
        The first write to a new store creates its file. A transaction opened inside another is part of it (all
        of it commits or none)."""
        if self.readonly:
            raise AuditError(f"result store {self.path} is open read-only")
        if self.db.in_transaction:
            yield self.db
            return
        if self._deferred:
            self._deferred = False
            self.db.close()
            self._open_for_writing()
        try:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
            except BaseException:
                if self.db.in_transaction:  # SQLite has already rolled back after a full disk
                    self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")
        except sqlite3.DatabaseError as exc:  # a lock, a full disk or a damaged file, at any of the three steps
            raise AuditError(f"cannot write result store {self.path}: {exc}") from None

    def query(self, sql: str, params: Sequence = ()) -> pd.DataFrame:
        """A read as a DataFrame; a damaged store is an :class:`AuditError`, not a traceback."""
        try:
            return pd.read_sql_query(sql, self.db, params=params)
        except (sqlite3.DatabaseError, pd.errors.DatabaseError) as exc:  # pandas quotes the whole query first
            reason = " ".join(str(exc).rsplit("': ", 1)[-1].split())
            raise AuditError(f"result store {self.path} cannot be read: {reason}") from None

    # ---- writing -----------------------------------------------------------------------------------------

    def check_label(self, fingerprint: str, label: str,
                    remedy: str = "score this one under its own name with --label NAME") -> None:
        """Refuse ``label`` if it already names another model (two systems under one label cannot be told apart)."""
        other = self.db.execute("SELECT fingerprint, details FROM models WHERE label = ? AND fingerprint != ?",
                                (label, fingerprint)).fetchone()
        if other:
            details = json.loads(other[1])
            where = details.get("location") or details.get("source") or "?"
            raise AuditError(f"label {label!r} already names another model in {self.path} (fingerprint "
                             f"{other[0]}, {where}); {remedy}")

    def check_dataset(self, task: str, dataset: str) -> None:
        """Refuse to plan ``task`` from ``dataset`` (a content hash, "" for data shipped with the tool) when the
        store holds that task from other data: two datasets under one task name would merge into one audit."""
        if self.db.execute("SELECT 1 FROM recorded_systems WHERE task = ? LIMIT 1", (task,)).fetchone():
            raise AuditError(f"task {task!r} in {self.path} holds imported decisions; score under another task name")
        recorded = self.db.execute("SELECT value FROM meta WHERE key = ?", (DATASET_KEY + task,)).fetchone()
        if recorded is not None and recorded[0] == dataset:
            return
        if recorded is not None:
            held = f"the dataset with SHA-256 {recorded[0][:16]}…" if recorded[0] else "the data that ships with the tool"
        elif dataset and self.db.execute("SELECT 1 FROM candidates WHERE task = ? LIMIT 1", (task,)).fetchone():
            held = "candidates from another source"
        else:
            return
        raise AuditError(f"task {task!r} in {self.path} already holds {held}; this data "
                         f"({'SHA-256 ' + dataset[:16] + '…' if dataset else 'shipped with the tool'}) would merge "
                         "with it into one audit. Give it its own task name (the spec's `name:`, or the Run page's "
                         "task name) or use another store")

    def check_importable(self, task: str) -> None:
        """Refuse to import recorded decisions under a task name whose candidates are scored here: the import would
        replace that task's audit design and mix the two kinds of system in one audit."""
        if self.db.execute("SELECT 1 FROM candidates WHERE task = ? LIMIT 1", (task,)).fetchone():
            raise AuditError(f"task {task!r} in {self.path} holds candidates scored by models; import recorded "
                             "decisions under their own task name (--task NAME)")

    def register_model(self, fingerprint: str, label: str, details: dict) -> None:
        """Record a model under a label that names it alone (:meth:`check_label`)."""
        with self.transaction() as db:
            self.check_label(fingerprint, label)
            db.execute("INSERT OR IGNORE INTO models VALUES (?, ?, ?, ?)",
                       (fingerprint, label, json.dumps(details, sort_keys=True), time.time()))

    def save_plan(self, *, candidates: Iterable[tuple], prompts: Iterable[tuple[str, str]],
                  pointwise: Iterable[tuple] = (), pairwise: Iterable[tuple] = (),
                  design: AuditDesign | None = None, dataset: str = "") -> None:
        """Record a run's design, candidates, prompt texts and plan rows in one transaction.

        ``candidates``: (task, subtask, candidate_id, group, qualified, name, text);
        ``prompts``: (key, body json); ``pointwise``: (model, task, subtask, candidate_id, prompt, labels, relevance);
        ``pairwise``: (model, task, subtask, method, pool, first_id, second_id, prompt).
        The plan (and the design of its task and subtask) follows the latest task data; results already stored
        are never touched. ``dataset`` is the content hash of the auditor's data (:meth:`check_dataset`), recorded
        for the task of the candidates.
        """
        with self.transaction() as db:
            if design is not None:
                db.execute(SAVE_DESIGN, design.row())
            candidates = list(candidates)
            for task in {row[0] for row in candidates}:
                self.check_dataset(task, dataset)
                if dataset:
                    db.execute("INSERT OR IGNORE INTO meta VALUES (?, ?)", (DATASET_KEY + task, dataset))
            db.executemany(
                "INSERT INTO candidates VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET grp=excluded.grp, "
                "qualified=excluded.qualified, name=excluded.name, text=excluded.text", candidates)
            db.executemany("INSERT OR IGNORE INTO prompts VALUES (?, ?)", prompts)
            db.executemany(
                "INSERT INTO pointwise_plan VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET "
                "prompt=excluded.prompt, labels=excluded.labels, relevance=excluded.relevance", pointwise)
            db.executemany("INSERT INTO pairwise_plan VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET "
                           "prompt=excluded.prompt", pairwise)

    # ---- reading -----------------------------------------------------------------------------------------

    def stored_results(self, table: ResultTable, scope: Sequence, items: Iterable[Item]) -> dict[Item, tuple]:
        """The stored values of each of ``items`` (a prompt key, or a tuple for a table keyed by several columns) under
        ``scope`` (the values of ``table.scope``), as stored (a sequence as JSON text); items not stored are absent."""
        wanted = list(dict.fromkeys(items))
        width = len(table.item)
        where = " AND ".join(f"{column} = ?" for column in table.scope)
        query = (f"SELECT {', '.join(table.item + table.values)} FROM {table.name} WHERE {where} "
                 f"AND {table.item[0]} IN ({{}})")
        found: dict[Item, tuple] = {}
        for start in range(0, len(wanted), 500):
            chunk = set(wanted[start : start + 500])
            firsts = list(dict.fromkeys(item if width == 1 else item[0] for item in chunk))
            try:
                rows = self.db.execute(query.format(",".join("?" * len(firsts))), (*scope, *firsts)).fetchall()
            except sqlite3.DatabaseError as exc:
                raise AuditError(f"result store {self.path} cannot be read: {exc}") from None
            for row in rows:
                item = row[0] if width == 1 else tuple(row[:width])
                if item in chunk:
                    found[item] = tuple(row[width:])
        return found

    def count_results(self, table: ResultTable, scope: Sequence) -> int:
        """How many results ``table`` holds under ``scope``."""
        where = " AND ".join(f"{column} = ?" for column in table.scope)
        try:
            return self.db.execute(f"SELECT COUNT(*) FROM {table.name} WHERE {where}", tuple(scope)).fetchone()[0]
        except sqlite3.DatabaseError as exc:
            raise AuditError(f"result store {self.path} cannot be read: {exc}") from None

    def save_results(self, table: ResultTable, scope: Sequence, rows: Sequence[tuple]) -> None:
        """One batch of results ``(item, *values)`` under ``scope``, atomically; a sequence value is stored as JSON.
        A result already stored is kept as it was (results never change)."""
        columns = (*table.scope, *table.item, *table.values, "created")
        now = time.time()
        stored = []
        for row in rows:
            if len(row) != 1 + len(table.values):
                raise AuditError(f"a result row for {table.name} needs an item and {len(table.values)} values "
                                 f"({', '.join(table.values)}), got {row!r}")
            item = row[0] if isinstance(row[0], tuple) else (row[0],)
            values = [json.dumps(list(v)) if isinstance(v, (list, tuple)) else storable(v) for v in row[1:]]
            stored.append((*scope, *item, *values, now))
        with self.transaction() as db:
            db.executemany(f"INSERT OR IGNORE INTO {table.name} ({', '.join(columns)}) "
                           f"VALUES ({', '.join('?' * len(columns))})", stored)

    def pointwise_table(self) -> pd.DataFrame:
        """Every planned pointwise item with its result, then every decision of a recorded system: one row per
        (model, task, subtask, candidate); ``pool`` is the recorded pool (NA for scored models)."""
        # rows of a recorded system imported before schema 3 (a store read without migrating): pool from the id
        query = """
            SELECT m.label AS model, p.model AS fingerprint, p.task, p.subtask, 'pointwise' AS mode,
                   p.candidate_id, c.grp AS "group", c.qualified, r.probs, p.relevance, r.mass AS label_mass,
                   r.created, CASE WHEN p.model LIKE 'rec-%' THEN
                       CAST(substr(p.candidate_id, 1, instr(p.candidate_id, '.') - 1) AS INTEGER) END AS pool
            FROM pointwise_plan p
            JOIN label_results r ON r.model = p.model AND r.prompt = p.prompt AND r.labels = p.labels
            JOIN candidates c USING (task, subtask, candidate_id)
            JOIN models m ON m.fingerprint = p.model"""
        frame = self.query(query)
        frame["score"] = [sum(p * g for p, g in zip(json.loads(probs), json.loads(relevance)))
                          for probs, relevance in zip(frame["probs"], frame["relevance"])]
        frame = frame.drop(columns=["probs", "relevance"])
        systems = self.query(RECORDED_SYSTEMS_QUERY)
        recorded = decision_scores(self.recorded_decisions() if len(systems) else pd.DataFrame(), systems)
        if len(recorded):
            frame = stacked([frame, recorded]) if len(frame) else recorded.reset_index(drop=True)
        frame["pool"] = frame["pool"].astype("Int64")
        return frame

    def recorded_decisions(self) -> pd.DataFrame:
        """Every recorded decision (the columns of :data:`RECORDED_QUERY`), read column by column
        (:func:`audit.store.columns.recorded_columns`)."""
        try:
            return recorded_columns(self.db, RECORDED_QUERY, decided_column(self.db))
        except (sqlite3.DatabaseError, pd.errors.DatabaseError) as exc:
            raise AuditError(f"result store {self.path} cannot be read: {exc}") from None

    def recorded_systems(self) -> pd.DataFrame:
        """One row per recorded system, task and subtask: ``fingerprint``, ``model`` (its label), ``task``,
        ``subtask``, ``outcome`` (rank, selected or score), ``decisions`` and ``pools``."""
        return self.query("""
            SELECT s.model AS fingerprint, m.label AS model, s.task, s.subtask, s.outcome,
                   (SELECT COUNT(*) FROM recorded_decisions d WHERE d.system = s.id) AS decisions,
                   (SELECT COUNT(DISTINCT pool) FROM recorded_decisions d WHERE d.system = s.id) AS pools
            FROM recorded_systems s JOIN models m ON m.fingerprint = s.model ORDER BY m.label, s.task, s.subtask""")

    def answer_times(self, mode: Mode, fingerprint: str, task: str) -> tuple[float | None, float | None]:
        """(first, last) time one of ``fingerprint``'s answers to ``task`` in ``mode`` (pointwise, else pairwise) was
        stored, None where it has none."""
        table, plan, match = _RESULTS[Mode.POINTWISE if mode == Mode.POINTWISE else Mode.PAIRWISE]
        first, last = self.db.execute(
            f"SELECT MIN(r.created), MAX(r.created) FROM {plan} p JOIN {table} r ON r.model = p.model AND "
            f"r.prompt = p.prompt AND {match} WHERE p.model = ? AND p.task = ?", (fingerprint, task)).fetchone()
        return first, last

    def first_prompt(self, mode: Mode, task: str, subtask: str, fingerprints: Sequence[str]) -> dict:
        """The first stored prompt (its JSON body) of ``task`` and ``subtask`` in ``mode`` by one of ``fingerprints``,
        {} where there is none."""
        plan = "pointwise_plan" if mode == Mode.POINTWISE else "pairwise_plan"
        found = self.db.execute(
            f"SELECT b.body FROM {plan} p JOIN prompts b ON b.key = p.prompt WHERE p.task = ? AND p.subtask = ? "
            f"AND p.model IN ({','.join('?' * len(fingerprints))}) ORDER BY p.prompt LIMIT 1",
            (task, subtask, *fingerprints)).fetchone()
        return json.loads(found[0]) if found else {}

    def ranked_decisions(self) -> pd.DataFrame:
        """Every ranked decision (imported rankings and listwise runs): task, model, subtask, pool, position (0 =
        shown first), grp and value (rank); the decisions read without their system's texts, which are joined after
        (a row then carries no repeated text out of SQLite)."""
        systems = self.query("SELECT s.id AS system, s.task, m.label AS model, s.subtask FROM recorded_systems s "
                             "JOIN models m ON m.fingerprint = s.model WHERE s.outcome = 'rank'")
        decisions = self.query(RANKED_QUERY)
        return decisions.merge(systems, on="system")[["task", "model", "subtask", "pool", "position", "grp", "value"]]

    def decision_counts(self, task: str, k: int) -> tuple[pd.DataFrame, pd.DataFrame]:
        """(systems, counts) of ``task``'s recorded systems, counted in SQL (no decision is read into memory):
        ``systems`` one row per system (``system`` id, ``model`` label, ``subtask``, ``outcome``, the ``median`` of a
        score system's scores); ``counts`` per system, pool, group code and date (NULL where undated) the decisions
        ``n`` and those ``chosen`` as ``verdict`` decides them: rank ≤ ``k``, the recorded 0/1, a score above the
        system's median (:func:`audit.metrics.keys.with_decisions`)."""
        systems = self.query("SELECT s.id AS system, m.label AS model, s.subtask, s.outcome FROM recorded_systems s "
                             "JOIN models m ON m.fingerprint = s.model WHERE s.task = ? ORDER BY s.id", (task,))
        medians = [float(np.median(self.query("SELECT value FROM recorded_decisions WHERE system = ?",
                                              (int(system),))["value"])) if outcome == "score" else np.nan
                   for system, outcome in zip(systems["system"], systems["outcome"])]
        systems["median"] = medians
        chosen = " ".join(f"WHEN {int(system)} THEN d.value > {median!r}" for system, median in
                          zip(systems["system"], medians) if not np.isnan(median))
        counts = self.query(f"""
            SELECT d.system, d.pool, d.grp AS "group", {decided_column(self.db)} AS date, COUNT(*) AS n,
                   SUM(CASE s.outcome WHEN 'selected' THEN d.value > 0 WHEN 'rank' THEN d.value <= ?
                       ELSE (CASE d.system {chosen or 'WHEN NULL THEN 0'} ELSE 0 END) END) AS chosen
            FROM recorded_decisions d JOIN recorded_systems s ON s.id = d.system WHERE s.task = ?
            GROUP BY d.system, d.pool, d.grp, date""", (int(k), task))
        return systems, counts

    def dated_tasks(self) -> list[str]:
        """The tasks with at least one dated recorded decision (what monitoring can watch), sorted."""
        if decided_column(self.db) == "NULL":
            return []
        return self.query("SELECT DISTINCT s.task FROM recorded_systems s WHERE EXISTS (SELECT 1 FROM "
                          "recorded_decisions d WHERE d.system = s.id AND d.decided IS NOT NULL) ORDER BY s.task"
                          )["task"].astype(str).tolist()

    def pairwise_table(self) -> pd.DataFrame:
        """Every planned pairwise prompt with its result, both candidates' groups and the prompt's options (JSON)."""
        query = """
            SELECT m.label AS model, p.model AS fingerprint, p.task, p.subtask, p.method, p.pool,
                   p.first_id, p.second_id, a.grp AS first_group, b.grp AS second_group,
                   a.qualified AS first_qualified, b.qualified AS second_qualified,
                   r.answer, r.choice, r.logp_first, r.logp_second, r.created, n.pool_prompts,
                   json_extract(q.body, '$.options') AS options
            FROM pairwise_plan p
            JOIN prompts q ON q.key = p.prompt
            JOIN (SELECT model, task, subtask, method, pool, COUNT(*) AS pool_prompts FROM pairwise_plan
                  GROUP BY model, task, subtask, method, pool) n
              ON n.model = p.model AND n.task = p.task AND n.subtask = p.subtask AND n.method = p.method
                 AND n.pool = p.pool
            JOIN choice_results r ON r.model = p.model AND r.prompt = p.prompt AND r.method = p.method
            JOIN candidates a ON a.task = p.task AND a.subtask = p.subtask AND a.candidate_id = p.first_id
            JOIN candidates b ON b.task = p.task AND b.subtask = p.subtask AND b.candidate_id = p.second_id
            JOIN models m ON m.fingerprint = p.model"""
        return self.query(query)

    # ---- CAIRO: prompt plan, sampled continuations, toxicity -----------------------------------------------

    def save_cairo_plan(self, rows: Iterable[tuple]) -> None:
        """CAIRO prompt rows ``(metric, dimension, prompt_set, position, source, subgroup, prompt key, text)``.

        The plan follows the latest prompt files; stored continuations are never touched.
        """
        with self.transaction() as db:
            db.executemany("INSERT INTO cairo_plan VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET "
                           "source=excluded.source, subgroup=excluded.subgroup, prompt=excluded.prompt, "
                           "text=excluded.text", rows)

    def unscored_texts(self, scorer: str) -> list[tuple[str, str]]:
        """``(text key, text)`` of every distinct continuation with no toxicity score from ``scorer``."""
        return self.db.execute(
            "SELECT c.text_key, MIN(c.text) FROM cairo_continuations c LEFT JOIN cairo_toxicity t "
            "ON t.text_key = c.text_key AND t.scorer = ? WHERE t.text_key IS NULL GROUP BY c.text_key "
            "ORDER BY c.text_key", (scorer,)).fetchall()

    def save_toxicity(self, scorer: str, rows: Sequence[tuple[str, float]]) -> None:
        """One batch of toxicity scores ``(text key, score)``, atomically."""
        now = time.time()
        with self.transaction() as db:
            db.executemany("INSERT OR IGNORE INTO cairo_toxicity VALUES (?, ?, ?, ?)",
                           [(scorer, key, float(score), now) for key, score in rows])

    def cairo_table(self) -> pd.DataFrame:
        """Every planned CAIRO prompt's continuations with their toxicity: one row per (model, prompt, decoding,
        sample, scorer)."""
        query = """
            SELECT m.label AS model, c.model AS fingerprint, p.metric, p.dimension, p.prompt_set, p.source,
                   p.position, p.subgroup, p.text AS prompt, c.decoding, c.sample, c.text AS continuation,
                   t.scorer, t.score AS toxicity
            FROM cairo_plan p
            JOIN cairo_continuations c ON c.prompt = p.prompt
            JOIN cairo_toxicity t ON t.text_key = c.text_key
            JOIN models m ON m.fingerprint = c.model"""
        return self.query(query)

    def designs(self) -> dict[tuple[str, str], AuditDesign]:
        """(task, subtask) → design of every task in the store; tasks stored without one (a store that could not be
        migrated, e.g. read-only) get the design derived as a migration would, in memory."""
        tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        stored = self.db.execute("SELECT * FROM designs").fetchall() if "designs" in tables else []
        designs = {(row[0], row[1]): AuditDesign.from_row(row) for row in stored}
        return {**designs, **{(d.task, d.subtask): d for d in _derived_designs(self.db, set(designs))}}

    def models(self) -> pd.DataFrame:
        """Registered models: fingerprint, label and the details they were resolved from."""
        return self.query("SELECT fingerprint, label, details, created FROM models")

    def row_counts(self) -> dict[str, int]:
        """Row count of every table (used to prove a failed command left the store unchanged)."""
        tables = [r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        return {t: self.db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in tables}


SAVE_DESIGN = "INSERT OR REPLACE INTO designs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
#: per mode, the results table, its plan and how a result matches its plan row (:meth:`Store.answer_times`)
_RESULTS = {Mode.POINTWISE: ("label_results", "pointwise_plan", "r.labels = p.labels"),
            Mode.PAIRWISE: ("choice_results", "pairwise_plan", "r.method = p.method")}


def save_design(db: sqlite3.Connection, design: AuditDesign) -> None:
    """Store ``design`` (replacing the task and subtask's design) within the open transaction ``db``."""
    db.execute(SAVE_DESIGN, design.row())
RECORDED_SYSTEMS_QUERY = """
    SELECT s.id AS system, m.label AS model, s.model AS fingerprint, s.task, s.subtask, s.outcome, m.created
    FROM recorded_systems s JOIN models m ON m.fingerprint = s.model"""
#: the ranked decisions with their shown positions (:meth:`Store.ranked_decisions`)
RANKED_QUERY = """SELECT d.system, d.pool, d.position, d.grp, d.value FROM recorded_decisions d
                  JOIN recorded_systems s ON s.id = d.system WHERE s.outcome = 'rank'"""
#: a decision's candidate is its applicant id, else ``<pool>.<position>`` (made here, in one pass of SQLite)
RECORDED_QUERY = """SELECT system, pool, grp AS "group", value,
                           COALESCE(applicant, pool || '.' || position) AS candidate_id, {decided} AS date
                    FROM recorded_decisions"""


def decided_column(db: sqlite3.Connection) -> str:
    """``decided``, the recorded decisions' date column, or ``NULL`` in a store of schema 4 or older read without
    migrating (read-only: its decisions have no dates)."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(recorded_decisions)")}
    return "decided" if "decided" in columns else "NULL"


def storable(value: Any) -> Any:
    """``value``, but text with an unpaired surrogate (a reply's ``\\ud800``, which UTF-8 cannot encode) with each
    such surrogate replaced by U+FFFD."""
    if not isinstance(value, str) or value.isascii():
        return value
    return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def save_recorded(db: sqlite3.Connection, model: str, task: str, outcome: str, decisions: pd.DataFrame,
                  parts: Mapping[str, np.ndarray] | None = None) -> dict[tuple[str, str], bytes]:
    """Write the decisions of one recorded system (fingerprint ``model``) under ``task``, in the caller's
    transaction, replacing what that system had stored for the same subtasks. ``decisions``: columns ``subtask``,
    ``pool`` and ``position`` (integers, unique per subtask), ``group``, ``value`` (the outcome: rank, 0/1 or
    score; finite), ``applicant`` (id, or missing: the candidate is then ``<pool>.<position>``) and optionally
    ``date`` (ISO ``YYYY-MM-DD``, or missing). ``parts``: where the caller knows them, each subtask's rows (positions
    in ``decisions``) in pool and position order, in sorted order of the subtasks (no grouping or sorting here).
    Returns (model, subtask) → the text :func:`data_hash` hashes for what was written (its ``known``: no second read
    of the store)."""
    if outcome not in OUTCOMES:
        raise AuditError(f"outcome {outcome!r} not understood; use one of {list(OUTCOMES)}")
    if parts is None:
        columns = ((str(subtask), decision_columns(in_order(part)))
                   for subtask, part in decisions.groupby("subtask", sort=True))
    else:
        columns = ((subtask, decision_columns(decisions, rows)) for subtask, rows in parts.items())
    texts = {}
    for subtask, stored in columns:
        key = (model, task, subtask)
        db.execute("DELETE FROM recorded_decisions WHERE system IN "
                   "(SELECT id FROM recorded_systems WHERE model=? AND task=? AND subtask=?)", key)
        db.execute("DELETE FROM recorded_systems WHERE model=? AND task=? AND subtask=?", key)
        system = db.execute("INSERT INTO recorded_systems (model, task, subtask, outcome) VALUES (?, ?, ?, ?)",
                            (*key, outcome)).lastrowid
        with ThreadPoolExecutor(max_workers=1) as hasher:  # the text joined while SQLite writes (both free the GIL)
            text = hasher.submit(columns_text, model, subtask, stored)
            insert_columns(db, system, stored)
            texts[(model, subtask)] = text.result()
    return texts


def in_order(part: pd.DataFrame) -> pd.DataFrame:
    """``part`` sorted by pool and position (as it is when read in that order: then not copied)."""
    pool, position = part["pool"].to_numpy(), part["position"].to_numpy()
    same = pool[1:] == pool[:-1]
    if ((pool[1:] > pool[:-1]) | (same & (position[1:] > position[:-1]))).all():
        return part
    return part.sort_values(["pool", "position"])


def decision_columns(part: pd.DataFrame, rows: np.ndarray | None = None) -> list[np.ndarray | pa.Array]:
    """The values :func:`insert_decisions` stores for ``part`` (columns of :func:`save_recorded`), or for its
    ``rows`` (positions, in that order), column by column: pool and position (NumPy integers), group (Arrow text,
    dictionary-encoded: a few categories), value (NumPy floats), applicant (Arrow text, null where missing) and,
    where some decision has one, date (Arrow text, dictionary-encoded, null where missing)."""
    def number(name: str, dtype: type) -> np.ndarray:
        values = part[name].to_numpy(dtype=dtype)
        return values if rows is None else values[rows]

    def text(column: pd.Series) -> pa.Array:
        array = pa.array(column.astype("string"), type=pa.large_string())
        array = array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array
        return array if rows is None else array.take(rows)

    columns = [number("pool", np.int64), number("position", np.int64), _categories(part["group"], rows),
               number("value", float), text(part["applicant"])]
    if "date" in part and bool(part["date"].notna().any()):
        columns.append(text(part["date"]).dictionary_encode())
    return columns


def _categories(group: pd.Series, rows: np.ndarray | None) -> pa.DictionaryArray:
    """The group codes of :func:`decision_columns` as Arrow text, dictionary-encoded: a categorical's own codes
    (the decision-log reader's), else the texts encoded."""
    if not isinstance(group.dtype, pd.CategoricalDtype) or group.isna().any():
        texts = pa.array(group.astype(str).astype("string"), type=pa.large_string())
        texts = texts.combine_chunks() if isinstance(texts, pa.ChunkedArray) else texts
        return (texts if rows is None else texts.take(rows)).dictionary_encode()
    codes = group.cat.codes.to_numpy().astype(np.int32)
    return pa.DictionaryArray.from_arrays(codes if rows is None else codes[rows],
                                          pa.array(group.cat.categories.astype(str), type=pa.large_string()))


def insert_decisions(db: sqlite3.Connection, system: int, part: pd.DataFrame) -> None:
    """Insert the decisions ``part`` (columns of :func:`save_recorded`) of the recorded system ``system``, with
    multi-row ``INSERT`` statements of :data:`ROWS_PER_INSERT` rows. Where the store has the applicant index
    (:data:`APPLICANT_INDEX`), a part larger than every decision stored so far is inserted with the index dropped and
    made again after, in the same transaction: one sort instead of a million scattered index inserts."""
    insert_columns(db, system, decision_columns(part))


def insert_columns(db: sqlite3.Connection, system: int, columns: list[np.ndarray | pa.Array]) -> None:
    """:func:`insert_decisions` of the stored columns (:func:`decision_columns`) of some decisions, made Python
    values block by block (:data:`BLOCK_ROWS` rows: the values of a million decisions never all at once)."""
    width, count = len(columns), len(columns[0])
    # the system (an integer) and a missing date written into the statement: fewer values bound per row
    row = f"({int(system)}, ?, ?, ?, ?, ?, {'?' if width == 6 else 'NULL'})"
    rebuild = count >= BULK_ROWS and db.execute("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = "
                                                "'recorded_applicants'").fetchone() is not None \
        and db.execute("SELECT COUNT(*) FROM recorded_decisions").fetchone()[0] < count
    if rebuild:
        db.execute("DROP INDEX IF EXISTS recorded_applicants")
    statement = "INSERT INTO recorded_decisions VALUES " + ", ".join([row] * ROWS_PER_INSERT)
    step = ROWS_PER_INSERT * width
    for first in range(0, count, BLOCK_ROWS):
        values = _python_values([column[first:first + BLOCK_ROWS] for column in columns])
        whole = len(values) - len(values) % step
        for start in range(0, whole, step):
            db.execute(statement, values[start:start + step])
        if whole < len(values):
            db.execute("INSERT INTO recorded_decisions VALUES " + ", ".join([row] * ((len(values) - whole) // width)),
                       values[whole:])
    if rebuild:
        db.execute(APPLICANT_INDEX)


def _python_values(columns: list[np.ndarray | pa.Array]) -> list:
    """The values of ``columns`` as one list of Python ints, floats, texts and None, row after row."""
    table = np.empty((len(columns[0]), len(columns)), dtype=object)
    for index, column in enumerate(columns):
        if isinstance(column, pa.DictionaryArray):  # one Python text per category, None at the end for null
            texts = np.array([*column.dictionary.to_pylist(), None], dtype=object)
            column = texts[pc.fill_null(column.indices, len(texts) - 1).to_numpy()]
        table[:, index] = column.to_numpy(zero_copy_only=False) if isinstance(column, pa.Array) else column
    return table.ravel().tolist()


def _migrate(db: sqlite3.Connection, from_version: int) -> None:
    """Bring a store of schema ``from_version`` to :data:`SCHEMA_VERSION` in place, in the caller's transaction,
    through each step of :data:`MIGRATIONS` above it in order; no row is dropped or changed."""
    for version, step in sorted(MIGRATIONS.items()):
        if version > from_version:
            step(db)
    db.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))


def _record_designs(db: sqlite3.Connection) -> None:
    """Record the design of every stored task (derived from its candidates and plan)."""
    db.executemany(SAVE_DESIGN, [design.row() for design in _derived_designs(db, set())])


def _move_recorded(db: sqlite3.Connection) -> None:
    """Move recorded rankings stored before schema 3 (fingerprint ``rec-…``, one-label results of score
    (n − rank)/(n − 1), candidates ``<pool>.<position>``) into the recorded tables, deleting their old rows (and
    the candidates no other plan row uses)."""
    old = pd.read_sql_query("""
        SELECT p.model, p.task, p.subtask, p.candidate_id, c.grp AS "group", r.probs
        FROM pointwise_plan p JOIN label_results r ON r.model = p.model AND r.prompt = p.prompt AND r.labels = p.labels
        JOIN candidates c USING (task, subtask, candidate_id) WHERE p.model LIKE 'rec-%'""", db)
    if old.empty:
        return
    for (model, task), part in legacy_decisions(old).groupby(["model", "task"], sort=True):
        save_recorded(db, str(model), str(task), "rank", part)
    db.execute("DELETE FROM label_results WHERE model LIKE 'rec-%'")
    db.execute("DELETE FROM pointwise_plan WHERE model LIKE 'rec-%'")
    db.execute("""
        DELETE FROM candidates WHERE (task, subtask) IN (SELECT task, subtask FROM recorded_systems)
        AND NOT EXISTS (SELECT 1 FROM pointwise_plan p WHERE p.task = candidates.task
                        AND p.subtask = candidates.subtask AND p.candidate_id = candidates.candidate_id)
        AND NOT EXISTS (SELECT 1 FROM pairwise_plan p WHERE p.task = candidates.task AND p.subtask = candidates.subtask
                        AND candidates.candidate_id IN (p.first_id, p.second_id))""")


def _add_decided(db: sqlite3.Connection) -> None:
    """Give the recorded decisions their date column (NULL: decisions imported before schema 5 have none), unless
    the table was just made with it."""
    if decided_column(db) == "NULL":
        db.execute("ALTER TABLE recorded_decisions ADD COLUMN decided TEXT")


#: The one migration path. Every schema version above 1 and the step that brings a store of the version below to it.
#: A new table goes into :data:`SCHEMA` (created, empty, in every store opened for writing, and as an empty temporary
#: table in a read-only connection) with a step here under the next version: the step fills it from the older tables,
#: or does nothing when it starts empty.
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {
    2: _record_designs,  # the designs table
    3: _move_recorded,  # recorded systems in their own tables
    4: lambda db: None,  # the runs table (the audit trail, audit.store.runs), empty until a run is recorded
    5: _add_decided,  # each recorded decision's date (NULL for decisions imported before)
}
SCHEMA_VERSION = max(MIGRATIONS)


def data_hash(store: "Store", task: str, subtasks: Sequence[str],
              known: Mapping[tuple[str, str], bytes] | None = None) -> tuple[str, int, str]:
    """(SHA-256 of the data the task's results come from, number of rows, what they are). Scored tasks: the candidate
    rows in ``subtasks``, each (subtask, candidate id, group, qualified, name, text); recorded systems: their
    decisions, each (system, subtask, pool, position, group, value, applicant[, date where it has one]). Each row is one JSON array, rows
    sorted, joined by newlines: the hash changes with any edit of the data the numbers were computed on. ``known``:
    (fingerprint, subtask) → the text of recorded decisions just written (:func:`save_recorded`), used instead of
    reading them back."""
    marks = ",".join("?" * len(subtasks))
    found = store.db.execute(
        f"SELECT subtask, candidate_id, grp, qualified, name, text FROM candidates WHERE task = ? AND subtask IN "
        f"({marks}) ORDER BY subtask, candidate_id", (task, *subtasks)).fetchall()
    what = "rows of the store's candidates table"
    if not found:
        return _recorded_hash(store.db, task, subtasks, known or {})
    encode = json.JSONEncoder(ensure_ascii=False).encode  # what json.dumps(row, ensure_ascii=False) builds per call
    text = "".join(f"{encode(list(row))}\n" for row in found)
    return hashlib.sha256(text.encode("utf-8")).hexdigest(), len(found), what


def _recorded_hash(db: sqlite3.Connection, task: str, subtasks: Sequence[str],
                   known: Mapping[tuple[str, str], bytes]) -> tuple[str, int, str]:
    """:func:`data_hash` of recorded decisions: system by system (fingerprint, subtask), each one's rows made column
    by column (:func:`audit.store.digest.rows_text`), row by row only where a text needs JSON escaping or a value
    is not a whole number."""
    marks, decided = ",".join("?" * len(subtasks)), decided_column(db)
    digest, rows = hashlib.sha256(), 0
    for system, model, subtask in db.execute(
            f"SELECT s.id, s.model, s.subtask FROM recorded_systems s WHERE s.task = ? AND s.subtask IN ({marks}) "
            f"ORDER BY s.model, s.subtask", (task, *subtasks)).fetchall():
        text = known[(model, subtask)] if (model, subtask) in known else rows_text(db, system, model, subtask, decided)
        if text is not None and (model, subtask) in known:  # one line per decision (JSON escapes a line break)
            count = text.count(b"\n")
        else:
            count = db.execute("SELECT COUNT(*) FROM recorded_decisions WHERE system = ?", (system,)).fetchone()[0]
        if text is None:
            found = db.execute(
                f"SELECT s.model, s.subtask, d.pool, d.position, d.grp, d.value, d.applicant, {decided} FROM "
                f"recorded_decisions d JOIN recorded_systems s ON s.id = d.system WHERE s.id = ? ORDER BY d.pool, "
                f"d.position", (system,)).fetchall()
            found = [row if row[-1] is not None else row[:-1] for row in found]  # undated rows hash as before dates
            encode = json.JSONEncoder(ensure_ascii=False).encode
            text = "".join(f"{encode(list(row))}\n" for row in found).encode("utf-8")
        digest.update(text)
        rows += count
    return digest.hexdigest(), rows, "recorded decisions (imported: sources in Appendix C)"


def _derived_designs(db: sqlite3.Connection, known: set[tuple[str, str]]) -> list[AuditDesign]:
    """Designs for the (task, subtask) pairs with candidates but outside ``known`` (see
    :func:`audit.tasks.designs.derived_design`)."""
    groups: dict[tuple[str, str], set[str]] = {}
    for task, subtask, group in db.execute("SELECT DISTINCT task, subtask, grp FROM candidates"):
        if (task, subtask) not in known:
            groups.setdefault((task, subtask), set()).add(group)
    if not groups:
        return []
    from audit.tasks.designs import derived_design  # the task modules, only when some design is missing

    labels = {(task, subtask): json.dumps(dict(zip(json.loads(names), json.loads(values))))
              for task, subtask, names, values in db.execute(
                  "SELECT task, subtask, MIN(labels), MIN(relevance) FROM pointwise_plan GROUP BY task, subtask")}
    return [derived_design(task, subtask, sorted(members), labels.get((task, subtask)))
            for (task, subtask), members in sorted(groups.items())]


def check_regular(path: Path) -> None:
    """Refuse a store path that exists but is no regular file (a FIFO would hang the read, a device like /dev/null
    would get a ``-journal`` file created beside it)."""
    if path.exists() and not path.is_dir() and not stat.S_ISREG(path.stat().st_mode):
        raise AuditError(f"result store {path} is not a regular file (a FIFO, device or socket); give a store file")


def check_is_store(path: Path, *, before_writing: bool = False) -> None:
    """Refuse files that are not SQLite, and SQLite files that belong to something else; ``before_writing``, also a
    store whose pages are damaged (SQLite's quick check), before a single byte of it changes."""
    if path.is_dir():
        raise AuditError(f"result store {path} is a directory, not a file")
    check_regular(path)
    try:
        with path.open("rb") as handle:
            header = handle.read(16)
    except OSError as exc:
        raise AuditError(f"cannot read result store {path}: {exc.strerror}") from None
    if not header:
        return  # an empty file is a new store
    if header != b"SQLite format 3\x00":
        raise AuditError(f"{path} is not a result store (not a SQLite database)")
    # immutable (no lock, no -wal/-shm files created beside someone else's database) unless a WAL is present
    options = "mode=ro" if Path(f"{path}-wal").exists() else "mode=ro&immutable=1"
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?{options}", uri=True, timeout=BUSY_TIMEOUT_S)
    except sqlite3.DatabaseError as exc:
        raise AuditError(f"cannot read result store {path}: {exc}") from None
    try:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        owner = db.execute("SELECT value FROM meta WHERE key='application'").fetchone() if "meta" in tables else None
        version = _schema_version(db, path) if "meta" in tables else None
        damage = db.execute("PRAGMA quick_check").fetchall() if before_writing else [("ok",)]
    except sqlite3.DatabaseError as exc:
        raise AuditError(f"{path} is not a readable result store: {exc}") from None
    finally:
        db.close()
    if damage != [("ok",)]:
        problems = [line for row in damage for line in str(row[0]).splitlines() if not line.startswith("***")]
        raise AuditError(f"result store {path} is damaged (SQLite quick check: {(problems or ['failed'])[0]}, "
                         f"{len(problems)} problem(s)); nothing was written — restore it from a copy")
    if tables and (owner is None or owner[0] != APPLICATION):
        raise AuditError(f"{path} is a SQLite database of another application (tables: {', '.join(sorted(tables))})")
    if version is not None and version > SCHEMA_VERSION:  # checked before anything is written
        raise AuditError(f"result store {path} has schema version {version}; this tool reads {SCHEMA_VERSION} "
                         "(a newer version of the tool wrote it)")


def _set_wal(db: sqlite3.Connection) -> None:
    """Switch to write-ahead logging. SQLite does not wait on its busy handler for this switch, so while another
    process is creating the same new store it is retried here, up to the store's busy timeout."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            db.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _tidy(path: Path) -> None:
    """Remove the ``-wal``/``-shm`` a read-only connection left (it may not delete them itself) the way SQLite does:
    a read-write connection opened and closed, which checkpoints and deletes them only when it is the store's last
    connection, so a concurrent reader's or writer's files are never touched. Nothing is done to a store this
    process may not write (they stay, as SQLite leaves them)."""
    if not any(Path(f"{path}{end}").exists() for end in ("-wal", "-shm")) or not os.access(path, os.W_OK) \
            or not os.access(path.parent, os.W_OK):
        return
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=rw", uri=True, timeout=1, isolation_level=None)
        try:
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        pass  # busy or unreadable: the files stay, as SQLite itself would leave them


def _open_readonly(path: Path) -> sqlite3.Connection:
    """A read-only connection by URI (the path quoted, so ``#``, ``?`` and ``%`` are file-name characters); if even
    that cannot open (no access to the WAL index), the file is read as immutable. Tables an older store lacks are
    made empty in the connection's temporary schema, so every read works without writing."""
    uri = path.resolve().as_uri()
    for options in ("mode=ro", "mode=ro&immutable=1"):
        db = sqlite3.connect(f"{uri}?{options}", uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        try:
            db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_S * 1000}")
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        except sqlite3.OperationalError:
            db.close()
            continue
        except sqlite3.DatabaseError as exc:
            db.close()
            raise AuditError(f"{path} is not a readable result store: {exc}") from None
        for statement in filter(str.strip, SCHEMA.split(";")):
            name = statement.split("EXISTS", 1)[1].split("(", 1)[0].strip()
            if name not in tables:
                db.execute(statement.replace("CREATE TABLE", "CREATE TEMP TABLE", 1))
        return db
    raise AuditError(f"result store {path} cannot be opened for reading")


def _schema_version(db: sqlite3.Connection, path: Path) -> int | None:
    """The store's schema version, or None when it has none yet (a new or empty file)."""
    try:
        row = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    except sqlite3.OperationalError:  # no meta table
        return None
    if row and not (str(row[0]).isascii() and str(row[0]).isdigit()):
        raise AuditError(f"result store {path} has schema version {row[0]!r}, not a whole number: it is damaged")
    return int(row[0]) if row else None
