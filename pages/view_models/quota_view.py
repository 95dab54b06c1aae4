"""One selection's audit at one quota k as the pages read it: the rows (label-mass flags, whether each gap's interval
excludes 0), the correlations and rankings of those rows computed on first use, and the sentence saying how the
intervals and p-values were made (from the selection itself, so it states the replicates actually drawn)."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from audit.engine.audit import Audit
from audit.enums import Mode
from audit.present.charts import SIGNIFICANCE_RULE, excludes_zero
from audit.engine.choices import METHODS, gap_test


def with_label_mass(table: pd.DataFrame, result: Audit) -> pd.DataFrame:
    """``table`` with ``low_label_mass``: the model's pointwise scores put little probability on the labels
    (:attr:`audit.engine.audit.Audit.label_mass` of ``result``)."""
    low = result.label_mass.query("low")["model"]
    return table.assign(low_label_mass=table["model"].isin(low) & (result.selection.mode == Mode.POINTWISE))


@dataclass
class Quota:
    """An audit at quota k: its rows and, on first use, their correlations and rankings (kept by the audit)."""

    result: Audit
    k: int
    rows: pd.DataFrame

    @classmethod
    def of(cls, result: Audit, k: int) -> "Quota":
        """``result`` at quota ``k``, its rows flagged with its label mass."""
        rows = with_label_mass(result.at(k), result)
        for column in ("dp_gap", "eo_gap"):
            rows[f"{column}_ci_excludes_0"] = excludes_zero(rows, column)
        return cls(result, k, rows)

    @property
    def correlations(self) -> pd.DataFrame:
        return self.result.correlations(self.k)

    @property
    def rankings(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        return self.result.rankings(self.k)

    def overall(self) -> pd.DataFrame:
        """The overall correlations (one r per gap × metric)."""
        return self.correlations[self.correlations["scope"] == "overall"].reset_index(drop=True)

    def caption(self) -> str:
        """How the intervals and p-values were made: level, replicates, shuffles and adjustment of the selection."""
        selection = self.result.selection
        ci, free = selection.ci or 0.95, self.result.quota_free
        family = self.rows.groupby("model", observed=True).size().max() if len(self.rows) else 0
        resampled = "recorded pools resampled" if self.result.pool == "observed" else \
            "candidates resampled within each group"
        return (f"Intervals: {round(ci * 100)} % percentile bootstrap ({selection.n_boot:,} replicates, {resampled}; "
                f"r recomputed from the resampled metrics and gaps). p: "
                + (f"exact conditional test of no gap stratified by recorded pool (its members compete for "
                   f"{'the places it filled' if free else 'its k places'})" if self.result.pool == "observed" else
                   f"permutation test of no gap ({selection.n_perm or 0:,} shuffles of the group labels within each "
                   "model · subtask, exact gaps)")
                + f", adjusted by {METHODS[selection.adjust]} across the {family} groups × subtasks shown "
                f"per model{'' if free else ' and k'}. "
                + SIGNIFICANCE_RULE.format(alpha=round(1 - ci, 6), test=gap_test(self.result.pool)))
