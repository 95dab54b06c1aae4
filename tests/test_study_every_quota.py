"""The shipped study's verdict at every quota k = 1 … 7 against an exact stratified test computed here apart from
:mod:`audit.metrics.exact`: from the store's recorded ranks, the top k of each pool, and per pool the hypergeometric
law of the category's members among the selected members of the pair (``math.comb``), convolved pool by pool. Every
raw p-value of ``verdict --family grouping`` must equal it within 2 % (or both lie below 1e-12). The fault this
guards: strata packed with too small a base decoded wrongly whenever a pool selected more members of a ∪ b than the
larger of the two (p = 1.6e-14 where the test gives 0.30)."""
from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from audit.engine.audit import Audit
from audit.engine.selection import Selection
from audit.store.database import Store
from audit.engine.tables import StoreTables

DEMO = Path(__file__).resolve().parents[1] / "data" / "demo.db"
TASK = "study-gpt-hiring"


def pool_law(n_a: int, n_b: int, s: int) -> np.ndarray:
    """P(x of a's members among s selected of n_a + n_b), x = 0 … s, by counting."""
    total = math.comb(n_a + n_b, s)
    return np.array([math.comb(n_a, x) * math.comb(n_b, s - x) / total for x in range(s + 1)])


def exact_p(n_a: np.ndarray, n_b: np.ndarray, x: np.ndarray, s: np.ndarray) -> float:
    """Two-sided exact p of Σ x against the convolution of every informing pool's law."""
    law = np.ones(1)
    for (a, b, chosen), times in Counter(zip(n_a.tolist(), n_b.tolist(), s.tolist())).items():
        if a == 0 or b == 0 or chosen in (0, a + b):
            continue
        base = pool_law(a, b, chosen)
        while times:  # law × base^times by squaring
            if times % 2:
                law = np.convolve(law, base)
            base, times = np.convolve(base, base), times // 2
    informing = (n_a > 0) & (n_b > 0) & (s > 0) & (s < n_a + n_b)
    observed = int(x[informing].sum())
    return float(min(1.0, law[law <= law[observed] * (1 + 1e-7)].sum()))


@pytest.fixture(scope="module")
def tables() -> StoreTables:
    with Store(DEMO, create=False) as store:
        return StoreTables.read(store)


def category_of(groups: pd.Series, grouping: str) -> pd.Series:
    """The study's codes ``<race>_<gender>`` read as the grouping's categories."""
    parts = groups.astype(str).str.split("_", expand=True)
    return {"race": parts[0], "gender": parts[1]}.get(grouping, groups.astype(str))


@pytest.mark.parametrize("k", range(1, 8))
def test_every_raw_p_value_equals_the_exact_stratified_test(tables, k):
    verdicts = Audit(tables, Selection(TASK, family="grouping", ks=(k,))).verdicts((k,))
    scores = tables.scores[(tables.scores["task"] == TASK) & (tables.scores["mode"] == "pointwise")]
    checked = 0
    for (model, subtask, grouping), rows in verdicts.groupby(["model", "subtask", "grouping"]):
        part = scores[(scores["model"] == model) & (scores["subtask"] == subtask)]
        size = part.groupby("pool")["score"].transform("size")
        rank = np.rint(size - part["score"] * (size - 1)).astype(int)  # back from (n − rank)/(n − 1)
        frame = pd.DataFrame({"pool": part["pool"].to_numpy(), "category": category_of(part["group"], grouping).to_numpy(),
                              "picked": (rank <= k).to_numpy().astype(int)})
        members = frame.pivot_table(index="pool", columns="category", values="picked", aggfunc="size", fill_value=0)
        picked = frame.pivot_table(index="pool", columns="category", values="picked", aggfunc="sum", fill_value=0)
        for row in rows[rows["p"].notna()].itertuples():
            a, b = str(row.category), str(row.comparator)
            expected = exact_p(members[a].to_numpy(), members[b].to_numpy(), picked[a].to_numpy(),
                               (picked[a] + picked[b]).to_numpy())
            assert row.p == pytest.approx(expected, rel=0.02) or max(row.p, expected) < 1e-12, (
                model, subtask, grouping, a, b, row.p, expected)
            checked += 1
    assert checked == 8 * (7 + 3 + 1)  # per system: 7 against the comparator of 8 intersections, 3 of race, 1 of gender
