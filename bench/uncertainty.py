"""Benchmark of the uncertainty machinery on the demo store against a naive loop, run side by side.

    python bench/uncertainty.py [--boot 1000] [--perm 1000] [--sample 20]

Engine: for every mode of the store, one ``MetricSuite`` with bootstrap CIs (``--boot`` replicates) and permutation
p-values (``--perm`` label shuffles) for every (model, subtask, group) and every k, then Holm adjustment; timed apart,
the bootstrap bands on every Pearson r (overall and per group) at every k. Baseline: the same statistics by a Python loop
that rebuilds a resampled (or relabelled) score table per replicate and calls ``allocation_gaps`` on it, timed on
``--sample`` replicates of one (model, subtask) and scaled to all replicates and all keys.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from audit.errors import AuditError  # noqa: E402
from audit.metrics import MetricSuite, allocation_gaps  # noqa: E402
from audit.metrics.bands import draws_table, validity_bands  # noqa: E402
from audit.metrics.inference import adjusted  # noqa: E402
from audit.paths import DEMO_STORE  # noqa: E402
from audit.store.tables import score_table  # noqa: E402
from audit.store.database import Store  # noqa: E402

MODES = {"pointwise": "per-group", "pairwise-likelihood": "observed", "pairwise": "observed"}


def timed(action) -> tuple[float, float, object]:
    """(wall seconds, CPU seconds, result) of one call."""
    start, cpu = time.perf_counter(), time.process_time()
    result = action()
    return time.perf_counter() - start, time.process_time() - cpu, result


def gap_tests(scores: pd.DataFrame, boot: int, perm: int) -> pd.DataFrame:
    """CIs + permutation p-values + Holm for every (model, subtask, mode, group) and every k, over every mode."""
    tables = []
    for mode, rows in scores.groupby("mode", observed=True):
        suite = MetricSuite(rows, reference="W_M", pool=MODES[mode], ci=0.95, n_boot=boot, n_perm=perm)
        tables.append(adjusted(suite.table(range(1, min(suite.pool_sizes.values()) + 1)), "holm"))
    return pd.concat(tables, ignore_index=True)


def r_bands(scores: pd.DataFrame, table: pd.DataFrame, boot: int) -> pd.DataFrame:
    """Bootstrap bands on every Pearson r (overall and per group) at every k, over every mode (as the dashboard)."""
    bands = []
    for mode, rows in scores.groupby("mode", observed=True):
        index, draws = draws_table(rows, reference="W_M", pool=MODES[mode], n_boot=boot)
        bands.append(validity_bands(table[table["mode"] == mode], index, draws))
    return pd.concat(bands, ignore_index=True)


def naive_replicate(setting: pd.DataFrame, rng: np.random.Generator, permute: bool) -> pd.DataFrame | None:
    """One replicate the plain way: a resampled (bootstrap) or relabelled (permutation) table, gaps for k = 1..8."""
    if permute:
        table = setting.assign(group=rng.permutation(setting["group"].to_numpy()))
    else:
        members = [np.flatnonzero(setting["group"].to_numpy() == g) for g in setting["group"].unique()]
        table = setting.iloc[np.concatenate([rng.choice(m, m.size) for m in members])].reset_index(drop=True)
        table["candidate_id"] = [f"c{i}" for i in range(len(table))]
    try:
        return allocation_gaps(table, reference="W_M", ks=range(1, 9))
    except AuditError:  # a resample without a qualified candidate in some group: rejected early (cheaper)
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--boot", type=int, default=1000)
    parser.add_argument("--perm", type=int, default=1000)
    parser.add_argument("--sample", type=int, default=20)
    args = parser.parse_args()
    with Store(DEMO_STORE, create=False) as store:
        scores = score_table(store)
    seconds, cpu, table = timed(lambda: gap_tests(scores, args.boot, args.perm))
    band_seconds, band_cpu, bands = timed(lambda: r_bands(scores, table, args.boot))
    keys = scores.groupby(["model", "subtask", "mode"], observed=True).ngroups
    pointwise = scores[scores["mode"] == "pointwise"]
    setting = pointwise[(pointwise["model"] == pointwise["model"].iloc[0])
                        & (pointwise["subtask"] == pointwise["subtask"].iloc[0])]
    rng = np.random.default_rng(0)
    start, cpu = time.perf_counter(), time.process_time()
    for i in range(args.sample):
        naive_replicate(setting, rng, permute=i % 2 == 1)
    per_replicate = (time.perf_counter() - start) / args.sample
    per_replicate_cpu = (time.process_time() - cpu) / args.sample
    naive = per_replicate * (args.boot + args.perm) * keys
    print(f"demo store: {keys} (model, subtask, mode) keys, {len(table)} rows (every group ≠ W_M and every k)")
    print(f"suite: 95 % CIs ({args.boot} bootstrap replicates) + permutation p-values ({args.perm} shuffles) + Holm, "
          f"every row: {seconds:.2f} s ({cpu:.2f} s CPU)   target < 2 s")
    print(f"naive loop: {per_replicate * 1000:.1f} ms per replicate (timed on {args.sample}), "
          f"× {args.boot + args.perm} replicates × {keys} keys ≈ {naive:.0f} s")
    print(f"ratio: {naive / seconds:.0f}× wall, {per_replicate_cpu * (args.boot + args.perm) * keys / cpu:.0f}× CPU")
    print(f"also: bootstrap bands on {len(bands)} Pearson r (overall and per group, every k; {args.boot} replicates "
          f"of every metric and gap): {band_seconds:.2f} s ({band_cpu:.2f} s CPU)")

if __name__ == "__main__":
    main()
