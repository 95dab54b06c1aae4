"""What an auditor chooses and the words the audit is given in, as the front ends (pages, commands, the report) read
them: the engine's one door to the constants of :mod:`audit.metrics`, so no front end reaches past the engine."""
from __future__ import annotations

from audit.metrics.impact import FOUR_FIFTHS
from audit.metrics.inference import METHODS, gap_test
from audit.metrics.keys import UNQUOTED
from audit.metrics.ll144 import MIN_APPLICANTS, SMALL_SHARE, UNKNOWN
from audit.metrics.monitoring import HORIZON, WINDOW
from audit.metrics.planner import SIZES
from audit.metrics.position import LARGER, UNBIASED_NOTE
from audit.metrics.presets import PRESETS
from audit.metrics.schema import is_pairwise

__all__ = ["FOUR_FIFTHS", "HORIZON", "LARGER", "METHODS", "MIN_APPLICANTS", "PRESETS", "SIZES", "SMALL_SHARE",
           "UNBIASED_NOTE", "UNKNOWN", "UNQUOTED", "WINDOW", "gap_test", "is_pairwise"]
