"""``score --task study-gpt-hiring --mode listwise``: the 2024 study's ranking protocol run on a model."""
from __future__ import annotations

import argparse
import sys

from audit.backend.api import PREFIX
from audit.cli import INTERRUPTED
from audit.commands.run_options import backend_and_executor, check_scale_options, checked_label
from audit.commands.options import choice
from audit.enums import Mode, Reading
from audit.errors import AuditError
from audit.run.listwise import MAX_RANKINGS, READINGS, ListwiseRun, check_sizes, run_listwise
from audit.commands.io import cli_options
from audit.store.database import CHOICE_RESULTS, Store
from audit.store.runs import data_reads, recording
from audit.engine.study_plan import plan_line
from audit.tasks import study


def add_listwise_arguments(score: argparse.ArgumentParser) -> None:
    """The listwise options of ``score``."""
    group = score.add_argument_group("listwise (--task study-gpt-hiring --mode listwise)")
    group.add_argument("--rankings", type=int, default=100,
                       help=f"rankings per job (default 100, at most {MAX_RANKINGS:,})")
    group.add_argument("--seed", type=int, default=0, help="seed of the names, shown order and samples (default 0)")
    group.add_argument("--reading", type=choice(Reading), choices=READINGS, default=Reading.GENERATE,
                       help="generate: the study's sampled free-text ranking, parsed as the import parses it; "
                            "likelihood: each name's probability of being ranked first (local models)")
    group.add_argument("--max-tokens", type=int, default=study.SAMPLING["max_tokens"],
                       help=f"generate: answer length (default {study.SAMPLING['max_tokens']}, the study's)")


def run_listwise_score(args: argparse.Namespace) -> int:
    """Check the options, then score every asked job's rankings, one job after another."""
    from tqdm import tqdm

    if args.task != study.TASK or args.mode != Mode.LISTWISE:
        raise AuditError(f"--mode listwise goes with --task {study.TASK} and that task is scored listwise; give both")
    if args.data or args.spec:
        raise AuditError(f"task {study.TASK} ships its materials; leave out --data and --spec")
    if args.reading == Reading.LIKELIHOOD and (args.model.startswith(PREFIX) or args.backend == "vllm"):
        raise AuditError("--reading likelihood needs a local transformers or GGUF model; use --reading generate")
    check_scale_options(args)
    check_sizes(args.rankings, args.batch_size)
    jobs = study.subtasks() if args.subtask == "all" else [study.check_job(args.subtask)]
    print(plan_line(args.db, jobs, args.rankings), file=sys.stderr, flush=True)
    spec, executor = backend_and_executor(args)
    run = ListwiseRun(spec.ref, args.reading, args.seed, args.max_tokens,
                      checked_label(args.label) if args.label is not None else None)
    empty = []
    try:  # an interrupted run is recorded in the trail as stopped (when it stored rankings), then said in one line
        with Store(args.db) as store, recording(store, "score", cli_options(args)) as recorded:
            for job in jobs:
                with tqdm(desc=f"{run.name} {job}", unit="ranking", file=sys.stderr) as bar:
                    def progress(done: int, total: int) -> None:
                        bar.total, bar.n = total, done
                        bar.refresh()

                    outcome = run_listwise(store, run, job, args.rankings, spec.load, batch_size=args.batch_size,
                                           progress=progress, executor=executor)
                print("\n".join(outcome.lines()), flush=True)
                empty += [job] if outcome.nothing_readable else []
            recorded.reads = data_reads(store, study.TASK, jobs, [run.name])
    except KeyboardInterrupt:
        with Store(args.db) as store:
            stored = store.count_results(CHOICE_RESULTS, (run.fingerprint, run.method))
        print(f"interrupted; {stored} rankings stored, rerun to resume", file=sys.stderr)
        return INTERRUPTED
    finally:
        if executor is not None:
            executor.shutdown()
    if empty:
        raise AuditError(f"every reply of {run.name} for {', '.join(empty)} was unreadable (no name mentioned): "
                         "nothing to audit; the replies are stored — read them, check the model and --max-tokens")
    return 0
