"""An audit's design: how pools are drawn, which group is the reference, what the labels are worth, who counts as
qualified and how group codes may be coarsened. Tasks declare it, the store records it with the results, and the
metrics, the CLI and the dashboard read it back, so every task is audited with its own design everywhere.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum

from audit.errors import AuditError

#: the grouping that keeps group codes whole
WHOLE = "group"


class PoolKind(StrEnum):
    """How pools are drawn (a ``str``, so stored and typed spellings compare equal)."""

    PER_GROUP = "per-group"
    RANDOM = "random"
    OBSERVED = "observed"


@dataclass(frozen=True)
class PoolDesign:
    """How pools are drawn: ``per-group`` (one candidate of every group), ``random`` with ``size`` N (N drawn
    without replacement from all candidates of the subtask) or ``observed`` (the pools a pairwise run recorded)."""

    kind: PoolKind = PoolKind.PER_GROUP
    size: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", PoolKind(self.kind))  # a spelling becomes its kind (bad ones raise)

    @classmethod
    def parse(cls, spec: "str | PoolDesign", where: str = "pool design",
              kinds: tuple[str, ...] = tuple(PoolKind)) -> "PoolDesign":
        """Read ``per-group``, ``random:N`` (N ≥ 2) or ``observed``, accepting only ``kinds``."""
        if isinstance(spec, PoolDesign) and spec.kind in kinds:
            return spec
        text = str(spec).strip()
        kind, _, size = text.partition(":")
        if kind in kinds and kind != PoolKind.RANDOM and not size:
            return cls(PoolKind(kind))
        if kind == PoolKind.RANDOM and kind in kinds and size.isascii() and size.isdigit() and int(size) >= 2:
            return cls(PoolKind.RANDOM, int(size))
        spellings = ", ".join("random:N (N ≥ 2)" if k == PoolKind.RANDOM else str(k) for k in kinds)
        raise AuditError(f"{where}: {text!r} not understood; use {spellings}")

    def __str__(self) -> str:
        return f"random:{self.size}" if self.kind == PoolKind.RANDOM else str(self.kind)


@dataclass(frozen=True)
class AuditDesign:
    """The design of one (task, subtask), as recorded in the result store.

    ``groupings`` maps a grouping's name to the part of a ``_``-joined group code it keeps (None: the whole code),
    e.g. race × gender → None, race → 0, gender → 1. ``prompt_hash`` is a SHA-256 of the task's prompt templates
    (empty when unknown, e.g. for a task recorded before designs were stored). ``names`` maps each part of a group
    code to its display name (``W`` → White, ``F`` → women); ``counterfactual``: groups differ only by the name on
    otherwise identical documents (else the design is observational). ``quota``: the quota k the audit is judged at
    unless the auditor chooses another, with ``quota_reason`` saying why (None: the decision itself, a log's recorded
    selection, with no quota). ``undeclared``: what the design had to assume because its task declared none (results
    stored before designs were recorded), said plainly; empty otherwise.
    """

    task: str
    subtask: str
    reference: str  # the reference group every gap is measured against
    pools: PoolDesign  # of pointwise scores; pairwise scores are read in the pools their run recorded
    labels: tuple[str, ...]  # pointwise answer labels, in prompt order
    relevance: tuple[float, ...]  # γ_y of each label: score = Σ P_n(y)·γ_y
    qualification: str  # who counts as qualified, in words
    groupings: dict[str, int | None] = field(default_factory=lambda: {WHOLE: None})
    prompt_hash: str = ""
    # how results read, not what was computed: left out of equality, so a design stored before they were recorded
    # still equals the one its task derives today
    names: dict[str, str] = field(default_factory=dict, compare=False)
    counterfactual: bool = field(default=False, compare=False)
    undeclared: str = field(default="", compare=False)
    quota: int | None = field(default=None, compare=False)
    quota_reason: str = field(default="", compare=False)

    @property
    def kind(self) -> str:
        """``counterfactual`` (identical documents under different names) or ``observational`` (e.g. decision logs)."""
        return "counterfactual" if self.counterfactual else "observational"

    def audited_quota(self, chosen: int | None = None) -> tuple[int, str]:
        """(k, why): the auditor's ``chosen`` k, else the quota the design declares, else 1 (said so); a chosen k
        equal to the declared quota reads as the design's quota."""
        if chosen is not None and chosen != self.quota:
            own = f"; the design's own is k = {self.quota}, {self.quota_reason}" if self.quota is not None else ""
            return int(chosen), f"chosen by the auditor{own}"
        if self.quota is not None:
            return self.quota, self.quota_reason or "the quota the design declares"
        return 1, self.quota_reason or "the smallest quota (the design declares none)"

    def part(self, grouping: str) -> int | None:
        """The part of a group code that ``grouping`` keeps (an AuditError for a grouping the design lacks)."""
        if grouping not in self.groupings:
            raise AuditError(f"grouping {grouping!r} not declared by task {self.task!r}; choose from "
                             f"{list(self.groupings)}" + (f" ({self.undeclared})" if self.undeclared else ""))
        return self.groupings[grouping]

    def category(self, code: str, grouping: str) -> str:
        """The category of group ``code`` under ``grouping`` (``B_F`` → ``B`` for race); the only place a code is
        split."""
        return regroup_code(str(code), self.part(grouping))

    def finest(self) -> str:
        """The grouping that keeps codes whole."""
        return next((g for g, part in self.groupings.items() if part is None), WHOLE)

    def display_name(self, code: str, grouping: str | None = None) -> str:
        """A group's name in words (``A_F`` → Asian women, ``W`` → White, ``M`` → men) from the names the task
        declares; a name keyed ``grouping:piece`` holds for that grouping's part of a code only (for pieces that
        mean different things in different parts: ``race:W`` White, ``gender:W`` women). The code itself when some
        part has no name."""
        category = self.category(code, grouping) if grouping else str(code)
        pieces = category.split("_")
        part = self.part(grouping) if grouping else None
        parts = [part] if part is not None else list(range(len(pieces))) if len(pieces) > 1 else [None]
        names = [self._piece_name(piece, index) for piece, index in zip(pieces, parts)]
        return " ".join(names) if all(names) else category

    def _piece_name(self, piece: str, part: int | None) -> str | None:
        """The declared name of ``piece`` as part ``part`` of a code (None: position unknown)."""
        owner = next((g for g, p in self.groupings.items() if p == part), None) if part is not None else None
        return self.names.get(f"{owner}:{piece}") or self.names.get(piece)

    def row(self) -> tuple:
        """The store's ``designs`` row (display names, the counterfactual flag and the quota ride in the groupings
        column, so the table keeps its columns and older rows still load)."""
        groupings = {"groupings": self.groupings, "names": self.names, "counterfactual": self.counterfactual,
                     **({"undeclared": self.undeclared} if self.undeclared else {}),
                     **({"quota": self.quota} if self.quota is not None else {}),
                     **({"quota_reason": self.quota_reason} if self.quota_reason else {})}
        return (self.task, self.subtask, self.reference, str(self.pools), json.dumps(list(self.labels)),
                json.dumps(list(self.relevance)), self.qualification, json.dumps(groupings), self.prompt_hash)

    @classmethod
    def from_row(cls, row: tuple) -> "AuditDesign":
        task, subtask, reference, pools, labels, relevance, qualification, groupings, prompt_hash = row
        stored = json.loads(groupings)
        extra = {}
        if isinstance(stored.get("groupings"), dict):  # written with names (a grouping's part is never a dict)
            extra = {"names": dict(stored.get("names", {})), "counterfactual": bool(stored.get("counterfactual")),
                     "undeclared": str(stored.get("undeclared", "")),
                     "quota": int(stored["quota"]) if stored.get("quota") is not None else None,
                     "quota_reason": str(stored.get("quota_reason", ""))}
            stored = stored["groupings"]
        return cls(task, subtask, reference, PoolDesign.parse(pools), tuple(json.loads(labels)),
                   tuple(json.loads(relevance)), qualification, stored, prompt_hash, **extra)


def split_groupings(columns: tuple[str, ...] | list[str]) -> dict[str, int | None]:
    """The groupings of codes joined from ``columns`` (``race, gender`` → race × gender, race, gender)."""
    if len(columns) < 2:
        return {columns[0] if columns else WHOLE: None}
    return {" × ".join(columns): None, **{column: i for i, column in enumerate(columns)}}


def regroup_code(code: str, part: int | None) -> str:
    """The ``part``-th piece of a ``_``-joined group code (``W_F`` → ``W`` for 0); whole codes are kept whole."""
    pieces = str(code).split("_")
    return code if part is None or part >= len(pieces) else pieces[part]
