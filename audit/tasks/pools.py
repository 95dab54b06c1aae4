"""Drawing pairwise pools under a :class:`~audit.design.PoolDesign`: one candidate per group or N at random."""
from __future__ import annotations

import random
from typing import Sequence

from audit.design import PoolDesign, PoolKind
from audit.errors import AuditError
from audit.tasks.base import Candidate

#: the designs a task can draw (``observed`` only describes pools already recorded)
DRAWN = ("per-group", "random")


def draw(design: PoolDesign, candidates: Sequence[Candidate], groups: Sequence[str], rounds: int, seed: str, *,
         shuffle: bool = False) -> list[list[Candidate]]:
    """``rounds`` disjoint pools under ``design`` (``shuffle``: per-group members drawn at random, seeded)."""
    if design.kind == PoolKind.PER_GROUP:
        return one_per_group(candidates, groups, rounds, seed if shuffle else None)
    return random_pools(candidates, rounds, design.size, seed)


def one_per_group(candidates: Sequence[Candidate], groups: Sequence[str], rounds: int,
                  seed: str | None = None) -> list[list[Candidate]]:
    """Pool r holds the r-th candidate of every group (with ``seed``: of the group's members in a seeded random
    order, as in the RABBI paper's own data)."""
    by_group: dict[str, list[Candidate]] = {g: [] for g in groups}
    for candidate in candidates:
        by_group[candidate.group].append(candidate)
    available = min(len(members) for members in by_group.values())
    if rounds > available:
        raise AuditError(f"{rounds} pairwise pools (rounds) need {rounds} candidates per group; only {available} "
                         "available")
    if seed is not None:
        by_group = {g: random.Random(f"{seed}:{g}:pools").sample(members, rounds) for g, members in by_group.items()}
    return [[by_group[g][r] for g in groups] for r in range(rounds)]


def random_pools(candidates: Sequence[Candidate], rounds: int, size: int, seed: str) -> list[list[Candidate]]:
    """``rounds`` disjoint pools of ``size`` drawn without replacement from all ``candidates`` (seeded)."""
    needed = rounds * size
    if needed > len(candidates):
        raise AuditError(f"{rounds} pairwise pools (rounds) of {size} need {needed} candidates; only "
                         f"{len(candidates)} available (raise the candidate limit or lower the rounds)")
    drawn = random.Random(seed).sample(list(candidates), needed)
    return [drawn[r * size : (r + 1) * size] for r in range(rounds)]
