"""The verdict rule on synthetic score tables whose answer is known by construction."""
import io
import re
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import score_table

from audit.cli import main
from audit.errors import AuditError
from audit.engine.verdict import (ADVERSE, BEYOND_REACH, INCONCLUSIVE, MORE_DATA, NO_EVIDENCE, ON_THRESHOLD,
                                   PLAN_REACH, check_k, classify, rollup, rule_text, verdicts)


def table(n: int, means: dict[str, float], *, model: str = "m", seed: int = 0) -> pd.DataFrame:
    """n candidates per group, scores normal(mean, 1); every candidate qualified."""
    rng = np.random.default_rng(seed)
    return score_table({g: ([rng.normal(mu, 1) for _ in range(n)], [1] * n) for g, mu in means.items()}, model=model)


def test_classify_follows_the_rule():
    assert classify(0.5, 0.3, 0.01) == ADVERSE
    assert classify(0.5, 0.3, 0.2) == INCONCLUSIVE          # below the threshold but not significant
    assert classify(0.95, 0.85, float("nan")) == NO_EVIDENCE
    assert classify(0.95, 0.7, 0.01) == INCONCLUSIVE        # interval reaches below the threshold
    assert classify(0.7, 0.6, 0.04, threshold=0.6) == INCONCLUSIVE
    assert classify(0.5, 0.3, 0.04, alpha=0.01) == INCONCLUSIVE


def test_a_large_shift_is_adverse_and_equal_groups_are_not():
    scores = pd.concat([table(200, {"X": 0.0, "Y": -3.0}, model="biased"),
                        table(1000, {"X": 0.0, "Y": 0.0}, model="fair", seed=1)])
    out = verdicts(scores, grouping="group", k=1, n_boot=200, n_perm=200, plan_boot=20)
    biased = out[out["model"] == "biased"].set_index("category")
    fair = out[out["model"] == "fair"].set_index("category")
    assert biased.loc["Y", "verdict"] == ADVERSE
    assert biased.loc["Y", "p_adj"] <= 0.05 and biased.loc["Y", "impact_ratio"] < 0.8
    assert (fair["verdict"] != ADVERSE).all()
    assert fair["impact_ratio_lo"].min() > 0.8 and (fair["verdict"] == NO_EVIDENCE).all()
    overall = rollup(out, by=[])
    assert overall["verdict"].iloc[0] == ADVERSE and "Y" in overall["categories"].iloc[0]
    systems = rollup(out)
    assert list(systems["model"]) == ["biased", "fair"]


def test_a_small_sample_is_inconclusive_with_a_planner_estimate():
    out = verdicts(table(20, {"X": 0.0, "Y": -0.8}, seed=3), grouping="group", k=1, n_boot=200, n_perm=200,
                   plan_boot=30)
    row = out.set_index("category").loc["Y"]
    assert row["verdict"] == INCONCLUSIVE and row["plan"] == MORE_DATA
    assert row["plan_note"] == f"about {int(row['more_per_group']):,} more candidates per group needed"
    assert 20 < row["needed_per_group"] <= PLAN_REACH * 20 and row["more_per_group"] == row["needed_per_group"] - 20


def test_beyond_ten_times_the_sample_the_planner_gives_no_figure_and_says_why():
    """Issue 38, item 7: a ratio just above the threshold would need far more than 10× the present sample for its
    interval to clear it: no figure, the reason in words."""
    out = verdicts(table(20, {"X": 0.0, "Y": -0.5}, seed=3), grouping="group", k=1, n_boot=200, n_perm=200)
    row = out.set_index("category").loc["Y"]
    assert row["verdict"] == INCONCLUSIVE and row["plan"] == BEYOND_REACH and 0.8 < row["impact_ratio"] < 0.81
    assert np.isnan(row["needed_per_group"]) and np.isnan(row["more_per_group"]) and row["needed_unit"] == ""
    assert re.fullmatch(r"not settled by more data of this kind: the ratio 0\.80\d lies within 0\.00\d+ of the "
                        r"threshold 0\.8, and its interval would clear it only with over 10× the present 20 "
                        r"candidates per group", row["plan_note"]), row["plan_note"]


