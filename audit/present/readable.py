"""The audit's tables as people read them on the dashboard: verdicts in words, impact ratios per grouping (with "not
defined at k = pool size" where a quota selects every candidate), group codes replaced by the design's display names,
column names without snake_case, numbers formatted by :mod:`audit.formatting`. Exports keep the raw tables."""
from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

import pandas as pd

from audit.design import AuditDesign
from audit.enums import DEFAULT_FAMILY, Family, Mode, Rule
from audit.formatting import at_quota, estimate, number, pvalue, ratio, subtask_name
from audit.engine.shape import LOW_LABEL_MASS
from audit.engine.selection import Selection
from audit.metrics.impact import FOUR_FIFTHS
from audit.engine.verdict import (ADVERSE, BEYOND_REACH, FAMILIES, INCONCLUSIVE, MORE_DATA,
                                   NO_EVIDENCE, PLAN_REACH, rollup, rule_text, store_line)

if TYPE_CHECKING:  # the scoring module loads the model backends: not needed to read a table
    from audit.run.scoring import RunSummary


def family_words(family: Family) -> str:
    """``Holm over every pairwise comparison within … (family: system)``: a verdict's multiple-testing family."""
    return f"Holm over every pairwise comparison within {FAMILIES[family]} (family: {family})"


def verdict_words(row: pd.Series) -> str:
    """A verdict in words, with the planner's answer for inconclusive rows (about how many more pools or candidates
    per group, or why more data of this kind will not settle it)."""
    if row["verdict"] == INCONCLUSIVE and row.get("plan_note"):
        return f"inconclusive — {row['plan_note']}"
    return str(row["verdict"])


def overall_line(table: pd.DataFrame, k: int, quota_free: bool = False) -> str:
    """The store-wide line in one Markdown sentence: systems per verdict (a store-wide verdict only under the
    ``audit`` family)."""
    return f"**Overall {at_quota(k, quota_free)}:** {store_line(table)['summary']}."


#: the per-system table's widest column (pages keep it to a width that leaves the deciding ones in view)
CARRYING = "groups carrying the verdict"


def system_verdicts(table: pd.DataFrame) -> pd.DataFrame:
    """One row per system and subtask: its strongest verdict, the counts of each, the groups that carry it ("all N"
    when every group has the same verdict)."""
    systems = rollup(table)
    counts = systems[["n_adverse", "n_inconclusive", "n_no_evidence"]]
    carrying = [f"all {int(row.sum())}" if (row > 0).sum() == 1 else text
                for (_, row), text in zip(counts.iterrows(), systems["categories"])]
    return pd.DataFrame({"system": systems["model"], "subtask": systems["subtask"].map(subtask_name),
                         "verdict": systems["verdict"],
                         "adverse": systems["n_adverse"], "inconclusive": systems["n_inconclusive"],
                         "no evidence": systems["n_no_evidence"], CARRYING: carrying})


def plan_words(row: pd.Series) -> str:
    """The planner's answer for an inconclusive cell in a few words (the number of more pools or candidates per
    group, or why more data of this kind will not settle it); empty for decided cells."""
    plan = row.get("plan") or ""
    if plan == MORE_DATA or not plan:
        return str(row.get("plan_note") or "")
    return f"beyond reach (over {PLAN_REACH}× the sample)" if plan == BEYOND_REACH else str(plan)


#: the columns of :func:`category_verdicts` that decide a verdict, shown first; the others on demand
DECIDING = ("system", "subtask", "grouping", "group", "verdict", "impact ratio [interval]", "plan")


