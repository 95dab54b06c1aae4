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

from audit.paths import DEMO_STORE
from audit.recorded.synthetic import SPEC, dated_log
from audit.store.database import Store
from audit.engine.tables import StoreTables
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


# ---- monitor -----------------------------------------------------------------------------------------------------

DROP = 26  # the drifting job's women's rate is 0.6 of men's from the 27th week (look 26) on


@pytest.fixture(scope="module")
def watched(tmp_path_factory) -> Path:
    """6 jobs × 52 weeks × 400 decisions a job-week, job-06 drifting to 0.6 at look 26 (seeded)."""
    folder = tmp_path_factory.mktemp("watched")
    frame = dated_log(6, 52, 400, drifts={5: (DROP, 0.6)}, seed=11)
    assert import_log(folder, frame, "log")[0] == 0
    return folder / "s.db"


def monitor(db: Path, *extra: str) -> tuple[int, str, str]:
    return audit_status("monitor", "--db", db, "--task", "watched", *extra)


def test_the_drifting_job_alarms_within_8_weeks_of_the_drop_and_the_fair_ones_do_not(watched):
    status, out, err = monitor(watched, "--format", "json")
    assert status == 0 and err == ""
    result = json.loads(out)
    summary = {row["subtask"]: row for row in result["summary"]}
    assert len(result["periods"]) == 52 and result["periods"][0] == "2025-01-06"
    drifting = summary.pop("job-06")
    raised = result["periods"].index(drifting["first_alarm"])
    assert DROP <= raised <= DROP + 8 and drifting["alarm"] and drifting["category"] == "F"
    assert drifting["recent_ratio"] < 0.8 < drifting["baseline_ratio"] and drifting["change"] < 0.8
    assert drifting["evidence_then"] >= drifting["level"] == 52 / 0.05  # one pair (F, M): m = 1
    assert "at or above 0.8" in drifting["to_clear"]
    assert all(row["first_alarm"] == "" and not row["alarm"] for row in summary.values())
    looks = pd.DataFrame(result["looks"])
    mine = looks[looks["subtask"] == "job-06"]
    assert mine["alarm"].tolist() == [look >= raised and recent < 0.8 and detector >= 1040 for look, recent, detector
                                      in zip(mine["look"], mine["recent_ratio"], mine["detector"])]
    assert not mine["alarm"].iloc[:raised].any()


def test_md_csv_and_json_agree(watched):
    result = json.loads(monitor(watched, "--format", "json")[1])
    csv = pd.read_csv(__import__("io").StringIO(monitor(watched, "--format", "csv")[1]), keep_default_na=False)
    looks = pd.DataFrame(result["looks"])
    assert list(csv.columns) == list(looks.columns) and len(csv) == len(looks) == 6 * 52
    for column in ("members", "selected", "comparator_members", "comparator_selected", "look"):
        assert csv[column].tolist() == looks[column].tolist()
    for column in ("rate", "ratio", "cumulative_ratio", "band_lo", "recent_ratio", "detector"):
        assert csv[column].to_numpy(float) == pytest.approx(looks[column].to_numpy(float), rel=1e-9, nan_ok=True)
    assert csv["alarm"].astype(str).str.lower().tolist() == [str(a).lower() for a in looks["alarm"]]
    md = monitor(watched)[1]
    assert "**Alarms now:** 1 of 6 watched pairs" in md and "2025-01-06" in md
    drifting = next(row for row in result["summary"] if row["subtask"] == "job-06")
    line = next(line for line in md.splitlines() if "| job-06 |" in line)
    assert f"| {drifting['members']} |" in line and drifting["first_alarm"] in line and "| raised |" in line


