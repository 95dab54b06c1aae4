"""The report as one self-contained HTML document (inline SVG figures, tables, the data as embedded JSON), built
from :data:`SECTIONS` in order: page 1 (:mod:`audit.reporting.page_one`) gives the verdict, what was audited and the
sign-off block; then how sure, the verdict per grouping, the findings, the method, the gaps, limitations, reproduce commands and the raw tables in an appendix.
A new section is a function ``ReportData -> str`` (HTML) added to :data:`SECTIONS`. Every piece of user text (task,
group, model and subtask names, prompt text) goes through ``html.escape``."""
from __future__ import annotations

import base64
import json
import re
import secrets
from collections.abc import Callable
from contextvars import ContextVar
from html import escape, unescape

import pandas as pd
import plotly.graph_objects as go

from audit.enums import Mode
from audit.present import charts
from audit.tasks import study
from audit.present.exports import image_later
from audit.formatting import at_quota, correlation_table, estimate, number, pvalue, ratio, subtask_name
from audit.engine.choices import gap_test
from audit.engine.verdict import (ADVERSE, BEYOND_REACH, MORE_DATA, NO_ESTIMATE, NO_EVIDENCE, NOT_COMPARABLE,
                                   ON_THRESHOLD, PLAN_REACH, RULES, rule_text)
from audit.present.readable import family_words
from audit.present.trail import readable
from audit.reporting.content import (ReportData, commands, limitations, sample_sizes, settings_record,
                                     shell_text)
from audit.reporting.findings import SENTENCES_UP_TO, Finding, findings, not_significant
from audit.reporting import page_one
from audit.reporting.html import table
from audit.reporting.page_one import VERDICT_CSS
from audit.reporting.method import glossary, method_paragraphs, policy_paragraph
from audit.reporting.monitoring_section import monitoring_section
from audit.paths import portable_path
from audit.reporting.provenance import RECORDED_HASHES, SCORED_HASHES
from audit.reporting.style import STYLE, page_style
from audit.tasks.recorded import mode_name

#: an inconclusive cell's mark where the planner gives no figure (see :func:`_plan_marks`)
_NO_FIGURE = {BEYOND_REACH: "beyond", NO_ESTIMATE: "n/a", NOT_COMPARABLE: "apart"}


def _plan_marks(threshold: float) -> str:
    """What an inconclusive cell's planner mark means (the verdict tables' legend and the appendix's note)."""
    return (f"+N: about N more candidates per group, or pools for recorded pools, needed for 80 % power (k: thousands, "
            f"M: millions; never beyond {PLAN_REACH}× the present sample); beyond: more data of this kind will not "
            f"settle it (over {PLAN_REACH}× the present sample needed: the ratio lies too close to the threshold for "
            f"this design); on {threshold:g}: the ratio equals the threshold, and no sample size separates them; apart: "
            "never in a pool with the most-selected category, so not comparable within pools; n/a: the ratio or its "
            "spread is undefined")


def _legend(threshold: float) -> str:
    """The caption under every verdict table."""
    return ("<caption>Each cell: the impact ratio, then <b>adverse</b> (adverse impact), <b>no evidence</b> (no "
            "evidence of adverse impact at this sample size) or the planner's answer for an inconclusive cell "
            f"({escape(_plan_marks(threshold))}).</caption>")


_drawings: ContextVar[tuple[str, list[Callable[[], str]]] | None] = ContextVar("report_drawings", default=None)
"""While :func:`render_html` writes a document: its placeholders' nonce and the images they stand for."""


def plain_title(fig: go.Figure) -> str:
    """``fig``'s title as plain text (chart titles are Plotly's HTML subset, user text in them already escaped):
    tags dropped, entities read back; ``figure`` where it has none."""
    title = unescape(re.sub(r"<[^>]*>", " ", fig.layout.title.text or ""))
    return " ".join(title.split()) or "figure"


