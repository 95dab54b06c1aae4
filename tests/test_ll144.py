"""The LL144 summary on a decision table built by hand: counts, rates, ratios, Fisher p-values and Holm adjustment
computed here independently; unknown category, a category under 2 %, insufficient evidence, exclusion."""
from __future__ import annotations

import math

import pandas as pd
import pytest
from scipy.stats import fisher_exact

from audit.metrics.ll144 import holm, ll144_table


def applicants(sex: str, race: str | None, n: int, selected: int) -> list[dict]:
    return [dict(sex=sex, race=race, selected=int(i < selected)) for i in range(n)]


@pytest.fixture()
def decisions() -> pd.DataFrame:
    rows = (applicants("F", "W", 200, 80) + applicants("M", "W", 200, 50) + applicants("F", "B", 150, 30)
            + applicants("M", "B", 150, 45) + applicants("F", "A", 6, 1) + applicants("M", None, 20, 5)
            + applicants("unknown", "W", 10, 10))
    return pd.DataFrame(rows)


def test_counts_rates_ratios_and_tests(decisions):
    table = ll144_table(decisions, {"sex": ["sex"], "race": ["race"], "intersection": ["sex", "race"]})
    sex = table[table["grouping"] == "sex"].set_index("category")
    # sex: F = 200+150+6 = 356 applicants, 111 selected; M = 200+150+20 = 370, 100 selected; unknown 10 (10 selected)
    assert sex.loc["F", ["applicants", "selected"]].tolist() == [356, 111]
    assert sex.loc["M", ["applicants", "selected"]].tolist() == [370, 100]
    assert sex.loc["unknown", "applicants"] == 10 and math.isnan(sex.loc["unknown", "selection_rate"])
    assert sex.loc["M", "impact_ratio"] == pytest.approx((100 / 370) / (111 / 356))
    p = fisher_exact([[100, 270], [111, 245]]).pvalue
    assert sex.loc["M", "p_value"] == pytest.approx(p) and sex.loc["M", "p_holm"] == pytest.approx(p)
    race = table[table["grouping"] == "race"].set_index("category")
    # race: W = 200+200+10 (unknown sex counts here) = 410 (140), B = 300 (75), A = 6 (1) under 2 %; unknown: the 20 with no race
    assert race.loc["W", ["applicants", "selected"]].tolist() == [410, 140]
    assert race.loc["unknown", "applicants"] == 20
    assert bool(race.loc["A", "small"]) and race.loc["A", "note"] == "insufficient evidence"
    assert math.isnan(race.loc["A", "impact_ratio"])
    pb = fisher_exact([[75, 225], [140, 270]]).pvalue
    assert race.loc["B", "p_holm"] == pytest.approx(pb)  # A has no test: one test in the family
    assert race.loc["W", "impact_ratio"] == 1.0
    lo, hi = race.loc["B", ["impact_ratio_lo", "impact_ratio_hi"]]
    assert lo < (75 / 300) / (140 / 410) < hi
    both = table[table["grouping"] == "intersection"].set_index("category")
    assert both.loc["F_W", "impact_ratio"] == 1.0 and both.loc["M_W", "impact_ratio"] == pytest.approx(0.625)
    assert both.loc["unknown", "applicants"] == 30  # no race (20) or unknown sex (10)


def test_small_category_excluded_only_with_justification(decisions):
    kept = ll144_table(decisions, {"race": ["race"]}).set_index("category")
    dropped = ll144_table(decisions, {"race": ["race"]}, exclude_small="fewer than 10 applicants").set_index("category")
    assert not kept.loc["A", "excluded"] and dropped.loc["A", "excluded"]
    assert dropped.loc["A", "applicants"] == 6 and dropped.loc["A", "selection_rate"] == pytest.approx(1 / 6)
    assert "fewer than 10 applicants" in dropped.loc["A", "note"]


def test_holm_matches_hand_computation():
    adjusted = holm([0.01, 0.04, float("nan"), 0.03])
    assert adjusted[0] == pytest.approx(0.03) and adjusted[3] == pytest.approx(0.06)
    assert adjusted[1] == pytest.approx(0.06) and math.isnan(adjusted[2])