def test_monitor_counts_agree_with_the_verdict(tmp_path):
    """Totals over every look are the decisions and selection rates ``verdict`` reads (0/1 log and a ranked log
    with pools at k = 1); a pool counts in the period of its latest decision."""
    assert import_log(tmp_path, dated_log(2, 6, 60, seed=5), "log")[0] == 0
    pools = ranked_pools(0, 40, "2025-02-03")
    pools["day"] = [f"2025-02-{3 + (i // 4) % 10:02d}" for i in range(len(pools))]
    pools.loc[3, "day"] = "2025-02-10"  # pool req-0 closes a week later: it counts in that week
    assert import_log(tmp_path, pools, "ranked", spec=RANK_SPEC, label="ranker")[0] == 0
    ranked = json.loads(monitor(tmp_path / "s.db", "--format", "json")[1])
    with_verdict = json.loads(audit_status("verdict", "--db", tmp_path / "s.db", "--task", "watched", "--format",
                                           "json", "--permutations", "10", "--bootstrap", "10")[1])["categories"]
    for row in ranked["summary"]:
        judged = next(v for v in with_verdict if v["model"] == row["model"] and v["subtask"] == row["subtask"]
                      and v["grouping"] == row["grouping"] and v["category"] == row["category"])
        assert (row["members"], row["rate"]) == (judged["candidates"], pytest.approx(judged["selection_rate"]))
    looks = pd.DataFrame(ranked["looks"])
    req0 = looks[(looks["model"] == "ranker") & (looks["period"] == "2025-02-10")]
    # the pools dated 10–12 February (p % 10 ≥ 7: 12 of 40) and req-0, whose last decision is on the 10th
    assert req0["members"].sum() + req0["comparator_members"].sum() == (12 + 1) * 4


def test_the_family_corrects_the_level(tmp_path):
    frame = dated_log(1, 8, 100, seed=4)
    frame["race"] = ["W", "B"] * (len(frame) // 2)
    spec = SPEC.replace("[sex]", "[sex, race]")
    assert import_log(tmp_path, frame, "log", spec=spec)[0] == 0
    levels = {family: {row["grouping"]: row["level"] for row in json.loads(
        monitor(tmp_path / "s.db", "--family", family, "--format", "json")[1])["summary"]}
        for family in ("grouping", "system")}
    # sex × race: 4 categories, 6 pairs; sex and race: 1 pair each; the system's family: 8 pairs
    assert levels["grouping"] == {"sex × race": 52 * 6 / 0.05, "sex": 52 / 0.05, "race": 52 / 0.05}
    assert set(levels["system"].values()) == {52 * 8 / 0.05}


@pytest.mark.parametrize("extra, message", [
    (("--task", "nope"), "task 'nope' has no results"),
    (("--since", "2025-02-30"), "--since 2025-02-30: give a date as YYYY-MM-DD"),
    (("--since", "2031-01-01"), "no decisions from that date on"),
    (("--alpha", "1.5"), "--alpha 1.5"),
    (("--threshold", "0"), "--threshold 0"),
])
def test_bad_monitor_input_is_one_line(watched, extra, message):
    status, out, err = audit_status("monitor", "--db", watched, *(extra if "--task" in extra else
                                                                   ("--task", "watched", *extra)))
    assert status == 2 and out == "" and len(err.splitlines()) == 1 and message in err


def test_a_log_without_dates_cannot_be_monitored(tmp_path):
    assert import_log(tmp_path, ranked_pools(0, 10, "2025-02-03").drop(columns="day"), "log",
                      spec=RANK_SPEC.replace("date: day\n", ""))[0] == 0
    status, _, err = monitor(tmp_path / "s.db")
    assert status == 2 and "holds no dated decisions" in err and len(err.splitlines()) == 1
    status, _, err = audit_status("monitor", "--db", tmp_path / "s.db", "--task", "watched", "--period", "year")
    assert status == 2 and "invalid choice" in err


def test_the_demo_stores_synthetic_log_alarms_on_its_drifting_job_alone():
    digest = hashlib.sha256(DEMO_STORE.read_bytes()).hexdigest()
    status, out, err = audit_status("monitor", "--db", DEMO_STORE, "--task", "synthetic-dated-log", "--format", "json")
    assert status == 0 and err == ""
    alarms = {row["subtask"]: row["first_alarm"] for row in json.loads(out)["summary"]}
    assert alarms == {"job-01": "", "job-02": "", "job-03": "2025-07-28"}
    assert hashlib.sha256(DEMO_STORE.read_bytes()).hexdigest() == digest  # read, never written
