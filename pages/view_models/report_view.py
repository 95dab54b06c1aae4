"""What a dashboard page hands on about its view: the audit report's settings (its own selection, passed whole) and
the settings recorded in a page's report bundle."""
from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone

import pandas as pd

from audit.reporting import ReportSettings
from pages.view_models.view import View
from audit.engine.tables import fingerprints


def report_settings(view: View, k: int | None, adjust: str = "holm", *,
                    paper: str = "a4", auditor: str = "", firm: str = "", distribution_date: str = "") -> ReportSettings:
    """The report of ``view`` (grouping, reference, models, subtasks, groups, preset, cut-off, intervals) at quota k
    (None: none chosen, the design's; a page of recorded decisions chooses none) with p-values adjusted by ``adjust``
    (the verdict's family: the view's), on ``paper``, with page 1's sign-off fields (blank lines where empty)."""
    selection = replace(view.selection, adjust=adjust, ks=() if k is None else (k,))
    return ReportSettings(view.store, selection, paper=paper, auditor=auditor.strip(), firm=firm.strip(),
                          distribution_date=distribution_date)


def bundle_settings(view: View, scores: pd.DataFrame, page: str, **settings: object) -> dict:
    """The settings a page's report bundle records: the view, the page's own settings (k, …), the fingerprints of
    the models shown and the time."""
    return {**view.settings(), **settings, "page": page,
            "model_fingerprints": fingerprints(scores, view.selection.models),
            "generated": datetime.now(timezone.utc).isoformat(timespec="seconds")}
