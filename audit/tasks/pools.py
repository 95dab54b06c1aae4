"""Pairwise pool designs: one candidate per group (resume screening) or n drawn at random (essay grading)."""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Sequence

from audit.errors import AuditError
from audit.tasks.base import Candidate


@dataclass(frozen=True)
class PoolDesign:
    """``per-group`` (size None) or ``random:N`` (size N); spelled as in ``audit metrics --pool``."""

    size: int | None = None

    @classmethod
    def parse(cls, text: str, where: str = "pool design") -> "PoolDesign":
        value = str(text).strip()
        spelling = read_spelling(value)
        if spelling is None:
            raise AuditError(f"{where}: {value!r} not understood; use per-group or random:N (N ≥ 2)")
        return cls(spelling[1])

    def __str__(self) -> str:
        return "per-group" if self.size is None else f"random:{self.size}"

    def draw(self, candidates: Sequence[Candidate], groups: Sequence[str], rounds: int, seed: str
             ) -> list[list[Candidate]]:
        """``rounds`` disjoint pools under this design."""
        if self.size is None:
            return one_per_group(candidates, groups, rounds)
        return random_pools(candidates, rounds, self.size, seed)


def read_spelling(text: str, names: tuple[str, ...] = ("per-group",)) -> tuple[str, int | None] | None:
    """``(kind, size)`` of ``random:N`` (N ≥ 2) or of a design named in ``names``; None if not understood.
    The one spelling shared by task specs and ``audit metrics --pool``."""
    if text in names:
        return text, None
    kind, _, size = text.partition(":")
    return ("random", int(size)) if kind == "random" and size.isascii() and size.isdigit() and int(size) >= 2 else None


def one_per_group(candidates: Sequence[Candidate], groups: Sequence[str], rounds: int) -> list[list[Candidate]]:
    """Pool r holds the r-th candidate of every group."""
    by_group: dict[str, list[Candidate]] = {g: [] for g in groups}
    for candidate in candidates:
        by_group[candidate.group].append(candidate)
    available = min(len(members) for members in by_group.values())
    if rounds > available:
        raise AuditError(f"--rounds {rounds} needs {rounds} candidates per group; only {available} available")
    return [[by_group[g][r] for g in groups] for r in range(rounds)]


def random_pools(candidates: Sequence[Candidate], rounds: int, size: int, seed: str) -> list[list[Candidate]]:
    """``rounds`` disjoint pools of ``size`` drawn without replacement from all ``candidates`` (seeded)."""
    needed = rounds * size
    if needed > len(candidates):
        raise AuditError(f"--rounds {rounds} with pools of {size} needs {needed} candidates; only {len(candidates)} "
                         "available (raise --limit or lower --rounds)")
    drawn = random.Random(seed).sample(list(candidates), needed)
    return [drawn[r * size : (r + 1) * size] for r in range(rounds)]
