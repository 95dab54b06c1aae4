"""The auditor's own candidates: a CSV / Parquet / JSONL file plus a task spec (see :mod:`audit.tasks.specs`).

Columns: ``text`` and the spec's group column(s) (default ``group``) are required; ``qualified`` (1/0, true/false,
yes/no; without the column every candidate counts as qualified), ``id`` (default: the group and a SHA-256 of the
text) and ``subtask`` (default ``default``) are optional. Every check runs when the task is built, before anything
is stored.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from audit.bounded import column_list
from audit.design import PoolDesign, split_groupings
from audit.errors import AuditError
from audit.tasks.base import Candidate, ChatPrompt, LabelSet, dataset_hash
from audit.tasks.loaders import Row, cell_text, columns_of, group_name, read_rows
from audit.tasks.pools import draw
from audit.tasks.specs import TaskSpec, load_spec

DEFAULT_SUBTASK = "default"
QUALIFICATION = "column 'qualified' of the candidates file (everyone when the column is absent)"
TRUE, FALSE = {"1", "true", "yes", "y", "1.0"}, {"0", "false", "no", "n", "0.0"}


@dataclass
class CustomTask:
    """One subtask of the auditor's candidates, prompted as the spec says."""

    subtask: str
    spec: TaskSpec
    members: Sequence[Candidate]
    groups: tuple[str, ...]
    dataset: str = ""  # SHA-256 of the whole candidates file's content (every subtask), see :func:`dataset_hash`

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def reference_group(self) -> str:
        return self.spec.reference_group

    @property
    def label_set(self) -> LabelSet:
        return self.spec.label_set

    @property
    def pool_design(self) -> PoolDesign:
        return self.spec.pools

    @property
    def qualification(self) -> str:
        return QUALIFICATION

    @property
    def groupings(self) -> dict[str, int | None]:
        return split_groupings(self.spec.group_columns)

    @property
    def group_names(self) -> dict[str, str]:
        return {}

    @property
    def counterfactual(self) -> bool:
        return False

    @property
    def quota(self) -> int:
        return 1

    @property
    def quota_reason(self) -> str:
        return "the first place of each pool (the task spec declares no quota)"

    def candidates(self, limit: int | None = None) -> list[Candidate]:
        """The file's candidates in file order, at most ``limit`` per group."""
        taken: dict[str, int] = {}
        out = []
        for candidate in self.members:
            if limit is None or taken.get(candidate.group, 0) < limit:
                taken[candidate.group] = taken.get(candidate.group, 0) + 1
                out.append(candidate)
        return out

    def pointwise_prompt(self, candidate: Candidate) -> ChatPrompt:
        return ChatPrompt(system=self.spec.instruction, user=self.spec.user.replace("{text}", candidate.text),
                          answer_prefix=self.spec.answer_prefix)

    def pairwise_prompt(self, first: Candidate, second: Candidate) -> ChatPrompt:
        item = self.spec.pairwise_item
        user = (f"{self.spec.pairwise_question}\n{item} A: {first.text}\n{item} B: {second.text}\n"
                f"Respond succinctly with only the letter of the {item.lower()}.")
        return ChatPrompt(system=self.spec.pairwise_system, user=user, options=("A", "B"))

    def pools(self, candidates: Sequence[Candidate], rounds: int) -> list[list[Candidate]]:
        return draw(self.spec.pools, candidates, self.groups, rounds, seed=f"{self.name}:{self.subtask}:pools")


def custom_task(subtask: str, data: Path, spec: Path) -> CustomTask:
    """The subtask ``subtask`` of the candidates file ``data`` under the spec file ``spec``."""
    parsed = load_spec(spec)
    by_subtask = load_candidates(Path(data), parsed)
    if subtask not in by_subtask:
        raise AuditError(f"unknown subtask {subtask!r} in {data}; choose one of {sorted(by_subtask)}")
    members = by_subtask[subtask]
    content = [(name, c.candidate_id, c.group, c.qualified, c.text) for name, part in by_subtask.items() for c in part]
    return CustomTask(subtask, parsed, members, _groups(members, parsed, data, subtask), dataset_hash(content))


