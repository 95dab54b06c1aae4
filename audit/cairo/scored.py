"""Read scored CAIRO continuations from the store, for one toxicity scorer and one decoding (or one decoding's
runs over several generation seeds, whose biases are then averaged)."""
from __future__ import annotations

import json

import pandas as pd

from audit.errors import AuditError
from audit.store.database import Store


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


def unify_subgroups(table: pd.DataFrame, mapping: dict) -> pd.DataFrame:
    """Rename or drop subgroups so that metrics target the same ones (the paper's subgroup unification, e.g.
    HolisticBias's many gender descriptors down to the two other metrics' subgroups).

    ``mapping``: metric → dimension → {subgroup: new name, or None to leave its prompts out}; unlisted subgroups
    stay as they are. Every name must be in ``table``.
    """
    if not isinstance(mapping, dict):
        raise AuditError("a subgroup map is a JSON object: metric → dimension → {subgroup: new name or null}")
    table = table.copy()
    entries = [(metric, dimension, renames) for metric, dimensions in mapping.items()
               for dimension, renames in (dimensions.items() if isinstance(dimensions, dict) else [(None, None)])]
    for metric, dimension, renames in entries:
        rows = (table["metric"] == metric) & (table["dimension"] == dimension)
        if not isinstance(renames, dict) or not rows.any():
            raise AuditError(f"subgroup map: no {metric!r} / {dimension!r} results to unify, or its entry is "
                             "not an object {subgroup: new name or null}")
        unknown = sorted(set(renames) - set(table.loc[rows, "subgroup"]))
        if unknown:
            raise AuditError(f"subgroup map: {metric} / {dimension} has no subgroup(s) {unknown}; it has "
                             f"{sorted(table.loc[rows, 'subgroup'].unique())}")
        table.loc[rows, "subgroup"] = table.loc[rows, "subgroup"].map(lambda g: renames.get(g, g))
    return table[table["subgroup"].notna()].reset_index(drop=True)
