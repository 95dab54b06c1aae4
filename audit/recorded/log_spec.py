"""The spec of a decision log: which of its columns hold the applicant id, the demographics, the pool, the subtask,
the date and the one outcome (YAML or JSON, a few keys of text)::

    applicant: applicant_id        # required: one row per applicant, ids unique
    demographics: [sex, race]      # required: one or more columns; several make the intersection (codes F_W, …)
    outcome: {rank: position}      # selected (0/1), score (numeric) or rank (1 = first in its pool): one of them;
                                   # left out, the log's own column named selected, score or rank (exactly one)
    pool: requisition              # optional: the pool each applicant competed in (default: one pool per subtask)
    subtask: job                   # optional: the subtask column (default: one subtask, "all")
    date: decided_on               # optional: the decision date (its range is stored with the source)
    reference: M_W                 # optional: the reference category (default: the most-selected one)
    label: acme-screener           # optional: the system's name (default: the log file's name)
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from audit.errors import AuditError
from audit.store.recorded import OUTCOMES
from audit.tasks.specs import check_keys, read_mapping

KEYS = {"applicant", "demographics", "outcome", "pool", "subtask", "date", "reference", "label"}


@dataclass(frozen=True)
class LogSpec:
    """A decision log's columns; ``outcome`` None means the log's own ``selected`` / ``score`` / ``rank`` column."""

    applicant: str
    demographics: tuple[str, ...]
    outcome: tuple[str, str] | None = None  # (kind, column)
    pool: str | None = None
    subtask: str | None = None
    date: str | None = None
    reference: str | None = None
    label: str | None = None

    def canonical(self) -> str:
        """The spec as sorted JSON (part of an imported system's fingerprint)."""
        return json.dumps({"applicant": self.applicant, "demographics": list(self.demographics),
                           "outcome": list(self.outcome) if self.outcome else None, "pool": self.pool,
                           "subtask": self.subtask, "date": self.date, "reference": self.reference}, sort_keys=True)


def load_log_spec(path: str | Path) -> LogSpec:
    """Read and check a spec file (``.yaml``/``.yml``/``.json``); errors name the file and the key."""
    return parse_log_spec(read_mapping(path), str(path))


def parse_log_spec(raw: Any, where: str = "spec") -> LogSpec:
    """A :class:`LogSpec` from a parsed mapping; ``where`` prefixes every error message."""
    check_keys(raw, where, KEYS, "a mapping with keys applicant and demographics (see docs/decision-logs.md)")
    demographics = raw.get("demographics")
    demographics = [demographics] if isinstance(demographics, str) else demographics
    if not isinstance(demographics, list) or not demographics or not all(_name(c) for c in demographics):
        raise AuditError(f"{where}: key 'demographics' must name one or more columns (e.g. [sex, race])")
    if len(set(demographics)) != len(demographics):
        raise AuditError(f"{where}: key 'demographics' names a column twice")
    outcome = raw.get("outcome")
    if outcome is not None:
        if not (isinstance(outcome, dict) and len(outcome) == 1 and next(iter(outcome)) in OUTCOMES
                and _name(next(iter(outcome.values())))):
            raise AuditError(f"{where}: key 'outcome' must be one of {{selected: COLUMN}}, {{score: COLUMN}} or "
                             "{rank: COLUMN} (exactly one outcome)")
        outcome = tuple(str(v).strip() for v in next(iter(outcome.items())))
    optional = {key: raw.get(key) for key in ("pool", "subtask", "date", "reference", "label")}
    for key, value in optional.items():
        if value is not None and not _name(value):
            raise AuditError(f"{where}: key {key!r} must be non-empty text")
    if not _name(raw.get("applicant")):
        raise AuditError(f"{where}: key 'applicant' must name the applicant id column")
    columns = [raw["applicant"], *demographics, *(v for k, v in optional.items() if k in ("pool", "subtask", "date")
                                                    and v is not None)]
    if outcome:
        columns.append(outcome[1])
    repeated = sorted({c for c in columns if columns.count(c) > 1})
    if repeated:
        raise AuditError(f"{where}: column(s) {repeated} named for more than one role")
    return LogSpec(raw["applicant"].strip(), tuple(c.strip() for c in demographics), outcome,
                   **{k: v.strip() if v is not None else None for k, v in optional.items()})


def _name(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())
