"""The ``paper-exact`` preset against numbers worked out by hand on tests/data/paper_exact_scores.csv.

The table: group A = 0.2 (qualified), 0.2, 0.65 (q), 1.0 (q); reference R = 0.1 (q), 0.22, 0.62 (q), 0.66 (q), 0.99.
"""
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.spatial.distance import jensenshannon

from audit.errors import AuditError
from audit.metrics import bias_metrics, metric_table
from audit.metrics.bias import jsd_paper_code, rabbi_test

TABLE = Path(__file__).parent / "data" / "paper_exact_scores.csv"

# paper-exact JSD, all candidates: 10 bins over A's range [0.2, 1.0], width 0.08, bin i = [0.2 + 0.08 i, …).
#   A: 0.2, 0.2 → bin 0; 0.65 → bin 5 [0.60, 0.68); 1.0 → bin 9 (closed) → P = ½ (bin 0), ¼ (bin 5), ¼ (bin 9)
#   R: 0.1 lies outside A's range (no bin); 0.22 → bin 0; 0.62, 0.66 → bin 5; 0.99 → bin 9
#      → Q = counts / |R| = 1/5, 2/5, 1/5 (summing to 4/5)
#   every bin either has is shared, so M = ½(P + Q) = 0.35, 0.325, 0.225 and, in nats,
#   JSD = ½ Σ P ln(P/M) + ½ Σ Q ln(Q/M)
PAPER_JSD = 0.5 * (0.5 * math.log(0.5 / 0.35) + 0.25 * math.log(0.25 / 0.325) + 0.25 * math.log(0.25 / 0.225)) \
    + 0.5 * (0.2 * math.log(0.2 / 0.35) + 0.4 * math.log(0.4 / 0.325) + 0.2 * math.log(0.2 / 0.225))
# paper-exact JSD, qualified only: A′ = 0.2, 0.65, 1.0 (range [0.2, 1.0] again) → P = ⅓ in bins 0, 5, 9;
#   R′ = 0.1 (outside), 0.62, 0.66 → Q = ⅔ in bin 5. Only bin 5 is shared: P = ⅓, Q = ⅔, M = ½
#   JSD = ½ · ⅓ ln(⅔) + ½ · ⅔ ln(4/3)
PAPER_JSD_QUALIFIED = math.log(2 / 3) / 6 + math.log(4 / 3) / 3
# default JSD (Sturges' bins on the pooled sample, over [min, max] of A ∪ R):
#   all: 9 scores → ⌈log₂ 9⌉ + 1 = 5 bins over [0.1, 1.0], width 0.18 (edges 0.28, 0.46, 0.64, 0.82)
#        A: 0.2, 0.2 → 0; 0.65 → 3; 1.0 → 4 → P = (½, 0, 0, ¼, ¼); R: 0.1, 0.22 → 0; 0.62 → 2; 0.66 → 3; 0.99 → 4
#        → Q = (⅖, 0, ⅕, ⅕, ⅕)
#   qualified: 6 scores → 4 bins over [0.1, 1.0], width 0.225 (edges 0.325, 0.55, 0.775)
#        A′: 0.2 → 0; 0.65 → 2; 1.0 → 3 → P = (⅓, 0, ⅓, ⅓); R′: 0.1 → 0; 0.62, 0.66 → 2 → Q = (⅓, 0, ⅔, 0)
DEFAULT_JSD = jensenshannon([0.5, 0, 0, 0.25, 0.25], [0.4, 0, 0.2, 0.2, 0.2], base=2) ** 2
DEFAULT_JSD_QUALIFIED = jensenshannon([1 / 3, 0, 1 / 3, 1 / 3], [1 / 3, 0, 2 / 3, 0], base=2) ** 2
# EMD (the same under both presets): ∫|F_A − F_R| over the sorted points 0.1 | 0.2 | 0.22 | 0.62 | 0.65 | 0.66 |
#   0.99 | 1
#   = 0.2·0.1 + 0.3·0.02 + 0.1·0.4 + 0.1·0.03 + 0.15·0.01 + 0.05·0.33 + 0.25·0.01 = 0.0895
EMD = 0.0895
# δ = mean A − mean R = 2.05/4 − 2.59/5 = −0.0055; RABBI: per a, #{r < a} − #{r > a}: 0.2 → 1 − 4 (twice), 0.65 → 3 − 2,
#   1.0 → 5 − 0; total −6 + 1 + 5 = 0 → 0 / 20 = 0
DELTA, RABBI = -0.0055, 0.0


def scores() -> pd.DataFrame:
    return pd.read_csv(TABLE)


def test_paper_exact_preset_reproduces_the_hand_computed_numbers():
    row = bias_metrics(scores(), reference="R", preset="paper-exact").iloc[0]
    assert row["jsd"] == pytest.approx(PAPER_JSD, abs=1e-12)
    assert row["jsd_qualified"] == pytest.approx(PAPER_JSD_QUALIFIED, abs=1e-12)
    assert (row["emd"], row["delta"], row["rabbi"]) == pytest.approx((EMD, DELTA, RABBI), abs=1e-12)


def test_default_preset_differs_only_in_jsd():
    default = bias_metrics(scores(), reference="R").iloc[0]
    paper = bias_metrics(scores(), reference="R", preset="paper-exact").iloc[0]
    assert [default["jsd"], default["jsd_qualified"]] == pytest.approx([DEFAULT_JSD, DEFAULT_JSD_QUALIFIED],
                                                                       abs=1e-12)
    same = ["delta", "emd", "rabbi", "delta_qualified", "emd_qualified", "rabbi_qualified"]
    assert default[same].tolist() == pytest.approx(paper[same].tolist())


def test_preset_reaches_the_metric_table_and_p_values():
    table = metric_table(scores(), reference="R", ks=1, pool="random:3", preset="paper-exact")
    assert table["jsd"].iloc[0] == pytest.approx(PAPER_JSD)
    rng = np.random.default_rng(0)
    a, b = rng.random(7), rng.random(6)  # small, no ties: SciPy's default p-value is exact, the code's asymptotic
    exact, asymptotic = rabbi_test(a, b)[1], rabbi_test(a, b, method="asymptotic")[1]
    assert asymptotic == pytest.approx(stats.mannwhitneyu(a, b, method="asymptotic").pvalue) and asymptotic != exact


def test_paper_code_jsd_depends_on_which_group_is_a():
    a, b = [0.2, 0.2, 0.65, 1.0], [0.1, 0.22, 0.62, 0.66, 0.99]
    assert jsd_paper_code(a, b) == pytest.approx(PAPER_JSD)
    assert jsd_paper_code(b, a) != pytest.approx(PAPER_JSD)
    assert jsd_paper_code([0.5, 0.5], [0.9]) == 0.0  # no shared bin


def test_unknown_preset_is_refused():
    with pytest.raises(AuditError, match="unknown preset 'paper'; choose one of default, paper-exact"):
        bias_metrics(scores(), reference="R", preset="paper")
