"""Benchmark of ``verdict`` on a big decision log, side by side with another checkout of the tool.

A generated rank log of J jobs (default 1,000) × P pools (default 100) of 8 applicants (sex F/M × race A/B/H/W drawn
at random; each pool ranked at random: no bias), imported once with ``python -m audit import --format decisions``;
then ``python -m audit verdict --db STORE --task log --format csv`` runs in a child process, timed with its peak RSS,
in this tree and, with ``--baseline DIR``, in the checkout at DIR on a copy of the same store (run alternately,
``--rounds`` times each; medians printed).

Usage: python bench/verdict_scale.py [--jobs 1000] [--pools 100] [--rounds 3] [--baseline ../baseline]
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
SIZE = 8


def write_log(folder: Path, jobs: int, pools: int, seed: int = 0) -> tuple[Path, Path]:
    """The log (CSV) and its spec: one row per applicant, ranked at random within its pool."""
    rng = np.random.default_rng(seed)
    count = jobs * pools * SIZE
    pool = np.arange(count) // SIZE
    rank = np.argsort(rng.random((jobs * pools, SIZE)), axis=1).ravel() + 1
    log = pd.DataFrame({"id": np.arange(count), "job": pool // pools, "req": pool,
                        "sex": rng.choice(["F", "M"], count), "race": rng.choice(list("ABHW"), count), "rank": rank})
    data, spec = folder / "log.csv", folder / "log.yaml"
    log.to_csv(data, index=False)
    spec.write_text("applicant: id\ndemographics: [sex, race]\npool: req\nsubtask: job\n")
    return data, spec


def timed(command: list[str], cwd: Path) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of ``command`` run in ``cwd`` (GNU time reads the child's own peak)."""
    start = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-f", "%M", *command], cwd=cwd, capture_output=True, text=True, check=True)
    return time.perf_counter() - start, int(done.stderr.strip().splitlines()[-1]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--pools", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", type=Path, help="another checkout of the tool to run side by side")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        data, spec = write_log(folder, args.jobs, args.pools)
        store = folder / "store.db"
        subprocess.run([sys.executable, "-m", "audit", "import", "--format", "decisions", "--data", str(data),
                        "--spec", str(spec), "--task", "log", "--db", str(store)], cwd=ROOT, check=True,
                       capture_output=True)
        trees = {"this tree": (ROOT, store)}
        if args.baseline:
            copy = folder / "baseline.db"
            shutil.copy(store, copy)
            trees["baseline"] = (args.baseline.resolve(), copy)
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
        for _ in range(args.rounds):
            for name, (tree, db) in trees.items():
                runs[name].append(timed([sys.executable, "-m", "audit", "verdict", "--db", str(db), "--task", "log",
                                         "--format", "csv", "--out", str(folder / f"{name}.csv")], tree))
    print(f"verdict on {args.jobs:,} jobs × {args.pools} pools of {SIZE} ({args.jobs * args.pools * SIZE:,} "
          f"applicants), {args.rounds} rounds, medians:")
    medians = {name: (statistics.median(t for t, _ in found), statistics.median(m for _, m in found))
               for name, found in runs.items()}
    for name, (seconds, peak) in medians.items():
        print(f"  {name}: {seconds:.1f} s, peak RSS {peak:.0f} MB")
    if "baseline" in medians:
        print(f"  ratio (baseline / this tree): {medians['baseline'][0] / medians['this tree'][0]:.2f}× in time, "
              f"{medians['baseline'][1] / medians['this tree'][1]:.2f}× in memory (targets: under 10 s and 500 MB)")


if __name__ == "__main__":
    main()