def _figure(fig: go.Figure, width: int | None = None) -> str:
    """``fig`` as an inline SVG image, ``width`` pixels wide when given (half-width figures: smaller canvas, so their
    text prints larger). Within :func:`render_html` the browser draws it while the document is written, and a
    placeholder stands in for it until then."""
    drawn, alt = image_later(fig, "svg", width=width), escape(plain_title(fig))

    def tag() -> str:
        return f'<img alt="{alt}" src="data:image/svg+xml;base64,{base64.b64encode(drawn()).decode("ascii")}">'

    writing = _drawings.get()
    if writing is None:
        return tag()
    nonce, pending = writing
    pending.append(tag)
    return f"\x00{nonce}:{len(pending) - 1}\x00"


def _code(text: str) -> str:
    """A hash or path in small monospace, breakable every 16 characters (they are not words)."""
    pieces = [escape(text[i:i + 16]) for i in range(0, len(text), 16)]
    return f'<span class="code">{"<wbr>".join(pieces)}</span>'


def _facts(facts: dict[str, str], last: str = "") -> str:
    """Named facts two to a row (label, value, label, value), then ``last`` (HTML) across the whole last row."""
    cells = [f"<th>{escape(k)}</th><td>{escape(str(v))}</td>" for k, v in facts.items()]
    rows = "".join(f"<tr>{''.join(cells[i:i + 2])}</tr>" for i in range(0, len(cells), 2))
    return f"<table class='facts small'>{rows}{f'<tr><td colspan=4>{last}</td></tr>' if last else ''}</table>"


def _plan_mark(plan: str, more: float, threshold: float) -> str:
    """The planner's answer in a table cell: ``+1,234``, ``+12k``, ``+4M`` more candidates per group (or pools), or
    why there is no figure (``beyond``, ``on 0.8``, ``n/a``: see :func:`_plan_marks`)."""
    if plan == ON_THRESHOLD:
        return f"on {threshold:g}"
    if plan != MORE_DATA:
        return _NO_FIGURE[plan]
    count = int(more)
    return "+" + (f"{count:,}" if count < 10_000 else f"{count / 1e3:.0f}k" if count < 1_000_000 else
                  f"{count / 1e6:.0f}M")


def _short(verdict: str, plan: str, more: float, threshold: float) -> str:
    """A verdict in a table cell: ``adverse``, ``no evidence`` or ``inconclusive, +N`` (the planner's answer)."""
    return ({ADVERSE: "adverse", NO_EVIDENCE: "no evidence"}.get(verdict)
            or f"inconclusive, {_plan_mark(plan, more, threshold)}")


def _why(verdicts: pd.DataFrame) -> list[str]:
    """Per verdict row: ``comparator`` for the most-selected category, else its ``evidence`` sentence (where the
    ratio's interval and the adjusted test point different ways; empty where they agree)."""
    return ["comparator (ratio 1)" if c == top else str(e or "")
            for c, top, e in zip(verdicts["category"], verdicts["comparator"], verdicts["evidence"].fillna(""))]


def _named(name: str, code: str) -> str:
    """``White men (W_M)``: a name with its code, or the code alone when it has no other name."""
    return code if name == code else f"{name} ({code})"


def test_words(data: ReportData) -> str:
    """The tests behind gaps and verdicts, and the ratio intervals, as the design makes them."""
    s = data.settings
    sel = s.selection
    if s.design == "observed":
        return (f"exact conditional tests stratified by pool ({sel.adjust}-adjusted for gaps); ratio intervals: "
                "pool-robust Katz")
    return (f"{sel.n_perm} label permutations ({sel.adjust}-adjusted for gaps); ratio intervals: percentile bootstrap "
            "of the pair")


def reading_words(data: ReportData) -> str:
    """``practice: four-fifths plus significance …``: the verdict's reading of adverse impact."""
    return f"{data.settings.selection.rule}: {RULES[data.settings.selection.rule]}"


