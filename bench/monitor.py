"""Simulation of the monitor's operating characteristic (audit/metrics/monitoring.py), seeded, side by side with the
naive monitor.

Fair systems are watched weekly for a year: 0/1 logs (each applicant selected with chance 0.3) and ranked pools (pools
of 8, the first of each picked by a fair draw), two groups or four (sex × race, every pair watched, the family of six
pairs corrected as ``verdict`` corrects it), 50 to 1,000 decisions a week. The share of systems with any alarm is
printed for the monitor (bound α = 5 % over 52 looks) and for the naive monitor on the same data: a fixed-sample
two-proportion z-test every week (Bonferroni over the family), an alarm when it rejects at α and that week's ratio is
below 0.8 (``verdict`` run every week). Then drifts: two groups fair for 26 weeks, then a's rate falls to 0.7 or 0.6
of b's; the median delay (weeks from the drop to the first alarm) and the share found by week 52.

Usage: python bench/monitor.py [--systems 200] [--seed 0]
"""
from __future__ import annotations

import argparse
import itertools
import math
import time
from pathlib import Path
import sys

import numpy as np
from scipy.special import ndtri

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from audit.metrics.monitoring import LookCounts, watch_pair  # noqa: E402

WEEKS, ALPHA, THRESHOLD, RATE = 52, 0.05, 0.8, 0.3


def zero_one(rng: np.random.Generator, per_week: int, ratios: np.ndarray) -> list[np.ndarray]:
    """Per category (rate × ``ratios[c]``, a matrix weeks × categories): (members, selected) per week."""
    categories = ratios.shape[1]
    members = rng.multinomial(per_week, np.full(categories, 1 / categories), WEEKS)
    return [members, rng.binomial(members, RATE * ratios)]


def ranked(rng: np.random.Generator, per_week: int, ratios: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pools of 8 (categories drawn at random), the first picked by Plackett–Luce weights ``ratios``: per pool its
    week, members per category (pools, categories) and the picked category."""
    categories = ratios.shape[1]
    pools = max(1, per_week // 8)
    week = np.repeat(np.arange(WEEKS), pools)
    labels = rng.integers(0, categories, (week.size, 8))
    weights = ratios[week[:, None], labels]
    winner = labels[np.arange(week.size), (rng.random(week.size)[:, None] * weights.sum(1, keepdims=True)
                                           < np.cumsum(weights, 1)).argmax(1)]
    members = np.stack([(labels == c).sum(1) for c in range(categories)], 1)
    return week, members, winner


def pair_counts(kind: str, data, a: int, b: int) -> LookCounts:
    if kind == "0/1":
        members, selected = data
        return LookCounts(np.arange(WEEKS), members[:, a], members[:, b], selected[:, a] + selected[:, b],
                          selected[:, a], WEEKS)
    week, members, winner = data
    return LookCounts(week, members[:, a], members[:, b], ((winner == a) | (winner == b)).astype(int),
                      (winner == a).astype(int), WEEKS)


def weekly(kind: str, data, categories: int) -> tuple[np.ndarray, np.ndarray]:
    """(members, selected) per week and category."""
    if kind == "0/1":
        return data
    week, members, winner = data
    count = np.zeros((WEEKS, categories))
    np.add.at(count, (week, winner), 1)
    return np.stack([np.bincount(week, members[:, c], WEEKS) for c in range(categories)], 1), count


def naive_alarm(members: np.ndarray, selected: np.ndarray, family: int) -> bool:
    """Any week where a pair's z-test rejects at α / family and the lower rate is under 0.8 of the higher."""
    z = -ndtri(ALPHA / family / 2)
    for a, b in itertools.combinations(range(members.shape[1]), 2):
        n_a, n_b, x_a, x_b = members[:, a], members[:, b], selected[:, a], selected[:, b]
        with np.errstate(invalid="ignore", divide="ignore"):
            p_a, p_b, pooled = x_a / n_a, x_b / n_b, (x_a + x_b) / (n_a + n_b)
            stat = np.abs(p_a - p_b) / np.sqrt(pooled * (1 - pooled) * (1 / n_a + 1 / n_b))
            low = np.minimum(p_a, p_b) / np.maximum(p_a, p_b)
        if np.any((stat > z) & (low < THRESHOLD)):
            return True
    return False


def monitor_alarm(kind: str, data, categories: int) -> int | None:
    """The first week any pair alarms (the pair's lower category against the higher), None when none."""
    family = math.comb(categories, 2)
    firsts = []
    for a, b in itertools.combinations(range(categories), 2):
        for first, second in ((a, b), (b, a)):
            found = watch_pair(pair_counts(kind, data, first, second), alpha=ALPHA, threshold=THRESHOLD,
                               family=family).first_alarm
            if found is not None:
                firsts.append(found)
    return min(firsts) if firsts else None


def simulate(kind: str, rng: np.random.Generator, per_week: int, ratios: np.ndarray):
    return zero_one(rng, per_week, ratios) if kind == "0/1" else ranked(rng, per_week, ratios)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--systems", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    margin = 2 * math.sqrt(ALPHA * (1 - ALPHA) / args.systems)
    print(f"Fair systems, {WEEKS} weekly looks, {args.systems} systems a cell (bound {ALPHA:.0%} + 2 MC errors = "
          f"{ALPHA + margin:.1%}):\n")
    print("| log | groups | decisions a week | monitor: systems alarmed | naive weekly test: systems alarmed |")
    print("|---|---|---|---|---|")
    for kind, categories, per_week in itertools.product(("0/1", "ranked"), (2, 4), (50, 200, 1000)):
        ours = naive = 0
        for _ in range(args.systems):
            data = simulate(kind, rng, per_week, np.ones((WEEKS, categories)))
            ours += monitor_alarm(kind, data, categories) is not None
            naive += naive_alarm(*weekly(kind, data, categories), math.comb(categories, 2))
        print(f"| {kind} | {'two' if categories == 2 else 'sex × race (4)'} | {per_week:,} | "
              f"{ours / args.systems:.1%} | {naive / args.systems:.1%} |")
    print("\nA drift after 26 fair weeks (two groups): weeks from the drop to the first alarm\n")
    print("| log | ratio after the drop | decisions a week | median delay | found by week 52 | naive: alarmed before "
          "the drop |")
    print("|---|---|---|---|---|---|")
    drift = args.systems // 2
    for kind, ratio, per_week in itertools.product(("0/1", "ranked"), (0.7, 0.6), (100, 200, 1000)):
        ratios = np.ones((WEEKS, 2))
        ratios[26:, 0] = ratio
        delays, early = [], 0
        for _ in range(drift):
            data = simulate(kind, rng, per_week, ratios)
            first = monitor_alarm(kind, data, 2)
            delays.append(first - 25 if first is not None else math.inf)
            members, selected = weekly(kind, data, 2)
            early += naive_alarm(members[:26], selected[:26], 1)
        found = np.isfinite(delays)
        median = np.median(delays)
        print(f"| {kind} | {ratio} | {per_week:,} | {median:.0f} | {found.mean():.0%} | {early / drift:.0%} |"
              if np.isfinite(median) else f"| {kind} | {ratio} | {per_week:,} | not found | {found.mean():.0%} | "
              f"{early / drift:.0%} |")
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
