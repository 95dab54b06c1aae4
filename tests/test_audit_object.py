"""Issue 30: one lazy Audit. A view not asked is not computed (impact ratios and verdicts need no metric pass), a
failing view raises only when asked, a k change is answered from the audit's memory, one quota check says the pool
size and grouping wherever k is checked, and every command builds the same Selection from the same flags."""
from __future__ import annotations

import io
import threading
from contextlib import redirect_stderr, redirect_stdout

import pandas as pd
import pytest

import audit.engine.audit as audit_module
import audit.engine.records as records_module
from audit.engine.audit import Audit
from audit.engine.diagnostics import answer_shares
from audit.cli import build_parser, main
from audit.commands.options import selection_from
from audit.errors import AuditError
from audit.paths import DEMO_STORE
from audit.engine.selection import Selection
from audit.store.database import Store, data_hash
from audit.store.runs import trail
from audit.store.tables import answer_table, pair_table
from audit.engine.tables import StoreTables


@pytest.fixture(scope="module")
def tables() -> StoreTables:
    with Store(DEMO_STORE, create=False) as store:
        return StoreTables.read(store)


def test_impact_and_verdicts_run_no_metric_pass(tables, monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("the metric pass ran")

    monkeypatch.setattr(audit_module, "metric_rows", forbidden)
    found = Audit(tables, Selection("resume", models=("gemma3-270m",), n_boot=20, n_perm=20))
    assert len(found.impact((1,))) and set(found.impact((1,))["grouping"]) == {"race × gender", "race", "gender"}
    assert len(found.verdicts((1,))) and found.pool_sizes == {"race × gender": 8, "race": 4, "gender": 2}
    assert "rows" not in found.__dict__ and "table" not in found.__dict__
    with pytest.raises(AssertionError, match="metric pass"):
        found.table


def test_a_failing_view_raises_only_when_asked(tables):
    found = Audit(tables, Selection("resume", reference="nobody", n_boot=20, n_perm=20))
    assert len(found.impact((1,), ("race",)))  # impact ratios need no reference
    with pytest.raises(AuditError, match="reference group 'nobody' not found"):
        found.table
    with pytest.raises(AuditError, match="reference group 'nobody' not found"):
        found.comparison("smollm2-135m", "smollm2-135m@4bit", (1,))


def test_a_new_k_is_answered_from_the_audit(tables, monkeypatch):
    found = Audit(tables, Selection("resume", models=("gemma3-270m",), subtasks=("retail",), n_boot=20, n_perm=20))
    first, second = found.at(1), found.at(2)
    assert set(first["k"]) == {1} and set(second["k"]) == {2}
    monkeypatch.setattr(audit_module, "metric_rows", lambda *a, **k: pytest.fail("recomputed"))
    assert found.at(1) is first and found.correlations(2) is found.correlations(2)
    assert found.impact((2,)) is found.impact((2,))


def test_a_filtered_audit_reads_its_base_pass(tables):
    selection = Selection("resume", n_boot=20, n_perm=20)
    base = Audit(tables, selection)
    filtered = Audit(tables, Selection("resume", models=("gemma3-270m",), n_boot=20, n_perm=20), base=base)
    assert filtered.rows is base.rows and set(filtered.table["model"]) == {"gemma3-270m"}


@pytest.mark.parametrize("ks, groupings, message", [
    ((8,), ("race × gender",), "quota k=8 is not below the pool size 8 of the race × gender grouping: at k = pool "
                               "size everyone is selected; choose k in 1 … 7"),
    ((1, 2), ("gender",), "quota k=2 is not below the pool size 2 of the gender grouping"),
    ((9,), None, "quota k=9 is not below the pool size 8 of the race × gender grouping"),
    ((0,), None, "quota k=0 must be at least 1"),
])
def test_one_quota_check(tables, ks, groupings, message):
    with pytest.raises(AuditError, match=message):
        Audit(tables, Selection("resume")).check_quota(ks, groupings)
    Audit(tables, Selection("resume")).check_quota((7,), None)  # the largest grouping's pools hold 8


def test_the_library_functions_apply_the_same_rule(tables):
    """The verdict and the planner, called directly, refuse k = pool size with the Audit's words."""
    from audit.metrics.planner import plan_at
    from audit.engine.verdict import verdicts

    found = Audit(tables, Selection("resume", models=("gemma3-270m",), subtasks=("retail",), n_boot=20, n_perm=20))
    with pytest.raises(AuditError, match="quota k=2 is not below the pool size 2 of the gender grouping: at k = pool "
                                         "size everyone is selected; choose k in 1 … 1"):
        verdicts(found.scores("pointwise", "gender"), grouping="gender", k=2, n_boot=20, n_perm=20)
    curves = found.plan_curves("gemma3-270m", "retail")
    size = int(curves["k"].max())
    with pytest.raises(AuditError, match=f"quota k={size} is not below the pool size {size} of model=gemma3-270m, task=resume, subtask=retail"):
        plan_at(curves, k=size)


def error_of(*argv: str) -> str:
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        assert main(list(argv)) == 2
    return err.getvalue()


def test_every_command_says_the_same_quota_error():
    db = ["--db", str(DEMO_STORE), "--task", "resume"]
    said = {error_of("metrics", *db, "--mode", "pointwise", "--k", "8"),
            error_of("impact", *db, "--k", "8", "--grouping", "race × gender"),
            error_of("verdict", *db, "--k", "8", "--grouping", "race × gender"),
            error_of("compare", *db, "--a", "gemma3-270m", "--b", "smollm2-135m", "--k", "8"),
            error_of("plan", *db, "--k", "8")}
    assert said == {"error: quota k=8 is not below the pool size 8 of the race × gender grouping: at k = pool size "
                    "everyone is selected; choose k in 1 … 7\n"}


FLAGS = ["--task", "resume", "--models", "gemma3-270m", "--subtasks", "retail", "--grouping", "race", "--reference",
         "B", "--pool", "per-group", "--k", "2", "--ci", "0.9", "--bootstrap", "50", "--seed", "3"]
SHARED = ("task", "mode", "models", "subtasks", "grouping", "reference", "pool", "ks", "ci", "n_boot", "seed")


def test_identical_flags_give_identical_selections(tables, tmp_path):
    parser = build_parser()
    db, out = ["--db", str(DEMO_STORE)], ["--out", str(tmp_path / "report.html")]
    commands = {"metrics": [*db, *FLAGS, "--preset", "paper-exact"], "impact": [*db, *FLAGS, "--preset", "paper-exact"],
                "compare": [*db, *FLAGS, "--a", "x", "--b", "y"], "report": [*db, *FLAGS, *out, "--preset", "paper-exact"],
                "plan": [*db, *FLAGS], "verdict": [*db, *FLAGS]}
    found = {name: selection_from(parser.parse_args([name, *argv]), tables) for name, argv in commands.items()}
    shared = {name: tuple(getattr(s, f) for f in SHARED) for name, s in found.items()}
    assert len(set(shared.values())) == 1, shared
    assert shared["metrics"] == ("resume", "pointwise", ("gemma3-270m",), ("retail",), "race", "B", "per-group", (2,),
                                 0.9, 50, 3)
    assert {found[n].preset for n in ("metrics", "impact", "report")} == {"paper-exact"}


@pytest.mark.parametrize("command", ["metrics", "impact", "report", "validity"])
def test_preset_has_the_same_choices_everywhere(command, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args([command, "--db", "x.db", "--k", "1", "--out", "r.html", "--preset", "nonesuch"])
    assert "invalid choice: 'nonesuch'" in capsys.readouterr().err


# ---- Audit.diagnostics and Audit.records: what the report reads of the store, from the audit (issue 41) -----------

def test_pairwise_diagnostics_count_the_stored_answers_without_a_metric_pass(tables, monkeypatch):
    monkeypatch.setattr(audit_module, "metric_rows", lambda *a, **k: pytest.fail("the metric pass ran"))
    with Store(DEMO_STORE, create=False) as store:
        answers, pairs = answer_table(store), pair_table(store)
    for mode in ("pairwise", "pairwise-likelihood"):
        found = Audit(tables, Selection("resume", mode)).diagnostics
        assert found.table is found.answers and list(found.answers.columns) == ["model", "irregular", "tied", "flipped"]
        for model, irregular, tied, flipped in found.answers.itertuples(index=False):
            mine = answers[(answers["task"] == "resume") & (answers["mode"] == mode) & (answers["model"] == model)]
            choices = mine["choice"].tolist()
            assert irregular == pytest.approx(sum(c not in ("first", "second") for c in choices) / len(choices))
            assert tied == pytest.approx(choices.count("tie") / len(choices))
            flips = pairs.loc[(pairs["mode"] == mode) & (pairs["model"] == model), "flipped"].tolist()
            assert flipped == pytest.approx(sum(flips) / len(flips))
        assert set(found.answers["model"]) == set(answers.loc[answers["mode"] == mode, "model"])


def test_pointwise_diagnostics_are_the_label_mass_of_the_chosen_models(tables):
    found = Audit(tables, Selection("resume", models=("gemma3-270m",)))
    assert found.diagnostics.answers is None and found.diagnostics.label_mass is found.label_mass
    table = found.diagnostics.table
    assert list(table.columns) == ["model", "mean_label_mass", "min_label_mass"]
    mass = tables.scores.loc[(tables.scores["task"] == "resume") & (tables.scores["mode"] == "pointwise")
                             & (tables.scores["model"] == "gemma3-270m"), "label_mass"].astype(float)
    assert table.values.tolist() == [["gemma3-270m", pytest.approx(mass.mean()), pytest.approx(mass.min())]]


def test_answer_shares_count_only_the_audited_task_and_models():
    answers = pd.DataFrame({"model": ["a", "a", "a", "b"], "task": ["t", "t", "other", "t"],
                            "subtask": "s", "mode": "pairwise", "regular": [True, False, False, False],
                            "tie": [False, True, False, False]})
    pairs = pd.DataFrame({"model": ["a", "a"], "task": ["t", "other"], "mode": "pairwise", "flipped": [False, True]})
    found = answer_shares(answers, pairs, "t", "pairwise", ["a"])
    assert found.to_dict("records") == [{"model": "a", "irregular": 0.5, "tied": 0.5, "flipped": 0.0}]
    assert answer_shares(answers, pairs, "t", "pointwise", ["a"]) is None


def test_records_are_read_from_the_store_on_the_audits_own_thread(tables, monkeypatch):
    """The report opens no store: the audit reads what only the store file holds on a thread of its own."""
    opened = []
    real = records_module.Store

    def store(*args, **kwargs):
        opened.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(records_module, "Store", store)
    found = Audit(tables, Selection("study-gpt-hiring", subtasks=("HR specialist",)))
    found.read_ahead(0.8, 1)
    read = found.records(0.8, 1)
    assert opened and all(name.startswith("audit-records") for name in opened)
    assert found.records(0.8, 1) is read and len(opened) == 1  # read once
    with Store(DEMO_STORE, create=False) as direct:
        assert read.data == data_hash(direct, "study-gpt-hiring", ["HR specialist"])
        assert read.trail.equals(trail(direct, "study-gpt-hiring"))
    assert sorted(read.systems["model"]) == ["gpt-3.5-turbo", "gpt-4"] and read.systems["recorded"].all()
    assert read.monitoring is None  # the study's decisions carry no dates


def test_records_check_the_selection_first_and_need_a_store(tables):
    with pytest.raises(AuditError, match="model 'nobody' has no pointwise scores for task 'resume'"):
        Audit(tables, Selection("resume", models=("nobody",))).read_ahead()
    scored = StoreTables.from_scores(tables.scores[tables.scores["task"] == "resume"].reset_index(drop=True))
    with pytest.raises(AuditError, match="read from a result store"):
        Audit(scored, Selection("resume")).records()