def audited(data: ReportData) -> str:
    """Page 1, part 2: the systems (fingerprint, scoring dates), the data and its hash, the choices that scope it."""
    s = data.settings
    sel = s.selection
    data_digest, rows, what = data.data
    facts = {"task": data.task, "subtasks": ", ".join(data.subtasks), "scoring mode": mode_name(data.design, sel.mode),
             "design": data.design.kind, "grouping": sel.grouping,
             "reference group": _named(data.design.display_name(sel.reference, sel.grouping), sel.reference),
             "pool design": s.design, "quota": "none (the recorded decisions)" if data.quota_free else f"k = {s.k}",
             "tool version": data.version, "generated": data.generated}
    verb = "recorded" if data.recorded else "scored"
    systems = pd.DataFrame({"system": data.models["model"], "fingerprint": data.models["fingerprint"],
                            "precision": data.models["precision"], f"first {verb}": data.models["first scored"],
                            f"last {verb}": data.models["last scored"]})
    return (f"<h2>What was audited</h2>"
            f"{table(systems, numeric=(f'first {verb}', f'last {verb}'), css='small wide')}"
            f"{_facts(facts, f'Candidate data: {rows:,} {escape(what)}, SHA-256 {_code(data_digest)}.')}")


def _judged(data: ReportData) -> str:
    """How the verdicts and gaps were computed: intervals, tests, the verdict's family and reading."""
    s = data.settings
    sel = s.selection
    return _facts({"gap intervals": f"{round(sel.ci * 100)} % percentile bootstrap, {sel.n_boot} replicates, "
                                    f"seed {sel.seed}",
                   "tests": test_words(data),
                   **({"verdict family": family_words(sel.family), "verdict reading": reading_words(data)}
                      if data.verdicts is not None else {})})


def _matrix(verdicts: pd.DataFrame, grouping: str, threshold: float) -> str:
    """Systems (rows) × categories (columns) of one grouping: impact ratio and verdict mark per cell."""
    rows = verdicts[verdicts["grouping"] == grouping]
    categories = list(dict.fromkeys(rows["category"]))
    names = dict(zip(rows["category"], rows["name"]))
    head = "".join(f"<th class=v>{escape(names[c])}<br><span class=code>{escape(c)}</span></th>" for c in categories)
    body = []
    for (model, subtask), part in rows.groupby(["model", "subtask"], sort=True):
        first: dict[str, dict] = {}
        for record in part.to_dict("records"):
            first.setdefault(record["category"], record)
        cells = []
        for category in categories:
            row = first.get(category)
            if row is None:
                cells.append("<td class=v>–</td>")
                continue
            mark = {ADVERSE: "adverse", NO_EVIDENCE: "no evidence"}.get(row["verdict"], "")
            mark = mark or _plan_mark(row["plan"], row["more_per_group"], threshold)
            cells.append(f'<td class="v {VERDICT_CSS[row["verdict"]]}" data-model="{escape(model)}" '
                         f'data-subtask="{escape(subtask)}" data-grouping="{escape(grouping)}" '
                         f'data-category="{escape(category)}" data-verdict="{escape(row["verdict"])}">'
                         f'{ratio(row["impact_ratio"], threshold=threshold)}<br>{escape(mark)}</td>')
        body.append(f"<tr><td>{escape(model)}<br><span class=muted>{escape(subtask_name(subtask))}</span></td>"
                    f"{''.join(cells)}</tr>")
    return (f"<table class='matrix small'>{_legend(threshold)}<thead><tr><th>system<br>subtask</th>{head}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table>")


def verdict(data: ReportData) -> str:
    """After page 1: how the verdicts were reached and how sure (the rule), then one verdict table per grouping."""
    s = data.settings
    sel = s.selection
    if data.verdicts is None:
        return f"<h2 class=pagebreak>How sure</h2>{_judged(data)}"
    parts = [f"<h2 class=pagebreak>Verdict per grouping {at_quota(s.k, data.quota_free)}</h2>{_judged(data)}",
             f"<h3>How sure</h3><p class='rule'>{escape(rule_text(s.threshold, sel.ci, sel.family, sel.rule))} "
             "Gaps (ΔDP) are findings only "
             f"when the p-value of their {gap_test(s.design)}, {escape(sel.adjust)}-adjusted across the groups × "
             "subtasks of one system, "
             f"is at most α = {1 - sel.ci:.2g}.</p>"]
    for grouping, size in data.pool_sizes.items():
        parts.append(f"<h3>{escape(grouping)} (pools of {size})</h3>")
        if s.k >= size and not data.quota_free:
            parts.append(f"<p>Not defined at k = pool size ({size}): every candidate of a pool is selected, so every "
                         "ratio is 1 by construction.</p>")
        else:
            parts.append(_matrix(data.verdicts, grouping, s.threshold))
    return "".join(parts)


