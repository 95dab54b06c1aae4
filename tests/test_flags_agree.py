"""Issue 29: no shown impact ratio contradicts its flag. Ratios are shown to three decimals wherever a flag reads them
(a true 0.7956 reads 0.796, below 0.8, never 0.80), on the dashboard's verdict tables, in `verdict --format md` and in
the report, for every cell of both demo tasks at every valid quota."""
from __future__ import annotations

import re

import pytest

from audit.engine.audit import Audit
from audit.metrics.impact import FOUR_FIFTHS
from audit.engine.verdict import ADVERSE, NO_EVIDENCE
from audit.paths import DEMO_STORE
from audit.present.readable import category_verdicts
from audit.engine.selection import Selection
from audit.store.database import Store
from audit.engine.tables import StoreTables


@pytest.fixture(scope="module")
def tables() -> StoreTables:
    with Store(DEMO_STORE, create=False) as store:
        return StoreTables.read(store)


def shown_ratio(text: str) -> tuple[float, float, float]:
    value, low, high = re.fullmatch(r"(\S+) \[(\S+), (\S+)\]", text).groups()
    return float(value), float(low), float(high)


@pytest.mark.parametrize("task", ["study-gpt-hiring", "resume"])
def test_no_shown_ratio_contradicts_its_flag_or_verdict(tables, task):
    table = Audit(tables, Selection(task, n_boot=200, n_perm=200)).every_quota
    shown = category_verdicts(table)
    assert len(shown) == len(table) > 100
    near = 0
    for row, raw in zip(shown.to_dict("records"), table.to_dict("records")):
        text = row["impact ratio [interval]"]
        if text == "n/a":
            continue
        if raw["category"] == raw["comparator"]:  # the most-selected category: ratio 1 by construction, no interval
            assert text == "1.000" and raw["verdict"] == NO_EVIDENCE, row
            continue
        value, low, _ = shown_ratio(text)
        assert (value < FOUR_FIFTHS) == (row[f"below {FOUR_FIFTHS:g}"] == "yes"), (row, raw["impact_ratio"])
        if raw["verdict"] == ADVERSE:
            assert value < FOUR_FIFTHS, row
        if raw["verdict"] == NO_EVIDENCE:
            assert low >= FOUR_FIFTHS, row  # no evidence: the interval's low end is above the threshold
        near += abs(raw["impact_ratio"] - FOUR_FIFTHS) < 0.005
    assert near, "some ratio lies within 0.005 of the threshold, where two decimals would read 0.80"
