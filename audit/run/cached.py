"""The store in front of a backend: this tool's take on lm-evaluation-harness' ``CachingLM``.

A :class:`CachedBackend` answers requests (item → prompt) for one kind of output of one model and its settings (a
:class:`~audit.store.database.ResultTable` and its scope): items already stored are read back; only the missing ones go to
the inner backend, through an :class:`Executor` (this process, or a Ray cluster: :mod:`audit.run.distributed`), in
batches, and each batch is saved in one transaction as it completes. Killing the process or cancelling (the progress
callback returns ``False``) loses at most the batches in flight; the next request computes only what is missing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generator, Mapping, Protocol, Sequence

from audit.store.database import Item, ResultTable, Store

Progress = Callable[[int, int], "bool | None"]
Batch = list[tuple[Any, Any]]  # (item, prompt) pairs computed together
Rows = list[tuple]  # one (item, *values) row per request of a batch
Record = Callable[[Callable[[], None]], None]


class Job(Protocol):
    """What every batch of one request computes on a backend (picklable, so a remote worker computes the same)."""

    def rows(self, backend: Any, batch: Batch) -> Rows: ...


class Executor(Protocol):
    """Computes batches somewhere and yields each batch's rows as soon as it is done (in any order)."""

    def map(self, job: Job, batches: Sequence[Batch]) -> Generator[Rows, None, None]: ...


class InProcess:
    """The default executor: this process, one batch after another; the backend is loaded on first use."""

    def __init__(self, load_backend: Callable[[], Any]):
        self.load_backend = load_backend

    def map(self, job: Job, batches: Sequence[Batch]) -> Generator[Rows, None, None]:
        backend = self.load_backend()
        for batch in batches:
            yield job.rows(backend, batch)


def at_once(first: Callable[[], None]) -> None:
    """The default ``record``: the first batch is saved like every other."""
    first()


@dataclass
class Fetched:
    """What a request got: every stored result (item → values as stored), how many were found stored, how many
    computed now, and whether it stopped (cancelled) before every item had its result."""

    results: dict[Item, tuple]
    cached: int
    computed: int
    cancelled: bool


class CachedBackend:
    """The results of ``table`` under ``scope`` (e.g. label probabilities of one model and label set), computed by
    ``inner`` only where the store lacks them."""

    def __init__(self, store: Store, table: ResultTable, scope: Sequence, inner: Executor, *, batch_size: int = 8):
        self.store, self.table, self.scope, self.inner, self.batch_size = store, table, tuple(scope), inner, batch_size

    def missing(self, items: Sequence[Item]) -> list[Item]:
        """The distinct ``items`` with no stored result, in first-seen order."""
        stored = self.store.stored_results(self.table, self.scope, items)
        return [item for item in dict.fromkeys(items) if item not in stored]

    def results(self, job: Job, requests: Mapping[Item, Any], *, check: Callable[[Rows], None] = lambda rows: None,
                record: Record = at_once, progress: Progress | None = None) -> Fetched:
        """Every request's result: the stored ones, and the missing ones computed by ``job`` on the inner backend
        ``batch_size`` at a time, each batch ``check``-ed and then saved in one transaction as it completes.

        ``record(first)`` writes whatever must commit with the first results (a run's plan) and calls ``first`` in
        the same transaction; with nothing missing it is called at once. ``progress(done, total)`` is told before
        and after every batch; ``False`` stops after the batch in flight (``cancelled``)."""
        missing = self.missing(list(requests))
        cached = len(requests) - len(missing)
        computed, cancelled = compute(missing, requests, job, self.inner, self.batch_size,
                                      lambda rows: self.store.save_results(self.table, self.scope, rows),
                                      check, record, progress, cached)
        return Fetched(self.store.stored_results(self.table, self.scope, requests), cached, computed, cancelled)


def compute(missing: Sequence[Item], requests: Mapping[Item, Any], job: Job, executor: Executor, batch_size: int,
            save: Callable[[Rows], None], check: Callable[[Rows], None], record: Record, progress: Progress | None,
            done: int) -> tuple[int, bool]:
    """Compute ``missing`` in batches, ``save`` each as it returns (the first inside ``record``); ``done``: results
    already there. Returns how many were computed and whether progress stopped it early."""
    total = done + len(missing)
    if progress is not None and progress(done, total) is False:
        return 0, bool(missing)
    if not missing:
        record(lambda: None)
        return 0, False
    batches = [[(item, requests[item]) for item in missing[start : start + batch_size]]
               for start in range(0, len(missing), batch_size)]
    stream = executor.map(job, batches)
    computed, recorded = 0, False
    try:
        for rows in stream:
            check(rows)
            if recorded:
                save(rows)
            else:
                record(lambda: save(rows))  # the first results commit with what record writes
                recorded = True
            computed += len(rows)
            if progress is not None and progress(done + computed, total) is False:
                return computed, computed < len(missing)
    finally:
        stream.close()
    return computed, False
