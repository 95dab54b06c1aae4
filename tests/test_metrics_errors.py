"""Every bad input gives an AuditError whose message names the column, group or value at fault."""
import numpy as np
import pandas as pd
import pytest
from helpers import score_table

from audit.errors import AuditError
from audit.metrics import MetricSuite, allocation_gaps, bias_metrics, jsd, metric_table, rabbi, simulate_gaps
from audit.commands.io import parse_quotas, read_table_file


def scores(changes=None):
    frame = score_table({g: ([0.1 * i for i in range(3)], [i == 0 for i in range(3)]) for g in ("W_M", "B_F", "A_F")})
    for (row, column), value in (changes or {}).items():
        frame[column] = frame[column].astype(object)
        frame.loc[row, column] = value
    return frame


def fails(match, scores_table=None, **options):
    options = {"reference": "W_M", "ks": [1], **options}
    with pytest.raises(AuditError, match=match):
        metric_table(scores() if scores_table is None else scores_table, **options)


def test_missing_columns_are_named():
    fails(r"missing column\(s\): qualified, score", scores().drop(columns=["score", "qualified"]))


def test_empty_table():
    fails("has no rows", scores().iloc[:0])


def test_unknown_reference_group_lists_the_groups():
    fails(r"reference group 'X_Y' not found in column 'group'; groups are: A_F, B_F, W_M", reference="X_Y")


def test_group_without_candidates_in_one_key():
    other = scores()
    other["model"] = "m2"
    fails(r"group 'A_F' has no candidates for model=m2, task=t, subtask=s, mode=pointwise",
          pd.concat([scores(), other[other.group != "A_F"]], ignore_index=True))


def test_group_without_qualified_candidate():
    table = scores()
    table.loc[table.group == "B_F", "qualified"] = 0
    fails(r"group 'B_F' has no qualified candidate for model=m, task=t, subtask=s, mode=pointwise", table)


def test_nan_and_non_numeric_scores_name_row_and_value():
    fails(r"column 'score' is empty \(NaN\) in row 3 \(candidate_id=W_M2\)", scores({(2, "score"): np.nan}))
    fails(r"column 'score' has a non-numeric or infinite value 'high' in row 5", scores({(4, "score"): "high"}))
    fails(r"column 'score' has a non-numeric or infinite value inf", scores({(1, "score"): np.inf}))


def test_bad_qualified_mode_and_duplicates():
    fails(r"column 'qualified' has value 2; expected 0 or 1", scores({(0, "qualified"): 2}))
    fails(r"column 'mode' has value 'listwise'", scores({(0, "mode"): "listwise"}))
    fails(r"column 'group' is empty in row 2", scores({(1, "group"): None}))
    fails(r"candidate_id 'W_M1' appears twice for model=m", scores({(2, "candidate_id"): "W_M1"}))
    mixed = scores({(0, "task"): "other"})  # a key per task: the lone row of task "other" lacks the other groups
    fails(r"group '\w+' has no (qualified )?candidates? for model=m, task=(t|other), subtask=s", mixed)


def test_quota_larger_than_the_pool():
    fails(r"quota k=4 is larger than the pool \(3 candidates, pool design per-group\) for model=m", ks=[1, 4])
    fails(r"quota k=0 must be at least 1", ks=[0])
    fails(r"pool random:12 is larger than the 9 candidates of model=m", pool="random:12")
    suite = MetricSuite(scores(), reference="W_M")
    with pytest.raises(AuditError, match="k=5 is larger than the pool"):
        suite.table([5])


def test_bad_pool_design_and_missing_pool_ids():
    fails(r"pool design: 'random:x' not understood", pool="random:x")
    fails(r"pool design 'observed' needs a 'pool' id on every row; missing for model=m", pool="observed")
    with pytest.raises(AuditError, match="per-group or random:N"):
        simulate_gaps(scores().assign(pool=1), reference="W_M", ks=[1], pool="observed")


def test_bad_confidence_level_and_array_inputs():
    fails("confidence level 1.5 must lie strictly between 0 and 1", ci=1.5)
    with pytest.raises(AuditError, match="scores of group A are empty"):
        rabbi([], [1.0])
    with pytest.raises(AuditError, match="NaN or infinite"):
        jsd([1.0, np.nan], [1.0])


def test_pair_table_errors():
    pairs = pd.DataFrame([dict(model="m", task="t", subtask="s", mode="pairwise", pool=0, candidate_a="W_M0",
                               candidate_b="B_F0", group_a="W_M", group_b="B_F", outcome="a")])
    pairwise = scores().assign(mode="pairwise")
    with pytest.raises(AuditError, match=r"column 'outcome' has value 'tie'"):
        bias_metrics(pairwise, reference="W_M", pairs=pairs.assign(outcome="tie"))
    with pytest.raises(AuditError, match=r"candidate_b 'B_F9' is not in the score table for model=m"):
        bias_metrics(pairwise, reference="W_M", pairs=pairs.assign(candidate_b="B_F9"))
    with pytest.raises(AuditError, match=r"pair table is missing column\(s\): outcome"):
        bias_metrics(pairwise, reference="W_M", pairs=pairs.drop(columns="outcome"))


def test_quota_parsing():
    assert parse_quotas("2") == [2]
    assert parse_quotas("1-4") == [1, 2, 3, 4]
    assert parse_quotas("1,3,5") == [1, 3, 5]
    for bad in ("x", "2-", "0", ""):
        with pytest.raises(AuditError, match="--k"):
            parse_quotas(bad)


def test_unreadable_files(tmp_path):
    with pytest.raises(AuditError, match="cannot read score table .*missing.csv"):
        read_table_file(str(tmp_path / "missing.csv"), "score table")
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"not parquet at all")
    with pytest.raises(AuditError, match="cannot read score table .*broken.parquet"):
        read_table_file(str(broken), "score table")
    with pytest.raises(AuditError, match="unsupported file type '.xlsx'"):
        read_table_file(str(tmp_path / "scores.xlsx"), "score table")


def test_allocation_gaps_checks_every_key():
    with pytest.raises(AuditError, match="quota k=9"):
        allocation_gaps(scores(), reference="W_M", ks=[9])


def test_reference_group_missing_from_one_task():
    essays = scores().assign(task="essay", subtask="ptj", group=lambda t: t["group"].str.replace("W_M", "L1"))
    fails(r"group 'W_M' has no candidates for model=m, task=essay, subtask=ptj, mode=pointwise",
          pd.concat([scores(), essays], ignore_index=True))
