"""``python -m audit runs``: the store's audit trail (every recorded run, oldest first)."""
from __future__ import annotations

import argparse
import json

from audit.commands.io import emit, records
from audit.formatting import md_text
from audit.store.output import csv_text
from audit.present.trail import readable
from audit.store.database import Store
from audit.store.runs import trail


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register the ``runs`` sub-command."""
    parser = sub.add_parser("runs", help="the audit trail: every command and page action that wrote results or a "
                                         "report to the store (what, when, tool version, options, data read, output)")
    parser.add_argument("--db", required=True, help="result store")
    parser.add_argument("--format", choices=("md", "csv", "json"), default="md",
                        help="md: one readable line per run (default); csv / json: options, reads and wrote in full")
    parser.add_argument("--out", help="write here instead of stdout")
    parser.set_defaults(handler=run_runs)


def run_runs(args: argparse.Namespace) -> int:
    """Handler of ``runs``."""
    with Store(args.db, create=False) as store:
        table = trail(store)
    if args.format == "json":
        rows = [{**row, **{name: json.loads(row[name]) for name in ("options", "reads", "wrote")}}
                for row in records(table)]
        text = json.dumps(rows, indent=1, ensure_ascii=False) + "\n"
    elif args.format == "csv":
        text = csv_text(table)
    else:
        shown = readable(table)
        lines = [list(shown.columns), ["---"] * len(shown.columns), *shown.astype(str).values.tolist()]
        text = "".join("| " + " | ".join(md_text(cell) for cell in line) + " |\n" for line in lines)
        if table.empty:
            text += f"\nNo run is recorded in {md_text(args.db)}.\n"
    emit(text, args.out)
    return 0
