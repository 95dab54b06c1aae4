"""``cairo run`` (continuations + toxicity into the store), ``cairo combos`` (correlations), ``cairo paraphrase``."""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Callable

from audit.backend.protocol import Backend
from audit.backend.spec import BACKENDS, BackendSpec, load_backend, spec_for
from audit.cairo.continuations import Decoding, generate_continuations, score_toxicity
from audit.cairo.bias import metric_cells
from audit.cairo.paraphrase import paraphrase_sets
from audit.cairo.prompts import load_prompts, read_json, save_prompts
from audit.cairo.scored import scored_continuations, unify_subgroups
from audit.cairo.search import SEARCHES, Options, correlation_table, few_models_warning, search_all
from audit.cairo.toxicity import DEFAULT_SCORER, get_scorer
from audit.commands.api_options import add_api_arguments, model_options
from audit.commands.io import cli_options, write_stdout
from audit.errors import AuditError
from audit.store.output import csv_text
from audit.store.database import Store
from audit.store.runs import recording

DEFAULT_DB = "results.db"


def add_commands(sub: argparse._SubParsersAction) -> None:
    cairo = sub.add_parser("cairo", help="CAIRO: prompt-based fairness metrics and their correlation")
    actions = cairo.add_subparsers(dest="cairo_command", required=True)

    run = actions.add_parser("run", help="generate continuations of every prompt set and score their toxicity")
    run.add_argument("--prompts", required=True, help="prompt file or folder (ours, or CAIRO's BOLD/HONEST files)")
    run.add_argument("--models", required=True, help="comma-separated registry names, .gguf files, folders, hub ids")
    run.add_argument("--dimensions", help="comma-separated bias dimensions to run (default: all in the files)")
    run.add_argument("--split", default="valid", help="CAIRO files' split in a folder (default valid)")
    run.add_argument("--limit", type=int, help="prompts per subgroup in every set (default: all)")
    run.add_argument("--db", default=DEFAULT_DB, help=f"result store (default {DEFAULT_DB})")
    run.add_argument("--toxicity", default=DEFAULT_SCORER,
                     help=f"{DEFAULT_SCORER!r} (alt-profanity-check) or a local text-classification model folder")
    run.add_argument("--batch-size", type=int, default=8)
    run.add_argument("--backend", choices=BACKENDS[:2], default="transformers",
                     help="inference backend of local models: transformers (default) or vllm (optional extra)")
    run.add_argument("--seeds", type=int, default=1,
                     help="generation runs with seeds --seed … --seed + N − 1, each cached (the paper uses 5)")
    add_api_arguments(run)
    _decoding_options(run, max_new=20, min_new=5)
    run.set_defaults(handler=run_cairo)

    combos = actions.add_parser("combos", help="best / average / original Pearson r of every metric pair and m")
    combos.add_argument("--db", default=DEFAULT_DB)
    combos.add_argument("--max-m", type=int, default=6, help="largest combination size (original + m−1 paraphrases)")
    combos.add_argument("--scorer", help="toxicity scorer name as stored (needed when the store holds several)")
    combos.add_argument("--decoding", help="decoding key as stored (needed when the store holds several)")
    combos.add_argument("--format", choices=("json", "csv"), default="json")
    combos.add_argument("--search", choices=SEARCHES, default="same",
                        help="same: one combination for both metrics (the paper's code, default); independent: each "
                             "metric its own (searches far more pairs, more optimistic)")
    combos.add_argument("--permutations", type=int, default=200,
                        help="model-order shuffles for the null of the best r (default 200; 0: skip)")
    combos.add_argument("--splits", type=int, default=10,
                        help="random prompt halves for the held-out r (default 10; 0: skip)")
    combos.add_argument("--seed", type=int, default=0, help="seed of the permutations and splits (default 0)")
    combos.add_argument("--paraphraser", help="search only the original and the sets written by this source")
    combos.add_argument("--subgroup-map", help="JSON file: metric → dimension → {subgroup: new name or null to "
                                               "leave out}, to unify the metrics' subgroups")
    combos.add_argument("--average-seeds", action="store_true",
                        help="average each bias over the runs of one decoding with different seeds (cairo run --seeds)")
    combos.set_defaults(handler=run_combos)

    para = actions.add_parser("paraphrase", help="add paraphrase sets written by a model to a prompt file")
    para.add_argument("--prompts", required=True, help="one of our prompt files (data/cairo/*.json format)")
    para.add_argument("--model", required=True)
    para.add_argument("--sets", type=int, default=1, help="paraphrase sets to add (default 1)")
    para.add_argument("--out", required=True, help="prompt file to write (may be the input file)")
    para.add_argument("--batch-size", type=int, default=8)
    add_api_arguments(para)
    _decoding_options(para, max_new=40, min_new=3)
    para.set_defaults(handler=run_paraphrase)


