"""Issue 41: one reader of a command's source (``tables_from``): a store read once, or a score file under each
(task, subtask)'s declared design, its pools per-group unless the command keeps the declared ones, its group codes
whole for the verdict's reading of a file."""
from __future__ import annotations

import argparse

import pandas as pd
import pytest

from audit.cli import main
from audit.commands.io import tables_from
from audit.design import WHOLE
from audit.errors import AuditError
from audit.paths import DEMO_STORE

STUDY = "study-gpt-hiring"


def args(db: str | None = None, scores: str | None = None, pairs: str | None = None) -> argparse.Namespace:
    return argparse.Namespace(db=db, scores=scores, pairs=pairs)


@pytest.fixture(scope="module")
def study_file(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("scores") / "study.csv"
    assert main(["scores", "--db", str(DEMO_STORE), "--task", STUDY, "--format", "csv", "--out", str(path)]) == 0
    return str(path)


@pytest.mark.parametrize("given", [args(), args(db="s.db", scores="x.csv")])
def test_exactly_one_source(given):
    with pytest.raises(AuditError, match=r"give exactly one of --db \(a result store\) and --scores"):
        tables_from(given)


def test_pairs_go_with_a_score_file_only():
    with pytest.raises(AuditError, match="--pairs only goes with --scores"):
        tables_from(args(db=str(DEMO_STORE), pairs="p.csv"))


def test_a_store_is_read_whole():
    tables = tables_from(args(db=str(DEMO_STORE)))
    assert STUDY in tables.tasks() and tables.ranked is not None and len(tables.ranked)


def test_a_score_file_is_read_in_per_group_pools_unless_the_declared_ones_are_kept(tmp_path):
    rows = pd.DataFrame({"model": "m", "task": "essay", "subtask": ["a"] * 4 + ["b"] * 4, "mode": "pointwise",
                         "candidate_id": [f"c{i}" for i in range(8)], "group": ["x", "y"] * 4,
                         "score": [0.1 * i for i in range(8)]})
    rows.to_csv(tmp_path / "essays.csv", index=False)
    declared = tables_from(args(scores=str(tmp_path / "essays.csv")), pools=None)
    per_group = tables_from(args(scores=str(tmp_path / "essays.csv")))
    assert {key: str(d.pools) for key, d in declared.designs.items()} == {("essay", "a"): "random:10",
                                                                          ("essay", "b"): "random:10"}
    assert {str(d.pools) for d in per_group.designs.values()} == {"per-group"}
    pd.testing.assert_frame_equal(declared.scores, per_group.scores)


def test_the_verdicts_reading_keeps_codes_whole_and_pointwise_rows_only(study_file, tmp_path):
    whole = tables_from(args(scores=study_file), whole=True)
    assert all(d.groupings == {WHOLE: None} and d.names == {} for d in whole.designs.values())
    assert set(whole.scores["mode"]) == {"pointwise"}
    rows = pd.read_csv(study_file).assign(mode="pairwise")
    rows.to_csv(tmp_path / "pairwise.csv", index=False)
    with pytest.raises(AuditError, match="has no pointwise scores"):
        tables_from(args(scores=str(tmp_path / "pairwise.csv")), whole=True)
