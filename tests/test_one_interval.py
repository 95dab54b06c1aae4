"""One interval per ratio (issue 29): ``impact --db`` shows, for every category of both demo tasks, the very ratio
and interval the verdict judges (pool-robust Katz for the study's recorded pools, the pair's bootstrap for the
pilot), so a report never gives one ratio two intervals."""
from __future__ import annotations

import json
import os

import pandas as pd
import pytest

from audit.cli import main
from audit.paths import DEMO_STORE

os.environ["HF_HUB_OFFLINE"] = "1"
KEY = ["model", "subtask", "grouping", "category", "k"]


def cli_json(capsys, *argv) -> object:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("task, k", [("study-gpt-hiring", "1"), ("resume", "2")])
def test_impact_shows_the_verdicts_interval(capsys, task, k):
    source = ["--db", str(DEMO_STORE), "--task", task, "--k", k, "--bootstrap", "200"]
    impact = pd.DataFrame(cli_json(capsys, "impact", *source, "--format", "json"))
    verdict = pd.DataFrame(cli_json(capsys, "verdict", *source, "--permutations", "200", "--format", "json")
                           ["categories"])
    both = verdict.merge(impact, on=KEY, suffixes=("_verdict", "_impact"), validate="one_to_one")
    assert len(both) == len(verdict) > 50
    for column in ("impact_ratio", "impact_ratio_lo", "impact_ratio_hi"):
        left, right = both[f"{column}_verdict"].astype(float), both[f"{column}_impact"].astype(float)
        assert (left.isna() == right.isna()).all() and ((left - right).abs().fillna(0) < 1e-12).all(), column
    assert both["impact_ratio_lo_verdict"].notna().sum() >= len(both) // 2
