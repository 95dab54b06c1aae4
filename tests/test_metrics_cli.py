"""The metrics and validity sub-commands: JSON/CSV output, CI columns, the pairwise note, errors as exit status 2."""
import importlib.util
import itertools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from helpers import audit_status

KEYS = ["model", "task", "subtask", "mode", "group", "k", "delta", "jsd", "emd", "rabbi", "rabbi_pvalue",
        "delta_qualified", "jsd_qualified", "emd_qualified", "rabbi_qualified", "dp_gap", "eo_gap"]
GROUPS = ["W_M", "W_F", "B_M", "B_F"]


run = audit_status  # (exit status, stdout, stderr) of python -m audit, in this process


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Pointwise scores for three models × two subtasks, and pairwise scores with their pair outcomes."""
    rng = np.random.default_rng(0)
    rows, pairs = [], []
    for model, subtask in itertools.product(["m1", "m2", "m3"], ["se", "hr"]):
        rows += [dict(model=model, task="resume", subtask=subtask, mode="pointwise", candidate_id=f"{g}-{i}", group=g,
                      qualified=int(i % 3 == 0), score=round(rng.random(), 2)) for g in GROUPS for i in range(9)]
        for pool in range(12):
            members = [(g, f"{g}-{(pool + j) % 9}") for j, g in enumerate(GROUPS)]
            wins = {c: 0.0 for _, c in members}
            for (ga, a), (gb, b) in itertools.combinations(members, 2):
                outcome = rng.choice(["a", "b", "inconsistent"])
                pairs.append(dict(model=model, task="resume", subtask=subtask, mode="pairwise", pool=pool,
                                  candidate_a=a, candidate_b=b, group_a=ga, group_b=gb, outcome=outcome))
                for c, share in ((a, {"a": 1, "b": 0}), (b, {"a": 0, "b": 1})):
                    wins[c] += share.get(outcome, 0.5)
            rows += [dict(model=model, task="resume", subtask=subtask, mode="pairwise", candidate_id=c, group=g,
                          qualified=int(c[-1] in "036"), score=wins[c], pool=pool) for g, c in members]
    folder = tmp_path_factory.mktemp("metrics")
    pd.DataFrame(rows).to_csv(folder / "scores.csv", index=False)
    pd.DataFrame(pairs).to_csv(folder / "pairs.csv", index=False)
    table = pd.DataFrame(rows)
    table["pool"] = table["pool"].astype("Int64")  # as `python -m audit scores` exports it: NA on pointwise rows
    table.to_parquet(folder / "scores.parquet", index=False)
    table[table["mode"] == "pointwise"].drop(columns="pool").to_csv(folder / "pointwise.csv", index=False)
    return folder


def test_metrics_json_has_one_object_per_key_group_and_k(files):
    status, out, err = run("metrics", "--scores", str(files / "scores.csv"), "--reference", "W_M", "--k", "1-3")
    assert status == 0
    rows = json.loads(out)
    assert all(list(row) == KEYS for row in rows)
    assert len(rows) == 3 * 2 * 2 * 3 * 3  # models × subtasks × modes × groups × k
    assert {row["k"] for row in rows} == {1, 2, 3}
    pairwise = [row for row in rows if row["mode"] == "pairwise"]
    assert all(row["delta"] is None and row["delta_qualified"] is None for row in pairwise)
    assert err.strip() == "note: no --pairs file; delta and delta_qualified are null for pairwise rows"


def test_metrics_with_pairs_ci_and_csv(files, tmp_path):
    target = tmp_path / "out.csv"
    status, out, err = run("metrics", "--scores", str(files / "scores.csv"), "--reference", "W_M", "--k", "2",
                           "--pairs", str(files / "pairs.csv"), "--ci", "0.9", "--bootstrap", "50", "--seed", "3",
                           "--format", "csv", "--out", str(target))
    assert (status, out, err) == (0, "", "")
    table = pd.read_csv(target)
    assert list(table.columns) == KEYS + [f"{n}_{e}" for n in ("rabbi", "rabbi_qualified", "dp_gap", "eo_gap")
                                          for e in ("lo", "hi")]
    assert table["delta"].notna().all() and table["rabbi_lo"].le(table["rabbi_hi"]).all()


def test_metrics_random_pools(files):
    status, out, _ = run("metrics", "--scores", str(files / "pointwise.csv"), "--reference", "W_M", "--k", "1,5",
                         "--pool", "random:6")
    assert status == 0 and {row["k"] for row in json.loads(out)} == {1, 5}


def test_parquet_input_matches_csv(files):
    from_csv = run("metrics", "--scores", str(files / "scores.csv"), "--reference", "W_M", "--k", "2")
    from_parquet = run("metrics", "--scores", str(files / "scores.parquet"), "--reference", "W_M", "--k", "2")
    assert from_csv[0] == from_parquet[0] == 0
    assert json.loads(from_csv[1]) == json.loads(from_parquet[1])


def test_validity_reports_correlations_ndcg_and_rankings(files):
    status, out, _ = run("validity", "--scores", str(files / "pointwise.csv"), "--reference", "W_M", "--k", "2")
    assert status == 0
    result = json.loads(out)
    assert result["k"] == [2] and result["reference"] == "W_M"
    overall = [r for r in result["correlations"] if r["scope"] == "overall"]
    assert {(r["gap"], r["metric"]) for r in overall} == {(g, m) for g in ("dp", "eo")
                                                         for m in ("delta", "jsd", "emd", "rabbi")}
    assert {r["scope"] for r in result["correlations"]} == {"overall", "W_F", "B_M", "B_F"}
    assert all(r["n"] == 18 for r in overall)
    assert {r["n"] for r in result["ndcg"]} == {1, 2, 3}
    assert all(0 <= r["ndcg"] <= 1 for r in result["ndcg"])
    assert {r["metric"] for r in result["rankings"]} == {"true", "delta", "jsd", "emd", "rabbi"}


def test_bad_input_is_one_error_line_and_status_2(files, tmp_path):
    status, out, err = run("metrics", "--scores", str(files / "scores.csv"), "--reference", "Z_Z", "--k", "1")
    assert status == 2 and out == ""
    assert err.startswith("error: reference group 'Z_Z' not found among the ")
    status, _, err = run("metrics", "--scores", str(files / "pointwise.csv"), "--reference", "W_M", "--k", "9")
    assert status == 2 and "quota k=9 is not below the pool size 4" in err
    status, _, err = run("validity", "--scores", str(tmp_path / "nope.parquet"), "--reference", "W_M", "--k", "2")
    assert status == 2 and "cannot read score table" in err


@pytest.mark.skipif(importlib.util.find_spec("audit.commands.scoring_commands") is None,
                    reason="python -m audit needs audit.commands.scoring_commands (another issue)")
def test_python_dash_m_audit(files):
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-m", "audit", "metrics", "--scores", str(files / "pointwise.csv"),
                           "--reference", "W_M", "--k", "2", "--format", "json"], cwd=root, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert all(list(row) == KEYS for row in json.loads(done.stdout))


def test_paper_exact_preset_and_inconsistent_threshold(files):
    hand = Path(__file__).parent / "data" / "paper_exact_scores.csv"
    status, out, _ = run("metrics", "--scores", str(hand), "--reference", "R", "--k", "1", "--pool", "random:3",
                         "--preset", "paper-exact")
    assert status == 0 and json.loads(out)[0]["jsd"] == pytest.approx(0.0433313, abs=1e-6)  # see test_metrics_presets
    pairs = pd.read_csv(files / "pairs.csv")
    rates = pairs.groupby("model")["outcome"].apply(lambda o: (o == "inconsistent").mean())
    cut = float(rates.sort_values().iloc[1])  # keeps the two most consistent models, drops the third
    status, out, err = run("validity", "--scores", str(files / "scores.csv"), "--reference", "W_M", "--k", "1",
                           "--pairs", str(files / "pairs.csv"), "--max-inconsistent", str(cut), "--preset",
                           "paper-exact")
    assert status == 0 and json.loads(out)["preset"] == "paper-exact"
    worst = rates.idxmax()
    assert f"note: left out {worst} · resume: excluded, {rates[worst]:.0%} of" in err  # as --db says it
    pairwise = [r for r in json.loads(out)["rankings"] if r["mode"] == "pairwise"]
    assert {r["model"] for r in pairwise} == set(rates.index) - {worst}
    status, _, err = run("metrics", "--scores", str(files / "scores.csv"), "--reference", "W_M", "--k", "1",
                         "--max-inconsistent", "0.5")
    assert status == 2 and "--max-inconsistent needs --pairs" in err


def test_shape_reports_skewness_and_kurtosis_per_group(files):
    status, out, _ = run("shape", "--scores", str(files / "pointwise.csv"))
    rows = pd.DataFrame(json.loads(out))
    assert status == 0 and len(rows) == 3 * 2 * len(GROUPS)
    scores = pd.read_csv(files / "pointwise.csv")
    one = scores[(scores.model == "m1") & (scores.subtask == "se") & (scores.group == "B_F")]["score"]
    row = rows[(rows.model == "m1") & (rows.subtask == "se") & (rows.group == "B_F")].iloc[0]
    centred = one - one.mean()
    m2, m3, m4 = (centred ** 2).mean(), (centred ** 3).mean(), (centred ** 4).mean()
    assert row["skewness"] == pytest.approx(m3 / m2 ** 1.5) and row["kurtosis"] == pytest.approx(m4 / m2 ** 2 - 3)
