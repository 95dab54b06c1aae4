"""The report's NYC Local Law 144 bias-audit summary of the recorded systems of a task (imported decisions or
rankings): for sex, race/ethnicity and their intersection separately, per category the applicants, selection rate,
impact ratio with its CI and the adjusted test of :meth:`audit.engine.audit.Audit.ll144` (the verdict's), the unknown category's
count, categories under 2 % flagged and "insufficient evidence" where a category is too small; with the data's
source and date range, the audit date and a field for the distribution date.

Selected = in the top k of its recorded pool (k = the selection's first quota) for recorded rankings, the recorded
decision of 0/1 logs, a score above the sample's median for score logs. Scored models (no recorded pools) have no LL144 summary: the section is
empty for them.
"""
from __future__ import annotations

import json
from datetime import date
from html import escape

import pandas as pd

from audit.engine.audit import Audit
from audit.formatting import ratio, subtask_name
from audit.reporting.provenance import RECORDED_HASHES
from audit.engine.choices import MIN_APPLICANTS, SMALL_SHARE, UNKNOWN
from audit.engine.tables import StoreTables

def _sources(tables: StoreTables, models: list[str]) -> list[str]:
    """Per recorded model: its source, source hash and the date range of its decisions, from its stored details."""
    lines = []
    for model in models:
        found = tables.models.loc[tables.models["model"] == model, "details"]
        details = json.loads(found.iloc[0]) if len(found) else {}
        span = (f"decisions dated {details['first_date']} to {details['last_date']}" if details.get("first_date")
                else "decision dates not recorded")
        digest = details.get("source_sha256", "")
        lines.append(f"{model}: {details.get('source') or 'source not recorded'}"
                     + (f" (sha256 {digest[:16]}…)" if digest else "") + f", {span}")
    return lines


def _cell(value: float, digits: int = 3) -> str:
    return "" if pd.isna(value) else f"{value:.{digits}f}"


def _rows(part: pd.DataFrame) -> str:
    out = []
    for r in part.itertuples(index=False):
        if r.category == UNKNOWN:
            out.append(f"<tr><td>unknown category</td><td>{r.applicants}</td><td colspan='5'>"
                       "counted, not in the rates or ratios</td></tr>")
            continue
        insufficient = r.note == "insufficient evidence"
        shown = "insufficient evidence" if insufficient else "" if pd.isna(r.impact_ratio) else ratio(
            r.impact_ratio, r.impact_ratio_lo, r.impact_ratio_hi)
        p = "" if pd.isna(r.p_holm) else f"{r.p_holm:.2g}"
        flag = f"<span class='flag'>under {SMALL_SHARE:.0%}</span>" if r.small else ""
        note = "" if r.note in ("", "insufficient evidence", f"under {SMALL_SHARE:.0%} of applicants") else r.note
        out.append(f"<tr><td>{escape(r.name)} ({escape(str(r.category))})</td><td>{r.applicants}</td>"
                   f"<td>{_cell(r.selection_rate)}</td><td>{escape(shown)}</td><td>{p}</td><td>{flag}</td>"
                   f"<td>{escape(note)}</td></tr>")
    return "".join(out)


HEADER = ("<tr><th>category</th><th>applicants</th><th>selection rate</th><th>impact ratio [95 % CI]</th>"
          "<th>p (exact, Holm)</th><th>small (under 2 %)</th><th>note</th></tr>")


def ll144_section(audit: Audit, k: int, *, distribution_date: str = "", exclude_small: str | None = None) -> str:
    """The section as HTML at quota ``k`` ("" when the audit's task has no recorded systems): the table of
    :meth:`audit.engine.audit.Audit.ll144`, read off the same verdicts as the report's; every name is escaped."""
    summary = audit.ll144(k, exclude_small)
    tables, selection = audit.tables, audit.selection
    if summary.empty:
        return ""
    models = sorted(summary["model"].unique())
    sources = "".join(f"<li>{escape(line)}</li>" for line in _sources(tables, models))
    level = round((selection.ci or 0.95) * 100)
    parts = [f"<h2>Bias audit summary (NYC Local Law 144)</h2>"
             f"<p>Historical data: the decisions the audited systems recorded. Selected = in the top {k} of its "
             f"recorded pool (recorded rankings), the recorded decision (0/1 logs), a score above the sample's "
             f"median (score logs). Impact ratio = a category's selection rate ÷ the most-selected category's rate, with a "
             f"{level} % Katz interval; p = the exact test of no difference from the most-selected category "
             f"(for ranked pools stratified by pool, each pool having its own quota, with the pool-robust Katz "
             f"interval; Fisher's exact test for one pool of decisions), Holm-adjusted as the verdict adjusts it "
             f"(every pairwise comparison of categories in the family '{escape(selection.family)}'). Categories under {SMALL_SHARE:.0%} of the applicants "
             f"are flagged{' and excluded from the ratios: ' + escape(exclude_small) if exclude_small else ''}; "
             f"with fewer than {MIN_APPLICANTS} applicants a category reads “insufficient evidence”. The unknown "
             f"category (missing or unknown values) is counted and left out of that grouping's rates.</p>"
             f"<table class='scope'><tr><th>audit date</th><td>{date.today().isoformat()}</td></tr>"
             f"<tr><th>distribution date</th><td>{escape(distribution_date) or '(to be filled in by the employer)'}"
             f"</td></tr></table><p>Data sources:</p><ul>{sources}</ul>"
             f"<p class=muted>{escape(RECORDED_HASHES)}</p>"]
    for (model, subtask), rows in summary.groupby(["model", "subtask"], sort=True):
        parts.append(f"<h3>{escape(str(model))} · {escape(subtask_name(subtask))}</h3>")
        for grouping, part in rows.groupby("grouping", sort=False):
            parts.append(f"<div class=keep><h4>{escape(str(grouping))}</h4><table class='ll144'>{HEADER}{_rows(part)}"
                         "</table></div>")
    return "".join(parts)
