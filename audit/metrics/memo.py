"""A thread-safe, size-bounded cache of read-only arrays: results that depend only on their key (seeded random draws,
exact null laws), kept for the next pass over the same data in this process."""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

import numpy as np


class ArrayCache:
    """Arrays by key, at most ``max_bytes`` in all, the least recently used dropped first; an array larger than
    ``max_bytes`` is returned but not kept."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._arrays: OrderedDict[Hashable, np.ndarray] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._arrays

    def get(self, key: Hashable, make: Callable[[], np.ndarray]) -> np.ndarray:
        """The array kept under ``key``, else ``make()`` kept (read-only) and returned."""
        with self._lock:
            found = self._arrays.get(key)
            if found is not None:
                self._arrays.move_to_end(key)
                return found
        made = make()
        made.flags.writeable = False
        if made.nbytes <= self.max_bytes:
            with self._lock:
                if key not in self._arrays:
                    self._arrays[key] = made
                    self._bytes += made.nbytes
                while self._bytes > self.max_bytes:
                    self._bytes -= self._arrays.popitem(last=False)[1].nbytes
        return made
