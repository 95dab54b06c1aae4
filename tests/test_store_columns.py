"""The recorded decisions read column by column (audit.store.columns) equal the row-by-row read of the same query,
to the last bit of every value, on every path: integer outcomes, fractional scores, a text holding the separator,
no decisions."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from audit.store.database import RECORDED_QUERY as QUERY, Store, save_recorded

RECORDED_QUERY = QUERY.format(decided="decided")


def _store(tmp_path, decisions: pd.DataFrame | None, outcome: str = "rank") -> Store:
    store = Store(tmp_path / "s.db")
    if decisions is not None:
        with store.transaction() as db:
            save_recorded(db, "rec-one", "log", outcome, decisions)
            save_recorded(db, "rec-two", "log", outcome, decisions.assign(subtask="other"))
    return store


def _decisions(values, applicants, groups=None, dates=None) -> pd.DataFrame:
    count = len(values)
    return pd.DataFrame({"subtask": "job", "pool": [i // 3 for i in range(count)], "position": [i % 3 for i in
                                                                                                range(count)],
                         "group": groups or ["F", "M", "Ünï"] * (count // 3), "value": values, "applicant": applicants,
                         "date": dates or [None] * count})


@pytest.mark.parametrize("decisions, outcome", [
    (_decisions([1, 2, 3, 3, 1, 2], ["a", None, "c", "d", None, ""]), "rank"),
    (_decisions([0.1, 1 / 3, -2.5, 1e300, 0.0, 7.0], ["a", "b", "c", "d", "e", "f"]), "score"),
    (_decisions([1, 0, 1, 0, 0, 1], ["a\x1fb", "c", "d", "e", "f", "g"]), "selected"),
    (_decisions([1, 2, 3, 1, 2, 3], ["a", "b", "c", "d", "e", "f"], ["F", "M", "A\x1fB"] * 2), "rank"),
    (_decisions([1, 0, 1, 0, 0, 1], ["a", "b", "c", "d", "e", "f"],
                dates=["2025-01-06", None, "2025-01-07", "2025-02-01", None, "2025-12-31"]), "selected"),
])
def test_columns_equal_the_row_read(tmp_path, decisions, outcome):
    store = _store(tmp_path, decisions, outcome)
    expected = pd.read_sql_query(RECORDED_QUERY, store.db)
    assert len(expected) == 12
    pd.testing.assert_frame_equal(store.recorded_decisions(), expected, check_exact=True)


def test_no_decisions_read_as_the_empty_table(tmp_path):
    store = _store(tmp_path, None)
    pd.testing.assert_frame_equal(store.recorded_decisions(), pd.read_sql_query(RECORDED_QUERY, store.db))


def test_score_order_reads_sorted_categoricals_by_their_codes():
    """The store's score table sorts a recorded system's categorical columns as it sorts their text."""
    from audit.store.tables import sorted_order

    rng = np.random.default_rng(4)
    text = rng.choice(["b", "a", "ä", "B", "a2"], 300)
    table = pd.DataFrame({"model": pd.Series(text).astype("category"),
                          "group": pd.array(rng.choice(["x", "y"], 300), dtype="str"),
                          "candidate_id": pd.array([f"c{i % 37}" for i in range(300)], dtype="str")})
    as_text = table.assign(model=pd.array(text, dtype="str"))
    expected = as_text.sort_values(["model", "group", "candidate_id"], kind="stable").index.to_numpy()
    assert (sorted_order(table, ["model", "group", "candidate_id"]) == expected).all()
    assert (sorted_order(as_text, ["model", "group", "candidate_id"]) == expected).all()


def test_stacked_frames_hold_pd_concat_values_and_keep_categories():
    """Scored rows (text) stacked with recorded rows (categoricals): the values of ``pd.concat``, categorical columns
    still categorical with sorted categories (the order :func:`sorted_order` reads by codes), a column missing from a
    frame missing in its rows."""
    from audit.store.recorded import stacked

    rng = np.random.default_rng(7)

    def column(kind: str, size: int) -> pd.Series:
        values = rng.choice(["b", "a", "ä", "B", "a2"], size).tolist()
        values[0] = None if rng.random() < 0.3 else values[0]
        return {"category": pd.Series(values, dtype="category"), "str": pd.Series(values, dtype="str"),
                "object": pd.Series(values, dtype=object)}[kind]

    for _ in range(20):
        frames = []
        for _ in range(int(rng.integers(2, 4))):
            size = int(rng.integers(1, 6))
            frame = pd.DataFrame({"value": rng.random(size)})
            for name in ("model", "group"):
                if rng.random() < 0.8:
                    frame[name] = column(str(rng.choice(["category", "str", "object"])), size)
            frames.append(frame)
        out, expected = stacked(frames), pd.concat(frames, ignore_index=True)
        assert list(out.columns) == list(expected.columns) and len(out) == len(expected)
        for name in out.columns:
            assert out[name].astype(object).isna().tolist() == expected[name].astype(object).isna().tolist()
            assert out[name].dropna().astype(object).tolist() == expected[name].dropna().astype(object).tolist()
            if any(name in f and isinstance(f[name].dtype, pd.CategoricalDtype) for f in frames):
                assert isinstance(out[name].dtype, pd.CategoricalDtype)
                assert out[name].cat.categories.is_monotonic_increasing
