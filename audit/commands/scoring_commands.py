"""``score`` (run a model over a task into the store), ``scores`` / ``pairs`` (export), ``models`` (list)."""
from __future__ import annotations

import argparse
import io
import sys
from dataclasses import replace

import pandas as pd

from audit.backend import DEFAULT_MODEL, QUANTS, REGISTRY, installed_models
from audit.backend.spec import BACKENDS
from audit.commands.api_options import add_api_arguments
from audit.commands.listwise_commands import add_listwise_arguments, run_listwise_score
from audit.commands.run_options import backend_and_executor, check_scale_options, checked_label
from audit.commands.options import choice
from audit.enums import Mode, Reading
from audit.run.scoring import MODES, check_options, run_scoring
from audit.commands.io import cli_options, write_stdout
from audit.errors import AuditError
from audit.store.output import check_target, csv_text, write_atomic
from audit.store.tables import answer_table, design_table, pair_table, score_table
from audit.store.database import Store
from audit.store.runs import data_reads, recording
from audit.tasks import TASKS, get_task, list_subtasks, study
from audit.tasks.recorded import shown_modes

DEFAULT_DB = "results.db"
EXECUTORS = ("local", "ray")


def add_commands(sub: argparse._SubParsersAction) -> None:
    score = sub.add_parser("score", help="score a task's candidates with a model into the result store")
    score.add_argument("--task", default="resume", help=f"one of {sorted(TASKS)}")
    score.add_argument("--subtask", required=True, help="e.g. software_engineer, or 'all'")
    score.add_argument("--data", help="task data: folder for icnale and paper-resume, candidates file for custom")
    score.add_argument("--spec", help="task spec (YAML or JSON) for custom")
    score.add_argument("--label", help="name the model goes by in the store and every table (default: from --model; "
                                       "needed when two models would get the same name)")
    score.add_argument("--model", default=DEFAULT_MODEL,
                       help="registry name, .gguf file, model folder, hub id, or openai:NAME with --base-url")
    runs = (*MODES, Mode.LISTWISE)
    score.add_argument("--mode", type=choice(Mode, runs), choices=runs, default=Mode.POINTWISE,
                       help="listwise: the 2024 study's ranking protocol (--task study-gpt-hiring)")
    score.add_argument("--pairwise-mode", type=choice(Reading), choices=tuple(Reading), default=Reading.GENERATE)
    score.add_argument("--limit", type=int, help="candidates per group (default: all)")
    score.add_argument("--rounds", type=int, default=10, help="pairwise pools (default 10)")
    score.add_argument("--db", default=DEFAULT_DB, help=f"result store (default {DEFAULT_DB})")
    score.add_argument("--truncate", action="store_true",
                       help="cut candidate texts too long for the model's context to fit (default: refuse them)")
    score.add_argument("--batch-size", type=int, default=8)
    score.add_argument("--quant", choices=QUANTS, default="auto",
                       help="auto = 4-bit NF4 on CUDA, full precision on CPU; bf16 = bfloat16 weights and compute "
                            "(faster on CPUs with native bf16, but it moves scores: see bench/README.md)")
    score.add_argument("--revision", help="hub revision (branch, tag or commit)")
    score.add_argument("--trust-remote-code", action="store_true", help="run model code from the hub (opt-in)")
    score.add_argument("--backend", choices=BACKENDS[:2], default="transformers",
                       help="inference backend: transformers (default) or vllm (optional extra); "
                            "--model openai:NAME uses an API")
    add_api_arguments(score)
    score.add_argument("--executor", dest="executor", choices=EXECUTORS, default="local",
                       help="local: this process; ray: an actor pool on a Ray cluster, one model replica per worker")
    score.add_argument("--address", help="Ray cluster to join: auto, HOST:PORT or ray://HOST:PORT "
                                         "(default: start a local one); only with --executor ray")
    score.add_argument("--workers", type=int, help="Ray workers (default: one per GPU, else one per CPU)")
    add_listwise_arguments(score)
    score.set_defaults(handler=run_score)

    exports = {"scores": (score_table, "one row per candidate and model"),
               "pairs": (pair_table, "one row per pairwise pair, both orders combined"),
               "answers": (answer_table, "one row per pairwise prompt: answer, choice, flags"),
               "designs": (design_table, "one row per task and subtask: the audit design stored with the results")}
    for name, (table, helptext) in exports.items():
        export = sub.add_parser(name, help=f"export {helptext}")
        export.add_argument("--db", default=DEFAULT_DB)
        export.add_argument("--task", help="only this task's rows")
        export.add_argument("--format", choices=("csv", "parquet", "json"), default="csv")
        export.add_argument("--out", help="file to write (default: standard output; parquet needs --out)")
        export.set_defaults(handler=run_export, table=table)

    models = sub.add_parser("models", help="list the named models and whether their packages are installed")
    models.set_defaults(handler=run_models)


