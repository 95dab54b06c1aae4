"""Issue 41: every view a page, a command or the report shows comes from the Audit object: position bias
(``Audit.positions``, its ranked decisions read from the tables' store once, when first asked) and score shape with
label mass (``Audit.shape``) are read from the tables the audit holds."""
from __future__ import annotations

import sqlite3

import pandas as pd
import pytest

from audit.engine.audit import Audit
from audit.engine.positions import PositionAudit, task_positions
from audit.engine.selection import Selection
from audit.engine.tables import StoreTables
from audit.paths import DEMO_STORE
from audit.store.database import Store

STUDY = "study-gpt-hiring"


@pytest.fixture(scope="module")
def tables() -> StoreTables:
    with Store(DEMO_STORE, create=False) as store:
        return StoreTables.read(store)


def _study_decisions() -> pd.DataFrame:
    """The study's ranked decisions read straight from SQLite, as the position view needs them."""
    with sqlite3.connect(f"file:{DEMO_STORE}?mode=ro", uri=True) as db:
        return pd.read_sql_query(
            "SELECT m.label AS model, s.subtask, d.pool, d.position, d.grp, d.value FROM recorded_decisions d "
            "JOIN recorded_systems s ON s.id = d.system JOIN models m ON m.fingerprint = s.model "
            "WHERE s.task = ? AND s.outcome = 'rank'", db, params=(STUDY,))


def test_positions_are_read_once_when_asked_and_a_verdict_never_reads_them(monkeypatch):
    with Store(DEMO_STORE, create=False) as store:
        fresh = StoreTables.read(store)
    reads = []
    ranked_decisions = Store.ranked_decisions
    monkeypatch.setattr(Store, "ranked_decisions", lambda self: reads.append(1) or ranked_decisions(self))
    Audit(fresh, Selection(STUDY, n_boot=50)).verdicts((1,))
    assert reads == []  # the verdict of a big ranked log does not hold its decisions twice
    found = Audit(fresh, Selection(STUDY, ci=0.9)).positions
    assert Audit(fresh, Selection(STUDY, ci=0.95)).positions is not None and reads == [1]
    expected = PositionAudit.of(_study_decisions(), 0.9)
    pd.testing.assert_frame_equal(found.shares, expected.shares)
    pd.testing.assert_frame_equal(found.effects, expected.effects)
    assert len(found.shares) and len(found.effects)


def test_positions_read_only_the_audits_task(tables):
    other = tables.ranked.assign(task="other", value=tables.ranked["value"].iloc[::-1].to_numpy())
    found = task_positions(pd.concat([other, tables.ranked], ignore_index=True), STUDY, 0.95)
    pd.testing.assert_frame_equal(found.shares, Audit(tables, Selection(STUDY)).positions.shares)


def test_no_positions_without_ranked_pools(tables):
    assert Audit(tables, Selection("resume")).positions is None
    assert Audit(tables, Selection("synthetic-dated-log")).positions is None
    assert Audit(StoreTables.from_scores(tables.scores), Selection(STUDY)).positions is None


def test_shape_is_the_selections_moments_and_label_mass(tables):
    selection = Selection("resume", models=("gemma3-270m", "smollm2-135m"), subtasks=("retail",), grouping="gender",
                          reference="M", groups=("F",))
    found = Audit(tables, selection).shape
    rows = tables.scores[(tables.scores["task"] == "resume") & (tables.scores["mode"] == "pointwise")
                         & tables.scores["model"].isin(selection.models)]
    assert set(found.moments["group"]) == {"F", "M"} and set(found.moments["subtask"]) == {"retail"}
    women = rows[(rows["subtask"] == "retail") & (rows["model"] == "gemma3-270m") & rows["group"].str.endswith("_F")]
    row = found.moments.set_index(["model", "group"]).loc[("gemma3-270m", "F")]
    centred = women["score"] - women["score"].mean()
    m2, m3 = (centred ** 2).mean(), (centred ** 3).mean()
    assert row["n"] == len(women) and row["skewness"] == pytest.approx(m3 / m2 ** 1.5)
    mass = found.label_mass.set_index("model")
    assert list(mass.index) == ["gemma3-270m", "smollm2-135m"]  # the selected models, over every subtask
    gemma = rows.loc[rows["model"] == "gemma3-270m", "label_mass"]
    assert mass.loc["gemma3-270m", "mean label mass"] == pytest.approx(gemma.mean())
    assert mass.loc["gemma3-270m", "min label mass"] == gemma.min()
    assert bool(mass.loc["gemma3-270m", "low"]) == (gemma.mean() < 0.05)


def test_the_report_reads_the_audits_label_mass(tables):
    from audit.reporting.content import ReportSettings, collect

    found = Audit(tables, Selection("resume", n_boot=20, n_perm=20))
    report = collect(ReportSettings(DEMO_STORE, Selection("resume", n_boot=20, n_perm=20)), tables)
    expected = found.label_mass.drop(columns="low").rename(columns=lambda c: c.replace(" ", "_"))
    pd.testing.assert_frame_equal(report.diagnostics, expected)


def test_group_sizes_count_candidates_in_the_audits_grouping(tables):
    selection = Selection("resume", models=("smollm2-135m@4bit", "gemma3-270m"), grouping="gender", n_boot=20,
                          n_perm=20)
    sizes = Audit(tables, selection).group_sizes.set_index(["model", "subtask", "group"])["candidates"]
    rows = tables.scores[(tables.scores["task"] == "resume") & (tables.scores["mode"] == "pointwise")]
    women = rows[(rows["model"] == "gemma3-270m") & (rows["subtask"] == "retail") & rows["group"].str.endswith("_F")]
    assert sizes[("gemma3-270m", "retail", "F")] == women["candidate_id"].nunique() > 0
    assert set(sizes.index.get_level_values("model")) == set(selection.models)
    assert set(sizes.index.get_level_values("group")) == {"F", "M"}
    assert sizes[("smollm2-135m@4bit", "retail", "F")] < sizes[("gemma3-270m", "retail", "F")]
