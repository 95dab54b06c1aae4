"""``python -m audit import``: bring a deployed system's recorded decisions into the result store."""
from __future__ import annotations

import argparse
from pathlib import Path

from audit.errors import AuditError
from audit.recorded.decision_logs import DecisionLog, read_log
from audit.recorded.log_spec import load_log_spec
from audit.recorded.storing import append_log, import_log, import_runs
from audit.commands.io import cli_options
from audit.store.database import Store
from audit.store.runs import data_reads, recording
from audit.tasks.recorded import RANKING_RUN_REFERENCE

DEFAULT_TASK = "recorded"


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register the ``import`` sub-command."""
    parser = sub.add_parser("import", help="import a deployed system's recorded decisions into the result store",
                            description="decisions: a decision log (CSV / Parquet / JSONL, one row per applicant) "
                                        "read with a spec naming its applicant, demographic, pool, subtask, date "
                                        "and outcome columns (see docs/decision-logs.md). ranking-runs: "
                                        "<model>/<job>/<date>/*.json "
                                        "chat-completion responses with context.default_order and "
                                        "context.demo_order (the 2024 GPT hiring study's layout); each response is "
                                        "one pool, its job the subtask, its model the model.")
    parser.add_argument("--format", required=True, choices=("decisions", "ranking-runs"))
    parser.add_argument("--data", required=True, help="decision log file, or folder of ranking runs")
    parser.add_argument("--spec", help="decisions: the log's spec (YAML or JSON)")
    parser.add_argument("--label", help="decisions: the system's name (default: the spec's label, else the file's "
                                        "name)")
    parser.add_argument("--task", default=DEFAULT_TASK, help=f"task name to store under (default {DEFAULT_TASK})")
    parser.add_argument("--reference", help=f"ranking-runs: reference group, one of the runs' group codes (default "
                                            f"{RANKING_RUN_REFERENCE} where a job has it, else its first code)")
    parser.add_argument("--db", default="results.db", help="result store (default results.db)")
    parser.add_argument("--append", action="store_true",
                        help="decisions: add the log's decisions to the stored log of the same label and spec "
                             "(applicant ids never reused; new pools after the stored ones)")
    parser.set_defaults(handler=run_import)


def run_import(args: argparse.Namespace) -> int:
    """Read everything first (bad input writes nothing), then store it in one transaction and summarise."""
    if not args.task.strip():
        raise AuditError("--task: give a task name")
    if args.format == "decisions":
        return _import_decisions(args)
    if args.spec or args.label or args.append:
        raise AuditError("--spec, --label and --append go with --format decisions")
    from audit.recorded.ranking_runs import read_runs  # only this format's reader

    runs = read_runs(args.data)
    with Store(args.db) as store, recording(store, "import", cli_options(args)) as run:
        fingerprints = import_runs(store, runs, args.task, args.reference, source=Path(args.data).name)
        run.reads = {"source_sha256": runs.digest, **data_reads(store, args.task)}
    print(f"imported {runs.files} ranking runs ({len(runs.rows)} ranked candidates) of "
          f"{', '.join(fingerprints)} into task {args.task!r} of {args.db}; dates {runs.first_date} to "
          f"{runs.last_date}; source sha256 {runs.digest}")
    print(f"partial replies (some name never mentioned; ranked last in the order shown, as the study reads them): "
          f"{len(runs.partial)} of {runs.files}")
    for path in runs.partial:
        print(f"  partial: {path}")
    return 0


def _import_decisions(args: argparse.Namespace) -> int:
    if not args.spec:
        raise AuditError("--format decisions needs --spec FILE (the log's columns; see docs/decision-logs.md)")
    spec = load_log_spec(Path(args.spec))
    log = read_log(args.data, spec)
    label = (args.label or spec.label or Path(args.data).stem).strip()
    if not label:
        raise AuditError("--label: give the system a name")
    if args.append:
        return _append(args, log, label)
    with Store(args.db) as store, recording(store, "import", cli_options(args)) as run:
        fingerprint, texts = import_log(store, log, args.task, label)
        run.reads = {"source_sha256": log.digest, **data_reads(store, args.task, known=texts)}
    pools = int((log.decisions["position"] == 0).sum())  # each pool's first decision (no grouping of 1M rows)
    print(f"imported {log.rows} decisions ({log.outcome}) of {label!r} ({fingerprint}) into task {args.task!r} of "
          f"{args.db}: {len(log.references)} subtask(s), {pools} pool(s); dates "
          f"{log.first_date or '(none)'} to {log.last_date or '(none)'}; source sha256 {log.digest}")
    print("unknown category (missing or 'unknown'; counted, left out of that grouping's rates): "
          + ", ".join(f"{column} {count}" for column, count in log.unknown.items()))
    print(f"comparison: {log.comparison} ("
          + ", ".join(f"{subtask}: {ref}" for subtask, ref in log.references.items()) + ")")
    return 0


def _append(args: argparse.Namespace, log: DecisionLog, label: str) -> int:
    if not Path(args.db).is_file():
        raise AuditError(f"--append: result store {args.db} does not exist; import the log's first part without "
                         "--append")
    with Store(args.db) as store, recording(store, "import", cli_options(args)) as run:
        details = append_log(store, log, args.task, label)
        run.reads = {"source_sha256": log.digest, "chain_sha256": details["chain_sha256"], "task": args.task}
    print(f"appended {log.rows} decisions ({log.outcome}) to {label!r} in task {args.task!r} of {args.db}: dates "
          f"{log.first_date or '(none)'} to {log.last_date or '(none)'}; source sha256 {log.digest}")
    print(f"the log now: {details['rows']} decisions in {details['chunks']} chunks, dates "
          f"{details['first_date'] or '(none)'} to {details['last_date'] or '(none)'}; chain sha256 "
          f"{details['chain_sha256']}")
    return 0
