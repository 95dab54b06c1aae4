"""Run a scoring job: task → prompts → the store-backed model (:class:`audit.run.cached.CachedBackend`) → store.

The model is loaded only when some prompt is missing from the store, so a repeated run does no model work.
Computing a batch (:class:`BatchJob`: backend + prompts → result rows) is separate from writing it: an
:class:`~audit.run.cached.Executor` computes batches (in this process by default, or on a Ray cluster, see
:mod:`audit.run.distributed`) and this process alone commits each finished batch to the store on its own.
Cancelling (the progress callback returns ``False``) or killing the process loses at most the batches in
flight, and the next run picks up from there.
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from audit.backend import ModelRef
from audit.backend.protocol import Backend
from audit.enums import Mode, Reading
from audit.run.cached import Batch, CachedBackend, Executor, Fetched, InProcess, Progress
from audit.run.context_fit import fit_candidates
from audit.errors import AuditError
from audit.store.answer_parser import parse_choice
from audit.store.pairwise import choice_from_logprobs, pair_outcomes, with_choices
from audit.store.database import CHOICE_RESULTS, LABEL_RESULTS, Store
from audit.tasks.base import Candidate, ChatPrompt, Task
from audit.tasks.designs import design_of

MODES = (Mode.POINTWISE, Mode.PAIRWISE)
PAIRWISE_METHODS = tuple(Reading)


@dataclass(frozen=True)
class BatchJob:
    """What every batch of one run computes: label probabilities, greedy answers or option likelihoods.

    Picklable, so a remote worker computes exactly the rows this process would.
    """

    method: str  # "labels", "generate" or "likelihood"
    labels: tuple[str, ...] = ()

    def rows(self, backend: Any, batch: Batch) -> list[tuple]:
        """Result rows in the store's shape: ``(key, probs, mass)`` for labels, else
        ``(key, answer, choice, logp_first, logp_second)``."""
        keys = [key for key, _ in batch]
        prompts = [prompt for _, prompt in batch]
        if self.method == "labels":
            scores = backend.label_probabilities(prompts, self.labels)
            return [(k, tuple(r.probs), float(r.mass)) for k, r in zip(keys, scores)]
        if self.method == Reading.GENERATE:
            answers = backend.generate(prompts)
            return [(k, a, parse_choice(a, p.options), None, None) for k, a, p in zip(keys, answers, prompts)]
        rows = []
        for k, p, (first, second) in zip(keys, prompts, backend.option_logprobs(prompts)):
            choice = choice_from_logprobs(first, second)
            rows.append((k, {"first": p.options[0], "second": p.options[1]}.get(choice, ""), choice, first, second))
        return rows


MASS_SLACK = 1e-6
"""How far above 1 a label mass may round before it is taken for a broken backend."""


def check_rows(method: str, rows: list[tuple]) -> None:
    """Refuse a batch whose results no model could give, before anything of it is cached: label probabilities must
    be finite, in [0, 1] and sum to 1 with a label mass in [0, 1]; option log-probabilities finite and ≤ 0."""
    for row in rows:
        key = row[0]
        if method == "labels":
            probs, mass = row[1], row[2]
            numbers = [*probs, mass]
            if not all(isinstance(x, (int, float)) and math.isfinite(x) for x in numbers):
                raise AuditError(f"the model returned non-finite label probabilities for {key} "
                                 f"(probabilities {list(probs)}, label mass {mass}); nothing of this batch was stored")
            if any(x < -MASS_SLACK or x > 1 + MASS_SLACK for x in numbers) or abs(sum(probs) - 1) > MASS_SLACK:
                raise AuditError(f"the model returned impossible label probabilities for {key} (probabilities "
                                 f"{list(probs)}, label mass {mass}: a log-probability above 0?); nothing of this "
                                 "batch was stored")
        elif method == Reading.LIKELIHOOD:
            for value in row[3:5]:
                if not (isinstance(value, (int, float)) and math.isfinite(value) and value <= MASS_SLACK):
                    raise AuditError(f"the model returned an impossible option log-probability {value!r} for {key}; "
                                     "nothing of this batch was stored")


@dataclass
class RunSummary:
    """What a run did: unique prompts, how many came from the store, how many were scored, and quality flags."""

    model: str
    task: str
    subtask: str
    mode: str
    prompts: int
    cached: int
    scored: int = 0
    seconds: float = 0.0
    cancelled: bool = False
    quality: dict[str, float] = field(default_factory=dict)

    def line(self) -> str:
        flags = ", ".join(f"{k} {v:.3f}" for k, v in self.quality.items())
        state = " (cancelled)" if self.cancelled else ""
        return (f"{self.model} {self.task}/{self.subtask} {self.mode}: {self.prompts} prompts, {self.scored} scored, "
                f"{self.cached} cached, {self.seconds:.1f} s{state}" + (f"; {flags}" if flags else ""))


def run_scoring(
    store: Store,
    task: Task,
    ref: ModelRef,
    load_backend: Callable[[], Backend],
    *,
    mode: Mode = Mode.POINTWISE,
    pairwise_method: Reading = Reading.GENERATE,
    limit: int | None = None,
    rounds: int = 10,
    batch_size: int = 8,
    progress: Progress | None = None,
    executor: Executor | None = None,
    truncate: bool = False,
) -> RunSummary:
    """Score ``task`` with the model ``ref`` into ``store``; ``load_backend`` is called only if work remains.

    ``executor`` computes the batches (default: :class:`InProcess` with ``load_backend``); whichever it is,
    only this process writes to the store, one transaction per batch. Nothing is written before the plan is
    built and, in process, the model is loaded and every prompt checked against its context (texts too long are
    an error, or cut to fit with ``truncate``): a run that fails on its inputs leaves the store as it was.
    """
    check_options(mode=mode, pairwise_method=pairwise_method, limit=limit, rounds=rounds, batch_size=batch_size)
    started = time.perf_counter()
    executor = executor or InProcess(load_backend)
    store.check_dataset(task.name, task.dataset)
    if mode == Mode.POINTWISE:
        summary = _pointwise(store, task, ref, executor, limit, batch_size, progress, truncate)
    else:
        summary = _pairwise(store, task, ref, executor, pairwise_method, limit, rounds, batch_size, progress,
                            truncate)
    summary.seconds = time.perf_counter() - started
    return summary


def check_options(*, mode: Mode, pairwise_method: Reading, limit: int | None, rounds: int, batch_size: int) -> None:
    """Refuse run options that cannot work, before anything is written."""
    if mode not in MODES:
        raise AuditError(f"unknown mode {mode!r}; choose one of {[str(m) for m in MODES]}")
    if pairwise_method not in PAIRWISE_METHODS:
        raise AuditError(f"unknown pairwise method {pairwise_method!r}; choose one of "
                         f"{[str(m) for m in PAIRWISE_METHODS]}")
    for name, value in (("--batch-size", batch_size), ("--limit", limit), ("--rounds", rounds)):
        if value is not None and value < 1:
            raise AuditError(f"{name} must be positive, got {value}")


def backend_needs(mode: Mode, pairwise_method: Reading) -> tuple[tuple[str, ...], str]:
    """The backend capabilities (:data:`audit.backend.protocol.CAPABILITIES`) a run of ``mode`` needs beyond
    :class:`~audit.backend.protocol.Backend`, and the run as a refusal names it."""
    if mode == Mode.PAIRWISE and pairwise_method == Reading.LIKELIHOOD:
        return ("option_logprobs",), "pairwise likelihood scoring (--pairwise-mode likelihood)"
    return (), f"{mode} scoring"


def _candidate_rows(task: Task, candidates: Sequence[Candidate]) -> list[tuple]:
    return [(task.name, task.subtask, c.candidate_id, c.group, int(c.qualified), c.name, c.text) for c in candidates]


def _prompt_rows(prompts: dict[str, ChatPrompt]) -> list[tuple[str, str]]:
    return [(key, json.dumps(prompt.__dict__, ensure_ascii=False)) for key, prompt in prompts.items()]


def _fitted(task: Task, candidates: Sequence[Candidate], executor: Executor, missing: list[str], ref: ModelRef,
            *, pairwise: bool, truncate: bool) -> list[Candidate]:
    """Before the first write of an in-process run with work left: load the model, check the texts fit its context."""
    if not missing or not isinstance(executor, InProcess):
        return list(candidates)
    return fit_candidates(task, candidates, executor.load_backend(), pairwise=pairwise, model=ref.label,
                          truncate=truncate)


def _pointwise(store, task, ref, executor, limit, batch_size, progress, truncate) -> RunSummary:
    labels = json.dumps(list(task.label_set.labels))
    relevance = json.dumps(list(task.label_set.relevance))

    model = CachedBackend(store, LABEL_RESULTS, (ref.fingerprint, labels), executor, batch_size=batch_size)

    def plan(members: Sequence[Candidate]) -> tuple[dict[str, ChatPrompt], dict[str, ChatPrompt], list[str]]:
        prompts = {c.candidate_id: task.pointwise_prompt(c) for c in members}
        by_key = {p.key(): p for p in prompts.values()}
        return prompts, by_key, model.missing(list(by_key))

    candidates = task.candidates(limit)
    prompts, by_key, missing = plan(candidates)
    fitted = _fitted(task, candidates, executor, missing, ref, pairwise=False, truncate=truncate)
    if fitted != candidates:
        candidates = fitted
        prompts, by_key, missing = plan(candidates)
    store.check_label(ref.fingerprint, ref.label)

    record = _recorder(store, ref, task, candidates, by_key,
                       pointwise=[(ref.fingerprint, task.name, task.subtask, cid, p.key(), labels, relevance)
                                  for cid, p in prompts.items()])

    fetched = model.results(BatchJob("labels", tuple(task.label_set.labels)), by_key,
                            check=lambda rows: check_rows("labels", rows), record=record, progress=progress)
    summary = _summary(ref, task, Mode.POINTWISE, len(by_key), fetched)
    table = store.pointwise_table()
    mine = table[(table["fingerprint"] == ref.fingerprint) & (table["subtask"] == task.subtask)
                 & (table["task"] == task.name)]
    if len(mine):
        summary.quality = {"mean label mass": float(mine["label_mass"].mean())}
    return summary


def _recorder(store: Store, ref: ModelRef, task: Task, candidates: list[Candidate], by_key: dict[str, ChatPrompt],
              **plan: list[tuple]) -> Callable[[Callable[[], None]], None]:
    """What records a run when it is called: the model, then the design, candidates, prompts and ``plan`` rows, and
    then ``first`` (the first batch's results), in one transaction: a write that fails leaves the store as it was."""
    def record(first: Callable[[], None] = lambda: None) -> None:
        with store.transaction():
            store.register_model(ref.fingerprint, ref.label, ref.describe())
            store.save_plan(candidates=_candidate_rows(task, candidates), prompts=_prompt_rows(by_key),
                            design=design_of(task), dataset=task.dataset, **plan)
            first()
    return record


def _summary(ref: ModelRef, task: Task, mode: str, prompts: int, fetched: Fetched) -> RunSummary:
    return RunSummary(ref.label, task.name, task.subtask, mode, prompts, fetched.cached, fetched.computed,
                      cancelled=fetched.cancelled)


def _pairwise(store, task, ref, executor, method, limit, rounds, batch_size, progress, truncate) -> RunSummary:
    model = CachedBackend(store, CHOICE_RESULTS, (ref.fingerprint, method), executor, batch_size=batch_size)

    def plan(pools: list[list[Candidate]]) -> tuple[list[tuple], dict[str, ChatPrompt], list[str]]:
        rows, by_key = [], {}
        for pool_index, pool in enumerate(pools):
            for first in pool:
                for second in pool:
                    if first is not second:
                        prompt = task.pairwise_prompt(first, second)
                        by_key[prompt.key()] = prompt
                        rows.append((ref.fingerprint, task.name, task.subtask, method, pool_index,
                                     first.candidate_id, second.candidate_id, prompt.key()))
        return rows, by_key, model.missing(list(by_key))

    pools = task.pools(task.candidates(limit or rounds), rounds)
    members = [c for pool in pools for c in pool]
    rows, by_key, missing = plan(pools)
    fitted = {c.candidate_id: c for c in _fitted(task, members, executor, missing, ref, pairwise=True,
                                                   truncate=truncate)}
    if list(fitted.values()) != members:
        pools = [[fitted[c.candidate_id] for c in pool] for pool in pools]
        members = [c for pool in pools for c in pool]
        rows, by_key, missing = plan(pools)
    store.check_label(ref.fingerprint, ref.label)

    record = _recorder(store, ref, task, members, by_key, pairwise=rows)

    mode = Reading(method).pairwise_mode
    fetched = model.results(BatchJob(method), by_key, check=lambda rows: check_rows(method, rows), record=record,
                            progress=progress)
    summary = _summary(ref, task, mode, len(by_key), fetched)
    summary.quality = pairwise_quality(store, ref.fingerprint, task, method)
    return summary


def pairwise_quality(store: Store, fingerprint: str, task: Task, method: str) -> dict[str, float]:
    """Shares of irregular answers, ties, and flipped pairs (the paper's Table 2) for one model and subtask."""
    table = with_choices(store.pairwise_table())
    mine = table[(table["fingerprint"] == fingerprint) & (table["task"] == task.name)
                 & (table["subtask"] == task.subtask) & (table["method"] == method)]
    if mine.empty:
        return {}
    pairs = pair_outcomes(mine)
    return {
        "regular": float(mine["choice"].isin(["first", "second"]).mean()),
        "tie": float((mine["choice"] == "tie").mean()),
        "flipped": float(pairs["flipped"].mean()) if len(pairs) else 0.0,
        "inconsistent": float((pairs["outcome"] == "inconsistent").mean()) if len(pairs) else 0.0,
    }

