"""Read scored CAIRO continuations from the store, for one toxicity scorer and one decoding."""
from __future__ import annotations

import pandas as pd

from audit.errors import AuditError
from audit.store import Store


def scored_continuations(store: Store, *, scorer: str | None = None, decoding: str | None = None) -> pd.DataFrame:
    """Every scored continuation of one scorer and one decoding (each may be omitted when the store holds one)."""
    table = store.cairo_table()
    if table.empty:
        raise AuditError(f"result store {store.path} holds no scored CAIRO continuations: run `python -m audit "
                         "cairo run` first")
    for column, wanted, option in (("scorer", scorer, "--scorer"), ("decoding", decoding, "--decoding")):
        present = sorted(table[column].unique())
        if wanted is None and len(present) > 1:
            raise AuditError(f"result store {store.path} holds several {column}s; choose one with {option}: "
                             + "; ".join(present))
        choice = wanted if wanted is not None else present[0]
        if choice not in present:
            raise AuditError(f"result store {store.path} has no {column} {choice!r}; it has: " + "; ".join(present))
        table = table[table[column] == choice]
    return table.reset_index(drop=True)