def findings_section(data: ReportData) -> str:
    s = data.settings
    sel = s.selection
    found = findings(data.at_k, data.verdicts, reference=sel.reference, ci=sel.ci, threshold=s.threshold,
                     name=lambda code: data.design.display_name(code, sel.grouping), test=gap_test(s.design),
                     quota_free=data.quota_free)
    missed = not_significant(data.at_k, sel.ci)
    note = (f"<p class='muted'>{missed} further gap{'s' if missed != 1 else ''} of this grouping "
            f"{'have' if missed != 1 else 'has'} a 95 % interval excluding 0 before adjustment but "
            f"{'are' if missed != 1 else 'is'} not significant after it: inconclusive, not listed (Appendix B).</p>"
            if missed else "")
    if not found:
        judged = "no category has adverse impact and " if data.verdicts is not None else ""
        return (f"<div class=keep><h2>Findings</h2><p>No finding is significant by the rule above at this sample size: "
                f"{judged}no gap is rejected after adjustment.</p>{note}</div>")
    flags = [f for f in found if f.kind == "impact"]
    gaps = [f for f in found if f.kind == "gap"]
    listed = [_finding_list(part, sel.ci, s.threshold) for part in (flags, gaps) if part]
    counts = (f"All {len(flags)} adverse-impact verdict{'s' if len(flags) != 1 else ''} (lowest ratio first) and "
              f"all {len(gaps)} significant gap{'s' if len(gaps) != 1 else ''} (largest first) are listed.")
    return (f"<h2>Findings</h2><p>Every item is significant by the rule above; gaps are ΔDP in "
            f"points of selection rate against {escape(data.design.display_name(sel.reference, sel.grouping))}. "
            f"{escape(counts)}</p>{note}{''.join(listed)}")


def _finding_list(found: list[Finding], ci: float, threshold: float) -> str:
    """Findings of one kind as numbered sentences, or, when there are many, as one compact table (a row each)."""
    attrs = [{"kind": f.kind, "model": f.model, "subtask": f.subtask, "grouping": f.grouping, "group": f.group}
             for f in found]
    if len(found) <= SENTENCES_UP_TO:
        items = "".join(f'<li class="finding" data-kind="{f.kind}" data-model="{escape(f.model)}" '
                        f'data-subtask="{escape(f.subtask)}" data-group="{escape(f.group)}">{escape(f.text)}</li>'
                        for f in found)
        return f"<ol>{items}</ol>"
    impact = found[0].kind == "impact"
    value = "impact ratio" if impact else "ΔDP (points)"
    digits = 1  # gaps in points
    shown = pd.DataFrame({"#": [str(i) for i in range(1, len(found) + 1)], "system": [f.model for f in found],
                          "subtask": [subtask_name(f.subtask) for f in found],
                          **({"grouping": [f.grouping for f in found]} if impact else {}),
                          "group": [f.name or f.group for f in found],
                          f"{value} [{round(ci * 100)} % CI]": [ratio(f.value, f.low, f.high, threshold) if impact else
                                                                estimate(f.value, f.low, f.high, digits) for f in found],
                          "adj. p": [pvalue(f.p_value) for f in found],
                          **({} if impact else {"test": [f.test for f in found]})})
    caption = ("Adverse impact: ratio below the threshold and the adjusted test rejects." if impact else
               "Significant gaps: the adjusted test named in each row rejects.")
    return table(shown, numeric=("#", f"{value} [{round(ci * 100)} % CI]", "adj. p"), css="long findings", rows=attrs,
                 row_class="finding", caption=caption)


