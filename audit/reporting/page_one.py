"""Page 1 of the report, a summary an auditor signs as it stands: the verdict first (each system's verdict and every
adverse finding, lowest impact ratio first), then what was audited (:func:`audit.reporting.render.audited`), then the
sign-off block (scope, auditor, firm, dates, signature line; blank lines where not given).

Every verdict and ratio here is read off the report's own verdict table (:attr:`ReportData.verdicts`, computed once
by the report's :class:`audit.engine.audit.Audit`, the same rows as ``python -m audit verdict``), never computed again."""
from __future__ import annotations

from html import escape

import pandas as pd

from audit.formatting import at_quota, pvalue, ratio, subtask_name
from audit.engine.verdict import ADVERSE, INCONCLUSIVE, NO_EVIDENCE, rollup, store_line
from audit.reporting.content import ReportData
from audit.reporting.html import table
from audit.tasks.recorded import mode_name

#: a system's verdict → the CSS class of its cell (the verdict tables' colours)
VERDICT_CSS = {ADVERSE: "v-adverse", NO_EVIDENCE: "v-no-evidence", INCONCLUSIVE: "v-inconclusive"}
#: a verdict in a table cell
_SHORT = {ADVERSE: "adverse impact", INCONCLUSIVE: "inconclusive", NO_EVIDENCE: "no evidence"}
#: an empty line to write on, where a sign-off field was not given
BLANK = "<span class=blank></span>"


def quota_words(data: ReportData) -> str:
    """``at k = 1, the quota of the study's published result``: the report's quota and why (``on the recorded
    decisions — …`` where no quota moves a selection)."""
    s = data.settings
    where = at_quota(s.k, data.quota_free)
    return f"{where}{' —' if data.quota_free else ','} {s.quota_reason}" if s.quota_reason else where


def headline(data: ReportData) -> str:
    """The verdict at the report's quota: the overall line, each system's verdict, every adverse finding."""
    s = data.settings
    sel = s.selection
    if data.verdicts is None:
        return (f"<h2>Verdict</h2><p>Verdicts are defined on pointwise scores; this report reads {escape(sel.mode)} "
                "scores, so it gives gaps (below) but no verdict.</p>")
    overall = store_line(data.verdicts)
    heading = "Verdict" if data.quota_free else f"Verdict at k = {s.k}"
    return (f"<h2>{heading}</h2><p class='quota'>Judged {escape(quota_words(data))}.</p>"
            f"<p class='verdict-line'>Overall: {escape(str(overall['summary']))}</p>"
            f"{_systems(data.verdicts)}{_adverse(data)}")


#: the most subtasks that are the columns of the systems' table (more: the models are)
_SUBTASK_COLUMNS = 5


def _systems(verdicts: pd.DataFrame) -> str:
    """Each system's (model × subtask) verdict, its strongest over its categories, with how many categories have
    each verdict: one row per model and a column per subtask (one row per subtask and a column per model when the
    subtasks are many)."""
    systems = rollup(verdicts)
    across, down = ("subtask", "model") if systems["subtask"].nunique() <= _SUBTASK_COLUMNS else ("model", "subtask")
    columns, rows = sorted(systems[across].unique()), sorted(systems[down].unique())
    found = {(r.model, r.subtask): r for r in systems.itertuples(index=False)}
    name = {"subtask": subtask_name, "model": str}
    head = "".join(f"<th>{escape(name[across](c))}</th>" for c in columns)
    body = []
    for row in rows:
        cells = []
        for column in columns:
            r = found.get((row, column) if down == "model" else (column, row))
            if r is None:
                cells.append("<td>–</td>")
                continue
            cells.append(f"<td class='{VERDICT_CSS[r.verdict]}' data-model='{escape(str(r.model))}' "
                         f"data-subtask='{escape(str(r.subtask))}' data-system-verdict='{escape(str(r.verdict))}'>"
                         f"{escape(_SHORT[r.verdict])} <span class=counts>({r.n_adverse} · {r.n_inconclusive} · "
                         f"{r.n_no_evidence})</span></td>")
        body.append(f"<tr><td>{escape(name[down](row))}</td>{''.join(cells)}</tr>")
    return (f"<table class='small systems'><caption>Each system's (model × subtask) strongest verdict; in brackets, its "
            "categories adverse · inconclusive · no evidence.</caption>"
            f"<thead><tr><th>{down}</th>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")


