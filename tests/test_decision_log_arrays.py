"""The decision-log reader's column operations (audit.recorded.log_arrays, used by read_log) give what the pandas
formulas they replaced give, on random logs (several subtasks, pools named out of order, unknown categories, rank,
0/1 and score outcomes): pools numbered in sorted order of their names, positions in file order, the reference
category of each subtask; and a bad log is named as before (a reused id, a rank twice or beyond its pool, a reference
that is no category). Each subtask's rows in stored order store what grouping and sorting stored."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from audit.errors import AuditError
from audit.recorded.decision_logs import read_log, selected_flags
from audit.recorded.log_arrays import distinct
from audit.recorded.log_spec import load_log_spec
from audit.store.database import Store, save_recorded

SPEC = "applicant: id\ndemographics: [sex, race]\npool: req\nsubtask: job\n"


def _log(seed: int, outcome: str, rows: int = 600) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    job = rng.choice(["eng", "ops", "zed", "Ärzt"], rows)
    req = rng.choice([f"r{i}" for i in (9, 10, 2, 33, 4, 1)], rows)
    frame = pd.DataFrame({"id": rng.permutation(rows).astype(str), "sex": rng.choice(["F", "M", "", "unknown"], rows,
                                                                                      p=[.45, .45, .05, .05]),
                          "race": rng.choice(["A", "B", "W"], rows), "job": job, "req": req})
    if outcome == "rank":
        frame["rank"] = frame.groupby(["job", "req"]).cumcount(ascending=False) + 1
    elif outcome == "selected":
        frame["selected"] = rng.integers(0, 2, rows)
    else:
        frame["score"] = rng.normal(size=rows).round(2)
    if seed % 2:  # a subtask where every row is of an unknown category
        frame.loc[frame["job"] == "zed", "sex"] = "unknown"
    return frame


def _expected_references(decisions: pd.DataFrame, kind: str) -> dict[str, str]:
    """The reference of each subtask as the reader computed it before (pandas, subtask by subtask)."""
    out = {}
    for subtask, part in decisions.groupby("subtask", sort=True):
        known = part[~part["group"].str.contains("(?:^|_)unknown(?:_|$)", regex=True)]
        known = known if len(known) else part
        rates = selected_flags(known["value"], kind).groupby(known["group"]).mean()
        out[str(subtask)] = str(rates.sort_index().idxmax())
    return out


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("outcome", ["rank", "selected", "score"])
def test_pools_positions_and_references_equal_the_pandas_formulas(tmp_path, seed, outcome):
    frame = _log(seed, outcome)
    frame.to_csv(tmp_path / "log.csv", index=False)
    (tmp_path / "log.yaml").write_text(SPEC)
    log = read_log(tmp_path / "log.csv", load_log_spec(tmp_path / "log.yaml"))
    decisions = log.decisions
    assert decisions["pool"].tolist() == pd.factorize(frame["req"], sort=True)[0].tolist()
    assert decisions["position"].tolist() == frame.groupby(["job", "req"], sort=False).cumcount().tolist()
    assert decisions["group"].tolist() == [f"{'unknown' if s in ('', 'unknown') or pd.isna(s) else s}_{r}"
                                           for s, r in zip(frame["sex"], frame["race"])]
    assert log.references == _expected_references(decisions, outcome)
    assert list(log.references) == sorted(frame["job"].unique())


@pytest.mark.parametrize("change, message", [
    (lambda f: f.assign(id=f["id"].where(f.index != 500, f["id"][123])), "row 501, column 'id': applicant '{}' also "
                                                                         "on row 124"),
    (lambda f: f.assign(rank=f["rank"].where(f.index != 400, f["rank"][f.index[(f["job"] == f["job"][400])
                                                                           & (f["req"] == f["req"][400])][0]])),
     "column 'rank': rank {} appears twice in pool"),
    (lambda f: f.assign(rank=f["rank"].where(f.index != 300, 1000)), "row 301, column 'rank': rank 1000 but its pool"),
])
def test_a_bad_big_log_is_named_as_before(tmp_path, change, message):
    frame = change(_log(5, "rank"))
    frame.to_csv(tmp_path / "log.csv", index=False)
    (tmp_path / "log.yaml").write_text(SPEC)
    with pytest.raises(AuditError) as raised:
        read_log(tmp_path / "log.csv", load_log_spec(tmp_path / "log.yaml"))
    expected = message.format(frame["id"][123] if "applicant" in message else frame["rank"][400])
    assert expected in str(raised.value)


def test_a_reference_missing_from_one_subtask_is_named(tmp_path):
    frame = _log(2, "selected")
    frame.loc[frame["job"] == "ops", "race"] = "B"
    frame.to_csv(tmp_path / "log.csv", index=False)
    (tmp_path / "log.yaml").write_text(SPEC + "reference: F_W\n")
    with pytest.raises(AuditError, match=re.escape("the spec's reference 'F_W' is not a category of subtask 'ops': "
                                                   "F_B, M_B, unknown_B")):
        read_log(tmp_path / "log.csv", load_log_spec(tmp_path / "log.yaml"))


def test_a_reference_of_no_subtask_names_the_first(tmp_path):
    frame = _log(0, "selected").assign(sex="F", race="A")
    frame.to_csv(tmp_path / "log.csv", index=False)
    (tmp_path / "log.yaml").write_text(SPEC + "reference: M_Z\n")
    with pytest.raises(AuditError, match=re.escape("the spec's reference 'M_Z' is not a category of subtask 'eng': "
                                                   "F_A")):
        read_log(tmp_path / "log.csv", load_log_spec(tmp_path / "log.yaml"))


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("dated", [False, True])
def test_the_rows_in_stored_order_write_what_grouping_and_sorting_wrote(tmp_path, seed, dated):
    """The reader's rows of each subtask in pool and position order (``log.parts``, no sort at import) store the same
    rows and return the same hashed texts as grouping the decisions by subtask and sorting each part."""
    frame = _log(seed, "rank").assign(day=lambda f: np.where(np.arange(len(f)) % 3, "2024-05-0" + str(seed + 1), ""))
    frame.to_csv(tmp_path / "log.csv", index=False)
    (tmp_path / "log.yaml").write_text(SPEC + ("date: day\n" if dated else ""))
    log = read_log(tmp_path / "log.csv", load_log_spec(tmp_path / "log.yaml"))
    assert list(log.parts) == sorted(log.references)
    stored = []
    for parts in (log.parts, None):
        with Store(tmp_path / f"{parts is None}.db") as store, store.transaction() as db:
            texts = save_recorded(db, "rec-x", "log", "rank", log.decisions, parts)
            stored.append((texts, db.execute("SELECT s.subtask, d.* FROM recorded_decisions d JOIN recorded_systems s "
                                             "ON s.id = d.system ORDER BY s.subtask, pool, position").fetchall()))
    assert stored[0] == stored[1] and len(stored[0][1]) == len(frame)


def test_many_demographic_columns_of_many_values_make_each_rows_own_group(tmp_path):
    """Group codes are combined column by column and renumbered after each (no product of the columns' value counts
    that could overflow): four columns of 3,000 distinct values give each row the joined text of its own cells."""
    rows = 3000
    rng = np.random.default_rng(7)
    cells = {name: [f"{name}{value}" for value in rng.permutation(rows)] for name in ("a", "b", "c", "d")}
    frame = pd.DataFrame({"id": np.arange(rows), **cells, "selected": rng.integers(0, 2, rows)})
    frame.to_csv(tmp_path / "log.csv", index=False)
    (tmp_path / "log.yaml").write_text("applicant: id\ndemographics: [a, b, c, d]\n")
    log = read_log(tmp_path / "log.csv", load_log_spec(tmp_path / "log.yaml"))
    assert log.decisions["group"].tolist() == ["_".join(parts) for parts in zip(*cells.values())]


@pytest.mark.parametrize("ids", [["1", "2", "3"], ["0", "1", "0"], ["0", "10", "100"], ["1", "01"], ["0", "00"],
                                 ["7", "007"], ["5", "５"], ["-1", "1"], ["+1", "1"], ["1 ", "1"], ["x", "y", "x"],
                                 ["", "1"], ["", ""], ["1", None, "2"], [None, None],
                                 ["12345678901234567890", "12345678901234567891"], ["999999999999999999"] * 2,
                                 [str(i) for i in np.random.default_rng(0).permutation(5000)] + ["4321"]])
def test_ids_are_distinct_exactly_where_their_texts_are(ids):
    """The integer sort of plain whole-number ids and the text sort agree with a set of the texts (missing ids are
    never equal to one another, as in the text sort)."""
    present = [i for i in ids if i is not None]
    assert distinct(pd.Series(ids, dtype="string")) == (len(set(present)) == len(present))