def method(data: ReportData) -> str:
    s, design = data.settings, data.design
    sel = s.selection
    recorded = data.recorded
    paragraphs = method_paragraphs(pool=s.design, mode=sel.mode, k=s.k, reference=design.display_name(
        sel.reference, sel.grouping), reference_code=sel.reference, grouping=sel.grouping, labels=design.labels,
        relevance=design.relevance, qualification=design.qualification, recorded=recorded,
        quota_free=data.quota_free)
    if s.policy:
        paragraphs = [*paragraphs, policy_paragraph(*s.policy)]
    terms = "".join(f"<li><b>{escape(term)}</b>: {escape(text)}</li>"
                    for term, text in glossary(data.quota_free).items())
    sizes = sample_sizes(data)
    sizes = pd.DataFrame({"system": sizes["model"], "subtasks": sizes["subtasks"].astype(str),
                          "candidates per group": [f"{a}" if a == b else f"{a} to {b}"
                                                   for a, b in zip(sizes["smallest"], sizes["largest"])]})
    prompts = []
    for row in data.prompts.itertuples(index=False):
        prompts.append(f"<h4>{escape(row.subtask)} · system message sha256 {escape(row.sha256)}</h4>"
                       f"<pre class=prompt>{escape(row.template)}</pre>")
    example = data.prompts.iloc[0] if len(data.prompts) else None
    user = ("" if example is None else
            f"<h4>User message (the first candidate of {escape(example['subtask'])}, as scored)</h4>"
            f"<pre class=prompt>{escape(example['user'])}</pre><p>The model's reply starts with the answer prefix "
            f"<code>{escape(example['answer_prefix'] or '(none)')}</code>"
            + (f", and the probabilities of the next token are read for the labels {escape(', '.join(design.labels))}"
               if sel.mode == Mode.POINTWISE else "; its answer names the preferred candidate") + ".</p>")
    return ("<h2>Method</h2>" + "".join(f"<p>{escape(p)}</p>" for p in paragraphs)
            + f"<h3>Glossary</h3><ul>{terms}</ul><h3>Sample sizes</h3>"
            + table(sizes, numeric=("subtasks", "candidates per group"), css="small")
            + ("" if recorded else "<h3>Prompts as scored</h3>" + user + "".join(prompts)))


def gaps(data: ReportData) -> str:
    s = data.settings
    sel = s.selection
    names = {g: data.design.display_name(g, sel.grouping) for g in data.metrics["group"].unique()}
    rows_of_figures = []  # one row per model: its ΔDP and ΔEO curves side by side
    defined = data.metrics[data.metrics["k"] < data.metrics["k"].max()]  # at k = pool size every gap is 0
    same = bool(((defined["dp_gap"] - defined["eo_gap"]).abs() < 1e-12).all())  # everyone qualified: ΔEO = ΔDP
    shown_gaps = {"dp": charts.GAP_NAMES["dp"]} if same else charts.GAP_NAMES
    for model, rows in defined.groupby("model", sort=True):
        mean = rows.groupby(["model", "group", "k"], as_index=False)[["dp_gap", "eo_gap"]].mean()
        mean["group"] = mean["group"].map(names)
        pair = []
        for gap, name in shown_gaps.items():
            fig = charts.gap_curves(mean, gap=gap, title=f"{name} against k: {escape(model)}")
            fig.update_layout(height=380, margin=dict(l=50, r=10, t=50, b=40))
            pair.append(_figure(fig, width=600))
        rows_of_figures.append(f"<div class='figures keep'>{''.join(pair)}</div>")
    why = (f" ΔEO is not drawn: every candidate counts as qualified ({escape(data.design.qualification)}), so ΔEO "
           "equals ΔDP." if same else "")
    head = (f"<h2>Allocation gaps against k</h2><p>Mean over subtasks, group minus "
            f"{escape(names.get(sel.reference, data.design.display_name(sel.reference, sel.grouping)))}.{why}</p>")
    # no quota moves a recorded decision: gaps against k would be flat lines
    parts = [] if data.quota_free else [f"<div class=keep>{head}{''.join(rows_of_figures[:1])}</div>",
                                        *rows_of_figures[1:]]
    overall = data.correlations[data.correlations["scope"] == "overall"].reset_index(drop=True)
    parts.append(f"<h2>Bias measures against gaps {at_quota(s.k, data.quota_free)}</h2>")
    named = data.at_k.assign(group=data.at_k["group"].map(names))
    scatter = _figure(charts.gap_scatter(named, k=s.k, correlations=overall, quota_free=data.quota_free,
                                         reference=data.design.display_name(sel.reference, sel.grouping)))
    shown = correlation_table(overall)
    parts.append(f"<div class=keep>{scatter}{table(shown, numeric=('r [interval]', 'p', 'n'), css='small')}</div>")
    ranks = data.rankings[data.rankings["metric"] == "true"]
    if ranks["model"].nunique() > 1:
        bump = _figure(charts.bump_chart(data.rankings))
        ordered = ranks.sort_values(["subtask", "gap", "rank"])
        shown = (ordered.assign(entry=[f"{m} ({number(r)})" for m, r in zip(ordered["model"], ordered["rms"])],
                                place=ordered.groupby(["subtask", "gap"]).cumcount() + 1)
                 .pivot(index=["subtask", "gap"], columns="place", values="entry").reset_index().fillna(""))
        shown["gap"] = shown["gap"].map(charts.GAP_NAMES).fillna(shown["gap"])
        shown.columns = ["subtask", "gap", *[f"rank {c}" for c in shown.columns[2:]]]
        parts.append(f"<div class=keep><h2>Model rankings</h2>{bump}<p class=muted>Per subtask and gap, systems from "
                     "the smallest to the largest root-mean-square gap over the groups (in brackets).</p>"
                     f"{table(shown, css='small')}</div>")
    return "".join(parts)


