"""The verdict measures every recorded system of a grouping in one stacked pass (audit/metrics/stacked.py): each
system's rows and pairs must equal, to the last bit, those of the system measured alone."""
import numpy as np
import pandas as pd

from audit.metrics.exact import segment_sums
from audit.engine.verdict import measure


def system(rng: np.random.Generator, name: str, pools: int, size: int, favoured: str) -> pd.DataFrame:
    """A rank log of ``pools`` pools of 3 … ``size`` applicants from 4 groups, scores on a coarse grid (ties at the
    quota: lotteries), the ``favoured`` group a little ahead (so each system has its own comparator)."""
    sizes = rng.integers(3, size + 1, pools)
    sizes[0] = size
    pool = np.repeat(np.arange(pools), sizes)
    group = rng.choice(list("ABCD"), pool.size)
    score = np.round(rng.random(pool.size) * 4 + (group == favoured), 0)
    return pd.DataFrame({"model": name, "task": "t", "subtask": "s", "mode": "pointwise",
                         "candidate_id": [f"{name}{i}" for i in range(pool.size)], "group": group, "qualified": 1,
                         "score": score, "pool": pool})


def test_a_stacked_pass_gives_each_systems_own_numbers():
    rng = np.random.default_rng(5)
    parts = [system(rng, "m1", 40, 6, "A"), system(rng, "m2", 300, 6, "B"), system(rng, "m3", 9, 6, "C"),
             system(rng, "m4", 60, 5, "D")]
    rows, pairs = measure(pd.concat(parts, ignore_index=True), grouping="group", k=[1, 2], pool="observed",
                          n_boot=2, n_perm=1)
    alone = [measure(part, grouping="group", k=[1, 2], pool="observed", n_boot=2, n_perm=1) for part in parts]
    pd.testing.assert_frame_equal(rows, pd.concat([r for r, _ in alone], ignore_index=True), check_exact=True)
    pd.testing.assert_frame_equal(pairs, pd.concat([p for _, p in alone], ignore_index=True), check_exact=True)
    assert rows["p"].notna().any() and rows["pool_adjusted_ratio"].notna().any()
    assert rows["comparator"].nunique() > 1


def test_segment_sums_are_numpys_sums_of_each_segment():
    rng = np.random.default_rng(3)
    lengths = rng.integers(0, 300, 40)
    values = rng.random(lengths.sum()) / 3
    segment = np.repeat(np.arange(lengths.size), lengths)
    found = segment_sums(values, segment, lengths.size)
    starts = np.cumsum(lengths) - lengths
    assert [found[i] for i in range(lengths.size)] == [values[s:s + n].sum() for s, n in zip(starts, lengths)]


def test_batches_of_a_few_rows_give_the_same_numbers(monkeypatch):
    """A big log is stacked a batch of at most BATCH_ROWS rows at a time: cut into many batches, every number and
    the rows' order stay those of one stack."""
    import audit.metrics.stacked as stacked

    rng = np.random.default_rng(11)
    table = pd.concat([system(rng, f"m{i}", int(rng.integers(5, 40)), 6, "ABCD"[i % 4]) for i in range(9)],
                      ignore_index=True)
    whole = measure(table, grouping="group", k=[1, 3], pool="observed", n_boot=2, n_perm=1)
    made = []
    monkeypatch.setattr(stacked, "BATCH_ROWS", 150)  # a few systems a batch (some systems alone)
    monkeypatch.setattr(stacked.Stacked, "of", classmethod(lambda cls, keys, of=stacked.Stacked.of.__func__: (
        made.append(len(keys)), of(cls, keys))[1]))
    cut = measure(table, grouping="group", k=[1, 3], pool="observed", n_boot=2, n_perm=1)
    assert len(made) > 2 and sum(made) == 9
    for one, other in zip(whole, cut):
        pd.testing.assert_frame_equal(one, other, check_exact=True)


def test_pool_size_counts_the_largest_pool_whatever_the_ids():
    from audit.design import PoolDesign, PoolKind
    from audit.metrics.keys import selection_keys
    from audit.metrics.pools import pool_size

    rng = np.random.default_rng(2)
    log = system(rng, "m", 30, 7, "A")
    spread = log.assign(pool=log["pool"] * 1_000_003)  # ids far apart: counted by a sort, not a bincount
    for table in (log, spread):
        data = selection_keys(table)[0]
        assert pool_size(PoolDesign(PoolKind.OBSERVED), data) == 7 == log["pool"].value_counts().max()


def test_every_quota_at_once_equals_each_quota_alone():
    """Quotas at which no member's share of the selections moves (a 0/1 log's decisions are the same at every k)
    take the numbers of the quota before them: on 0/1 logs, a rank log and a stack of both, the pass over every
    quota equals each quota measured alone, to the last bit."""
    from dataclasses import replace

    from audit.metrics.keys import selection_keys

    rng = np.random.default_rng(8)
    ranked = system(rng, "ranked", 30, 6, "A")
    logs = [system(rng, f"log{i}", 25, 6, "B").assign(score=lambda t: (rng.random(len(t)) < 0.4).astype(float))
            for i in range(2)]
    for parts in ([ranked], logs, [*logs, ranked]):
        table = pd.concat(parts, ignore_index=True)
        keys = [replace(data, decided=(data.score > 0).astype(np.int64)) if data.key[0].startswith("log") else data
                for data in selection_keys(table)]
        quotas = [1, 2, 3, 4, 5]
        options = dict(grouping="group", pool="observed", n_boot=2, n_perm=1, keys=keys)
        rows, pairs = measure(table, k=quotas, **options)
        alone = [measure(table, k=[k], **options) for k in quotas]
        order = ["model", "subtask", "category", "k"]
        for whole, each, by in ((rows, [r for r, _ in alone], order), (pairs, [p for _, p in alone],
                                                                      ["model", "subtask", "a", "b", "k"])):
            whole = whole.sort_values(by, kind="stable").reset_index(drop=True)
            each = pd.concat(each, ignore_index=True).sort_values(by, kind="stable").reset_index(drop=True)
            pd.testing.assert_frame_equal(whole, each, check_exact=True)
        assert rows["p"].notna().any()
