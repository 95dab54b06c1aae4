"""The LL144 summary of a decision log built by hand, imported into a real store and read through
:meth:`audit.engine.audit.Audit.ll144`: counts, rates, ratios, Fisher p-values (an unpooled log is one pool) and Holm's
adjustment over every pair of the grouping's categories, computed here independently; unknown category, a category
under 2 %, insufficient evidence, exclusion."""
from __future__ import annotations

import math
from itertools import combinations

import pandas as pd
import pytest
from scipy.stats import fisher_exact

from audit.engine.audit import Audit
from audit.cli import main
from audit.engine.selection import Selection
from audit.store.database import Store
from audit.engine.tables import StoreTables


def applicants(sex: str, race: str, n: int, selected: int) -> list[dict]:
    return [dict(sex=sex, race=race, selected=int(i < selected)) for i in range(n)]


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> StoreTables:
    rows = (applicants("F", "W", 200, 80) + applicants("M", "W", 200, 50) + applicants("F", "B", 150, 30)
            + applicants("M", "B", 150, 45) + applicants("F", "A", 6, 1) + applicants("M", "", 20, 5)
            + applicants("unknown", "W", 10, 10))
    folder = tmp_path_factory.mktemp("ll144")
    pd.DataFrame(rows).assign(id=[f"a{i}" for i in range(len(rows))]).to_csv(folder / "log.csv", index=False)
    (folder / "spec.yaml").write_text("applicant: id\ndemographics: [sex, race]\n")
    db = folder / "log.db"
    assert main(["import", "--format", "decisions", "--data", str(folder / "log.csv"), "--spec",
                 str(folder / "spec.yaml"), "--task", "log", "--label", "screen", "--db", str(db)]) == 0
    with Store(db, create=False) as store:
        return StoreTables.read(store)


def summary(tables: StoreTables, exclude_small: str | None = None) -> pd.DataFrame:
    return Audit(tables, Selection("log", family="grouping", ks=(1,))).ll144(1, exclude_small)


def fisher(counts: dict[str, tuple[int, int]], a: str, b: str) -> float:
    (n_a, s_a), (n_b, s_b) = counts[a], counts[b]
    return fisher_exact([[s_a, n_a - s_a], [s_b, n_b - s_b]]).pvalue


def holm_of(p: dict[tuple[str, str], float], pair: tuple[str, str]) -> float:
    """Holm's adjusted p-value of ``pair`` among every pair of ``p``, by hand."""
    order = sorted(p, key=p.get)
    running = 0.0
    for i, key in enumerate(order):
        running = max(running, min(1.0, (len(order) - i) * p[key]))
        if key == pair:
            return running
    raise KeyError(pair)


def test_counts_rates_ratios_and_tests(tables):
    table = summary(tables)
    sex = table[table["grouping"] == "sex"].set_index("category")
    # sex: F = 200+150+6 = 356 applicants, 111 selected; M = 200+150+20 = 370, 100 selected; unknown 10 (10 selected)
    assert sex.loc["F", ["applicants", "selected"]].tolist() == [356, 111]
    assert sex.loc["M", ["applicants", "selected"]].tolist() == [370, 100]
    assert sex.loc["unknown", "applicants"] == 10 and math.isnan(sex.loc["unknown", "selection_rate"])
    assert sex.loc["M", "impact_ratio"] == pytest.approx((100 / 370) / (111 / 356))
    p = fisher_exact([[100, 270], [111, 245]]).pvalue
    assert sex.loc["M", "p_value"] == pytest.approx(p, rel=1e-9) and sex.loc["M", "p_holm"] == pytest.approx(p)
    race = table[table["grouping"] == "race/ethnicity"].set_index("category")
    # race: W = 200+200+10 (unknown sex counts here) = 410 (140), B = 300 (75), A = 6 (1) under 2 %; unknown: the 20 with no race
    assert race.loc["W", ["applicants", "selected"]].tolist() == [410, 140]
    assert race.loc["unknown", "applicants"] == 20
    assert bool(race.loc["A", "small"]) and race.loc["A", "note"] == "insufficient evidence"
    assert math.isnan(race.loc["A", "impact_ratio"])
    counts = {"W": (410, 140), "B": (300, 75), "A": (6, 1)}
    pairs = {(a, b): fisher(counts, a, b) for a, b in combinations("ABW", 2)}  # A is in the verdict's family
    assert race.loc["B", "p_value"] == pytest.approx(pairs["B", "W"], rel=1e-9)
    assert race.loc["B", "p_holm"] == pytest.approx(holm_of(pairs, ("B", "W")), rel=1e-9)
    assert race.loc["W", "impact_ratio"] == 1.0
    lo, hi = race.loc["B", ["impact_ratio_lo", "impact_ratio_hi"]]
    assert lo < (75 / 300) / (140 / 410) < hi
    both = table[table["grouping"] == "intersection"].set_index("category")
    assert both.loc["F_W", "impact_ratio"] == 1.0 and both.loc["M_W", "impact_ratio"] == pytest.approx(0.625)
    assert both.loc["unknown", "applicants"] == 30  # no race (20) or unknown sex (10)


def test_small_category_excluded_only_with_justification(tables):
    kept = summary(tables)
    dropped = summary(tables, "fewer than 10 applicants")
    kept, dropped = (t[t["grouping"] == "race/ethnicity"].set_index("category") for t in (kept, dropped))
    assert not kept.loc["A", "excluded"] and dropped.loc["A", "excluded"]
    assert dropped.loc["A", "applicants"] == 6 and dropped.loc["A", "selection_rate"] == pytest.approx(1 / 6)
    assert "fewer than 10 applicants" in dropped.loc["A", "note"]
    # A left out of the family: B against W is then the grouping's only comparison
    assert dropped.loc["B", "p_holm"] == pytest.approx(fisher({"W": (410, 140), "B": (300, 75)}, "B", "W"), rel=1e-9)
