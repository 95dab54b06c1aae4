"""The closed choices of an audit, as :class:`enum.StrEnum` members: each value is its own string, so tables, stored
columns, CSV and JSON hold exactly the words they held as plain strings. The front ends convert at the input edge
(argparse ``type=``, the sidebar's widgets); everything below compares members, never literals. A leaf module, so
the metrics, the store and the engine all read the same members."""
from __future__ import annotations

from enum import StrEnum


class Mode(StrEnum):
    """How a model's scores were read: pointwise (a label score per candidate), pairwise (a generated answer per
    pair), pairwise-likelihood (the likelihood of each answer per pair); listwise is a scoring run's mode only (its
    rankings are stored as a recorded system, read as pointwise scores)."""

    POINTWISE = "pointwise"
    PAIRWISE = "pairwise"
    PAIRWISE_LIKELIHOOD = "pairwise-likelihood"
    LISTWISE = "listwise"


#: the modes a score table holds, in the order its audits are listed (listwise rankings are stored as recorded
#: systems, read as pointwise scores)
SCORED = (Mode.POINTWISE, Mode.PAIRWISE_LIKELIHOOD, Mode.PAIRWISE)


class Reading(StrEnum):
    """How a pairwise or listwise answer is read: generate (parse the generated answer, the paper's) or likelihood
    (compare the options' likelihoods)."""

    GENERATE = "generate"
    LIKELIHOOD = "likelihood"

    @property
    def pairwise_mode(self) -> Mode:
        """The score table's mode of a pairwise run read this way."""
        return Mode.PAIRWISE if self is Reading.GENERATE else Mode.PAIRWISE_LIKELIHOOD


class Family(StrEnum):
    """The verdict's multiple-testing family: Holm runs over every pairwise comparison of categories within it."""

    GROUPING = "grouping"
    SYSTEM = "system"
    AUDIT = "audit"


#: the family every front end and the policy default to
DEFAULT_FAMILY = Family.SYSTEM


class Rule(StrEnum):
    """The verdict's reading of adverse impact: practice (ratio below the threshold and the adjusted test rejects) or
    strict (and the ratio's upper confidence bound below the threshold)."""

    PRACTICE = "practice"
    STRICT = "strict"
