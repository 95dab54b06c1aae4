"""Score shape and label mass of an audit's selection (:attr:`audit.engine.audit.Audit.shape`): skewness and
kurtosis per model, subtask and group (:func:`audit.metrics.shape.score_shape`, the RABBI paper's Figure 13) and, per
model, the share of the next-token probability its pointwise scores put on the labels."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from audit.enums import Mode
from audit.metrics.shape import BY

#: the keys of :attr:`Shape.moments`, in their sort order
KEYS = tuple(BY)
#: below this mean label mass a model mostly ignores the answer format (its scores are renormalised noise)
LOW_LABEL_MASS = 0.05


@dataclass(frozen=True)
class Shape:
    """``moments``: n, skewness and kurtosis per (model, task, subtask, mode, group); ``label_mass``:
    :func:`label_mass` of the audit's task and models."""

    moments: pd.DataFrame
    label_mass: pd.DataFrame


def label_mass(scores: pd.DataFrame, task: str, models: Sequence[str] = ()) -> pd.DataFrame:
    """Per model (of ``models``, all when empty), the mean and smallest label mass of its pointwise scores on ``task``
    and whether the mean is below :data:`LOW_LABEL_MASS` (columns model, mean label mass, min label mass, low)."""
    keep = (scores["task"] == task) & (scores["mode"] == Mode.POINTWISE)
    if models:
        keep &= scores["model"].astype(str).isin(models)
    rows = scores[keep]
    mass = pd.to_numeric(rows["label_mass"], errors="coerce").groupby(rows["model"]).agg(["mean", "min"])
    return pd.DataFrame({"model": mass.index, "mean label mass": mass["mean"].to_numpy(),
                         "min label mass": mass["min"].to_numpy(), "low": mass["mean"].to_numpy() < LOW_LABEL_MASS})
