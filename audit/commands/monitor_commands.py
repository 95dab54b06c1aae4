"""``python -m audit monitor``: a task's dated decision logs watched period by period (:mod:`audit.engine.monitor`)."""
from __future__ import annotations

import argparse
import json
from dataclasses import asdict

import pandas as pd

from audit.commands.io import emit, records
from audit.commands.options import add_output, check_date, choice
from audit.enums import DEFAULT_FAMILY, Family
from audit.formatting import markdown_table, number, subtask_name
from audit.engine.choices import FOUR_FIFTHS, HORIZON, WINDOW
from audit.engine.monitor import PERIODS, MonitorSettings, Monitoring, monitor_table
from audit.store.output import csv_text
from audit.store.database import Store


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register the ``monitor`` sub-command."""
    parser = sub.add_parser("monitor", help="watch a dated decision log period by period: ratios with anytime-valid "
                                            "bands, alarms with a bounded false-alarm rate",
                            description="Per system × subtask × grouping × category and per period: counts, selection "
                                        "rate, impact ratio against the comparator, its anytime-valid band, the "
                                        "detector and its level, the alarm, and the last window's ratio against the "
                                        "first (see docs/monitoring.md).")
    parser.add_argument("--db", required=True, help="result store holding the dated decision log")
    parser.add_argument("--task", help="the task to watch (default: the store's only task)")
    parser.add_argument("--period", choices=tuple(PERIODS), default="week", help="one look per period (default week)")
    parser.add_argument("--since", default="", help="watch decisions from this date on (YYYY-MM-DD)")
    parser.add_argument("--k", type=int, help="quota of rank logs (default: the quota the design declares)")
    parser.add_argument("--threshold", type=float, default=FOUR_FIFTHS, help="impact-ratio threshold (default 0.8)")
    parser.add_argument("--alpha", type=float, default=0.05,
                        help="bound on the chance of any false alarm within the horizon (default 0.05)")
    parser.add_argument("--family", type=choice(Family), choices=tuple(Family), default=DEFAULT_FAMILY,
                        help=f"the family the bound holds for, as verdict's (default {DEFAULT_FAMILY})")
    parser.add_argument("--horizon", type=int, default=HORIZON, help=f"looks the bound covers (default {HORIZON})")
    parser.add_argument("--window", type=int, default=WINDOW,
                        help=f"periods of the recent ratio an alarm needs below the threshold (default {WINDOW})")
    add_output(parser, ("md", "csv", "json"))
    parser.set_defaults(handler=run_monitor)


def run_monitor(args: argparse.Namespace) -> int:
    """Handler of ``monitor``."""
    settings = MonitorSettings(args.period, check_date(args.since, "--since"), args.k, args.threshold, args.alpha,
                               args.family, args.horizon, args.window)
    settings.check()
    with Store(args.db, create=False) as store:
        result = monitor_table(store, args.task, settings)
    if args.format == "csv":
        emit(csv_text(result.looks), args.out)
    elif args.format == "json":
        emit(json.dumps({"task": result.task, "settings": asdict(settings), "k": result.k,
                         "quota_reason": result.quota_reason, "guarantee": result.guarantee(),
                         "periods": list(result.periods), "undated": result.undated,
                         "summary": records(result.summary), "looks": records(result.looks)}, indent=1) + "\n",
             args.out)
    else:
        emit(markdown(result), args.out)
    return 0


def markdown(result: Monitoring) -> str:
    """The Markdown page: the settings and guarantee, one row per watched pair (alarms first), then the periods of
    every pair with an alarm."""
    s, summary = result.settings, result.summary
    alarmed = summary[summary["alarm"] | (summary["first_alarm"] != "")]
    shown = pd.DataFrame({
        "System": summary["model"], "Subtask": summary["subtask"].map(subtask_name), "Grouping": summary["grouping"],
        "Group": summary["name"], "Comparator": summary["comparator"], "Decisions": summary["members"],
        "Rate": summary["rate"].map(number), "Ratio (band)": [
            f"{number(r)} ({number(lo)}–{number(hi)})" for r, lo, hi in
            zip(summary["cumulative_ratio"], summary["band_lo"], summary["band_hi"])],
        "Baseline": summary["baseline_ratio"].map(number), "Recent": summary["recent_ratio"].map(number),
        "Change": summary["change"].map(number), "Detector / level": [
            f"{d:.4g} / {level:.4g}" for d, level in zip(summary["detector"], summary["level"])],
        "Alarm": ["raised" if now else ("cleared" if first else "none")
                  for now, first in zip(summary["alarm"], summary["first_alarm"])],
        "First raised": summary["first_alarm"], "To clear": summary["to_clear"]})
    shown = shown.iloc[list(alarmed.index) + [i for i in summary.index if i not in set(alarmed.index)]]
    since = f" from {s.since}" if s.since else ""
    out = [f"# Monitoring of task {result.task}\n",
           f"{len(result.periods)} looks ({s.period}s starting {result.periods[0]} … {result.periods[-1]}){since}; "
           f"selected: {result.quota_reason} (k = {result.k} where the log ranks); threshold {s.threshold:g}; family "
           f"{s.family}. {result.guarantee()}\n",
           f"**Alarms now:** {int(summary['alarm'].sum())} of {len(summary)} watched pairs"
           + (f"; {result.undated} undated decisions left out." if result.undated else ".") + "\n",
           "## Per watched pair (the last look)\n", markdown_table(shown.reset_index(drop=True))]
    for row in alarmed.itertuples(index=False):
        looks = result.looks
        part = looks[(looks["model"] == row.model) & (looks["subtask"] == row.subtask)
                     & (looks["grouping"] == row.grouping) & (looks["category"] == row.category)]
        out += [f"## {row.model} · {subtask_name(row.subtask)} · {row.name} against {row.comparator}\n",
                f"First raised in the period of {row.first_alarm} (detector {row.evidence_then:.4g} at level "
                f"{row.level:.4g}). " + (f"Clears with {row.to_clear}." if row.alarm else "Cleared since.") + "\n",
                markdown_table(pd.DataFrame({
                    "Period": part["period"], "Decisions": part["members"], "Selected": part["selected"],
                    "Rate": part["rate"].map(number), "Comparator rate": part["comparator_rate"].map(number),
                    "Ratio": part["ratio"].map(number), "Cumulative (band)": [
                        f"{number(r)} ({number(lo)}–{number(hi)})" for r, lo, hi in
                        zip(part["cumulative_ratio"], part["band_lo"], part["band_hi"])],
                    "Recent": part["recent_ratio"].map(number), "Detector": part["detector"].map(lambda d: f"{d:.4g}"),
                    "Alarm": part["alarm"].map({True: "yes", False: ""})}))]
    return "\n".join(out)
