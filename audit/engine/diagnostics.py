"""How well the audited models answered (:attr:`audit.engine.audit.Audit.diagnostics`): the label mass of their
pointwise scores and, in a pairwise mode, the shares of their answers that were irregular, tied or flipped with the
order of the pair (the paper's Table 2), from the store's tables."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from audit.metrics.schema import is_pairwise


@dataclass(frozen=True)
class Diagnostics:
    """``label_mass``: per model, :func:`audit.engine.shape.label_mass`; ``answers``: per model, the shares of its
    pairwise answers that were irregular (no first or second) or tied, and of its pairs whose answer flipped with
    the order (columns model, irregular, tied, flipped), None for the pointwise mode."""

    label_mass: pd.DataFrame
    answers: pd.DataFrame | None

    @property
    def table(self) -> pd.DataFrame:
        """What a report lists: :attr:`answers` in a pairwise mode, else the label mass (columns model,
        mean_label_mass, min_label_mass)."""
        if self.answers is not None:
            return self.answers
        return self.label_mass[["model", "mean label mass", "min label mass"]].rename(
            columns=lambda c: c.replace(" ", "_"))


def answer_shares(answers: pd.DataFrame, pairs: pd.DataFrame, task: str, mode: str,
                  models: Sequence[str]) -> pd.DataFrame | None:
    """Per model of ``models``, :attr:`Diagnostics.answers` of ``task`` in ``mode`` from the store's answer flags
    (:func:`audit.store.tables.answer_flags`) and pairs (None for a pointwise ``mode``)."""
    if not is_pairwise(mode):
        return None
    answers = answers[(answers["task"] == task) & (answers["mode"] == mode) & answers["model"].isin(models)]
    pairs = pairs[(pairs["task"] == task) & (pairs["mode"] == mode) & pairs["model"].isin(models)]
    out = answers.groupby("model", as_index=False).agg(irregular=("regular", lambda r: 1 - r.mean()),
                                                       tied=("tie", "mean"))
    return out.merge(pairs.groupby("model", as_index=False).agg(flipped=("flipped", "mean")), on="model", how="left")
