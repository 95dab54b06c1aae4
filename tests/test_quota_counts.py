"""``quota_counts`` (the impact table's per-pool counts at every quota) against a brute-force count written apart:
per pool and group, the members and the expected number selected at k when ties at the quota are a fair lottery."""
from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from audit.metrics.keys import split_keys
from audit.metrics.pools import pool_index, quota_counts

GROUPS = "RABC"


def brute_force(pools: list[list[tuple[str, float]]], groups: tuple[str, ...], k: int) -> np.ndarray:
    """(pools, groups) expected selections at quota k: a member with h others scored above it and t others tied
    with it is selected with chance min(max(k − h, 0), t + 1) / (t + 1)."""
    out = np.zeros((len(pools), len(groups)))
    for p, members in enumerate(pools):
        for group, score in members:
            above = sum(other > score for _, other in members)
            tied = sum(other == score for _, other in members) - 1
            out[p, groups.index(group)] += min(max(k - above, 0), tied + 1) / (tied + 1)
    return out


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from(GROUPS), st.integers(0, 3)), min_size=1, max_size=12),
                min_size=1, max_size=6), st.data())
def test_quota_counts_equal_a_brute_force_lottery_count(pools, data):
    rows = [dict(model="m", task="t", subtask="s", mode="pointwise", candidate_id=f"c{p}-{i}", group=group,
                 qualified=1, score=float(score), pool=p)
            for p, members in enumerate(pools) for i, (group, score) in enumerate(members)]
    table = pd.DataFrame(rows)
    if "R" not in set(table["group"]) or table["group"].nunique() < 2:
        return  # a key needs its reference and one other group
    key = split_keys(table, reference="R")[0]
    largest = max(len(members) for members in pools)
    quotas = sorted(data.draw(st.sets(st.integers(1, largest), min_size=1, max_size=largest)))
    members, selected = quota_counts(key, quotas)
    index = pool_index(key)  # each row's pool in the function's order; the pools rebuilt from the key's rows
    by_pool = {}
    for row, pool_row in enumerate(index):
        by_pool.setdefault(int(pool_row), []).append(row)
    mapped = [[(key.groups[key.group[r]], float(key.score[r])) for r in by_pool[i]] for i in sorted(by_pool)]
    expected_members = np.array([[sum(g == name for g, _ in pool) for name in key.groups] for pool in mapped])
    assert np.array_equal(members, expected_members)
    for j, k in enumerate(quotas):
        assert np.allclose(selected[:, :, j], brute_force(mapped, key.groups, k), atol=1e-12)
