"""What every allocation task provides: candidates, groups, labels and the prompts built from them."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Protocol, Sequence

from audit.design import PoolDesign
from audit.prompts import ChatPrompt  # noqa: F401  (re-exported: tasks build prompts)


@dataclass(frozen=True)
class Candidate:
    """One person (or essay) competing for a slot.

    ``name`` is how a pairwise answer identifies the candidate (a resume's full name, an essay's letter is
    given by the prompt instead, so it may be empty).
    """

    candidate_id: str
    group: str
    qualified: bool
    text: str
    name: str = ""


@dataclass(frozen=True)
class LabelSet:
    """Pointwise labels and their relevance values γ_y (Yes/No → 1/0; grades 1..5 → 1..5)."""

    labels: tuple[str, ...]
    relevance: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.labels) < 2 or len(self.labels) != len(self.relevance):
            raise ValueError("a label set needs at least two labels, each with one relevance value")


class Task(Protocol):
    """An allocation task for one subtask (a job, an essay topic). Tasks know nothing of models."""

    name: str
    subtask: str
    groups: tuple[str, ...]
    reference_group: str
    label_set: LabelSet
    pool_design: PoolDesign  # how pairwise pools are drawn and allocation pools are modelled
    qualification: str  # who counts as qualified, in words
    groupings: dict[str, int | None]  # see :class:`audit.design.AuditDesign`
    group_names: dict[str, str]  # display name of each part of a group code (may be empty: codes are shown)
    counterfactual: bool  # groups differ only by the name on otherwise identical documents
    quota: int  # the quota k its audit is judged at unless the auditor chooses another
    quota_reason: str  # why that quota, in words ("the quota of the study's published result")
    dataset: str  # SHA-256 of the auditor's data the task was read from; "" for data that ships with the tool

    def candidates(self, limit: int | None = None) -> list[Candidate]:
        """Candidates, at most ``limit`` per group, in a deterministic order."""

    def pointwise_prompt(self, candidate: Candidate) -> ChatPrompt:
        """The prompt whose next-token distribution over the labels scores ``candidate``."""

    def pairwise_prompt(self, first: Candidate, second: Candidate) -> ChatPrompt:
        """The prompt asking which of two candidates is better, ``first`` shown first."""

    def pools(self, candidates: Sequence[Candidate], rounds: int) -> list[list[Candidate]]:
        """``rounds`` disjoint candidate pools for pairwise comparison."""


def dataset_hash(records: Sequence[Sequence]) -> str:
    """SHA-256 of a task's data read from the auditor's files, independent of row order: two files with the same
    candidates hash alike, any other difference (a text, a group, a qualification) hashes apart."""
    lines = sorted(json.dumps(list(record), ensure_ascii=False) for record in records)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()