def _comparison_head(a: str, b: str, k: int) -> str:
    """The comparison's heading and what its intervals are: "<new> vs the 2024 records (<gpt-…>)" with unpaired
    intervals where a listwise run meets one of the study's recorded systems; else A and B, paired."""
    versus = study.versus_records(a, b)
    measured = f"ΔDP(B) − ΔDP(A) and ΔEO(B) − ΔEO(A) at k = {k}"
    if versus:
        return (f"<h2>{escape(versus)}</h2><p>A = {escape(a)}, B = {escape(b)}: {measured}. "
                f"{escape(study.UNPAIRED_NOTE)}</p>")
    return (f"<h2>Comparison: A = {escape(a)}, B = {escape(b)}</h2><p>{measured} on the candidates both scored, with "
            "paired bootstrap intervals (the same resampled candidates for both).</p>")


def comparison(data: ReportData) -> str:
    if not data.comparison:
        return ""
    a, b = data.settings.compare
    found, flips, correlation = (data.comparison[n] for n in ("gaps", "flips", "correlation"))
    flipped = flips[flips["flipped"]]
    shown = pd.DataFrame({"subtask": found["subtask"], "group": found["group"],
                          "ΔDP(B) − ΔDP(A)": [estimate(v, lo, hi) for v, lo, hi in
                                              zip(found["dp_diff"], found["dp_diff_lo"], found["dp_diff_hi"])],
                          "ΔEO(B) − ΔEO(A)": [estimate(v, lo, hi) for v, lo, hi in
                                              zip(found["eo_diff"], found["eo_diff_lo"], found["eo_diff_hi"])]}
                         ) if {"dp_diff", "eo_diff_hi"} <= set(found.columns) else found.round(3).astype(str)
    return (f"{_comparison_head(a, b, data.settings.k)}{_figure(charts.comparison_dots(found))}"
            f"{table(shown, numeric=tuple(shown.columns[2:]), css='long')}"
            f"<h3>Rank correlation of scores</h3>{table(correlation.round(3).astype(str), css='small')}"
            f"<p>Selection flips: {len(flipped)} of {len(flips)} candidates change selection from A to B "
            "(listed in the JSON data of this file).</p>")


def closing(data: ReportData) -> str:
    items = "".join(f"<li>{escape(text)}</li>" for text in limitations(data))
    diagnostics = data.diagnostics.rename(columns=lambda c: c.replace("_", " ")).rename(columns={"model": "system"})
    for column in diagnostics.columns[1:]:
        diagnostics[column] = diagnostics[column].map(number)
    reproduce = "\n\n".join(shell_text(words) for words in commands(data))
    explained = ("Label mass: the share of the next-token probability that falls on the answer labels (low mass: "
                 "the model mostly wanted to say something else)." if data.settings.selection.mode == Mode.POINTWISE else
                 "Shares of irregular answers, ties and answers that flip with the order of the pair.")
    diagnosed = ("" if data.recorded else  # recorded decisions: no model answered here, nothing to diagnose
                 f"<h2>Diagnostics</h2><p>{explained}</p>"
                 f"{table(diagnostics, numeric=tuple(diagnostics.columns[1:]), css='small')}")
    return (f"<h2>Limitations</h2><ul>{items}</ul>{diagnosed}"
            f"<h2>Reproduce</h2><p>Each command recomputes one part of this report from the same store "
            f"(copy and paste into a shell at the project root):</p><pre class=reproduce>{escape(reproduce)}</pre>")


