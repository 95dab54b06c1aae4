"""What a dashboard page hands on about its view: the audit report's settings (its own selection, passed whole) and
the settings recorded in a page's report bundle."""
from __future__ import annotations

from datetime import datetime, timezone

import pandas as pd

from audit.metrics.verdict import DEFAULT_FAMILY
from audit.reporting import ReportSettings
from audit.views import View, fingerprints


def report_settings(view: View, k: int, adjust: str = "holm", family: str = DEFAULT_FAMILY) -> ReportSettings:
    """The report of ``view`` (grouping, reference, models, subtasks, groups, preset, cut-off, intervals) at quota k
    with p-values adjusted by ``adjust`` and the verdict's multiple-testing ``family``."""
    return ReportSettings(store=view.store, task=view.task, models=view.models, mode=view.mode,
                          reference=view.reference, grouping=view.grouping, subtasks=view.subtasks, groups=view.groups,
                          preset=view.preset, max_inconsistent=view.max_inconsistent, k=k, ci=view.ci,
                          n_boot=view.n_boot, adjust=adjust, family=family)


def bundle_settings(view: View, scores: pd.DataFrame, page: str, **settings: object) -> dict:
    """The settings a page's report bundle records: the view, the page's own settings (k, …), the fingerprints of
    the models shown and the time."""
    return {**view.settings(), **settings, "page": page, "model_fingerprints": fingerprints(scores, view.models),
            "generated": datetime.now(timezone.utc).isoformat(timespec="seconds")}