def run_score(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    if args.mode == Mode.LISTWISE or args.task == study.TASK:
        return run_listwise_score(args)
    check_options(mode=args.mode, pairwise_method=args.pairwise_mode, limit=args.limit, rounds=args.rounds,
                  batch_size=args.batch_size)
    check_scale_options(args)
    inputs = {"data": args.data, "spec": args.spec}
    subtasks = list_subtasks(args.task, **inputs) if args.subtask == "all" else [args.subtask]
    tasks = [get_task(args.task, subtask, **inputs) for subtask in subtasks]
    spec, executor = backend_and_executor(args)
    if args.label is not None:
        spec = replace(spec, ref=replace(spec.ref, label=checked_label(args.label)))
    with Store(args.db) as store, recording(store, "score", cli_options(args)) as run:
        try:
            for task in tasks:
                with tqdm(desc=f"{spec.ref.label} {task.subtask}", unit="prompt", file=sys.stderr) as bar:
                    def progress(done: int, total: int) -> None:
                        bar.total = total
                        bar.n = done
                        bar.refresh()

                    summary = run_scoring(store, task, spec.ref, spec.load, mode=args.mode,
                                          pairwise_method=args.pairwise_mode, limit=args.limit, rounds=args.rounds,
                                          batch_size=args.batch_size, progress=progress, executor=executor,
                                          truncate=args.truncate)
                print(summary.line())
            run.reads = data_reads(store, tasks[0].name, [task.subtask for task in tasks], [spec.ref.label])
        finally:
            if executor is not None:
                executor.shutdown()
    return 0


def run_export(args: argparse.Namespace) -> int:
    if args.format == "parquet" and not args.out:
        raise AuditError("--format parquet needs --out FILE")
    if args.out:
        check_target(args.out, args.db)  # before reading: never overwrite the store, fail early on a bad path
    with Store(args.db, create=False) as store:
        table: pd.DataFrame = args.table(store)
        if "mode" in table and "subtask" in table:
            table = shown_modes(table, store.designs())
    if args.task is not None:
        if args.task not in set(table["task"]):
            raise AuditError(f"task {args.task!r} has no rows in {args.db}; tasks: {sorted(set(table['task']))}")
        table = table[table["task"] == args.task]
    if args.format == "parquet":
        buffer = io.BytesIO()
        table.to_parquet(buffer, index=False)
        data: bytes | str = buffer.getvalue()
    elif args.format == "json":
        data = table.to_json(orient="records", indent=1) + "\n"
    else:
        data = csv_text(table)
    if args.out:
        write_atomic(args.out, data, args.db)
    else:
        write_stdout(data)
    return 0


def run_models(args: argparse.Namespace) -> int:
    installed = set(installed_models())
    for entry in REGISTRY.values():
        state = "installed" if entry.name in installed else f"not installed ({entry.install})"
        print(f"{entry.name:20} {entry.title}: {state}")
    return 0
