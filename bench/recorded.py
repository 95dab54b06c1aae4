"""Benchmark of the import and the impact table of a large recorded decision log, each against a plain pandas
baseline of the same quantities run side by side; prints ratios from one run.

A generated log of N applicants (default 1,000,000) in P pools (default 10,000 requisitions of 100), two demographic
columns (sex: F/M; race: A/B/H/W at 10/15/20/55 %), rank outcome (each pool ranked by a latent score with a small
group shift).

First the log is written as a CSV file and imported into a fresh store with ``python -m audit import --format
decisions`` in a child process (time and the child's peak memory), beside a plain pandas baseline of the same work,
``read_csv``, the duplicate-id and one-rank-per-place checks by ``groupby`` and ``to_sql`` into SQLite, run the same
way in a child process (interpreter start and imports included on both sides; each command run once untimed
first, so that both read bytecode and a cached file, as every run after a machine's first does) and, for reference,
in this process.

Then the log is read back the way the store serves recorded systems (rank-derived score (n − rank)/(n − 1) with its
pool) and the tool's impact table (every grouping: race × sex, race, sex) is computed for k = 1..10 with intervals
(the rates': 1,000 bootstrap replicates resampling whole pools; the ratios': Katz with the pool-robust standard error),
as ``Audit.impact`` makes it. The baseline computes the same with pandas: ``groupby`` of rank ≤ k per pool and
category for the rates, per replicate the pools drawn with replacement and the per-pool counts summed with
``groupby``, the ratios' standard errors summed over the per-pool counts. Rates, ratios and the ratios' bounds must
agree (the rates' bootstrap bounds come from two independent streams).

Usage: python bench/recorded.py [--applicants 1000000] [--pools 10000] [--bootstrap 1000]
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from audit.metrics.impact import impact_ratios  # noqa: E402
from audit.engine.metric_pass import regroup  # noqa: E402
from audit.metrics.keys import Regroupings  # noqa: E402
from audit.metrics.schema import text_categories  # noqa: E402

RACES, RACE_SHARES = ["A", "B", "H", "W"], [0.10, 0.15, 0.20, 0.55]
GROUPINGS = {"race × sex": None, "race": 0, "sex": 1}
KS = range(1, 11)


def decision_log(applicants: int, pools: int, seed: int = 0) -> pd.DataFrame:
    """One row per applicant: pool, race, sex and rank within the pool (1 = best)."""
    rng = np.random.default_rng(seed)
    race = rng.choice(RACES, applicants, p=RACE_SHARES)
    sex = rng.choice(["F", "M"], applicants)
    pool = np.repeat(np.arange(pools), applicants // pools)
    latent = rng.normal(size=applicants) + 0.1 * (race == "W") + 0.05 * (sex == "M")
    log = pd.DataFrame({"pool": pool, "race": race, "sex": sex, "latent": latent})
    log["rank"] = log.groupby("pool")["latent"].rank(ascending=False, method="first").astype(int)
    return log.drop(columns="latent")


def score_table(log: pd.DataFrame) -> pd.DataFrame:
    """The log as the store reads a recorded system back: rank-derived score within its pool."""
    size = log.groupby("pool")["rank"].transform("size")
    return pd.DataFrame({"model": "deployed", "task": "log", "subtask": "all", "mode": "pointwise",
                         "candidate_id": np.arange(len(log)).astype(str), "group": log["race"] + "_" + log["sex"],
                         "score": (size - log["rank"]) / (size - 1), "qualified": True, "pool": log["pool"]})


def tool_table(scores: pd.DataFrame, n_boot: int) -> pd.DataFrame:
    """The impact table as :meth:`audit.engine.audit.Audit.impact` makes it: the text columns made categories once, each
    grouping a regrouping of the same rows split with the codes of the first
    (:class:`audit.metrics.keys.Regroupings`)."""
    texts, splits = text_categories(scores), Regroupings()
    frames = []
    for grouping, part in GROUPINGS.items():
        coarse = regroup(texts, part)
        frames.append(impact_ratios(coarse, ks=KS, pool="observed", grouping=grouping, ci=0.95, n_boot=n_boot,
                                    keys=splits.split(coarse)))
    return pd.concat(frames, ignore_index=True)


def baseline_table(log: pd.DataFrame, n_boot: int, seed: int = 0, ci: float = 0.95) -> pd.DataFrame:
    """Plain pandas, the tool's quantities: rates by ``groupby`` of rank ≤ k per pool and category; the rates'
    percentile intervals from replicates that draw the pools with replacement and sum their per-pool counts by
    ``groupby``; each ratio's Katz interval against the most-selected category with the pool-robust standard error
    (se² = P/(P − 1)·Σ u², u = (x_a − p_a n_a)/(p_a N_a) − (x_b − p_b n_b)/(p_b N_b) per pool; the upper bound
    at 1 − (1 − ci)/(G − 1))."""
    rng = np.random.default_rng(seed)
    counts = [f"k{k}" for k in KS]
    rows = []
    for grouping, columns in {"race × sex": ["race", "sex"], "race": ["race"], "sex": ["sex"]}.items():
        category = log["race"] + "_" + log["sex"] if len(columns) > 1 else log[columns[0]]
        frame = pd.DataFrame({"pool": log["pool"], "category": category,
                              **{f"k{k}": (log["rank"] <= k).astype(int) for k in KS}})
        per_pool = frame.groupby(["pool", "category"]).agg(n=("pool", "size"), **{c: (c, "sum") for c in counts})
        per_pool = per_pool.reset_index()
        totals = per_pool.groupby("category")[["n", *counts]].sum()
        rates = totals[counts].div(totals["n"], axis=0)
        pools = per_pool["pool"].unique()
        draws = []
        for _ in range(n_boot):
            chosen = pd.Series(rng.choice(pools, pools.size), name="pool").value_counts()
            weighted = per_pool.merge(chosen.rename("w"), left_on="pool", right_index=True)
            sums = weighted[["n", *counts]].mul(weighted["w"], axis=0).groupby(weighted["category"]).sum()
            draws.append(sums[counts].div(sums["n"], axis=0).reindex(rates.index))
        rate_lo, rate_hi = np.quantile(np.stack([d.to_numpy() for d in draws]), [(1 - ci) / 2, (1 + ci) / 2], axis=0)
        wide = per_pool.pivot(index="pool", columns="category", values=["n", *counts]).fillna(0)
        n = wide["n"]
        upper = 1 - (1 - ci) / max(len(rates) - 1, 1)
        z_low, z_high = NormalDist().inv_cdf(0.5 + ci / 2), NormalDist().inv_cdf(0.5 + upper / 2)
        for j, k in enumerate(KS):
            rate, top = rates[f"k{k}"], rates[f"k{k}"].idxmax()
            x = wide[f"k{k}"]
            u = (x - n * rate) / (rate * n.sum())  # each category's per-pool deviation
            for i, cat in enumerate(rates.index):
                ratio = rate[cat] / rate[top]
                low = high = np.nan
                if cat != top:
                    holding = ((n[cat] > 0) | (n[top] > 0)).sum()
                    se = np.sqrt(holding / (holding - 1) * ((u[cat] - u[top]) ** 2).sum())
                    low, high = ratio * np.exp(-z_low * se), ratio * np.exp(z_high * se)
                rows.append((grouping, cat, k, rate[cat], rate_lo[i, j], rate_hi[i, j], ratio, low, high))
    return pd.DataFrame(rows, columns=["grouping", "category", "k", "selection_rate", "selection_rate_lo",
                                       "selection_rate_hi", "impact_ratio", "impact_ratio_lo", "impact_ratio_hi"])


#: the pandas baseline of the import, run as a child process like the tool (interpreter and imports included)
BASELINE_IMPORT = """
import sqlite3, sys
import pandas as pd
frame = pd.read_csv(sys.argv[1])
assert not frame["id"].duplicated().any()
assert not frame.duplicated(["pool", "rank"]).any()
assert (frame.groupby("pool")["rank"].max() == frame.groupby("pool")["rank"].size()).all()
with sqlite3.connect(sys.argv[2]) as db:
    frame.to_sql("decisions", db, index=False)
