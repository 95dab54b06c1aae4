"""Every audit command on imported recorded rankings (one job of the 2024 GPT hiring study, both models): no error,
the stored observed pools used without being asked for, and GPT-3.5 against GPT-4 compared with unpaired intervals
(the two systems ranked different candidates)."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from audit.engine.audit import Audit
from audit.cli import main
from audit.design import AuditDesign, PoolDesign, split_groupings
from audit.tasks.recorded import RANKING_RUN_NAMES
from audit.reporting.ll144_section import ll144_section
from audit.engine.selection import Selection
from audit.store.database import Store
from audit.engine.tables import StoreTables
from recorded_study import extracted, one_job, study_table

JOB = "HR specialist"
FAST = ["--bootstrap", "40", "--permutations", "40"]


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> tuple[Path, Path]:
    """(runs of one job, store holding them as task ``study``)."""
    runs = one_job(extracted(tmp_path_factory.mktemp("study")), tmp_path_factory.mktemp("job"), JOB)
    db = tmp_path_factory.mktemp("store") / "small.db"
    assert main(["import", "--format", "ranking-runs", "--data", str(runs), "--task", "study", "--db", str(db)]) == 0
    return runs, db


def output(capsys, argv: list[str]) -> str:
    capsys.readouterr()
    assert main(argv) == 0, capsys.readouterr().err
    captured = capsys.readouterr()
    assert "error" not in captured.err.lower()
    return captured.out


def test_impact_uses_the_stored_observed_pools_at_every_k(small, capsys):
    runs, db = small
    table = pd.DataFrame(json.loads(output(capsys, ["impact", "--db", str(db), "--k", "1-7", "--bootstrap", "20",
                                                    "--format", "json", "--grouping", "race × gender"])))
    assert sorted(table["k"].unique()) == list(range(1, 8)) and set(table["model"]) == {"gpt-3.5-turbo", "gpt-4"}
    top = table[table["k"] == 1].merge(study_table(runs, (JOB,)), on=["model", "subtask", "category"])
    assert len(top) == 16 and (top["selection_rate"] - top["rate"]).abs().max() < 1e-12
    # each pool selects k of its 8: the rates of one system and k average k / 8
    means = table.groupby(["model", "k"])["selection_rate"].mean()
    assert all(abs(means[m, k] - k / 8) < 1e-12 for m, k in means.index)


def test_metrics_validity_verdict_ll144_run(small, capsys):
    _, db = small
    metrics = pd.read_csv(pd.io.common.StringIO(output(
        capsys, ["metrics", "--db", str(db), "--k", "1-7", "--format", "csv", *FAST])))
    assert set(metrics["k"]) == set(range(1, 8)) and metrics["rabbi"].notna().all()
    assert metrics["dp_gap_padj"].between(0, 1).all()
    validity = json.loads(output(capsys, ["validity", "--db", str(db), "--k", "1", "--bootstrap", "20"]))
    assert validity["correlations"]
    verdict = json.loads(output(capsys, ["verdict", "--db", str(db), "--k", "1", *FAST]))
    assert {s["model"] for s in verdict["systems"]} == {"gpt-3.5-turbo", "gpt-4"}
    assert "### race/ethnicity" in output(capsys, ["ll144", "--db", str(db), "--k", "1", "--format", "md"])


def test_compare_gpt35_gpt4_unpaired(small, capsys):
    _, db = small
    found = json.loads(output(capsys, ["compare", "--db", str(db), "--a", "gpt-3.5-turbo", "--b", "gpt-4",
                                       "--k", "1,3", "--bootstrap", "60"]))
    gaps = pd.DataFrame(found["gaps"])
    assert len(gaps) == 7 * 2 and not gaps["paired"].any()
    assert found["flips"] == [] and found["rank_correlation"] == []
    rates = pd.DataFrame(json.loads(output(capsys, ["impact", "--db", str(db), "--k", "1,3", "--bootstrap", "20",
                                                    "--format", "json", "--grouping", "race × gender"])))
    rate = rates.set_index(["model", "category", "k"])["selection_rate"]
    for row in gaps.itertuples():
        gap = {m: rate[m, row.group, row.k] - rate[m, "W_M", row.k] for m in ("gpt-3.5-turbo", "gpt-4")}
        assert row.dp_a == pytest.approx(gap["gpt-3.5-turbo"], abs=1e-12)
        assert row.dp_diff == pytest.approx(gap["gpt-4"] - gap["gpt-3.5-turbo"], abs=1e-12)
        assert row.dp_diff_lo <= row.dp_diff <= row.dp_diff_hi and row.dp_diff_hi > row.dp_diff_lo


def test_report_with_comparison(small, tmp_path):
    _, db = small
    out = tmp_path / "report.html"
    assert main(["report", "--db", str(db), "--k", "1", "--out", str(out), "--compare", "gpt-3.5-turbo", "gpt-4",
                 *FAST]) == 0
    text = out.read_text()
    assert "gpt-3.5-turbo" in text and "gpt-4" in text and "Comparison" in text
    assert "Bias audit summary (NYC Local Law 144)" in text and "Black men (B_M)" in text
    # what was audited is the imported decisions, not a prompt scored here: no empty prompt section, no empty hash
    with Store(db) as store:
        decisions = int(store.recorded_systems()["decisions"].sum())
    assert f"Candidate data: {decisions:,} recorded decisions" in text and decisions == 2 * 1000 * 8
    assert "Nothing was scored here" in text and "Prompts as scored" not in text and "n/a (recorded)" in text


def test_positional_names_read_a_piece_by_its_part():
    design = AuditDesign("t", "s", "W_M", PoolDesign(), ("rank",), (1.0,), "", split_groupings(("race", "gender")),
                         names=RANKING_RUN_NAMES)
    assert [design.display_name(c) for c in ("A_W", "W_W", "W_M", "H_M")] == [
        "Asian women", "White women", "White men", "Hispanic men"]
    assert (design.display_name("W", "race"), design.display_name("W", "gender")) == ("White", "women")
    assert design.display_name("W_W", "gender") == "women" and design.display_name("B_W", "race") == "Black"
    assert design.display_name("W") == "W"  # a lone W without its grouping could be either: the code
    assert design.display_name("X_M") == "X_M"


def test_imported_codes_read_as_names_in_markdown_only(small, capsys):
    _, db = small
    argv = ["impact", "--db", str(db), "--k", "1", "--bootstrap", "20", "--models", "gpt-4"]
    md = output(capsys, [*argv, "--format", "md"])
    assert "| A_W | Asian women |" in md and "| W | women |" in md and "| W | White |" in md
    csv = output(capsys, [*argv, "--format", "csv"])
    assert "A_W" in csv and "Asian women" not in csv
    verdict = output(capsys, ["verdict", "--db", str(db), "--k", "1", "--format", "md", *FAST])
    assert "White men" in verdict and "W_M" not in verdict.split("## Per category")[1]


def tables_of(db: Path) -> StoreTables:
    with Store(db, create=False) as store:
        return StoreTables.read(store)


def test_ll144_section_reads_the_study(small):
    runs, db = small
    tables = tables_of(db)
    selection = Selection("study", "pointwise", ks=(1,))
    summary = Audit(tables, selection).ll144(1)
    assert list(summary["grouping"].unique()) == ["sex", "race/ethnicity", "intersection"]
    study = study_table(runs, (JOB,)).set_index(["model", "category"])["rate"]
    both = summary[(summary["grouping"] == "intersection") & (summary["category"] != "unknown")]
    assert len(both) == 16 and (both["applicants"] == 1000).all()
    assert all(abs(r.selection_rate - study[r.model, r.category]) < 1e-12 for r in both.itertuples())
    women = summary[(summary["grouping"] == "sex") & (summary["category"] == "W")].set_index("model")
    for model in ("gpt-3.5-turbo", "gpt-4"):  # sex: the four women's groups pooled, 4 × 1000 applicants
        assert women.loc[model, "selection_rate"] == pytest.approx(
            sum(study[model, f"{race}_W"] for race in "ABHW") / 4, abs=1e-12)
    html = ll144_section(Audit(tables, selection), 1, distribution_date="2024-03-08")
    for text in ("Bias audit summary (NYC Local Law 144)", "Asian women (A_W)", "women (W)", "White (W)",
                 "2023-11-21", "2024-03-08", "unknown category"):
        assert text in html
    assert "insufficient evidence</td>" not in html


def test_ll144_section_small_pools_read_insufficient(small, tmp_path):
    runs, _ = small
    few = tmp_path / "few" / "gpt-4" / JOB / "x"
    few.mkdir(parents=True)
    for source in sorted((runs / "gpt-4" / JOB).glob("*/*.json"))[:12]:
        (few / source.name).write_bytes(source.read_bytes())
    db = tmp_path / "few.db"
    assert main(["import", "--format", "ranking-runs", "--data", str(tmp_path / "few"), "--task", "few",
                 "--db", str(db)]) == 0
    summary = Audit(tables_of(db), Selection("few", "pointwise", ks=(1,))).ll144(1)
    race = summary[(summary["grouping"] == "race/ethnicity") & (summary["category"] != "unknown")]
    assert (race["applicants"] == 24).all() and (race["note"] == "insufficient evidence").all()
    assert race["impact_ratio"].isna().all()
    html = ll144_section(Audit(tables_of(db), Selection("few", "pointwise", ks=(1,))), 1)
    assert html.count("insufficient evidence") >= 4 + 8


def test_no_ll144_section_for_scored_models():
    tables = tables_of(Path(__file__).resolve().parents[1] / "data" / "demo.db")
    assert ll144_section(Audit(tables, Selection("resume", "pointwise", ks=(1,))), 1) == ""