def appendix(data: ReportData) -> str:
    s = data.settings
    sel = s.selection
    parts = ["<h2 class=pagebreak>Appendix</h2>"]
    if data.verdicts is not None:
        parts.append(f"<h3>A. Verdict per system × category {at_quota(s.k, data.quota_free)}</h3><p class=muted>"
                     "Adverse: adverse impact; no "
                     f"evidence: no evidence of adverse impact at this sample size; inconclusive, with the planner's "
                     f"answer ({escape(_plan_marks(s.threshold))}). n: candidates of the group. Where the ratio's "
                     "interval and "
                     "the adjusted test point different ways, the last column says so: the test decides adverse "
                     "impact, the interval decides no evidence.</p>")
        for model, v in data.verdicts.groupby("model", sort=True):
            shown = pd.DataFrame({"subtask": v["subtask"].map(subtask_name), "grouping": v["grouping"],
                                  "group": v["name"],
                                  "code": v["category"], "n": v["candidates"].astype(str),
                                  "rate": v["selection_rate"].map(lambda x: number(x, 2)),
                                  "impact ratio": [ratio(r, lo, hi, s.threshold) for r, lo, hi in
                                                   zip(v["impact_ratio"], v["impact_ratio_lo"], v["impact_ratio_hi"])],
                                  "adj. p": v["p_adj"].map(pvalue),
                                  "verdict": [_short(a, b, c, s.threshold) for a, b, c in
                                              zip(v["verdict"], v["plan"], v["more_per_group"])],
                                  "test vs interval": _why(v)})
            attrs = [{"model": model, "subtask": t, "grouping": g, "category": c, "verdict": x} for t, g, c, x in
                     zip(v["subtask"], v["grouping"], v["category"], v["verdict"])]
            parts.append(f"<h4>{escape(model)}</h4>" + table(shown, numeric=("n", "rate", "impact ratio", "adj. p"),
                                                                 css="long verdicts", rows=attrs))
    at_k = data.at_k
    shown = pd.DataFrame({"system": at_k["model"], "subtask": at_k["subtask"].map(subtask_name),
                          "group": [data.design.display_name(g, sel.grouping) for g in at_k["group"]],
                          "code": at_k["group"],
                          "ΔDP": [estimate(a, b, c) for a, b, c in zip(at_k["dp_gap"], at_k["dp_gap_lo"],
                                                                       at_k["dp_gap_hi"])],
                          "adj. p": at_k["dp_gap_padj"].map(pvalue) if "dp_gap_padj" in at_k else "n/a",
                          "ΔEO": [estimate(a, b, c) for a, b, c in zip(at_k["eo_gap"], at_k["eo_gap_lo"],
                                                                       at_k["eo_gap_hi"])],
                          "δ": at_k["delta"].map(number), "RABBI": at_k["rabbi"].map(number)})
    long = data.verdicts is not None and len(data.verdicts) > 60  # a long table A: B starts on a page of its own
    reference = data.design.display_name(sel.reference, sel.grouping)
    parts.append(f"<h3{' class=pagebreak' if long else ''}>B. Gaps against {escape(reference)} "
                 f"{at_quota(s.k, data.quota_free)}</h3>"
                 + table(shown, numeric=("ΔDP", "adj. p", "ΔEO", "δ", "RABBI"), css="long"))
    sources = "".join(f"<li>{escape(r['model'])}: {escape(_origin(r))}, {_code(r['source'])}; content SHA-256 "
                      f"{_code(r['content hash'])}</li>" for r in data.models.to_dict("records"))
    identity = ("a hash of the source its decisions were imported from and its name" if data.recorded else
                "its weights' content hash with its precision and backend")
    hashes = RECORDED_HASHES if data.recorded else SCORED_HASHES
    parts.append(f"<h3>C. Model sources and content hashes</h3><p class=muted>A system's fingerprint (What was "
                 f"audited) identifies it: {identity}.</p><ul>{sources}</ul><p class=muted>{escape(hashes)}</p>")
    parts.append(audit_trail(data))
    return "".join(parts)


