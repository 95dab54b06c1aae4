"""How numbers read on pages, in the report and in Markdown output: p-values, intervals, ratios, tables."""
from __future__ import annotations

import math
import unicodedata

import pandas as pd


def _missing(value: object) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def pvalue(value: object) -> str:
    """Three decimals (``0.042``); below a thousandth two significant digits (``3.1e-07``: exact tests give such
    values, never floored); ``< 1e-300`` for an underflowed 0; ``n/a`` when missing."""
    if _missing(value):
        return "n/a"
    p = float(value)
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}" if p > 0 else "< 1e-300"


def number(value: object, digits: int = 3) -> str:
    """A float with ``digits`` decimals (``n/a`` when missing); values that round to zero read ``0``, never
    ``-0.000`` or ``1.2e-16``."""
    if _missing(value):
        return "n/a"
    x = float(value)
    return "0" if round(x, digits) == 0 else f"{x:.{digits}f}"


def _fixed(value: object, digits: int) -> str:
    """``value`` with ``digits`` decimals, never ``-0.00``."""
    text = f"{float(value):.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def interval(low: object, high: object, digits: int = 2) -> str:
    """``[0.12, 0.48]``; ``n/a`` when a bound is missing."""
    if _missing(low) or _missing(high):
        return "n/a"
    return f"[{_fixed(low, digits)}, {_fixed(high, digits)}]"


def estimate(value: object, low: object = None, high: object = None, digits: int = 2) -> str:
    """``0.73 [0.61, 0.85]``, or the value alone without bounds; ``n/a`` when the value is missing (never a bare
    interval next to a missing estimate)."""
    if _missing(value):
        return "n/a"
    text = _fixed(value, digits)
    return text if _missing(low) or _missing(high) else f"{text} {interval(low, high, digits)}"


#: where a verdict of systems judged on their recorded decisions (0/1 or score logs, no quota) is read
RECORDED_DECISIONS = "on the recorded decisions"


def at_quota(k: int | None, quota_free: bool = False) -> str:
    """``at k = 3``, or ``on the recorded decisions`` where no quota moves the selection
    (:attr:`audit.engine.audit.Audit.quota_free`)."""
    return RECORDED_DECISIONS if quota_free else f"at k = {k}"


_MARKUP = str.maketrans({c: "\\" + c for c in "\\`*[]|#~!"} | {"<": "&lt;", ">": "&gt;", "&": "&amp;"})


def md_text(value: object) -> str:
    """``value`` as literal Markdown text, the one escape every Markdown output uses: NFC; markup characters
    (``\\ ` * [ ] | # ~ !``) backslash-escaped and ``< > &`` as entities, so no table, heading, link or HTML can be
    injected; line breaks as spaces; invisible format characters (zero-width, bidi controls) shown as ``⟨U+202E⟩``.
    Missing values are empty."""
    if _missing(value):
        return ""
    text = unicodedata.normalize("NFC", str(value))
    text = "".join(f"⟨U+{ord(c):04X}⟩" if unicodedata.category(c) in ("Cf", "Cc") and c not in "\n\r\t" else c
                   for c in text) if not text.isascii() or not text.isprintable() else text
    return " ".join(text.translate(_MARKUP).splitlines()).replace("\t", " ")


def markdown_table(frame: pd.DataFrame) -> str:
    """``frame`` as a GitHub-flavoured Markdown table (every cell through :func:`md_text`; missing cells empty)."""
    head = "| " + " | ".join(md_text(c) for c in frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    body = ["| " + " | ".join(md_text(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([head, rule, *body]) + "\n"


#: correlations over fewer points than this are flagged, not read as findings
MIN_SYSTEMS = 5
_GAPS = {"dp": "ΔDP", "eo": "ΔEO"}
_METRICS = {"delta": "δ", "jsd": "JSD", "emd": "EMD", "rabbi": "RABBI"}


def correlation_table(correlations: pd.DataFrame, names: "dict[str, str] | None" = None) -> pd.DataFrame:
    """Correlations (:func:`audit.metrics.validity` columns) as people read them: scope (group names from
    ``names``), gap, metric, r with its interval, p formatted, n, and a note — "too few systems" when n < 5,
    "not defined: constant values" when r is missing; r and p are left blank in both cases."""
    names = names or {}
    rows = []
    for row in correlations.itertuples(index=False):
        n = int(row.n) if not _missing(row.n) else 0
        note = (f"too few systems (n < {MIN_SYSTEMS})" if n < MIN_SYSTEMS
                else "not defined: constant values" if _missing(row.r) else "")
        low, high = (getattr(row, "r_lo", None), getattr(row, "r_hi", None))
        rows.append({"scope": names.get(str(row.scope), str(row.scope)),
                     "gap": _GAPS.get(str(row.gap), str(row.gap)),
                     "metric": _METRICS.get(str(row.metric), str(row.metric))
                     + (" (qualified)" if str(getattr(row, "column", "")).endswith("qualified") else ""),
                     "r [interval]": "" if note else estimate(row.r, low, high),
                     "p": "" if note else pvalue(getattr(row, "pvalue", None)), "n": n, "note": note})
    return pd.DataFrame(rows, columns=["scope", "gap", "metric", "r [interval]", "p", "n", "note"])


_ACRONYMS = frozenset({"hr", "it", "ai", "ml", "qa", "ux", "ceo", "cfo", "cto"})


def subtask_name(subtask: object) -> str:
    """A subtask as people read it, the one spelling of every page, table and report: ``financial_analyst`` →
    ``financial analyst``, ``hr_specialist`` → ``HR specialist`` (known acronyms upper-cased), ``HR specialist`` and
    ``financial analyst`` unchanged."""
    return " ".join(w.upper() if w.lower() in _ACRONYMS else w for w in str(subtask).replace("_", " ").split())


def ratio(value: object, low: object = None, high: object = None, threshold: float = 0.8) -> str:
    """An impact ratio with its interval to three decimals (``0.796 [0.702, 0.899]``), more where three would put the
    ratio or a bound on a side of ``threshold`` it is not on, or on the threshold itself (a true 0.79963 reads
    ``0.7996``, a bound of 0.80011 ``0.8001``, never ``0.800``): a verdict read against the threshold never contradicts
    the shown values."""
    if _missing(value):
        return "n/a"
    return estimate(value, low, high, digits=threshold_digits((value, low, high), threshold))


def bound(value: object, threshold: float = 0.8) -> str:
    """One ratio or interval bound alone, with the decimals :func:`ratio` gives it (``n/a`` when missing)."""
    return "n/a" if _missing(value) else _fixed(value, threshold_digits((value,), threshold))


#: a value this close to the threshold is read as on it (the verdict's planner reads a ratio on it the same way)
ON_THRESHOLD = 1e-9


def _side(x: float, threshold: float) -> int:
    return 0 if abs(x - threshold) <= ON_THRESHOLD else (1 if x > threshold else -1)


def threshold_digits(values: "tuple[object, ...]", threshold: float, least: int = 3, most: int = 6) -> int:
    """The fewest decimals (``least`` … ``most``) at which every present value of ``values`` rounds to its own side of
    ``threshold``: below, above or (only when it is on it) equal."""
    present = [float(v) for v in values if not _missing(v)]
    for digits in range(least, most + 1):
        if all(_side(round(x, digits), threshold) == _side(x, threshold) for x in present):
            return digits
    return most
