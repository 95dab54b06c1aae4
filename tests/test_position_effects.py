"""Group gaps net of position: the position effect against the group effect, per system and job."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import pytest

from audit.metrics.position import LARGER, UNBIASED_NOTE, position_vs_group
from tests.test_listwise import cli

DEMO = Path(__file__).resolve().parents[1] / "data" / "demo.db"
GROUPS = [f"g{i}" for i in range(8)]


def pools(first: Callable[[list[str], np.random.Generator], int], n: int = 400, seed: int = 1) -> pd.DataFrame:
    """``n`` shuffled pools of one candidate per group; ``first(order, rng)`` picks the position ranked first."""
    rng = np.random.default_rng(seed)
    rows = []
    for pool in range(n):
        order = list(rng.permutation(GROUPS))
        top = first(order, rng)
        rows += [("m", "job", pool, position, grp, 1 if position == top else 2) for position, grp in enumerate(order)]
    return pd.DataFrame(rows, columns=["model", "subtask", "pool", "position", "grp", "value"])


def test_flag_follows_the_larger_effect() -> None:
    by_position = pools(lambda order, rng: 0 if rng.random() < 0.6 else int(rng.integers(8)))
    by_group = pools(lambda order, rng: order.index("g0") if rng.random() < 0.6 else int(rng.integers(8)))
    blind = pools(lambda order, rng: int(rng.integers(8)))
    found = {name: position_vs_group(frame).iloc[0] for name, frame in
             (("position", by_position), ("group", by_group), ("blind", blind))}
    assert found["position"]["position_over_group"] and found["position"]["position_spread"] > 0.5
    assert not found["group"]["position_over_group"] and found["group"]["group_spread"] > 0.5
    assert not found["blind"]["position_over_group"]


@pytest.fixture()
def demo(tmp_path: Path) -> Path:
    path = tmp_path / "demo.db"
    shutil.copy(DEMO, path)
    return path


def test_study_gpt35_software_engineer_is_flagged(demo: Path) -> None:
    code, out, err = cli("position-bias", "--db", str(demo), "--task", "study-gpt-hiring", "--format", "json")
    assert code == 0, err
    rows = [r for r in json.loads(out) if r["model"] == "gpt-3.5-turbo" and r["subtask"] == "software engineer"]
    assert rows[0]["position"] == 1 and rows[0]["top1_share"] == pytest.approx(0.83, abs=0.01)
    assert all(r["position_over_group"] for r in rows) and rows[0]["position_spread"] > 10 * rows[0]["group_spread"]
    code, out, err = cli("position-bias", "--db", str(demo), "--task", "study-gpt-hiring", "--format", "md")
    assert code == 0, err
    assert UNBIASED_NOTE in out and f"- gpt-3.5-turbo, software engineer: {LARGER}" in out
