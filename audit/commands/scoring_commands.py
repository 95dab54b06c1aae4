"""``score`` (run a model over a task into the store), ``scores`` / ``pairs`` (export), ``models`` (list)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from audit.backend import DEFAULT_MODEL, QUANTS, REGISTRY, CausalLM, installed_models, resolve
from audit.engine import MODES, PAIRWISE_METHODS, check_options, run_scoring
from audit.results import answer_table, pair_table, score_table
from audit.store import Store
from audit.tasks import TASKS, get_task, list_subtasks

DEFAULT_DB = "results.db"


def add_commands(sub: argparse._SubParsersAction) -> None:
    score = sub.add_parser("score", help="score a task's candidates with a model into the result store")
    score.add_argument("--task", default="resume", help=f"one of {sorted(TASKS)}")
    score.add_argument("--subtask", required=True, help="e.g. software_engineer, or 'all'")
    score.add_argument("--data", help="task data: folder for icnale and paper-resume, candidates file for custom")
    score.add_argument("--spec", help="task spec (YAML or JSON) for custom")
    score.add_argument("--model", default=DEFAULT_MODEL, help="registry name, .gguf file, model folder or hub id")
    score.add_argument("--mode", choices=MODES, default="pointwise")
    score.add_argument("--pairwise-mode", choices=PAIRWISE_METHODS, default="generate")
    score.add_argument("--limit", type=int, help="candidates per group (default: all)")
    score.add_argument("--rounds", type=int, default=10, help="pairwise pools (default 10)")
    score.add_argument("--db", default=DEFAULT_DB, help=f"result store (default {DEFAULT_DB})")
    score.add_argument("--batch-size", type=int, default=8)
    score.add_argument("--quant", choices=QUANTS, default="auto",
                       help="auto = 4-bit NF4 on CUDA, full precision on CPU")
    score.add_argument("--revision", help="hub revision (branch, tag or commit)")
    score.add_argument("--trust-remote-code", action="store_true", help="run model code from the hub (opt-in)")
    score.set_defaults(handler=run_score)

    exports = {"scores": (score_table, "one row per candidate and model"),
               "pairs": (pair_table, "one row per pairwise pair, both orders combined"),
               "answers": (answer_table, "one row per pairwise prompt: answer, choice, flags")}
    for name, (table, helptext) in exports.items():
        export = sub.add_parser(name, help=f"export {helptext}")
        export.add_argument("--db", default=DEFAULT_DB)
        export.add_argument("--format", choices=("csv", "parquet", "json"), default="csv")
        export.add_argument("--out", help="file to write (default: standard output; parquet needs --out)")
        export.set_defaults(handler=run_export, table=table)

    models = sub.add_parser("models", help="list the named models and whether their packages are installed")
    models.set_defaults(handler=run_models)


def run_score(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    check_options(mode=args.mode, pairwise_method=args.pairwise_mode, limit=args.limit, rounds=args.rounds,
                  batch_size=args.batch_size)
    inputs = {"data": args.data, "spec": args.spec}
    subtasks = list_subtasks(args.task, **inputs) if args.subtask == "all" else [args.subtask]
    tasks = [get_task(args.task, subtask, **inputs) for subtask in subtasks]
    ref = resolve(args.model, quant=args.quant, revision=args.revision)
    backend: list[CausalLM] = []

    def load_backend() -> CausalLM:
        if not backend:
            backend.append(CausalLM.load(ref, trust_remote_code=args.trust_remote_code, batch_size=args.batch_size))
        return backend[0]

    with Store(args.db) as store:
        for task in tasks:
            with tqdm(desc=f"{ref.label} {task.subtask}", unit="prompt", file=sys.stderr) as bar:
                def progress(done: int, total: int) -> None:
                    bar.total = total
                    bar.n = done
                    bar.refresh()

                summary = run_scoring(store, task, ref, load_backend, mode=args.mode,
                                      pairwise_method=args.pairwise_mode, limit=args.limit, rounds=args.rounds,
                                      batch_size=args.batch_size, progress=progress)
            print(summary.line())
    return 0


def run_export(args: argparse.Namespace) -> int:
    with Store(args.db, create=False) as store:
        table: pd.DataFrame = args.table(store)
    if args.format == "parquet":
        if not args.out:
            print("error: --format parquet needs --out FILE", file=sys.stderr)
            return 2
        table.to_parquet(args.out, index=False)
    elif args.format == "json":
        text = table.to_json(orient="records", indent=1)
        Path(args.out).write_text(text) if args.out else print(text)
    else:
        table.to_csv(args.out or sys.stdout, index=False)
    return 0


def run_models(args: argparse.Namespace) -> int:
    installed = set(installed_models())
    for entry in REGISTRY.values():
        state = "installed" if entry.name in installed else f"not installed ({entry.install})"
        print(f"{entry.name:20} {entry.title}: {state}")
    return 0
