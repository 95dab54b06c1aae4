"""Dated decision logs watched over time: ``import --append`` adds a chunk to a stored log (ids never reused, pools
continue, nothing changes on an error, the chain of chunks in the details), and ``monitor`` reads the dated log
look by look (a drifting job alarms within weeks of the drop, fair ones do not; md, csv and json agree). Logs are
built here, seeded (audit/recorded/synthetic.py)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from audit.recorded.synthetic import SPEC, dated_log
from audit.store import Store
from audit.views import StoreTables
from helpers import audit_status

RANK_SPEC = "applicant: id\ndemographics: [sex]\noutcome: {rank: rank}\npool: req\ndate: day\n"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def import_log(folder: Path, frame: pd.DataFrame, name: str, *extra: str, spec: str = SPEC,
               label: str = "screener") -> tuple[int, str, str]:
    (folder / f"{name}.yaml").write_text(spec)
    frame.to_csv(folder / f"{name}.csv", index=False)
    return audit_status("import", "--format", "decisions", "--data", folder / f"{name}.csv", "--spec",
                        folder / f"{name}.yaml", "--task", "watched", "--label", label, "--db", folder / "s.db", *extra)


def stored(db: Path) -> tuple[dict, list, pd.DataFrame]:
    """(row counts, models, the decision table) of the store at ``db``."""
    with Store(db, create=False) as store:
        return store.row_counts(), store.models().to_dict("records"), StoreTables.read(store).scores


def test_append_adds_a_week_keeping_the_fingerprint_and_chaining_the_chunks(tmp_path):
    first = dated_log(3, 2, 50, seed=1)
    week = dated_log(3, 1, 50, seed=2, first_id=len(first), first_week=2)
    assert import_log(tmp_path, first, "first")[0] == 0
    (_, before, _) = stored(tmp_path / "s.db")
    status, out, err = import_log(tmp_path, week, "week", "--append")
    assert status == 0 and err == "" and "appended 150 decisions" in out
    counts, models, scores = stored(tmp_path / "s.db")
    assert counts["recorded_decisions"] == 450 and len(scores) == 450
    assert [m["fingerprint"] for m in models] == [m["fingerprint"] for m in before]  # the system's key stays
    details = json.loads(models[0]["details"])
    digests = [hashlib.sha256((tmp_path / f"{name}.csv").read_bytes()).hexdigest() for name in ("first", "week")]
    assert details["chain_sha256"] == sha(sha(digests[0]) + digests[1]) and details["chunks"] == 2
    assert details["rows"] == 450 and details["appended"][0]["sha256"] == digests[1]
    assert (details["first_date"], details["last_date"]) == (first["day"].min(), week["day"].max())
    dates = scores.set_index("candidate_id")["date"]
    assert dates[week["id"]].tolist() == week["day"].tolist() and dates[first["id"]].tolist() == first["day"].tolist()
    assert set(scores["subtask"]) == {"job-01", "job-02", "job-03"}


def test_append_refuses_a_reused_id_and_leaves_the_store_unchanged(tmp_path):
    first = dated_log(2, 2, 40, seed=1)
    assert import_log(tmp_path, first, "first")[0] == 0
    before = stored(tmp_path / "s.db")
    week = dated_log(2, 1, 40, seed=2, first_id=len(first), first_week=2)
    week.loc[7, "id"] = first.loc[3, "id"]  # row 8 of the week's file (rows counted without the header)
    status, out, err = import_log(tmp_path, week, "week", "--append")
    assert status == 2 and out == "" and len(err.splitlines()) == 1
    assert "row 8" in err and repr(first.loc[3, "id"]) in err and "already stored" in err
    after = stored(tmp_path / "s.db")
    assert after[:2] == before[:2]
    pd.testing.assert_frame_equal(after[2], before[2])


@pytest.mark.parametrize("change, message", [
    ("spec", "another spec"), ("label", "holds no decision log named 'other'")])
def test_append_refuses_another_spec_or_an_unknown_log(tmp_path, change, message):
    assert import_log(tmp_path, dated_log(2, 1, 20, seed=1), "first")[0] == 0
    before = stored(tmp_path / "s.db")[:2]
    week = dated_log(2, 1, 20, seed=2, first_id=40, first_week=1)
    extra = {"spec": {"spec": SPEC + "reference: M\n"}, "label": {"label": "other"}}[change]
    status, _, err = import_log(tmp_path, week, "week", "--append", **extra)
    assert status == 2 and message in err and len(err.splitlines()) == 1
    assert stored(tmp_path / "s.db")[:2] == before


def ranked_pools(start: int, pools: int, day: str) -> pd.DataFrame:
    """``pools`` pools of 4 (req-<n>), ranks 1–4, sexes alternating."""
    rows = [{"id": f"r{start + 4 * p + i}", "sex": "FM"[i % 2], "req": f"req-{p}", "rank": (i + p) % 4 + 1, "day": day}
            for p in range(pools) for i in range(4)]
    return pd.DataFrame(rows)


def test_appended_pools_continue_after_the_stored_ones(tmp_path):
    assert import_log(tmp_path, ranked_pools(0, 3, "2025-02-03"), "first", spec=RANK_SPEC)[0] == 0
    # the same pool names again: new pools (a pool lies within one chunk), numbered after the stored ones
    assert import_log(tmp_path, ranked_pools(12, 3, "2025-02-10"), "week", "--append", spec=RANK_SPEC)[0] == 0
    with Store(tmp_path / "s.db", create=False) as store:
        systems = store.recorded_systems()
        pools = store.pointwise_table().groupby("pool")["score"].agg(["size", "max", "min"])
    assert systems[["decisions", "pools"]].values.tolist() == [[24, 6]]
    assert pools.values.tolist() == [[4, 1.0, 0.0]] * 6  # each pool still ranks its own four


def test_append_to_a_ranked_log_without_pools_is_refused(tmp_path):
    spec = RANK_SPEC.replace("pool: req\n", "")
    assert import_log(tmp_path, ranked_pools(0, 1, "2025-02-03").drop(columns="req"), "first", spec=spec)[0] == 0
    status, _, err = import_log(tmp_path, ranked_pools(4, 1, "2025-02-10").drop(columns="req"), "week", "--append",
                                spec=spec)
    assert status == 2 and "pool by pool" in err