def _adverse(data: ReportData) -> str:
    """Every adverse-impact finding of the verdict table, lowest impact ratio first, or a sentence saying none."""
    verdicts, threshold = data.verdicts, data.settings.threshold
    cells = verdicts["verdict"]
    others = f"({int((cells == INCONCLUSIVE).sum())} inconclusive, {int((cells == NO_EVIDENCE).sum())} no evidence)"
    adverse = verdicts[cells == ADVERSE].sort_values(["impact_ratio", "model", "subtask"], kind="stable")
    if adverse.empty:
        return (f"<p class='adverse-count'>No adverse impact in any of the {len(verdicts)} system × category cells "
                f"{escape(others)}.</p>")
    interval = f"impact ratio [{round(data.settings.selection.ci * 100)} % CI]"
    shown = pd.DataFrame({"system": adverse["model"], "subtask": adverse["subtask"].map(subtask_name),
                          "grouping": adverse["grouping"], "group": adverse["name"],
                          interval: [ratio(v, lo, hi, threshold) for v, lo, hi in
                                     zip(adverse["impact_ratio"], adverse["impact_ratio_lo"], adverse["impact_ratio_hi"])],
                          "adj. p": adverse["p_adj"].map(pvalue)})
    rows = [{"model": m, "subtask": t, "grouping": g, "category": c} for m, t, g, c in
            zip(adverse["model"], adverse["subtask"], adverse["grouping"], adverse["category"])]
    return table(shown, numeric=(interval, "adj. p"), css="small adverse", rows=rows, row_class="adverse",
                 caption=f"Adverse impact in {len(adverse)} of {len(verdicts)} system × category cells {others}; "
                         "lowest ratio first:")


def sign_off(data: ReportData) -> str:
    """The block an auditor signs: what the report covers, auditor, firm, audit and distribution dates, signature."""
    s = data.settings
    sel = s.selection
    digest, rows, _ = data.data
    subtasks = f"{len(data.subtasks)} subtask{'s' if len(data.subtasks) != 1 else ''}"
    where = at_quota(s.k, data.quota_free)
    judged = (f"judged {where} against the impact-ratio threshold {s.threshold:g} ({sel.rule} reading, "
              f"family {sel.family})" if data.verdicts is not None else where)
    scope = (f"This report covers {', '.join(data.models['model'])} on task {data.task} ({subtasks}, "
             f"{mode_name(data.design, sel.mode)}, {data.design.kind} design, grouping {sel.grouping}), {judged}, on "
             f"{rows:,} {'recorded decisions' if data.recorded else 'candidate rows'} (SHA-256 {digest[:16]}…). Its "
             f"{'verdicts' if data.verdicts is not None else 'findings'} hold for these systems as {'recorded' if data.recorded else 'scored'} on these candidates, not "
             "for the models in general, other versions or other uses.")
    fields = [("Auditor", s.auditor), ("Firm", s.firm), ("Audit date", data.generated[:10]),
              ("Distribution date", s.distribution_date), ("Signature", ""), ("Date", "")]
    cells = [f"<th>{name}</th><td>{escape(value) if value else BLANK}</td>" for name, value in fields]
    lines = "".join(f"<tr>{''.join(cells[i:i + 2])}</tr>" for i in range(0, len(cells), 2))
    return (f"<div class='sign-off keep'><h2>Sign-off</h2><p class=scope><b>Scope.</b> {escape(scope)}</p>"
            f"<table class='sign-off'>{lines}</table></div>")
