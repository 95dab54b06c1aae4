"""Run a scoring job: task → prompts → (store cache check) → model → store, batch by batch.

The model is loaded only when some prompt is missing from the store, so a repeated run does no model work.
Every batch is committed on its own; cancelling (the progress callback returns ``False``) or killing the
process loses at most the batch in flight, and the next run picks up from there.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

from audit.backend import CausalLM, ModelRef
from audit.errors import AuditError
from audit.pairwise import choice_from_logprobs, pair_outcomes, parse_choice
from audit.store import Store
from audit.tasks.base import Candidate, ChatPrompt, Task

MODES = ("pointwise", "pairwise")
PAIRWISE_METHODS = ("generate", "likelihood")
Progress = Callable[[int, int], "bool | None"]


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
    load_backend: Callable[[], CausalLM],
    *,
    mode: str = "pointwise",
    pairwise_method: str = "generate",
    limit: int | None = None,
    rounds: int = 10,
    batch_size: int = 8,
    progress: Progress | None = None,
) -> RunSummary:
    """Score ``task`` with the model ``ref`` into ``store``; ``load_backend`` is called only if work remains."""
    check_options(mode=mode, pairwise_method=pairwise_method, limit=limit, rounds=rounds, batch_size=batch_size)
    started = time.perf_counter()
    store.register_model(ref.fingerprint, ref.label, ref.describe())
    if mode == "pointwise":
        summary = _pointwise(store, task, ref, load_backend, limit, batch_size, progress)
    else:
        summary = _pairwise(store, task, ref, load_backend, pairwise_method, limit, rounds, batch_size, progress)
    summary.seconds = time.perf_counter() - started
    return summary


def check_options(*, mode: str, pairwise_method: str, limit: int | None, rounds: int, batch_size: int) -> None:
    """Refuse run options that cannot work, before anything is written."""
    if mode not in MODES:
        raise AuditError(f"unknown mode {mode!r}; choose one of {list(MODES)}")
    if pairwise_method not in PAIRWISE_METHODS:
        raise AuditError(f"unknown pairwise method {pairwise_method!r}; choose one of {list(PAIRWISE_METHODS)}")
    for name, value in (("--batch-size", batch_size), ("--limit", limit), ("--rounds", rounds)):
        if value is not None and value < 1:
            raise AuditError(f"{name} must be positive, got {value}")


def _candidate_rows(task: Task, candidates: Sequence[Candidate]) -> list[tuple]:
    return [(task.name, task.subtask, c.candidate_id, c.group, int(c.qualified), c.name, c.text) for c in candidates]


def _prompt_rows(prompts: dict[str, ChatPrompt]) -> list[tuple[str, str]]:
    return [(key, json.dumps(prompt.__dict__, ensure_ascii=False)) for key, prompt in prompts.items()]


def _pointwise(store, task, ref, load_backend, limit, batch_size, progress) -> RunSummary:
    candidates = task.candidates(limit)
    prompts = {c.candidate_id: task.pointwise_prompt(c) for c in candidates}
    by_key = {p.key(): p for p in prompts.values()}
    labels = json.dumps(list(task.label_set.labels))
    relevance = json.dumps(list(task.label_set.relevance))
    store.save_plan(
        candidates=_candidate_rows(task, candidates),
        prompts=_prompt_rows(by_key),
        pointwise=[(ref.fingerprint, task.name, task.subtask, cid, p.key(), labels, relevance)
                   for cid, p in prompts.items()],
    )
    missing = store.missing_label_prompts(ref.fingerprint, labels, by_key)
    summary = RunSummary(ref.label, task.name, task.subtask, "pointwise", len(by_key), len(by_key) - len(missing))

    def score(batch: list[str], backend: CausalLM) -> None:
        results = backend.label_probabilities([by_key[k] for k in batch], task.label_set.labels)
        store.save_label_results(ref.fingerprint, labels, [(k, r.probs, r.mass) for k, r in zip(batch, results)])

    _work(missing, score, summary, load_backend, batch_size, progress)
    table = store.pointwise_table()
    mine = table[(table["fingerprint"] == ref.fingerprint) & (table["subtask"] == task.subtask)
                 & (table["task"] == task.name)]
    if len(mine):
        summary.quality = {"mean label mass": float(mine["label_mass"].mean())}
    return summary


def _pairwise(store, task, ref, load_backend, method, limit, rounds, batch_size, progress) -> RunSummary:
    candidates = task.candidates(limit or rounds)
    pools = task.pools(candidates, rounds)
    plan, by_key = [], {}
    for pool_index, pool in enumerate(pools):
        for first in pool:
            for second in pool:
                if first is not second:
                    prompt = task.pairwise_prompt(first, second)
                    by_key[prompt.key()] = prompt
                    plan.append((ref.fingerprint, task.name, task.subtask, method, pool_index,
                                 first.candidate_id, second.candidate_id, prompt.key()))
    members = [c for pool in pools for c in pool]
    store.save_plan(candidates=_candidate_rows(task, members), prompts=_prompt_rows(by_key), pairwise=plan)
    missing = store.missing_choice_prompts(ref.fingerprint, method, by_key)
    mode = "pairwise" if method == "generate" else "pairwise-likelihood"
    summary = RunSummary(ref.label, task.name, task.subtask, mode, len(by_key), len(by_key) - len(missing))

    def score(batch: list[str], backend: CausalLM) -> None:
        batch_prompts = [by_key[k] for k in batch]
        if method == "generate":
            answers = backend.generate(batch_prompts)
            rows = [(k, a, parse_choice(a, by_key[k].options), None, None) for k, a in zip(batch, answers)]
        else:
            logps = backend.option_logprobs(batch_prompts)
            rows = []
            for k, (first, second) in zip(batch, logps):
                choice = choice_from_logprobs(first, second)
                answer = {"first": by_key[k].options[0], "second": by_key[k].options[1]}.get(choice, "")
                rows.append((k, answer, choice, first, second))
        store.save_choice_results(ref.fingerprint, method, rows)

    _work(missing, score, summary, load_backend, batch_size, progress)
    summary.quality = pairwise_quality(store, ref.fingerprint, task, method)
    return summary


def pairwise_quality(store: Store, fingerprint: str, task: Task, method: str) -> dict[str, float]:
    """Shares of irregular answers, ties, and flipped pairs (the paper's Table 2) for one model and subtask."""
    table = store.pairwise_table()
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


def _work(missing: list[str], score: Callable[[list[str], CausalLM], None], summary: RunSummary,
          load_backend: Callable[[], CausalLM], batch_size: int, progress: Progress | None) -> None:
    """Score ``missing`` in committed batches, reporting progress; stop early when progress says so."""
    total = summary.prompts
    if progress is not None and progress(summary.cached, total) is False:
        summary.cancelled = bool(missing)
        return
    if not missing:
        return
    backend = load_backend()
    for start in range(0, len(missing), batch_size):
        batch = missing[start : start + batch_size]
        score(batch, backend)
        summary.scored += len(batch)
        if progress is not None and progress(summary.cached + summary.scored, total) is False:
            summary.cancelled = summary.scored < len(missing)
            return