@pytest.mark.parametrize("pool", ["random:4", "per-group"])
def test_a_verdict_at_several_quotas_is_each_quotas_own_verdict(pool):
    """Issue 19: the permutations and planner draws made once for every k (and every most-selected category) give
    exactly the verdict each k gets alone, so the page can judge every k once and read the slider's k from it."""
    scores = pd.concat([table(8, {"W": 0.0, "X": -0.3, "Y": 0.4, "Z": -1.2}, model=m, seed=s)
                        for s, m in enumerate(["a", "b"])])
    options = dict(grouping="group", pool=pool, n_boot=100, n_perm=100, plan_boot=20)
    every = verdicts(scores, k=[1, 2, 3], **options)
    assert set(every["k"]) == {1, 2, 3} and set(every["verdict"]) >= {INCONCLUSIVE}
    for k in (1, 2, 3):
        alone = verdicts(scores, k=k, **options)
        pd.testing.assert_frame_equal(every[every["k"] == k].reset_index(drop=True), alone, check_exact=True)
    with pytest.raises(AuditError, match="pool size 4"):
        verdicts(scores, k=[1, 4], **options)


def test_k_at_the_pool_size_is_refused_naming_it():
    scores = table(10, {"X": 0.0, "Y": 0.0})
    assert check_k(scores, 1, "per-group", "group") == 2
    with pytest.raises(AuditError, match="pool size 2"):
        verdicts(scores, grouping="group", k=2)


def test_rule_text_names_threshold_and_alpha():
    text = rule_text(0.75, 0.9)
    assert "0.75" in text and "α = 0.1" in text and "90%" in text


