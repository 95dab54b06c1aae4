"""Display names of imported group codes: the ranking-runs layout's codes (the 2024 GPT hiring study's
``<race>_<gender>``: race/ethnicity ``W`` White, ``B`` Black, ``A`` Asian, ``H`` Hispanic; gender ``M`` men, ``W``
women, so ``A_W`` = Asian women) declared on the task's stored designs. Codes stay as written in the store and in
csv/json exports; the names are how pages, the report and markdown read them."""
from __future__ import annotations

from dataclasses import replace

from audit.store import SAVE_DESIGN, Store

#: piece → name; ``W`` means White as the race part and women as the gender part
RANKING_RUN_NAMES = {"race:W": "White", "B": "Black", "A": "Asian", "H": "Hispanic", "M": "men", "gender:W": "women"}


def declare_names(store: Store, task: str, names: dict[str, str]) -> None:
    """Record ``names`` on every stored design of ``task`` (one transaction)."""
    designs = [design for (owner, _), design in store.designs().items() if owner == task]
    with store.transaction() as db:
        for design in designs:
            db.execute(SAVE_DESIGN, replace(design, names=dict(names)).row())
