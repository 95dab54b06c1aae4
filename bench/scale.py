"""Scale-out throughput: the single-process engine against Ray with 1 and 2 local workers, one run.

Every engine scores the same pointwise prompts (one resume job, ``--limit`` candidates per group) into its own
fresh store through ``run_scoring``, with models already loaded and warmed on another job's prompts, so the
times are scoring plus committing. Engines run twice in the order A B C C B A and the mean is printed, so a
drifting machine load hits each alike. Also printed: the per-batch overhead Ray adds (1 worker against the
single process, both with every CPU core), the bare round trip of a batch through an actor that computes
nothing; every run must equal the single-process results to 1e-6.

    HF_HUB_OFFLINE=1 python bench/scale.py [--limit 2] [--batch-size 4]
"""
from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from anywhere, no PYTHONPATH

import ray  # noqa: E402
import torch  # noqa: E402

from audit.backend import CausalLM, ModelRef, resolve  # noqa: E402
from audit.backend.spec import BackendSpec  # noqa: E402
from audit.run.distributed import Cluster, RayExecutor  # noqa: E402
from audit.run.scoring import BatchJob, run_scoring  # noqa: E402
from audit.store.database import Store  # noqa: E402
from audit.tasks import get_task  # noqa: E402
from audit.tasks.base import Task  # noqa: E402


@ray.remote
class Echo:
    """Returns rows shaped like a pointwise batch's without a model: transport and scheduling only."""

    def rows(self, job: BatchJob, batch: list) -> list[tuple]:
        return [(key, (0.5, 0.5), 0.1) for key, _ in batch]


def stored(db: Path) -> dict[str, list[float]]:
    with sqlite3.connect(db) as conn:
        return {k: [*json.loads(p), m] for k, p, m in conn.execute("SELECT prompt, probs, mass FROM label_results")}


def timed_run(db: Path, task: Task, ref: ModelRef, args: argparse.Namespace, **engine: Any) -> float:
    started = time.perf_counter()
    with Store(db) as store:
        summary = run_scoring(store, task, ref, engine.get("load_backend"), limit=args.limit,
                              batch_size=args.batch_size, executor=engine.get("executor"))
    assert summary.scored == summary.prompts, summary.line()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--subtask", default="software_engineer")
    parser.add_argument("--warmup-subtask", default="retail")
    parser.add_argument("--limit", type=int, default=2, help="candidates per group (8 groups)")
    parser.add_argument("--batch-size", type=int, default=4)
    args = parser.parse_args()

    task, warm = get_task("resume", args.subtask), get_task("resume", args.warmup_subtask)
    ref = resolve(args.model)
    warm_batch = [(p.key(), p) for p in (warm.pointwise_prompt(c) for c in warm.candidates(1)[:args.batch_size])]
    job = BatchJob("labels", task.label_set.labels)
    folder = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    prompts = len(task.candidates(args.limit))
    batches = -(-prompts // args.batch_size)
    cores = os.cpu_count() or 1

    lm = CausalLM.load(ref, batch_size=args.batch_size)
    job.rows(lm, warm_batch)
    # Both pools stay up for the whole run: logical CPUs for 1 + 2 workers, threads still split over `cores`.
    ray.init(num_cpus=2 * cores, include_dashboard=False, object_store_memory=100 * 1024 * 1024,
             log_to_driver=False)
    echo = Echo.remote()
    ray.get(echo.rows.remote(job, warm_batch))
    started = time.perf_counter()
    ray.get([echo.rows.remote(job, warm_batch) for _ in range(20)])
    round_trip_ms = (time.perf_counter() - started) / 20 * 1000
    ray.kill(echo)

    spec = BackendSpec(ref, batch_size=args.batch_size)
    pools = {workers: RayExecutor(spec, Cluster(gpus=0, cpus=cores, workers=workers)) for workers in (1, 2)}
    for workers, pool in pools.items():
        list(pool.map(job, [warm_batch] * workers))  # load and warm every replica
    engines = {"single process": {"load_backend": lambda: lm}, **{f"ray, {w} worker(s)": {"executor": p}
                                                                   for w, p in pools.items()}}
    seconds: dict[str, list[float]] = {name: [] for name in engines}
    order = list(engines) + list(reversed(engines))  # A B C C B A: load drift hits every engine alike
    for run, name in enumerate(order):
        seconds[name].append(timed_run(folder / f"{run}.db", task, ref, args, **engines[name]))
        rows = stored(folder / f"{run}.db")
        if run == 0:  # the first run is the single process
            reference = rows
        diff = max(abs(a - b) for key in reference for a, b in zip(reference[key], rows[key]))
        assert diff <= 1e-6, f"{name} differs from the single process by {diff}"
    for pool in pools.values():
        pool.shutdown()

    print(f"model {ref.label} ({ref.device}), {prompts} prompts in {batches} batches of {args.batch_size}, "
          f"{cores} CPU cores, torch threads {torch.get_num_threads()}, load average {os.getloadavg()[0]:.1f}")
    local = sum(seconds["single process"]) / 2
    for name, times in seconds.items():
        mean = sum(times) / 2
        print(f"{name:18} {mean:7.2f} s  {prompts / mean:6.2f} prompts/s  {local / mean:5.2f}x single process  "
              f"(runs {times[0]:.1f} s, {times[1]:.1f} s; max |diff| to single process <= 1e-6)")
    overhead_ms = (sum(seconds["ray, 1 worker(s)"]) / 2 - local) / batches * 1000
    print(f"per-batch overhead of Ray (1 worker vs single process, same threads): {overhead_ms:+.0f} ms; "
          f"bare actor round trip of one batch: {round_trip_ms:.1f} ms")


if __name__ == "__main__":
    main()
