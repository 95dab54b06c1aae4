"""How numbers read: p-values, intervals, correlations with too few systems or constant values."""
import math

import pandas as pd

from audit.formatting import correlation_table, estimate, interval, markdown_table, number, pvalue


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