def test_cli_verdict_on_a_score_file_and_k_at_pool_size(tmp_path, capsys):
    path = tmp_path / "scores.csv"
    table(40, {"P": 0.0, "Q": 0.0, "R": -3.0}).to_csv(path, index=False)
    options = ["--bootstrap", "100", "--permutations", "200"]
    assert main(["verdict", "--scores", str(path), "--k", "2", *options, "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["systems"][0]["verdict"] == ADVERSE and result["systems"][0]["categories"] == "group: R"
    assert result["overall"]["systems"] == result["overall"]["systems_adverse"] == 1
    assert main(["verdict", "--scores", str(path), "--k", "2", *options, "--format", "md"]) == 0
    assert "| R | 40 |" in capsys.readouterr().out
    assert main(["verdict", "--scores", str(path), "--k", "3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "pool size 3" in err and err.count("\n") == 1


def test_cli_verdict_on_the_demo_store_names_groups_and_refuses_k_at_pool_size(capsys):
    demo = Path(__file__).resolve().parents[1] / "data" / "demo.db"
    if not demo.exists():
        pytest.skip("data/demo.db not built")
    assert main(["verdict", "--db", str(demo), "--task", "resume", "--k", "2", "--grouping", "gender"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "pool size 2" in err
    assert main(["verdict", "--db", str(demo), "--task", "resume", "--k", "1", "--grouping", "race",
                 "--bootstrap", "100", "--permutations", "100", "--format", "csv"]) == 0
    table = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert set(table["grouping"]) == {"race"} and "White" in set(table["name"])
    assert set(table["verdict"]) <= {ADVERSE, INCONCLUSIVE, NO_EVIDENCE}
    assert main(["verdict", "--db", str(demo), "--task", "resume", "--k", "1", "--grouping", "race", "--models",
                 "gemma3-270m", "--subtasks", "retail", "--bootstrap", "100", "--permutations", "100",
                 "--format", "csv"]) == 0
    chosen = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert len(chosen) == 4 and set(chosen["model"]) == {"gemma3-270m"} and set(chosen["subtask"]) == {"retail"}
    assert main(["verdict", "--db", str(demo), "--task", "resume", "--k", "1", "--models", "nobody"]) == 2
    assert "model 'nobody' has no pointwise scores" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["metrics", "--k", "8"], ["impact", "--k", "2", "--grouping", "gender"],
                                  ["impact", "--k", "8"], ["verdict", "--k", "8"]])
def test_quota_at_the_pool_size_is_refused_by_every_command(argv, capsys):
    demo = Path(__file__).resolve().parents[1] / "data" / "demo.db"
    if not demo.exists():
        pytest.skip("data/demo.db not built")
    assert main([argv[0], "--db", str(demo), "--task", "resume", *argv[1:]]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and err.count("\n") == 1
    assert re.search(r"pool size.*\b(8|2)\b", err)


def test_the_study_at_k1_exact_p_values_families_and_a_planner_answer_for_every_inconclusive_cell(tmp_path):
    """On the recorded GPT hiring study (pools of 8, k = 1): p-values are exact (the strongest far below any
    permutation floor), the whole-audit family keeps fewer adverse verdicts than per-grouping Holm, every
    inconclusive cell has a planner answer of at least one more pool, and the Markdown shows ratios to three
    decimals so a flag never contradicts its shown value."""
    demo = Path(__file__).resolve().parents[1] / "data" / "demo.db"
    if not demo.exists():
        pytest.skip("data/demo.db not built")
    db = tmp_path / "demo.db"
    db.write_bytes(demo.read_bytes())
    from audit.engine.audit import Audit
    from audit.engine.selection import Selection
    from audit.store.database import Store
    from audit.engine.tables import StoreTables

    with Store(str(db), create=False) as store:
        tables = StoreTables.read(store)
    found = {family: Audit(tables, Selection("study-gpt-hiring", family=family)).verdicts((1,))
             for family in ("grouping", "system", "audit")}
    adverse = {family: int((t["verdict"] == ADVERSE).sum()) for family, t in found.items()}
    assert adverse["audit"] < adverse["grouping"] and adverse["system"] <= adverse["grouping"]
    table = found["system"]
    assert table["p"].min() < 1e-6 and set(table["family"]) == {"system"}
    inconclusive = table[table["verdict"] == INCONCLUSIVE]
    assert len(inconclusive) and set(inconclusive["plan"]) == {MORE_DATA, BEYOND_REACH}
    planned = inconclusive[inconclusive["plan"] == MORE_DATA]
    assert (planned["more_per_group"] >= 1).all() and set(planned["needed_unit"]) == {"pools"}
    assert planned["needed_per_group"].max() <= PLAN_REACH * 1000  # 1,000 rankings per job: no figure beyond 10×
    beyond = inconclusive[inconclusive["plan"] == BEYOND_REACH]
    assert beyond["needed_per_group"].isna().all() and beyond["more_per_group"].isna().all()
    assert beyond["plan_note"].str.startswith("not settled by more data of this kind: the ratio ").all()
    assert beyond["plan_note"].str.endswith(f"only with over {PLAN_REACH}× the present 1,000 pools").all()
    flagged = table[table["verdict"] == ADVERSE]
    assert (flagged["impact_ratio"] < 0.8).all() and (flagged["p_adj"] <= 0.05).all()
    near = table[(table["impact_ratio"] - 0.8).abs() < 0.005]
    assert len(near) and all(f"{r:.3f}" != "0.800" or r >= 0.8 for r in near["impact_ratio"])


def test_a_ratio_on_the_threshold_says_no_sample_separates_them(tmp_path, capsys):
    """Issue 38, item 7: at a ratio of exactly 0.8 the planning ratio is the threshold itself, so no sample size
    decides; the cell says so in the table (``plan``) and in words, never "?" or no answer at all."""
    path = tmp_path / "scores.csv"  # P beats Q in 5 of the 9 pairs: rates 5/9 and 4/9 at k = 1, ratio 0.8
    score_table({"P": ([1, 4, 8], [1] * 3), "Q": ([2, 3, 7], [1] * 3)}).to_csv(path, index=False)
    options = ["verdict", "--scores", str(path), "--k", "1", "--bootstrap", "100", "--permutations", "100"]
    assert main([*options, "--format", "json"]) == 0
    row = next(r for r in json.loads(capsys.readouterr().out)["categories"] if r["category"] == "Q")
    assert row["impact_ratio"] == pytest.approx(0.8) and row["verdict"] == INCONCLUSIVE
    assert row["plan"] == ON_THRESHOLD and row["needed_per_group"] is None and row["more_per_group"] is None
    note = "not settled by more data: the ratio sits on the threshold 0.8, and no sample size separates them"
    assert row["plan_note"] == note
    assert main([*options, "--format", "md"]) == 0
    assert f"| inconclusive — {note} |" in capsys.readouterr().out


def test_a_verdict_needs_no_qualification_labels(tmp_path, capsys):
    """Issue 38, item 8: an uploaded pilot whose group has no qualified candidate gets its impact verdict (only ΔEO
    reads the labels, and the metrics still refuse it, naming the group)."""
    path = tmp_path / "scores.csv"
    rng = np.random.default_rng(0)
    score_table({g: (rng.normal(0, 1, 30), [int(g != "Asian_Female")] * 30)
                 for g in ("Asian_Female", "Black_Male", "White_Male")}).to_csv(path, index=False)
    assert main(["verdict", "--scores", str(path), "--k", "1", "--bootstrap", "100", "--permutations", "100",
                 "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert {r["category"] for r in result["categories"]} == {"Asian_Female", "Black_Male", "White_Male"}
    assert main(["metrics", "--scores", str(path), "--reference", "White_Male", "--k", "1"]) == 2
    assert "group 'Asian_Female' has no qualified candidate" in capsys.readouterr().err


def test_the_store_wide_line_counts_systems_and_says_adverse_only_for_the_audit_family(tmp_path, capsys):
    """Issue 38, item 5: one adverse system among fair ones makes no store-wide "adverse impact" under the default
    family (each system tested at its own α): the line counts systems per verdict; under family audit, adjusted
    across every system, it also gives the store-wide verdict."""
    path = tmp_path / "scores.csv"
    pd.concat([table(40, {"P": 0.0, "Q": 0.0, "R": -3.0}, model="biased"),
               *(table(400, {"P": 0.0, "Q": 0.0, "R": 0.0}, model=f"fair{i}", seed=i) for i in (1, 2))]
              ).to_csv(path, index=False)
    options = ["verdict", "--scores", str(path), "--k", "1", "--bootstrap", "200", "--permutations", "200"]
    assert main([*options, "--format", "json"]) == 0
    overall = json.loads(capsys.readouterr().out)["overall"]
    assert (overall["family"], overall["systems"], overall["systems_adverse"]) == ("system", 3, 1)
    fair = overall["systems_inconclusive"], overall["systems_no_evidence"]
    assert sum(fair) == 2 and "verdict" not in overall and "categories" not in overall
    assert overall["summary"] == (f"1 system adverse impact, {fair[0]} inconclusive, {fair[1]} no evidence of adverse "
                                  "impact; no store-wide verdict: each system is judged at its own α (family system; "
                                  "only family audit adjusts across systems)")
    assert main([*options, "--format", "md"]) == 0
    assert f"**Overall:** {overall['summary']}." in capsys.readouterr().out
    assert main([*options, "--family", "audit", "--format", "json"]) == 0
    overall = json.loads(capsys.readouterr().out)["overall"]
    assert overall["verdict"] == ADVERSE and overall["categories"] == "group: R" and overall["systems_adverse"] == 1
    assert overall["summary"].startswith(f"{ADVERSE} (family audit, adjusted across every system): 1 system")


def test_holm_within_every_family_at_once_equals_holm_family_by_family():
    from audit.metrics.inference import adjust, holm_within

    rng = np.random.default_rng(8)
    for _ in range(200):
        n = int(rng.integers(1, 30))
        family, p = rng.integers(0, 4, n), rng.random(n) / rng.integers(1, 50, n)
        p[rng.random(n) < 0.2] = np.nan
        p[rng.random(n) < 0.2] = 0.25  # ties
        adjusted, size = holm_within(p, family)
        for f in np.unique(family):
            at = family == f
            assert adjusted[at].tobytes() == adjust(p[at], "holm").tobytes()
            assert (size[at] == np.isfinite(p[at]).sum()).all()
