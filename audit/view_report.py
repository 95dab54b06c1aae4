"""The audit report of what a dashboard page shows: its own selection, passed whole to the report."""
from __future__ import annotations

from audit.reporting import ReportSettings
from audit.views import View


def report_settings(view: View, k: int, adjust: str = "holm") -> ReportSettings:
    """The report of ``view`` (grouping, reference, models, subtasks, groups, preset, cut-off, intervals) at quota k
    with p-values adjusted by ``adjust``."""
    return ReportSettings(store=view.store, task=view.task, models=view.models, mode=view.mode,
                          reference=view.reference, grouping=view.grouping, subtasks=view.subtasks, groups=view.groups,
                          preset=view.preset, max_inconsistent=view.max_inconsistent, k=k, ci=view.ci,
                          n_boot=view.n_boot, adjust=adjust)
