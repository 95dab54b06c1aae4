"""Bias metrics for every (model, task, subtask, mode) and group A against the reference group, as one table.

Every metric is computed twice: on all candidates (A, B) and on qualified candidates only (A′, B′, the ``*_qualified``
columns), which the paper compares with ΔEO (section 4.4).
"""
from __future__ import annotations

import pandas as pd

from audit.enums import Mode
from audit.metrics.bias import delta, emd, rabbi_test
from audit.metrics.keys import KeyData, split_keys
from audit.metrics.pairwise import pair_preferences
from audit.metrics.presets import Preset, get_preset
from audit.metrics.schema import KEY, is_pairwise

BIAS_COLUMNS = ("delta", "jsd", "emd", "rabbi", "rabbi_pvalue", "delta_qualified", "jsd_qualified", "emd_qualified",
                "rabbi_qualified")


def key_bias(data: KeyData, *, preset: "str | Preset" = "default", bins: int | None = None) -> pd.DataFrame:
    """One row per non-reference group of one key. For pairwise keys δ needs pair outcomes and is left NaN here.

    ``preset`` picks the JSD estimator and p-value method (:mod:`audit.metrics.presets`); ``bins`` overrides its
    JSD bin count.
    """
    preset = get_preset(preset)
    jsd = preset.jsd(bins)
    pointwise = data.key[-1] == Mode.POINTWISE
    rows = []
    for g, name in enumerate(data.groups):
        if g == data.ref:
            continue
        row = dict(zip(KEY, data.key), group=name)
        for suffix, qualified in (("", False), ("_qualified", True)):
            a, b = data.of(g, qualified=qualified), data.of(data.ref, qualified=qualified)
            value, pvalue = rabbi_test(a, b, method=preset.pvalue_method)
            row.update({f"delta{suffix}": delta(a, b) if pointwise else float("nan"), f"jsd{suffix}": jsd(a, b),
                        f"emd{suffix}": emd(a, b), f"rabbi{suffix}": value})
            if not qualified:
                row["rabbi_pvalue"] = pvalue
        rows.append(row)
    return pd.DataFrame(rows, columns=[*KEY, "group", *BIAS_COLUMNS])


def with_pair_deltas(bias: pd.DataFrame, keys: list[KeyData], pairs: pd.DataFrame | None, *,
                     reference: str) -> pd.DataFrame:
    """Fill δ and δ-qualified of pairwise keys from the pair table (left NaN where no pairs were compared)."""
    pairwise_keys = [d for d in keys if is_pairwise(d.key[-1])]
    if pairs is None or not pairwise_keys:
        return bias
    index = [*KEY, "candidate_id"]
    qualified = pd.concat([pd.DataFrame({**dict(zip(KEY, d.key)), "candidate_id": d.candidate_id,
                                         "qualified": d.qualified})
                           for d in pairwise_keys])
    qualified = qualified.drop_duplicates(index).set_index(index)["qualified"]
    prefs = pair_preferences(pairs, reference=reference, qualified=qualified).set_index(list(KEY) + ["group"])
    out = bias.set_index(list(KEY) + ["group"])
    pairwise = out.index.get_level_values("mode").map(is_pairwise).to_numpy(dtype=bool)
    for column in ("delta", "delta_qualified"):
        out.loc[pairwise, column] = prefs[column].reindex(out.index[pairwise]).to_numpy()
    return out.reset_index()


def bias_metrics(scores: pd.DataFrame, *, reference: str, pairs: pd.DataFrame | None = None,
                 preset: "str | Preset" = "default", bins: int | None = None) -> pd.DataFrame:
    """δ, JSD, EMD, RABBI (+ Mann–Whitney p-value) and the qualified-only δ, JSD, EMD and RABBI of each group against
    ``reference``, per (model, task, subtask, mode). Pairwise δ comes from ``pairs`` (NaN without it)."""
    keys = split_keys(scores, reference=reference)
    bias = pd.concat([key_bias(d, preset=preset, bins=bins) for d in keys], ignore_index=True)
    return with_pair_deltas(bias, keys, pairs, reference=reference)