def subtasks(data: Path, spec: Path) -> list[str]:
    """The subtasks of the candidates file (``default`` when it has no ``subtask`` column)."""
    return sorted(load_candidates(Path(data), load_spec(spec)))


def load_candidates(path: Path, spec: TaskSpec) -> dict[str, list[Candidate]]:
    """Validated candidates by subtask; every problem is an :class:`AuditError` naming row and column."""
    rows = read_rows(path)
    if not rows:
        raise AuditError(f"{path}: no candidates")
    absent = [c for c in ("text", *spec.group_columns) if c not in columns_of(rows)]
    if absent:
        raise AuditError(f"{path}: missing column(s) {absent} ({column_list(sorted(columns_of(rows)))})")
    known = {cell_text(g) for g in spec.groups} if spec.groups else None
    out: dict[str, list[Candidate]] = {}
    seen: dict[tuple[str, str], int] = {}
    for number, row in enumerate(rows, start=1):
        where = f"{path}, row {number}"
        text = _required(row, "text", where)
        group = group_name("_".join(_required(row, column, where) for column in spec.group_columns),
                           f"{where}, column {'/'.join(spec.group_columns)!r}")
        if known is not None and group not in known:
            raise AuditError(f"{where}, column {'/'.join(spec.group_columns)!r}: unknown group {group!r}; the spec "
                             f"lists {sorted(known)}")
        subtask = cell_text(row.get("subtask")) or DEFAULT_SUBTASK
        candidate_id = cell_text(row.get("id")) or f"{group}/{hashlib.sha256(text.encode()).hexdigest()[:16]}"
        if (subtask, candidate_id) in seen:
            raise AuditError(f"{where}, column {'id' if cell_text(row.get('id')) else 'text'!r}: duplicate of row "
                             f"{seen[subtask, candidate_id]} (candidate {candidate_id!r})")
        seen[subtask, candidate_id] = number
        out.setdefault(subtask, []).append(Candidate(candidate_id, group, _qualified(row, where), text))
    return out


def _groups(members: Sequence[Candidate], spec: TaskSpec, path: Path, subtask: str) -> tuple[str, ...]:
    """The subtask's groups, checked against the spec: reference present, two groups at least, none left empty."""
    present = sorted({c.group for c in members})
    # a file without a subtask column has one subtask the auditor never named: errors do not name it either
    where = "" if subtask == DEFAULT_SUBTASK else f" of subtask {subtask!r}"
    inside = "" if subtask == DEFAULT_SUBTASK else f" in subtask {subtask!r}"
    if spec.reference_group not in (spec.groups or present):
        raise AuditError(f"{path}: reference group {spec.reference_group!r} is not a group{where}; the groups are:\n"
                         + "\n".join(f"  {g}" for g in sorted(spec.groups or present)))
    if len(spec.groups or present) < 2:
        raise AuditError(f"{path}: the candidates{where} have one group ({spec.reference_group!r}); an audit compares "
                         "at least two groups, the reference among them")
    empty = [g for g in spec.groups or () if g not in present]
    if empty:
        raise AuditError(f"{path}: group(s) {empty} have no candidates{inside}")
    return tuple(spec.groups or present)


def _required(row: Row, column: str, where: str) -> str:
    if isinstance(row.get(column), (dict, list, tuple)):
        raise AuditError(f"{where}, column {column!r}: a JSON {type(row[column]).__name__}, not text")
    value = cell_text(row.get(column))
    if not value:
        raise AuditError(f"{where}, column {column!r}: empty {column}")
    return value


def _qualified(row: Row, where: str) -> bool:
    if "qualified" not in row:
        return True
    value = cell_text(row["qualified"]).lower()
    if value in TRUE:
        return True
    if value in FALSE:
        return False
    raise AuditError(f"{where}, column 'qualified': {row['qualified']!r} is not 1/0, true/false or yes/no")