"""


#: the children's environment: bytecode written and read as on any ordinary machine (a machine that sets
#: PYTHONDONTWRITEBYTECODE has every child compile its modules from source again: the tool's package, and every
#: package an installer left uncompiled, on both sides)
CHILD_ENV = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def child(command: list[str]) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of ``command`` run as a child process from the repository root."""
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=Path(__file__).resolve().parents[1], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, env=CHILD_ENV)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    if status:
        raise SystemExit(f"{command[:3]} failed: {process.stderr.read().decode()}")
    return seconds, usage.ru_maxrss / 1024


def timed_import(log: pd.DataFrame, folder: Path) -> dict[str, float]:
    """Seconds and peak RSS (MB) of ``python -m audit import --format decisions`` of ``log`` as CSV (``tool_s``,
    ``tool_mb``) and of the pandas baseline of the same work, read, check, write to SQLite, run the same way in a
    child process (``child_s``, ``child_mb``) and in this process (``inline_s``: no interpreter start, pandas
    already imported)."""
    data, spec = folder / "log.csv", folder / "log.yaml"
    log.assign(id=np.arange(len(log))).to_csv(data, index=False)
    spec.write_text("applicant: id\ndemographics: [sex, race]\npool: pool\n")
    tool = [sys.executable, "-m", "audit", "import", "--format", "decisions", "--data", str(data), "--spec", str(spec),
            "--task", "log", "--db"]
    baseline = [sys.executable, "-c", BASELINE_IMPORT, str(data)]
    child([*tool, str(folder / "warm.db")])  # once untimed each: bytecode written, the file in the page cache
    child([*baseline, str(folder / "warm-child.db")])
    tool_s, tool_mb = child([*tool, str(folder / "store.db")])
    child_s, child_mb = child([*baseline, str(folder / "child.db")])
    start = time.perf_counter()
    exec(compile(BASELINE_IMPORT.replace("sys.argv[1]", repr(str(data))).replace("sys.argv[2]", repr(
        str(folder / "baseline.db"))), "baseline", "exec"), {})
    return {"tool_s": tool_s, "tool_mb": tool_mb, "child_s": child_s, "child_mb": child_mb,
            "inline_s": time.perf_counter() - start}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--applicants", type=int, default=1_000_000)
    parser.add_argument("--pools", type=int, default=10_000)
    parser.add_argument("--bootstrap", type=int, default=1000)
    args = parser.parse_args()
    start = time.perf_counter()
    log = decision_log(args.applicants, args.pools)
    scores = score_table(log)
    print(f"log: {len(log):,} applicants, {args.pools:,} pools of {args.applicants // args.pools}, generated and "
          f"read back in {time.perf_counter() - start:.1f} s")
    with tempfile.TemporaryDirectory() as folder:
        run = timed_import(log, Path(folder))
    tool, child_run, inline = run["tool_s"], run["child_s"], run["inline_s"]
    print(f"import --format decisions: tool {tool:.1f} s (peak RSS {run['tool_mb']:.0f} MB); pandas read_csv + checks "
          f"+ to_sql baseline in a child process {child_run:.1f} s (peak RSS {run['child_mb']:.0f} MB), ratio "
          f"{child_run / tool:.2f}×; the same baseline in this process (no interpreter start, pandas imported) "
          f"{inline:.1f} s, ratio {inline / tool:.2f}× (targets: ≥ 1×, under 60 s and 2 GB)")
    start = time.perf_counter()
    tool = tool_table(scores, args.bootstrap)
    tool_s = time.perf_counter() - start
    peak_tool = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.perf_counter()
    base = baseline_table(log, args.bootstrap)
    base_s = time.perf_counter() - start
    both = tool.merge(base, on=["grouping", "category", "k"], suffixes=("", "_pandas"))
    assert len(both) == len(tool) == len(base)
    gap = lambda column: (both[column] - both[f"{column}_pandas"]).abs().max()
    point = max(gap("selection_rate"), gap("impact_ratio"))
    katz = max(gap("impact_ratio_lo"), gap("impact_ratio_hi"))
    assert point < 1e-12 and katz < 1e-9, (point, katz)
    print(f"impact table, k = 1..10, 3 groupings ({len(tool)} rows), {args.bootstrap} bootstrap replicates of the "
          f"pools: tool {tool_s:.1f} s (peak RSS so far {peak_tool:.0f} MB), pandas groupby baseline {base_s:.1f} s, "
          f"ratio {base_s / tool_s:.1f}× (target ≥ 10×; rates and ratios equal to {point:.0e}, the ratios' Katz "
          f"bounds to {katz:.0e}, the rates' bootstrap bounds differ by at most "
          f"{max(gap('selection_rate_lo'), gap('selection_rate_hi')):.4f}: two independent bootstrap streams)")
    print(f"peak RSS of the whole run: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB in this "
          f"process, {max(run['tool_mb'], run['child_mb']):.0f} MB in a child (target: under 1.2 GB)")


if __name__ == "__main__":
    main()
