"""What one audit looks at: a frozen, hashable selection shared by the dashboard, the CLI and the report, so each
computes the same table from the same choices (see :class:`audit.engine.audit.Audit`)."""
from __future__ import annotations

from dataclasses import dataclass, replace

from audit.enums import DEFAULT_FAMILY, Family, Mode, Rule

#: bootstrap replicates everywhere unless chosen otherwise (page, CLI and report share it)
N_BOOT = 1000
#: permutation shuffles behind the p-values, everywhere unless chosen otherwise
N_PERM = 1000


@dataclass(frozen=True)
class Selection:
    """One audit's choices. Empty ``models`` / ``subtasks`` / ``groups`` / ``ks`` mean all; ``grouping`` None keeps
    group codes whole; ``reference`` None is the stored design's reference (coarsened to the grouping); ``ci`` None
    gives no intervals; ``n_perm`` None gives no p-values; ``pool`` None is the stored pool design. ``family``: the
    verdict's multiple-testing family (:class:`audit.enums.Family`, in words :data:`audit.engine.verdict.FAMILIES`);
    ``rule``: its reading of adverse impact (:class:`audit.enums.Rule`). The front ends convert their input to these
    members at the edge, and nothing reads a flag or a widget's state for what the selection holds once it is built."""

    task: str
    mode: Mode = Mode.POINTWISE
    models: tuple[str, ...] = ()
    subtasks: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    grouping: str | None = None
    reference: str | None = None
    pool: str | None = None
    preset: str = "default"
    max_inconsistent: float | None = None
    ci: float | None = 0.95
    n_boot: int = N_BOOT
    n_perm: int | None = N_PERM
    adjust: str = "holm"
    ks: tuple[int, ...] = ()
    seed: int = 0
    family: Family = DEFAULT_FAMILY
    rule: Rule = Rule.PRACTICE

    def base(self) -> "Selection":
        """The part that decides the expensive metric pass: this selection with every filter cleared (models,
        subtasks, groups, ks, adjust) and the verdict's family and rule at their defaults, so a cache keyed on it
        survives a change of filter or of the verdict's reading."""
        return replace(self, models=(), subtasks=(), groups=(), ks=(), adjust="holm", family=DEFAULT_FAMILY,
                       rule=Rule.PRACTICE)

    def judged(self) -> "Selection":
        """The part the verdict reads (the pointwise scores of the task's chosen systems and subtasks, the pool
        design, intervals, tests, family and reading), so a cache keyed on it survives a change of mode, grouping,
        reference, groups, metric preset or adjustment."""
        return Selection(self.task, models=self.models, subtasks=self.subtasks, pool=self.pool, ci=self.ci,
                         n_boot=self.n_boot, n_perm=self.n_perm, seed=self.seed, family=self.family, rule=self.rule)