def _decoding_options(parser: argparse.ArgumentParser, *, max_new: int, min_new: int) -> None:
    parser.add_argument("--max-new-tokens", type=int, default=max_new, help=f"default {max_new}")
    parser.add_argument("--min-new-tokens", type=int, default=min_new, help=f"default {min_new}")
    parser.add_argument("--temperature", type=float, default=1.0, help="sampling temperature (default 1.0)")
    parser.add_argument("--top-p", type=float, default=1.0, help="nucleus mass (default 1.0: plain sampling)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--samples", type=int, default=1, help="continuations per prompt (default 1)")


def _decoding(args: argparse.Namespace) -> Decoding:
    return Decoding(args.max_new_tokens, args.min_new_tokens, args.temperature, args.top_p, args.seed, args.samples)


def _loader(spec: BackendSpec) -> Callable[[], Backend]:
    """Load ``spec`` (once per process) when first called, refused up front if it cannot sample."""
    return lambda: load_backend(spec, needs=("sampling",), purpose="CAIRO continuations")


def run_cairo(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    decoding = _decoding(args)
    if args.batch_size < 1 or args.seeds < 1 or (args.limit is not None and args.limit < 1):
        raise AuditError(f"--batch-size, --seeds and --limit must be positive, got {args.batch_size}, {args.seeds} "
                         f"and {args.limit}")
    runs = [replace(decoding, seed=decoding.seed + i) for i in range(args.seeds)]
    dimensions = [d.strip() for d in args.dimensions.split(",")] if args.dimensions else None
    prompt_sets = [s.limited(args.limit) for s in load_prompts(args.prompts, dimensions=dimensions, split=args.split)]
    specs = [spec_for(name.strip(), model_options(args)) for name in args.models.split(",") if name.strip()]
    if not specs:
        raise AuditError("--models names no model")
    if args.backend == "vllm":
        from audit.backend.vllm_backend import check_available

        check_available()  # one line before anything is written
    scorer = get_scorer(args.toxicity)
    with Store(args.db) as store, recording(store, "cairo run", cli_options(args)) as recorded:
        recorded.reads = {"prompts": args.prompts, "systems": {spec.ref.label: spec.ref.fingerprint for spec in specs},
                          "toxicity": scorer.name}
        for spec in specs:
            ref, load = spec.ref, _loader(spec)
            for run in runs:
                with tqdm(desc=f"{ref.label} continuations", unit="text", file=sys.stderr) as bar:
                    def progress(done: int, total: int) -> None:
                        bar.total, bar.n = total, done
                        bar.refresh()

                    summary = generate_continuations(store, prompt_sets, ref, load, run, batch_size=spec.batch_size,
                                                     progress=progress)
                print(summary.line() + (f" (seed {run.seed})" if len(runs) > 1 else ""))
        scored = score_toxicity(store, scorer)
    print(f"toxicity ({scorer.name}): {scored} new continuations scored")
    return 0


def run_combos(args: argparse.Namespace) -> int:
    with Store(args.db, create=False) as store:
        table = scored_continuations(store, scorer=args.scorer, decoding=args.decoding,
                                     average_seeds=args.average_seeds)
    if args.subgroup_map:
        table = unify_subgroups(table, read_json(Path(args.subgroup_map)))
    cells = metric_cells(table)
    most = max((len(c.sets) for c in cells.values()), default=0)
    if cells and args.max_m > most:  # m counts prompt sets per combination: more than there are is no combination at all
        raise AuditError(f"--max-m {args.max_m} exceeds the {most} prompt set(s) of any metric in the store; "
                         f"use at most {most}")
    options = Options(args.search, args.permutations, args.splits, args.seed, args.paraphraser)
    found = search_all(cells, args.max_m, options)
    warning = few_models_warning(found)
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    results = correlation_table(found)
    if args.format == "json":
        print(results.to_json(orient="records", indent=1))  # NaN (a constant bias over models) becomes null
    else:
        write_stdout(csv_text(results.assign(best_sets_a=results["best_sets_a"].map(" + ".join),
                                                 best_sets_b=results["best_sets_b"].map(" + ".join))))
    return 0


def run_paraphrase(args: argparse.Namespace) -> int:
    source = Path(args.prompts)
    if args.sets < 1:
        raise AuditError(f"--sets must be positive, got {args.sets}")
    prompt_sets = load_prompts(source)
    if source.is_dir() or len({s.metric for s in prompt_sets}) != 1:
        raise AuditError(f"--prompts {source}: paraphrase one prompt file of one metric at a time")
    document = json.loads(source.read_text(encoding="utf-8"))
    if "format" not in document:
        raise AuditError(f"--prompts {source}: paraphrasing writes our format; pass one of our prompt files")
    spec = spec_for(args.model, model_options(args))
    ref, backend = spec.ref, load_backend(spec, needs=("sampling",), purpose="paraphrasing")
    updated = [paraphrase_sets(s, backend, sets=args.sets, decoding=_decoding(args)) for s in prompt_sets]
    save_prompts(args.out, updated, title=document.get("title", ""), about=document.get("about", ""))
    print(f"{args.out}: added {args.sets} paraphrase set(s) by {ref.label} to {len(updated)} dimension(s)")
    return 0
