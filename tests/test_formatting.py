"""How numbers read: p-values, intervals, correlations with too few systems or constant values."""
import math

import pandas as pd
from hypothesis import given, settings, strategies as st

from audit.formatting import (bound, correlation_table, estimate, interval, markdown_table, number, pvalue, ratio)


def test_pvalues_intervals_and_numbers():
    assert [pvalue(7e-15), pvalue(3.08e-7), pvalue(0.0421), pvalue(1.0), pvalue(0.0), pvalue(None),
            pvalue(math.nan)] == ["7.0e-15", "3.1e-07", "0.042", "1.000", "< 1e-300", "n/a", "n/a"]
    assert interval(0.1234, 0.5) == "[0.12, 0.50]" and interval(None, 0.5) == "n/a"
    assert number(1.2e-16) == "0" and number(-0.0001) == "0" and number(0.25) == "0.250"
    assert estimate(None, 0.1, 0.2) == "n/a" and estimate(0.5, 0.1, 0.9) == "0.50 [0.10, 0.90]"


def test_correlation_table_blanks_r_and_p_where_they_mean_nothing():
    frame = pd.DataFrame({"scope": ["overall", "W_M", "A_F"], "gap": ["dp", "eo", "dp"],
                          "metric": ["delta", "jsd", "rabbi"], "column": ["delta", "jsd_qualified", "rabbi"],
                          "r": [0.5, 1.0, math.nan], "pvalue": [7e-15, 0.2, math.nan], "n": [16, 3, 12],
                          "r_lo": [0.2, 0.9, math.nan], "r_hi": [0.7, 1.0, math.nan]})
    table = correlation_table(frame, {"W_M": "White men"})
    assert table["r [interval]"].tolist() == ["0.50 [0.20, 0.70]", "", ""]
    assert table["p"].tolist() == ["7.0e-15", "", ""]
    assert table["note"].tolist() == ["", "too few systems (n < 5)", "not defined: constant values"]
    assert table["scope"].tolist() == ["overall", "White men", "A_F"] and table["metric"][1] == "JSD (qualified)"


def test_markdown_table_escapes_pipes():
    text = markdown_table(pd.DataFrame({"a": ["x|y"], "b": [None]}))
    assert text.splitlines() == ["| a | b |", "|---|---|", "| x\\|y |  |"]


def test_bounds_that_a_verdict_reads_get_the_decimals_that_separate_them_from_the_threshold():
    # the demo store's cases: GPT-3.5 HR specialist, Hispanic men at k = 3; software engineer, Asian women at k = 2
    assert ratio(0.8952164, 0.80010950, 1.0444271) == "0.8952 [0.8001, 1.0444]"
    assert ratio(0.9, 0.800269, 1.01) == "0.9000 [0.8003, 1.0100]"
    assert bound(0.80011) == "0.8001" and bound(0.79996) == "0.79996" and bound(0.8) == "0.800"
    assert ratio(0.7, 0.6, 0.7999999) == "0.700000 [0.600000, 0.800000]"  # as close as six decimals can tell
    assert ratio(0.76, 0.70, 0.90, threshold=0.75) == "0.760 [0.700, 0.900]"
    assert ratio(0.75004, threshold=0.75) == "0.75004" and ratio(0.75004) == "0.750"


@settings(max_examples=500, deadline=None)
@given(value=st.floats(0, 1.5), threshold=st.sampled_from([0.8, 0.75, 0.5, 0.9, 0.8125, 1.0]))
def test_a_shown_value_lies_on_its_own_side_of_the_threshold(value, threshold):
    shown = float(bound(value, threshold))
    distance = abs(value - threshold)
    if distance > 0.5e-6 * (1 + 1e-9):  # six decimals can tell it from the threshold
        assert (shown > threshold) == (value > threshold) and shown != threshold
    if distance > 0.5e-3 * (1 + 1e-9) + 1e-12:  # far from it: three decimals, no more
        assert len(bound(value, threshold).split(".")[1]) == 3
    low, high = sorted((value, threshold + (value - threshold) / 2))
    text = ratio(value, low, high, threshold)
    assert all(len(part.split(".")[1]) == len(text.split()[0].split(".")[1])
               for part in text.replace("[", "").replace("]", "").replace(",", "").split())