def category_verdicts(table: pd.DataFrame, *, with_grouping: bool = True) -> pd.DataFrame:
    """One row per system, subtask, grouping and group: first the columns that decide (:data:`DECIDING`: the
    verdict, the impact ratio with its interval, the planner's answer), then the four-fifths flag, p and the adjusted
    p-value ("most selected" for the category compared against), family, evidence, the planner's note in full,
    selection rate and candidates."""
    out = pd.DataFrame({
        "system": table["model"], "subtask": table["subtask"].map(subtask_name), "grouping": table["grouping"],
        "group": table["name"], "verdict": table["verdict"],
        "impact ratio [interval]": [ratio(r, lo, hi) for r, lo, hi in
                                    zip(table["impact_ratio"], table["impact_ratio_lo"], table["impact_ratio_hi"])],
        "plan": [plan_words(row) for _, row in table.iterrows()],
        f"below {FOUR_FIFTHS:g}": (table["impact_ratio"] < FOUR_FIFTHS).map({True: "yes", False: "no"}),
        **({"p": [pvalue(p) if pd.notna(p) else "" for p in table["p"]]} if "p" in table else {}),
        "adjusted p": [pvalue(p) if pd.notna(p) else "most selected" for p in table["p_adj"]],
        **({"family": table["family"]} if "family" in table else {}),
        **({"evidence": table["evidence"].fillna("")} if "evidence" in table else {}),
        **({"planner's note": table["plan_note"].fillna("")} if "plan_note" in table else {}),
        "selection rate": table["selection_rate"].map(number), "candidates": table["candidates"]})
    return out if with_grouping else out.drop(columns="grouping")


#: a verdict in the deciding tables' words (:data:`DECIDING_NOTE` says what "no evidence" stands for)
_SHORT = {NO_EVIDENCE: "no evidence"}
DECIDING_NOTE = (f"no evidence: {NO_EVIDENCE}; plan: what an inconclusive cell would need to be settled. Every other "
                 "column (p, adjusted p, family, evidence) is one click away.")


def deciding(shown: pd.DataFrame) -> pd.DataFrame:
    """The deciding columns (:data:`DECIDING`) of a :func:`category_verdicts` table, verdicts in short words, the
    rest left for on demand: a table that fits a 1,500 px window beside the sidebar."""
    out = shown[[c for c in DECIDING if c in shown]]
    return out.assign(verdict=out["verdict"].replace(_SHORT))


def quota_strip(table: pd.DataFrame) -> pd.DataFrame:
    """One row per system: its verdict at every quota k of ``table`` (the verdict rows at several k; the strongest
    over its subtasks, groupings and categories, with the number of adverse cells) and the quotas where adverse
    impact appears, so where it vanishes reads off the row."""
    rolled = rollup(table, by=["model", "k"])
    rows = []
    for model, part in rolled.groupby("model", sort=True):
        part = part.sort_values("k")
        marks = {f"k = {int(k)}": f"adverse ({n})" if v == ADVERSE else _MARKS[v]
                 for k, v, n in zip(part["k"], part["verdict"], part["n_adverse"])}
        adverse = [int(k) for k, v in zip(part["k"], part["verdict"]) if v == ADVERSE]
        rows.append({"system": model, "adverse impact at": quota_ranges(adverse) or "no k", **marks})
    return pd.DataFrame(rows)


#: a verdict in one short word for the every-k row
_MARKS = {ADVERSE: "adverse", INCONCLUSIVE: "inconclusive", NO_EVIDENCE: "no evidence"}


def quota_ranges(ks: Sequence[int]) -> str:
    """``k = 1–3, 5`` for the quotas 1, 2, 3, 5 (empty for none)."""
    runs: list[list[int]] = []
    for k in sorted(ks):
        if runs and k == runs[-1][-1] + 1:
            runs[-1].append(k)
        else:
            runs.append([k])
    return ("k = " + ", ".join(f"{r[0]}–{r[-1]}" if len(r) > 1 else f"{r[0]}" for r in runs)) if runs else ""


def not_defined(grouping: str, size: int | None, k: int) -> str:
    """Why a grouping has no impact ratios at quota ``k`` (``size``: its pool size, when known)."""
    held = f"its pools hold {size} candidates" if size else f"its pools hold at most {k} candidates"
    return (f"{grouping}: not defined at k = pool size — {held}, so at k = {k} every candidate is selected and every "
            "ratio is 1 by construction.")


