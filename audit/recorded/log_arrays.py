"""Column operations of the decision-log reader (:mod:`audit.recorded.decision_logs`) on Arrow and NumPy arrays:
no Python object per cell and no grouping by text. Each one answers a question of the checks (are the ids distinct,
does every pool rank its applicants 1 … n) or builds a column (each distinct cell once, sorted codes, positions in
file order, each subtask's rows in stored order); the reader names any bad row with pandas, on the failing path
only.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc


def arrow_text(values: pd.Series) -> pa.Array:
    """A text column as one Arrow large-string array."""
    text = pa.array(values, type=pa.large_string())
    return text.combine_chunks() if isinstance(text, pa.ChunkedArray) else text


def distinct_cells(values: pd.Series) -> tuple[np.ndarray, pd.Series]:
    """(each row's code, the distinct cells of ``values`` as text: ``astype("string")``, a missing cell NA, in order
    of first appearance): text work on a column of few distinct cells runs once per distinct cell, not per row."""
    encoded = pc.dictionary_encode(arrow_text(values.astype("string")), null_encoding="encode")
    return encoded.indices.to_numpy().astype(np.int64), pd.Series(pd.arrays.ArrowStringArray(encoded.dictionary))


def dense_codes(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct values of the non-negative integers ``key``, sorted; each row's index in them), as
    ``np.unique(key, return_inverse=True)``: counted, not sorted, where the values span no more than the rows."""
    if len(key) and int(key.max()) > len(key):
        used, of_row = np.unique(key, return_inverse=True)
        return used, of_row.reshape(-1)
    present = np.bincount(key, minlength=1) > 0
    return np.flatnonzero(present), (np.cumsum(present) - 1)[key]


def distinct(values: pd.Series) -> bool:
    """Whether no text of ``values`` appears twice (sorted, each compared with the next: on a million distinct ids
    several times faster than Arrow's hash count); ids that are all whole numbers written plainly are sorted as the
    integers they write (on a million shuffled ids many times faster than sorting texts)."""
    text = arrow_text(values)
    if len(text) < 2:
        return True
    if _plain_integers(text):
        numbers = np.sort(pc.cast(text, pa.int64()).to_numpy())
        return not (numbers[1:] == numbers[:-1]).any()
    ordered = text.take(pc.sort_indices(text))
    return not pc.any(pc.equal(ordered[1:], ordered[:-1])).as_py()


def _plain_integers(text: pa.Array) -> bool:
    """Whether every text is 0 or the ASCII digits of a positive integer below 10¹⁸ without a leading zero (none
    missing): two such texts are equal exactly where their integers are."""
    return text.null_count == 0 and bool(
        pc.all(pc.ascii_is_decimal(text)).as_py() and pc.min(pc.binary_length(text)).as_py() >= 1
        and pc.max(pc.binary_length(text)).as_py() <= 18
        and pc.sum(pc.starts_with(text, "0")).as_py() == pc.sum(pc.equal(text, "0")).as_py())


def sorted_codes(values: pd.Series) -> tuple[np.ndarray, list[str]]:
    """(each row's code, the distinct texts in sorted order): codes number the texts in that order, as
    ``pd.factorize(values, sort=True)`` does."""
    encoded = pc.dictionary_encode(arrow_text(values))
    order = pc.array_sort_indices(encoded.dictionary).to_numpy()
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank[encoded.indices.to_numpy()], encoded.dictionary.take(pa.array(order)).to_pylist()


@dataclass(frozen=True)
class Pools:
    """The pools of a log: rows in pool order (``order``, stable: file order within a pool), each row's position
    in its pool (file order, from 0) and the size of its pool."""

    order: np.ndarray
    position: np.ndarray
    size: np.ndarray

    @classmethod
    def of(cls, key: np.ndarray) -> "Pools":
        """The pools of the rows whose pool key (an integer per row, one per pool) is ``key``."""
        order = np.argsort(key, kind="stable")
        ordered = key[order]
        first = np.ones(len(key), dtype=bool)
        first[1:] = ordered[1:] != ordered[:-1]
        starts = np.flatnonzero(first)
        pool = np.cumsum(first) - 1
        sizes = np.diff(np.append(starts, len(key)))
        position, size = np.empty(len(key), dtype=np.int64), np.empty(len(key), dtype=np.int64)
        position[order] = np.arange(len(key)) - starts[pool]
        size[order] = sizes[pool]
        return cls(order, position, size)

    def ranked(self, ranks: np.ndarray) -> bool:
        """Whether every pool of n ranks its rows 1 … n, each rank once (``ranks``: whole numbers from 1)."""
        if (ranks > self.size).any():
            return False
        slots = (np.arange(len(ranks)) - self.position[self.order]) + ranks[self.order].astype(np.int64) - 1
        return bool(np.bincount(slots, minlength=len(ranks)).max(initial=0) <= 1)

    def parts(self, subtask: np.ndarray, names: list[str]) -> dict[str, np.ndarray]:
        """Each subtask's rows in pool and position order (``subtask``: each row's code, numbering ``names``; the
        pool key sorts by subtask first)."""
        bounds = np.searchsorted(subtask[self.order], np.arange(len(names) + 1))
        return {name: self.order[start:end] for name, start, end in zip(names, bounds[:-1], bounds[1:])}
