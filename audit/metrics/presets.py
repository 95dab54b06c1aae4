"""Metric presets: this tool's estimators (``default``) or those of the RABBI paper's public code (``paper-exact``).

The two differ only where the project deliberately departs from the code (docs/command-line.md, "Differences from
the papers' code"): ``default`` bins JSD on the pooled range of A ∪ B with Sturges' bin count ⌈log₂(|A| + |B|)⌉ + 1 (each
distinct value its own bin when there are no more than that) and reports bits, and takes SciPy's exact Mann–Whitney p-value for small samples; ``paper-exact`` bins JSD on 10 bins
over A's range, keeps the bins both groups occupy and reports nats (:func:`audit.metrics.bias.jsd_paper_code`), and
always uses the asymptotic p-value. δ, EMD, RABBI and the gaps are the same under both.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable

from audit.errors import AuditError
from audit.metrics.bias import STURGES, jsd, jsd_paper_code


@dataclass(frozen=True)
class Preset:
    """The estimator choices a preset makes."""

    name: str
    description: str
    jsd_bins: "int | str"  # a bin count, or "sturges" (:func:`audit.metrics.bias.sturges`)
    paper_jsd: bool
    pvalue_method: str

    def jsd(self, bins: "int | str | None" = None) -> Callable[..., float]:
        """JSD of (A, B) under this preset, with ``bins`` overriding its bin count."""
        return partial(jsd_paper_code if self.paper_jsd else jsd, bins=bins or self.jsd_bins)


PRESETS = {
    "default": Preset("default", "JSD on the pooled range of A ∪ B (Sturges' bins, ⌈log₂(|A| + |B|)⌉ + 1; exact "
                                 "when there are no more distinct values), in bits; exact Mann–Whitney p-value for "
                                 "small samples", STURGES, False, "auto"),
    "paper-exact": Preset("paper-exact", "as the RABBI paper's code: JSD on 10 bins over A's range, shared bins "
                                         "only, in nats; asymptotic Mann–Whitney p-value", 10, True, "asymptotic"),
}


def get_preset(preset: "str | Preset") -> Preset:
    """The preset named ``preset`` (an AuditError names the choices otherwise)."""
    if isinstance(preset, Preset):
        return preset
    if preset not in PRESETS:
        raise AuditError(f"unknown preset {preset!r}; choose one of {', '.join(PRESETS)}")
    return PRESETS[preset]
