"""Import of the 2024 GPT hiring study's recorded rankings: the tool's top-1 selection rates and impact ratios equal
the study's published table for all 64 (model, job, group) rows (computed here from the raw JSON as the study's
notebook computes them, and pinned for several published figures); a broken file is named and nothing is written."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from audit.cli import main
from audit.store.database import Store
from recorded_study import JOBS, extracted, study_table

#: (model, job, group) → (selection rate, impact ratio) as published in the study's notebook
PUBLISHED = {
    ("gpt-3.5-turbo", "HR specialist", "H_W"): (0.181, 1.0),
    ("gpt-3.5-turbo", "HR specialist", "W_M"): (0.096, 0.530387),
    ("gpt-3.5-turbo", "software engineer", "B_W"): (0.110, 0.763889),
    ("gpt-3.5-turbo", "retail", "W_M"): (0.104, 0.742857),
    ("gpt-3.5-turbo", "financial analyst", "B_M"): (0.076, 0.441860),
    ("gpt-3.5-turbo", "financial analyst", "A_W"): (0.172, 1.0),
    ("gpt-4", "HR specialist", "B_M"): (0.103, 0.700680),
    ("gpt-4", "HR specialist", "H_W"): (0.147, 1.0),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    return extracted(tmp_path_factory.mktemp("study"))


@pytest.fixture(scope="module")
def store(runs, tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("store") / "study.db"
    assert main(["import", "--format", "ranking-runs", "--data", str(runs), "--task", "study", "--db", str(db)]) == 0
    return db


def test_top1_equals_published_table(runs, store, capsys):
    capsys.readouterr()
    assert main(["impact", "--db", str(store), "--k", "1", "--grouping", "race × gender",
                 "--bootstrap", "20", "--format", "json"]) == 0
    tool = pd.DataFrame(json.loads(capsys.readouterr().out))
    expected = study_table(runs)
    assert len(expected) == 64
    both = expected.merge(tool, on=["model", "subtask", "category"], how="left", validate="one_to_one")
    assert both["selection_rate"].notna().all()
    assert (both["selection_rate"] - both["rate"]).abs().max() < 1e-12
    assert (both["impact_ratio"] - both["ratio"]).abs().max() < 1e-12
    assert (both["candidates"] == 1000).all()
    for (model, job, group), (rate, ratio) in PUBLISHED.items():
        row = both[(both["model"] == model) & (both["subtask"] == job) & (both["category"] == group)].iloc[0]
        assert row["selection_rate"] == pytest.approx(rate, abs=1e-12)
        assert row["impact_ratio"] == pytest.approx(ratio, abs=1e-6)


def test_import_lists_partial_replies_and_source(store, capsys):
    with Store(store, create=False) as opened:
        models = opened.models().set_index("label")
        designs = opened.designs()
    assert sorted(models.index) == ["gpt-3.5-turbo", "gpt-4"]
    details = {m: json.loads(models.loc[m, "details"]) for m in models.index}
    assert details["gpt-3.5-turbo"]["partial_replies"] == 452 and details["gpt-4"]["partial_replies"] == 78
    assert details["gpt-4"]["runs"] == 4000 and details["gpt-4"]["rows"] == 32000
    assert (details["gpt-4"]["first_date"], details["gpt-4"]["last_date"]) == ("2023-11-21", "2023-12-01")
    assert sorted(s for _, s in designs) == sorted(JOBS)
    assert all(str(d.pools) == "observed" and set(d.groupings) == {"race × gender", "race", "gender"}
               for d in designs.values())


def test_metrics_runs_on_imported_task(store, capsys):
    capsys.readouterr()
    assert main(["metrics", "--db", str(store), "--k", "1,3", "--format", "csv", "--bootstrap", "10"]) == 0
    table = pd.read_csv(pd.io.common.StringIO(capsys.readouterr().out))
    assert set(table["model"]) == {"gpt-3.5-turbo", "gpt-4"} and set(table["k"]) == {1, 3}
    assert "W_M" not in set(table["group"])  # the stored reference: every other group's gap against it
    assert len(table) == 2 * 4 * 7 * 2 and table["dp_gap"].notna().all()


def test_broken_json_is_named_and_nothing_written(runs, tmp_path, capsys):
    broken = tmp_path / "runs"
    target = broken / "gpt-4" / "retail" / "1121"
    target.mkdir(parents=True)
    for source in sorted((runs / "gpt-4" / "retail" / "1121").glob("run_1*.json"))[:3]:
        (target / source.name).write_bytes(source.read_bytes())
    (target / "run_bad.json").write_text('{"choices": [')
    db = tmp_path / "s.db"
    with Store(db) as existing:
        existing.register_model("x", "x", {})
    before = db.read_bytes()
    capsys.readouterr()
    assert main(["import", "--format", "ranking-runs", "--data", str(broken), "--db", str(db)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "run_bad.json" in err[0]
    assert db.read_bytes() == before


def test_ll144_summary_on_imported_rankings(runs, store, capsys):
    capsys.readouterr()
    assert main(["ll144", "--db", str(store), "--k", "1", "--format", "json"]) == 0
    table = pd.DataFrame(json.loads(capsys.readouterr().out))
    both = table[table["grouping"] == "intersection"].merge(study_table(runs), on=["model", "subtask", "category"])
    assert len(both) == 64
    assert (both["selection_rate"] - both["rate"]).abs().max() < 1e-12
    assert (both["impact_ratio"] - both["ratio"]).abs().max() < 1e-12
    assert (table.loc[table["category"] == "unknown", "applicants"] == 0).all()
    assert set(table["first_date"]) == {"2023-11-21"} and table["p_holm"].notna().any()
    capsys.readouterr()
    assert main(["ll144", "--db", str(store), "--k", "1", "--format", "md", "--task", "study"]) == 0
    assert "### race/ethnicity" in capsys.readouterr().out


def test_validity_bands_hold_the_estimate_on_recorded_pools(store, capsys):
    """A replicate's metrics and gaps come from the same resampled pools, so r's interval holds r (with metrics
    resampling candidates and gaps resampling pools independently, r = 0.81 sat above its interval [0.38, 0.74])."""
    capsys.readouterr()
    assert main(["validity", "--db", str(store), "--k", "2", "--ci", "0.95", "--bootstrap", "100"]) == 0
    rows = pd.DataFrame(json.loads(capsys.readouterr().out)["correlations"])
    overall = rows[rows["scope"] == "overall"]
    assert len(overall) == 8 and (overall["n"] == 56).all()
    unbiased = overall[overall["metric"].isin(["delta", "emd", "rabbi"])]  # JSD's plug-in estimate is biased upward
    assert len(unbiased) == 6
    assert ((unbiased["r_lo"] <= unbiased["r"]) & (unbiased["r"] <= unbiased["r_hi"])).all()
