"""Read scored CAIRO continuations from the store, for one toxicity scorer and one decoding (or one decoding's
runs over several generation seeds, whose biases are then averaged)."""
from __future__ import annotations

import json

import pandas as pd

from audit.errors import AuditError
from audit.store import Store


def without_seed(decoding: str) -> str:
    """A decoding key with its seed left out: the key shared by the runs of ``cairo run --seeds``."""
    settings = json.loads(decoding)
    settings.pop("seed", None)
    return json.dumps(settings, sort_keys=True)


def scored_continuations(store: Store, *, scorer: str | None = None, decoding: str | None = None,
                         average_seeds: bool = False) -> pd.DataFrame:
    """Every scored continuation of one scorer and one decoding (each may be omitted when the store holds one).

    ``average_seeds``: decodings that differ only in their seed count as one, each seed a ``run`` of it (``decoding``
    may then name the settings with or without a seed).
    """
    table = store.cairo_table()
    if table.empty:
        raise AuditError(f"result store {store.path} holds no scored CAIRO continuations: run `python -m audit "
                         "cairo run` first")
    if average_seeds:
        table = table.assign(run=table["decoding"].map(lambda key: json.loads(key).get("seed", 0)),
                             decoding=table["decoding"].map(without_seed))
        decoding = without_seed(decoding) if decoding is not None else None
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
