"""The one quota rule every audit view applies to the quotas it is asked for: k lies in 1 … pool size − 1 (at k = pool
size everyone is selected and every gap is 0 by construction: nothing to measure). The metric formulas themselves are
defined up to k = pool size (:func:`audit.metrics.allocation.check_quotas` bounds that domain)."""
from __future__ import annotations

from audit.errors import AuditError


def check_quota(k: int, size: int, where: str) -> None:
    """An AuditError naming the pool size and ``where`` (e.g. "the race grouping") when quota ``k`` is not in
    1 … ``size`` − 1."""
    if k < 1:
        raise AuditError(f"quota k={k} must be at least 1")
    if k >= size:
        raise AuditError(f"quota k={k} is not below the pool size {size} of {where}: at k = pool size "
                         f"everyone is selected; choose k in 1 … {size - 1}")
