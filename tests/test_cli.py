"""The command-line contract: score, export, and one clear error line (exit 2, store untouched) on bad input.

The contract is plumbing (what is stored, exported and cached, whatever the numbers), so the module's runs score with
the deterministic fake backend (tests/fake_backend.py); the real model's numbers are tested in test_backend,
test_store, test_app_run and test_api_backend."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
import pytest
from fake_backend import installed
from helpers import audit

from audit.store.database import Store


@pytest.fixture(scope="module")
def fake():
    """Every model the module's commands load is the fake (the list of those loaded)."""
    with pytest.MonkeyPatch.context() as patch:
        yield installed(patch)


@pytest.fixture(scope="module")
def scored_db(tmp_path_factory, fake) -> Path:
    db = tmp_path_factory.mktemp("cli") / "results.db"
    pointwise = audit("score", "--task", "resume", "--subtask", "hr_specialist", "--limit", "1", "--db", str(db))
    assert pointwise.returncode == 0, pointwise.stderr
    assert "8 prompts, 8 scored, 0 cached" in pointwise.stdout
    pairwise = audit("score", "--task", "resume", "--subtask", "hr_specialist", "--mode", "pairwise",
                     "--pairwise-mode", "likelihood", "--rounds", "1", "--db", str(db))
    assert pairwise.returncode == 0, pairwise.stderr
    assert "56 prompts, 56 scored" in pairwise.stdout and "flipped" in pairwise.stdout
    assert [f.calls for f in fake] == [{"label_probabilities": 8, "option_logprobs": 56}]  # loaded once, no more
    return db


def test_scores_export_has_the_contract_columns(scored_db):
    result = audit("scores", "--db", str(scored_db), "--format", "csv")
    assert result.returncode == 0, result.stderr
    table = pd.read_csv(io.StringIO(result.stdout))
    for column in ["model", "task", "subtask", "mode", "candidate_id", "group", "qualified", "score"]:
        assert column in table.columns
    assert sorted(table["mode"].unique()) == ["pairwise-likelihood", "pointwise"]
    pointwise = table[table["mode"] == "pointwise"]
    assert len(pointwise) == 8 and pointwise["score"].between(0, 1).all()
    pairwise = table[table["mode"] == "pairwise-likelihood"]
    assert len(pairwise) == 8 and pairwise["score"].sum() == pytest.approx(28.0)  # one point per pair


def test_pairs_export(scored_db):
    result = audit("pairs", "--db", str(scored_db), "--format", "json")
    pairs = json.loads(result.stdout)
    assert len(pairs) == 28 and {p["outcome"] for p in pairs} <= {"a", "b", "inconsistent"}


def test_answers_export_keeps_every_prompt(scored_db):
    answers = pd.read_csv(io.StringIO(audit("answers", "--db", str(scored_db)).stdout))
    assert len(answers) == 56 and answers["regular"].all()  # the likelihood method always picks one
    assert set(zip(answers["first_id"], answers["second_id"])) == set(zip(answers["second_id"], answers["first_id"]))


def test_second_identical_run_is_all_cached(scored_db, fake):
    before = [dict(f.calls) for f in fake]
    again = audit("score", "--task", "resume", "--subtask", "hr_specialist", "--limit", "1", "--db", str(scored_db))
    assert again.returncode == 0 and "0 scored, 8 cached" in again.stdout
    assert [f.calls for f in fake] == before, "nothing is asked of the model when everything is cached"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "no-such-model"], "unknown model 'no-such-model'"),
        (["--task", "poetry"], "unknown task 'poetry'"),
        (["--subtask", "astronaut"], "unknown subtask 'astronaut'"),
        (["--limit", "0"], "--limit must be positive"),
    ],
)
def test_bad_input_is_one_clear_line_and_leaves_the_store_alone(scored_db, args, message):
    with Store(scored_db) as store:
        before = store.row_counts()
    base = {"--task": "resume", "--subtask": "hr_specialist", "--db": str(scored_db)}
    overrides = dict(zip(args[::2], args[1::2]))
    argv = [part for key, value in {**base, **overrides}.items() for part in (key, value)]
    result = audit("score", *argv)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and message in result.stderr
    with Store(scored_db) as store:
        assert store.row_counts() == before


def test_foreign_file_is_refused_untouched(tmp_path, fake):
    foreign = tmp_path / "photo.db"
    foreign.write_bytes(b"\x89PNG not a database")
    result = audit("score", "--subtask", "retail", "--limit", "1", "--db", str(foreign))
    assert result.returncode == 2 and "not a result store" in result.stderr
    assert foreign.read_bytes() == b"\x89PNG not a database"
    exported = audit("scores", "--db", str(tmp_path / "missing.db"))
    assert exported.returncode == 2 and "does not exist" in exported.stderr


def test_models_lists_the_registry():
    result = audit("models")
    assert result.returncode == 0 and "smollm2-135m" in result.stdout and "installed" in result.stdout