#: most runs the appendix lists (the latest; ``python -m audit runs`` lists them all)
TRAIL_ROWS = 100


def audit_trail(data: ReportData) -> str:
    """Appendix D: the store's runs before this report, as ``python -m audit runs`` lists them, and the run that
    records this report."""
    run = data.settings.run
    this = (f"This report: run #{run} of the store's audit trail (its file's SHA-256 is recorded there)." if run
            else "This report is not recorded in the store's audit trail: the store was only read (the shipped demo "
                 "store, or one this process may not write).")
    shown = readable(data.trail, portable_path) if len(data.trail) else pd.DataFrame()
    earlier = (f" The latest {TRAIL_ROWS} of {len(shown)} runs are shown; `python -m audit runs` lists every one."
               if len(shown) > TRAIL_ROWS else "")
    listed = (table(shown.tail(TRAIL_ROWS).astype(str), numeric=("run",), css="long trail") if len(shown) else
              "<p>No earlier run of this task is recorded in this store.</p>")
    return (f"<h3>D. Audit trail</h3><p><b>{escape(this)}</b> Every command and dashboard action that wrote results "
            f"or a report of this task to the store (<code>python -m audit runs</code> lists every task's), oldest first: what ran, when (UTC), with which options, on which data "
            f"(fingerprints) and what it wrote.{escape(earlier)}</p>{listed}")


def _origin(system: dict) -> str:
    """Where a system's results come from, in words (``system``: a row of :func:`audit.engine.records.systems`): a scored
    model's backend and device, or, for imported decisions, when they were recorded and when imported."""
    if system["recorded"]:
        dates = (f"recorded {system['first scored']} to {system['last scored']}" if system["first scored"]
                 else "recording dates not in the source")
        return f"{system['kind']}, {dates}, imported on {system['registered'][:10]}"
    return f"{system['kind']}, {system['backend']}" + (f" on {system['device']}" if system["device"] else "")


#: the report's sections, in order (each ReportData → HTML)
SECTIONS: list[Callable[[ReportData], str]] = [page_one.headline, audited, page_one.sign_off, verdict,
                                               findings_section, method, gaps, comparison,
                                               lambda data: data.ll144,
                                               lambda data: monitoring_section(data.monitoring, _figure), closing,
                                               appendix]


def render_html(data: ReportData, sections: list[Callable[[ReportData], str]] | None = None) -> str:
    """The whole report as an HTML string."""
    s = data.settings
    sel = s.selection
    def records(frame: pd.DataFrame) -> list[dict]:  # a recorded system's mode by its name, as exports call it
        return (frame.assign(mode=[mode_name(data.design, m) for m in frame["mode"]]) if "mode" in frame
                else frame).to_dict("records")

    payload = {"settings": {**settings_record(s), "mode": mode_name(data.design, sel.mode)},
               "impact": records(data.impact), "gaps_at_k": records(data.at_k),
               "verdicts": [] if data.verdicts is None else records(data.verdicts)}
    embedded = json.dumps(payload, default=str).replace("<", "\\u003c")  # no "</script>" can end the element
    title = f"Allocation audit: {data.task}" + ("" if data.quota_free else f", k = {s.k}")
    nonce, pending = secrets.token_hex(8), []
    writing = _drawings.set((nonce, pending))
    try:
        body = "".join(section(data) for section in (SECTIONS if sections is None else sections))
        body = re.sub(f"\x00{nonce}:(\\d+)\x00", lambda found: pending[int(found[1])](), body)
    finally:
        _drawings.reset(writing)
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{escape(title)}</title>"
            f"<style>{STYLE}{page_style(s.paper)}</style></head><body><h1>{escape(title)}</h1>"
            f"{body}<script type='application/json' id='report-data'>{embedded}</script></body></html>")
