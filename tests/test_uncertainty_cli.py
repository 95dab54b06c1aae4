"""CLI: ``plan`` (from a store or a score file), ``metrics --permutations``, ``validity --ci``; errors exit 2."""
import json
from pathlib import Path

import pandas as pd
import pytest

from audit.cli import main
from audit.paths import DEMO_STORE
from audit.store.tables import score_table
from audit.store.database import Store


@pytest.fixture(scope="module")
def pilot(tmp_path_factory) -> Path:
    with Store(DEMO_STORE, create=False) as store:
        scores = score_table(store)
    path = tmp_path_factory.mktemp("pilot") / "scores.csv"
    scores[(scores["model"] == "gemma3-270m") & (scores["subtask"] == "retail")].to_csv(path, index=False)
    return path


def test_plan_from_the_demo_store_answers_per_model_and_subtask(capsys):
    assert main(["plan", "--db", str(DEMO_STORE), "--task", "resume", "--reference", "W_M", "--k", "2", "--sizes", "8,32,128",
                 "--bootstrap", "50"]) == 0
    result = json.loads(capsys.readouterr().out)
    summary = pd.DataFrame(result["summary"])
    with Store(DEMO_STORE, create=False) as store:
        scores = score_table(store)
    pointwise = scores[(scores["mode"] == "pointwise") & (scores["task"] == "resume")]
    sizes = pointwise.groupby(["model", "subtask", "group"])["candidate_id"].nunique().groupby(["model", "subtask"]).min()
    assert len(summary) == len(sizes)
    assert summary.set_index(["model", "subtask"])["pilot_n"].sort_index().tolist() == sizes.sort_index().tolist()
    assert (summary["needed_n"] > summary["pilot_n"]).all()
    curve = pd.DataFrame(result["curve"])
    widest = curve.groupby(["model", "subtask", "n"])["half_width"].max().groupby(level=[0, 1]).apply(list)
    assert all(w[0] > w[-1] for w in widest)  # more candidates, narrower intervals
    assert set(curve["n"]) == {8, 32, 128} | set(sizes)


def test_plan_from_a_score_file_and_a_looser_target_needs_fewer(pilot, capsys):
    needed = []
    for target in ("0.05", "0.2"):
        assert main(["plan", "--scores", str(pilot), "--reference", "W_M", "--target", target, "--format", "csv",
                     "--bootstrap", "50"]) == 0
        needed.append(int(pd.read_csv(pd.io.common.StringIO(capsys.readouterr().out))["needed_n"].iloc[0]))
    assert needed[1] < needed[0]


@pytest.mark.parametrize("argv, message", [
    (["--db", "no-such.db"], "does not exist"),
    (["--sizes", "8,x"], "--sizes"),
    (["--mode", "pairwise-likelihood"], "pointwise"),
    (["--target", "2"], "target half-width"),
    (["--k", "9"], "quota k=9"),
    (["--task", "nope"], "task 'nope' has no results in this store; its tasks are: resume, study-gpt-hiring"),
])
def test_plan_errors_are_one_line(argv, message, capsys):
    base = ["plan", "--reference", "W_M", "--bootstrap", "20"]
    if "--db" not in argv:
        base += ["--db", str(DEMO_STORE), "--task", "resume"]  # a later --task overrides it
    assert main(base + argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and message in err and err.count("\n") == 1


def test_metrics_permutations_and_validity_bands(pilot, capsys):
    assert main(["metrics", "--scores", str(pilot), "--reference", "W_M", "--k", "1-2", "--permutations", "199",
                 "--adjust", "bh", "--format", "csv"]) == 0
    table = pd.read_csv(pd.io.common.StringIO(capsys.readouterr().out))
    assert {"dp_gap_p", "eo_gap_p", "dp_gap_padj", "eo_gap_padj"} <= set(table.columns)
    assert (table["dp_gap_padj"] >= table["dp_gap_p"]).all() and (table["dp_gap_p"] >= 1 / 200).all()
    assert main(["validity", "--scores", str(pilot), "--reference", "W_M", "--k", "2", "--ci", "0.9",
                 "--bootstrap", "40"]) == 0
    result = json.loads(capsys.readouterr().out)
    overall = [row for row in result["correlations"] if row["scope"] == "overall" and row["r"] is not None]
    assert overall and all(row["r_lo"] <= row["r_hi"] for row in overall)
    assert all("ndcg_lo" in row for row in result["ndcg"])