def impact_by_grouping(table: pd.DataFrame, sizes: dict[str, int], k: int) -> dict[str, pd.DataFrame | str]:
    """Per declared grouping (``sizes``: its smallest pool), the readable impact table of its verdict rows, or the
    sentence saying it is not defined at this k."""
    return {grouping: (category_verdicts(table[table["grouping"] == grouping], with_grouping=False) if size > k
                       else not_defined(grouping, size, k)) for grouping, size in sizes.items()}


#: the verdict's quota sentence where no quota moves the selection
NO_QUOTA = (" No quota: each system is judged on the decisions its log records (a 0/1 log's selections, a score "
            "log's scores above its median), the same at every k.")


def verdict_note(ci: float, k: int, sizes: dict[str, int], family: Family = DEFAULT_FAMILY,
                 rule: Rule = Rule.PRACTICE, quota_free: bool = False) -> str:
    """The rule (with its family and reading) and the quota the verdict was judged at, naming the groupings not
    judged (``quota_free``: judged on the recorded decisions, with no quota)."""
    if quota_free:
        return rule_text(ci=ci, family=family, rule=rule) + NO_QUOTA
    skipped = [f"{g} (pool size {s})" for g, s in sizes.items() if s <= k]
    return (rule_text(ci=ci, family=family, rule=rule)
            + f" Quota k = {k}, kept below every judged grouping's pool size."
            + (f" Not judged at this k: {', '.join(skipped)}." if skipped else ""))


def named(frame: pd.DataFrame, design: AuditDesign, columns: Iterable[str] = ("group",)) -> pd.DataFrame:
    """``frame`` with the group codes of ``columns`` replaced by the design's display names (a copy)."""
    out = frame.copy()
    for column in columns:
        if column in out:
            codes = out[column].astype(str)
            out[column] = codes.map({c: design.display_name(c) for c in codes.unique()})
    return out


def metric_table(rows: pd.DataFrame, design: AuditDesign) -> pd.DataFrame:
    """Metric rows at one k as read on the page: system, subtask, group by name, each gap with its interval and
    adjusted p-value, the bias metrics, and the low-label-mass flag."""
    out = pd.DataFrame({"system": rows["model"], "subtask": rows["subtask"].map(subtask_name),
                        "group": named(rows, design)["group"]})
    for gap, name in (("dp_gap", "ΔDP"), ("eo_gap", "ΔEO")):
        out[f"{name} [interval]"] = [estimate(v, lo, hi, digits=3) for v, lo, hi in
                                     zip(rows[gap], rows.get(f"{gap}_lo", [None] * len(rows)),
                                         rows.get(f"{gap}_hi", [None] * len(rows)))]
        if f"{gap}_padj" in rows:
            out[f"{name} adjusted p"] = rows[f"{gap}_padj"].map(pvalue)
    for column, name in (("delta", "δ"), ("jsd", "JSD"), ("emd", "EMD"), ("rabbi", "RABBI")):
        out[name] = rows[column].map(number)
    if "low_label_mass" in rows:
        out["low label mass"] = rows["low_label_mass"].map({True: "✕", False: ""})
    return out


def group_names(design: AuditDesign, codes: Iterable[str]) -> dict[str, str]:
    """Group code → the design's display name for every group of ``codes`` under each grouping the design declares
    (whole codes and their categories), for chart legends and pickers."""
    whole = {str(code) for code in codes}
    return {category: design.display_name(category)
            for category in {design.category(c, g) for c in whole for g in design.groupings}}


