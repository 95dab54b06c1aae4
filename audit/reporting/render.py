"""The report as one self-contained HTML document: inline SVG figures (base64), tables, the data as embedded JSON.
Every piece of user text (task, group, model and subtask names, prompt text) goes through ``html.escape``."""
from __future__ import annotations

import base64
import json
from html import escape

import pandas as pd
import plotly.graph_objects as go

from audit import charts
from audit.exports import figure_bytes
from audit.reporting.content import ReportData, commands, limitations, settings_record
from audit.reporting.findings import findings

STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;max-width:60rem;margin:2rem auto;color:#222;
line-height:1.45;font-size:14px}h1{font-size:1.7rem}h2{border-bottom:2px solid #4477AA;padding-bottom:.2rem;
margin-top:2rem;break-after:avoid}table{border-collapse:collapse;margin:.5rem 0 1rem;font-size:12px}
th,td{border:1px solid #ccc;padding:2px 6px;text-align:right}table.models td{overflow-wrap:anywhere}th{background:#eef2f7}td:first-child,th:first-child
{text-align:left}table.scope td{text-align:left}pre{white-space:pre-wrap;background:#f6f6f6;padding:.5rem;font-size:11px}
img{width:100%;break-inside:avoid}li{margin:.3rem 0}.flag{color:#b00020;font-weight:bold}
@media print{body{margin:0;max-width:none}h2{break-before:auto}}
"""


def _table(frame: pd.DataFrame, digits: int = 3, css: str = "") -> str:
    """A DataFrame as an escaped HTML table, floats rounded."""
    return frame.to_html(index=False, escape=True, border=0, na_rep="–", float_format=lambda v: f"{v:.{digits}f}",
                         classes=css or None)


def _figure(fig: go.Figure) -> str:
    data = base64.b64encode(figure_bytes(fig, "svg")).decode("ascii")
    return f'<img alt="{escape(fig.layout.title.text or "figure")}" src="data:image/svg+xml;base64,{data}">'


def _scope(data: ReportData) -> str:
    s = data.settings
    facts = {"task": data.task, "subtasks": ", ".join(data.subtasks), "scoring mode": s.mode,
             "decoding": ("next-token probabilities of the answer labels, no sampling (score = Σ P(label) × "
                          "relevance)" if s.mode == "pointwise" else "pairwise answers, each pair asked in both "
                                                                     "orders"),
             "pool design": s.design, "quota k": s.k, "grouping": s.grouping, "reference group": s.reference,
             "intervals": f"{round(s.ci * 100)} % percentile bootstrap, {s.n_boot} replicates, seed {s.seed}",
             "data provenance": (f"candidates as recorded in the store {s.store}; "
                                 + ("names by group on shared resume templates (counterfactual)"
                                    if data.design.counterfactual else "the task's own candidate file")),
             "generated": data.generated, "tool version": data.version}
    rows = "".join(f"<tr><th>{escape(k)}</th><td>{escape(str(v))}</td></tr>" for k, v in facts.items())
    prompts = "".join(f"<h4>{escape(r.subtask)} · sha256 {escape(r.sha256)}</h4><pre>{escape(r.template)}</pre>"
                      for r in data.prompts.itertuples(index=False))
    sizes = data.group_sizes.pivot(index="subtask", columns="group", values="candidates").reset_index()
    return (f"<h2>Scope</h2><table class='scope'>{rows}</table><h3>Models</h3>{_table(data.models, css='models')}"
            f"<h3>Candidates per group</h3>{_table(sizes)}<h3>Prompt templates</h3>{prompts}")


def _findings(data: ReportData) -> str:
    s = data.settings
    found = findings(data.at_k, data.impact, reference=s.reference, ci=s.ci, name=data.design.display_name)
    if not found:
        return ("<h2>Findings</h2><p>No gap at this quota has an interval that excludes zero, and no impact ratio "
                "falls below four fifths.</p>")
    items = "".join(f'<li class="finding" data-kind="{f.kind}" data-model="{escape(f.model)}" '
                    f'data-subtask="{escape(f.subtask)}" data-group="{escape(f.group)}">{escape(f.text)}</li>'
                    for f in found)
    return f"<h2>Findings</h2><p>Ordered by size; gaps are ΔDP in points of selection rate.</p><ol>{items}</ol>"


def _impact(data: ReportData) -> str:
    columns = ["model", "subtask", "category", "candidates", "selection_rate", "selection_rate_lo",
               "selection_rate_hi", "impact_ratio", "impact_ratio_lo", "impact_ratio_hi", "four_fifths"]
    parts = [f"<h2>Impact ratios at k = {data.settings.k}</h2><p>Selection rate ÷ the most-selected category's "
             "rate (NYC Local Law 144); flagged below 0.8 (EEOC four-fifths rule).</p>"]
    for grouping, rows in data.impact.groupby("grouping", sort=False):
        parts.append(f"<h3>{escape(str(grouping))}</h3>{_table(rows[columns])}")
    return "".join(parts)


def _gaps(data: ReportData) -> str:
    parts = ["<h2>Allocation gaps against k</h2><p>Mean over subtasks, signed against the reference group.</p>"]
    for model, rows in data.metrics.groupby("model", sort=True):
        mean = rows.groupby(["model", "group", "k"], as_index=False)[["dp_gap", "eo_gap"]].mean()
        for gap, name in charts.GAP_NAMES.items():
            parts.append(_figure(charts.gap_curves(mean, gap=gap, title=f"{name} against k: {escape(model)}")))
    at_k = data.at_k
    correlations = data.correlations
    overall = correlations[correlations["scope"] == "overall"].reset_index(drop=True)
    parts.append(f"<h2>Bias metrics against gaps at k = {data.settings.k}</h2>")
    parts.append(_figure(charts.gap_scatter(at_k, k=data.settings.k, correlations=overall,
                                            reference=data.settings.reference)))
    parts.append(_table(overall))
    parts.append(f"<h3>Gaps at k = {data.settings.k}</h3>")
    parts.append(_table(at_k[["model", "subtask", "group", "dp_gap", "dp_gap_lo", "dp_gap_hi", "eo_gap", "eo_gap_lo",
                              "eo_gap_hi", "delta", "rabbi"]]))
    ranks = data.rankings[data.rankings["metric"] == "true"]
    if ranks["model"].nunique() > 1:
        parts.append("<h2>Model rankings</h2>")
        parts.append(_figure(charts.bump_chart(data.rankings)))
        parts.append(_table(ranks[["subtask", "gap", "model", "rms", "rank"]]))
    return "".join(parts)


def _comparison(data: ReportData) -> str:
    if not data.comparison:
        return ""
    a, b = data.settings.compare
    gaps, flips, correlation = (data.comparison[n] for n in ("gaps", "flips", "correlation"))
    flipped = flips[flips["flipped"]]
    return (f"<h2>Comparison: A = {escape(a)}, B = {escape(b)}</h2><p>ΔDP(B) − ΔDP(A) and ΔEO(B) − ΔEO(A) at "
            f"k = {data.settings.k} on the candidates both scored, with paired bootstrap intervals (the same "
            f"resampled candidates for both).</p>{_figure(charts.comparison_dots(gaps))}{_table(gaps)}"
            f"<h3>Rank correlation of scores</h3>{_table(correlation)}"
            f"<h3>Selection flips ({len(flipped)} of {len(flips)} candidates)</h3>"
            f"{_table(flipped.head(40))}")


def render_html(data: ReportData) -> str:
    """The whole report as an HTML string."""
    s = data.settings
    payload = {"settings": settings_record(s), "impact": data.impact.to_dict("records"),
               "gaps_at_k": data.at_k.to_dict("records")}
    embedded = json.dumps(payload, default=str).replace("<", "\\u003c")  # no "</script>" can end the element
    items = "".join(f"<li>{escape(text)}</li>" for text in limitations(data))
    reproduce = escape("\n".join(commands(data)))
    title = f"Allocation audit: {data.task}, k = {s.k}"
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{escape(title)}</title>"
            f"<style>{STYLE}</style></head><body><h1>{escape(title)}</h1>"
            f"<p>Models: {escape(', '.join(data.models['model']))}. Generated {escape(data.generated)}.</p>"
            f"{_findings(data)}{_scope(data)}{_impact(data)}{_gaps(data)}{_comparison(data)}{data.ll144}"
            f"<h2>Diagnostics</h2>{_table(data.diagnostics)}<h2>Limitations</h2><ul>{items}</ul>"
            f"<h2>Reproduce</h2><pre>{reproduce}</pre>"
            f"<script type='application/json' id='report-data'>{embedded}</script></body></html>")
