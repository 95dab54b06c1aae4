"""Decision logs imported with ``python -m audit import --format decisions``: a log built by hand here (unknown and
missing demographics, a race category under 2 %, a rank, a score and a selected outcome; CSV, JSONL and Parquet)
gives the LL144 counts, rates and impact ratios computed here independently, in ``ll144`` and ``impact``; the
decisions are stored compactly and read back as the rank-derived scores. Bad logs: tests/test_bad_inputs.py."""
from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from audit.cli import main
from helpers import audit_json
from audit.store.database import Store
from audit.engine.tables import StoreTables

POOLS, SIZE = 80, 5
SPEC = "applicant: id\ndemographics: [sex, race]\npool: req\nsubtask: job\ndate: day\n"
SCORE_SPEC = "applicant: id\ndemographics: [sex, race]\noutcome: {score: points}\nsubtask: job\n"


def applicants() -> list[dict]:
    """400 applicants in 80 pools of 5: sex F/M, every 10th 'unknown' and every 10th (+1) blank; race W/B, with
    5 Asian applicants (1.25 %); ranks a fixed permutation per pool; scores favouring F slightly."""
    rows = []
    for i in range(POOLS * SIZE):
        pool, position = divmod(i, SIZE)
        sex = ["F", "F", "F", "F", "M", "M", "M", "M", "unknown", ""][i % 10]
        race = "A" if i % 80 == 7 else ("W" if (i // 3) % 2 == 0 else "B")
        rank = (position * 3 + pool) % SIZE + 1
        points = (i * 37) % 101 / 10 + (0.8 if sex == "F" else 0.0)
        rows.append(dict(id=f"a{i:03d}", sex=sex, race=race, req=f"req-{pool}", job="eng", rank=rank,
                         points=points, day=f"2024-03-{pool % 28 + 1:02d}"))
    return rows


def known(value: str) -> bool:
    return value.strip().lower() not in ("", "unknown")


def expected(rows: list[dict], selected: list[int], columns: list[str], *, min_n: int = 30) -> dict:
    """category → (applicants, selected, rate, ratio or None) and 'unknown' → applicants, as LL144 counts them:
    unknown rows left out of rates, ratio against the most-selected category of at least ``min_n`` applicants,
    None for a category under ``min_n``."""
    size, chosen, unknown = Counter(), Counter(), 0
    for row, picked in zip(rows, selected):
        if not all(known(row[c]) for c in columns):
            unknown += 1
            continue
        category = "_".join(row[c] for c in columns)
        size[category] += 1
        chosen[category] += picked
    rates = {c: chosen[c] / size[c] for c in size}
    best = max(rates[c] for c in size if size[c] >= min_n)
    out = {c: (size[c], chosen[c], rates[c], rates[c] / best if size[c] >= min_n else None) for c in size}
    out["unknown"] = unknown
    return out


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("logs")
    frame = pd.DataFrame(applicants())
    frame.drop(columns="points").to_csv(folder / "ranked.csv", index=False)
    frame.drop(columns=["rank", "req", "day"]).to_json(folder / "scored.jsonl", orient="records", lines=True)
    frame.drop(columns=["points"]).assign(selected=(frame["rank"] == 1).astype(int)).drop(columns="rank") \
        .to_parquet(folder / "picked.parquet")
    (folder / "log.yaml").write_text(SPEC)
    (folder / "score.yaml").write_text(SCORE_SPEC)
    return {"ranked": folder / "ranked.csv", "scored": folder / "scored.jsonl", "picked": folder / "picked.parquet",
            "spec": folder / "log.yaml", "score_spec": folder / "score.yaml", "db": folder / "store.db"}


@pytest.fixture(scope="module")
def store(logs) -> Path:
    for label, spec in (("ranked", "spec"), ("scored", "score_spec"), ("picked", "spec")):
        argv = ["import", "--format", "decisions", "--data", str(logs[label]), "--spec", str(logs[spec]),
                "--task", "hiring", "--label", label, "--db", str(logs["db"])]
        assert main(argv) == 0
    return logs["db"]


def cli_json(capsys, argv: list[str]) -> pd.DataFrame:
    return pd.DataFrame(audit_json(*argv))


def check_grouping(table: pd.DataFrame, want: dict) -> None:
    rows = table.set_index("category")
    assert set(rows.index) == set(want)
    assert rows.loc["unknown", "applicants"] == want["unknown"]
    for category, (n, s, rate, ratio) in ((c, v) for c, v in want.items() if c != "unknown"):
        assert (rows.loc[category, "applicants"], rows.loc[category, "selected"]) == (n, s), category
        assert rows.loc[category, "selection_rate"] == pytest.approx(rate, abs=1e-12)
        if ratio is None:
            assert rows.loc[category, "note"] == "insufficient evidence" and pd.isna(rows.loc[category, "impact_ratio"])
        else:
            assert rows.loc[category, "impact_ratio"] == pytest.approx(ratio, abs=1e-12), category


GROUPINGS = {"sex": ["sex"], "race/ethnicity": ["race"], "intersection": ["sex", "race"]}


@pytest.mark.parametrize("k", [1, 2])
def test_rank_log_counts_rates_and_ratios(store, capsys, k):
    rows = applicants()
    table = cli_json(capsys, ["ll144", "--db", str(store), "--task", "hiring", "--k", str(k), "--format", "json"])
    mine = table[table["model"] == "ranked"]
    assert set(mine["outcome"]) == {"rank"} and set(mine["k"]) == {k}
    assert set(mine["first_date"]) == {"2024-03-01"} and set(mine["last_date"]) == {"2024-03-28"}
    for grouping, columns in GROUPINGS.items():
        check_grouping(mine[mine["grouping"] == grouping], expected(rows, [int(r["rank"] <= k) for r in rows], columns))
    race = mine[mine["grouping"] == "race/ethnicity"].set_index("category")
    assert bool(race.loc["A", "small"]) and race.loc["A", "applicants"] == 5  # 1.25 % of the 400
    assert mine[mine["grouping"] == "sex"].set_index("category").loc["unknown", "applicants"] == 80


def test_score_log_is_read_as_the_scoring_rate_above_the_median(store, capsys):
    rows = applicants()
    points = sorted(r["points"] for r in rows)
    median = (points[199] + points[200]) / 2
    table = cli_json(capsys, ["ll144", "--db", str(store), "--task", "hiring", "--format", "json"])
    mine = table[table["model"] == "scored"]
    assert set(mine["outcome"]) == {"score"} and mine["k"].isna().all()
    assert mine["score_median"].iloc[0] == pytest.approx(median)
    for grouping, columns in GROUPINGS.items():
        check_grouping(mine[mine["grouping"] == grouping], expected(rows, [int(r["points"] > median) for r in rows],
                                                                   columns))


def test_selected_log_is_the_recorded_selection_in_ll144_and_impact(store, capsys):
    rows = applicants()
    picked = [int(r["rank"] == 1) for r in rows]
    table = cli_json(capsys, ["ll144", "--db", str(store), "--task", "hiring", "--k", "3", "--format", "json"])
    mine = table[table["model"] == "picked"]
    assert set(mine["outcome"]) == {"selected"}  # --k does not apply
    check_grouping(mine[mine["grouping"] == "sex"], expected(rows, picked, ["sex"]))
    impact = cli_json(capsys, ["impact", "--db", str(store), "--task", "hiring", "--k", "1", "--models", "picked",
                               "--grouping", "sex", "--bootstrap", "20", "--format", "json"])
    assert impact["k"].isna().all() and set(impact["model"]) == {"picked"}
    rows_by = impact.set_index("category")
    for category, (n, _, rate, ratio) in ((c, v) for c, v in expected(rows, picked, ["sex"]).items()
                                          if c != "unknown"):
        assert rows_by.loc[category, "candidates"] == n
        assert rows_by.loc[category, "selection_rate"] == pytest.approx(rate, abs=1e-12)
        assert rows_by.loc[category, "impact_ratio"] == pytest.approx(ratio, abs=1e-12)
        assert bool(rows_by.loc[category, "four_fifths"]) == (ratio < 0.8)


def test_impact_on_the_rank_log_uses_the_quota_and_leaves_unknown_out_of_ratios(store, capsys):
    rows = applicants()
    impact = cli_json(capsys, ["impact", "--db", str(store), "--task", "hiring", "--k", "1,2", "--models", "ranked",
                               "--grouping", "sex", "--bootstrap", "20", "--format", "json"])
    for k in (1, 2):
        at = impact[impact["k"] == k].set_index("category")
        want = expected(rows, [int(r["rank"] <= k) for r in rows], ["sex"])
        assert at.loc["unknown", "candidates"] == want["unknown"] and pd.isna(at.loc["unknown", "impact_ratio"])
        best = max(want[c][2] for c in ("F", "M"))
        for category in ("F", "M"):
            assert at.loc[category, "candidates"] == want[category][0]
            assert at.loc[category, "selection_rate"] == pytest.approx(want[category][2], abs=1e-12)
            assert at.loc[category, "impact_ratio"] == pytest.approx(want[category][2] / best, abs=1e-12)


def test_small_category_excluded_only_with_a_justification(store, capsys):
    table = cli_json(capsys, ["ll144", "--db", str(store), "--task", "hiring", "--format", "json",
                              "--exclude-small", "five applicants, all in one pool week"])
    race = table[(table["model"] == "ranked") & (table["grouping"] == "race/ethnicity")].set_index("category")
    assert bool(race.loc["A", "excluded"]) and "five applicants" in race.loc["A", "note"]
    assert race.loc["A", "applicants"] == 5 and not pd.isna(race.loc["A", "selection_rate"])


def test_decisions_are_stored_compactly_and_read_back_as_rank_scores(store, logs, capsys):
    with Store(store, create=False) as opened:
        systems = opened.recorded_systems().set_index("model")
        scores = opened.pointwise_table()
        details = json.loads(opened.models().set_index("label").loc["ranked", "details"])
        counts = opened.row_counts()
        designs = opened.designs()
    assert systems.loc["ranked", ["outcome", "decisions", "pools"]].tolist() == ["rank", 400, 80]
    assert systems.loc["scored", ["outcome", "pools"]].tolist() == ["score", 1]  # no pool column: one pool
    assert counts["recorded_decisions"] == 1200 and counts["candidates"] == counts["label_results"] == 0
    assert details["source_sha256"] == hashlib.sha256(logs["ranked"].read_bytes()).hexdigest()
    assert details["unknown"] == {"sex": 80, "race": 0} and details["comparison"] == "most-selected"
    ranked = scores[scores["model"] == "ranked"].set_index("candidate_id")
    for row in applicants():
        assert ranked.loc[row["id"], "score"] == (SIZE - row["rank"]) / (SIZE - 1)
    assert ranked["pool"].nunique() == POOLS and ranked["group"].loc["a008"] == "unknown_W"
    design = designs["hiring", "eng"]
    assert str(design.pools) == "observed" and set(design.groupings) == {"sex × race", "sex", "race"}
    argv = ["import", "--format", "decisions", "--data", str(logs["ranked"]), "--spec", str(logs["spec"]),
            "--task", "hiring", "--label", "ranked", "--db", str(store)]
    assert main(argv) == 0  # the same source again: replaced, not added (one more run in the audit trail)
    with Store(store, create=False) as opened:
        assert opened.row_counts() == {**counts, "runs": counts["runs"] + 1}


def test_each_decision_keeps_its_date_in_the_decision_table(store):
    with Store(store, create=False) as opened:
        scores = StoreTables.read(opened).scores
    ranked = scores[scores["model"] == "ranked"].set_index("candidate_id")
    assert all(ranked.loc[row["id"], "date"] == row["day"] for row in applicants())
    assert scores.loc[scores["model"] == "scored", "date"].isna().all()  # the score log's spec names no date column


def test_metrics_run_on_the_rank_log(store, capsys):
    capsys.readouterr()
    assert main(["metrics", "--db", str(store), "--task", "hiring", "--models", "ranked", "--k", "1,2",
                 "--bootstrap", "10", "--format", "csv"]) == 0
    table = pd.read_csv(pd.io.common.StringIO(capsys.readouterr().out))
    assert set(table["k"]) == {1, 2} and table["dp_gap"].notna().all() and set(table["model"]) == {"ranked"}