def summary_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The store summary of one task (:func:`audit.engine.tables.store_summary`), system first, without the task column,
    subtasks by :func:`audit.formatting.subtask_name`."""
    return summary.drop(columns=["task"]).rename(columns={"model": "system"}).assign(
        subtask=summary["subtask"].map(subtask_name))


def json_text(text: str, keys: Sequence[str] = ()) -> str:
    """A JSON object (a model's stored details, a decoding) as ``key value, …`` text (only ``keys`` when given),
    never raw JSON; other text as it is."""
    try:
        values = json.loads(text)
    except (TypeError, ValueError):
        return str(text)
    if not isinstance(values, dict):
        return str(text)
    return ", ".join(f"{key.replace('_', ' ')} {values[key]}" for key in (keys or values) if key in values)


def model_table(models: pd.DataFrame) -> pd.DataFrame:
    """Registered models (:func:`audit.engine.tables.model_table`) with their details in words."""
    details = models["details"].map(lambda text: json_text(text, ("kind", "quant", "dtype", "device")))
    return models.assign(details=details).rename(columns={"model": "system"})


def label_mass_table(mass: pd.DataFrame) -> pd.DataFrame:
    """Label mass per model (:attr:`audit.engine.audit.Audit.label_mass`) with the share formatted and the flag in
    words."""
    return pd.DataFrame({"system": mass["model"], "mean label mass": mass["mean label mass"].map(number),
                         "below the threshold": mass["low"].map({True: "yes", False: "no"})})


def answer_shares_table(answers: pd.DataFrame) -> pd.DataFrame:
    """Pairwise answer shares per model (:attr:`audit.engine.diagnostics.Diagnostics.answers`), formatted."""
    return pd.DataFrame({"system": answers["model"], **{column: answers[column].map(number)
                                                        for column in ("irregular", "tied", "flipped")}})


def run_table(summaries: Sequence[RunSummary]) -> pd.DataFrame:
    """One row per scoring run: prompts, scored, cached, seconds and the quality flags."""
    return pd.DataFrame([{"model": s.model, "task": s.task, "subtask": s.subtask, "mode": s.mode, "prompts": s.prompts,
                          "scored": s.scored, "cached": s.cached, "seconds": round(s.seconds, 1), **s.quality}
                         for s in summaries])


def low_mass_note(mass: pd.DataFrame, chosen: Selection) -> str:
    """Which models of ``chosen`` are marked ✕ for low label mass (:attr:`audit.engine.audit.Audit.label_mass`), or
    ""."""
    low = sorted(set(mass.loc[mass["low"] & mass["model"].isin(chosen.models), "model"])) \
        if chosen.mode == Mode.POINTWISE else []
    return (f"Marked ✕ in the charts: {', '.join(low)} put less than {LOW_LABEL_MASS:.0%} of the next-token probability "
            "on the labels on average, so their scores are mostly renormalised noise." if low else "")


#: display labels of the Compare page's columns (the exported tables keep the names)
COMPARE_LABELS = {"task": None, "mode": None, "candidate_id": "candidate", "score_a": "score A", "score_b": "score B",
                  "selected_a": "chance of selection, A", "selected_b": "chance of selection, B", "spearman": "Spearman ρ"}


class Verdict(NamedTuple):
    """A verdict table as a page shows it: the overall sentence, one row per system, one per category, each
    grouping's impact table (or why it is not defined at k) and the rule with the groupings not judged."""

    overall: str
    systems: pd.DataFrame
    categories: pd.DataFrame
    impact: dict[str, pd.DataFrame | str]
    note: str


def verdict(table: pd.DataFrame, sizes: dict[str, int], k: int, ci: float, quota_free: bool = False) -> Verdict:
    """:class:`Verdict` of the rows of :meth:`audit.engine.audit.Audit.verdicts` (``sizes``: each grouping's pool;
    ``quota_free``: judged on the recorded decisions, see :attr:`audit.engine.audit.Audit.quota_free`)."""
    return Verdict(overall_line(table, k, quota_free), system_verdicts(table), category_verdicts(table),
                   impact_by_grouping(table, sizes, k),
                   verdict_note(ci, k, sizes, _first(table, "family", DEFAULT_FAMILY),
                                _first(table, "rule", Rule.PRACTICE), quota_free))


def _first(table: pd.DataFrame, column: str, default: str) -> str:
    """The first value of ``column`` (one family or reading per verdict table), else ``default``."""
    return str(table[column].iloc[0]) if column in table and len(table) else default
