"""Run the 2024 study's listwise protocol on a model and store its rankings like the imported study's.

Each ranking (:mod:`audit.tasks.study`) is one prompt; its result is kept in the store's results table under the
run's fingerprint, so an interrupted run resumes where it stopped. Two readings:

- ``generate`` (the study's): a sampled answer with the study's settings (temperature 1, top-p 1, 500 tokens; the
  sample seeded per ranking), read by the import's parser (:func:`audit.recorded.ranking_runs.read_order`). A reply
  naming some but not all names is *partial* and kept, as the study keeps it; one naming none is *unreadable*,
  counted, listed and left out of the rankings.
- ``likelihood``: log P(name | prompt) of each name as the first tokens of the answer, normalised over the eight
  names: each name's probability of being ranked first; the ranking orders the names by it.

After the batches, the run's rankings are written as a recorded system (outcome ``rank``; pool = ranking number,
position = place shown, 0 = first), exactly as ``import --format ranking-runs`` writes the study's, so every command
reads them with no special case. The fingerprint covers the model, the protocol, the reading and its settings.
"""
from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import pandas as pd

from audit.backend import ModelRef
from audit.backend.protocol import require
from audit.design import AuditDesign, PoolDesign, split_groupings
from audit.errors import AuditError
from audit.prompts import ChatPrompt
from audit.recorded.ranking_runs import read_order
from audit.scoring import Executor, InProcess, Progress, RunSummary, run_batches
from audit.store import SAVE_DESIGN, Store, save_recorded
from audit.tasks import study
from audit.tasks.recorded import RANKING_RUN_GROUPINGS, RANKING_RUN_NAMES, RANKING_RUN_REFERENCE

READINGS = ("generate", "likelihood")
PARSED, PARTIAL, UNREADABLE = "parsed", "partial", "unreadable"
FINGERPRINT_PREFIX = "lw-"


@dataclass(frozen=True)
class ListwiseJob:
    """What every batch of a listwise run computes (picklable for the Ray executor): rows
    ``(key, answer, status, None, None)``; ``answer`` is the reply (generate) or the JSON list of top-1
    probabilities in the order shown (likelihood)."""

    method: str  # "listwise-generate" or "listwise-likelihood"
    seed: int
    max_tokens: int = study.SAMPLING["max_tokens"]

    def rows(self, backend: Any, batch: list[tuple[str, ChatPrompt]]) -> list[tuple]:
        keys, prompts = [k for k, _ in batch], [p for _, p in batch]
        if self.method == "listwise-generate":
            seeds = [int(hashlib.sha256(f"{self.seed}:{k}".encode()).hexdigest()[:8], 16) for k in keys]
            answers = require(backend, ["sampling"]).sample(
                prompts, seeds, max_new_tokens=self.max_tokens, min_new_tokens=1,
                temperature=study.SAMPLING["temperature"], top_p=study.SAMPLING["top_p"])
            return [(k, a, reply_status(a, p.options), None, None) for k, a, p in zip(keys, answers, prompts)]
        rows = []
        for k, p in zip(keys, prompts):  # one ranking at a time: its eight names share the whole prompt's cache
            logps = backend.option_logprobs([p], lead="")[0]
            rows.append((k, json.dumps(top1_probabilities(logps, k)), PARSED, None, None))
        return rows


def top1_probabilities(logps: Sequence[float], key: str = "") -> list[float]:
    """Softmax of the names' log-probabilities: each name's probability of being ranked first (sums to 1)."""
    if not logps or not all(isinstance(v, (int, float)) and math.isfinite(v) and v <= 1e-6 for v in logps):
        raise AuditError(f"the model returned impossible name log-probabilities {list(logps)} for ranking {key}; "
                         "nothing of this batch was stored")
    top = max(logps)
    weights = [math.exp(v - top) for v in logps]
    return [w / sum(weights) for w in weights]


def reply_status(reply: str, names: Sequence[str]) -> str:
    """``parsed`` (every name mentioned), ``partial`` (some) or ``unreadable`` (none), as the import reads it."""
    mentioned = sum(name.lower() in reply.lower() for name in names)
    return PARSED if mentioned == len(names) else PARTIAL if mentioned else UNREADABLE


@dataclass
class ListwiseRun:
    """A run's settings; ``fingerprint`` and ``label`` name it in the store."""

    ref: ModelRef
    reading: str = "generate"
    seed: int = 0
    max_tokens: int = study.SAMPLING["max_tokens"]
    label: str | None = None
    settings: dict = field(init=False)

    def __post_init__(self) -> None:
        if self.reading not in READINGS:
            raise AuditError(f"unknown reading {self.reading!r}; choose one of {list(READINGS)}")
        if self.max_tokens < 1:
            raise AuditError(f"--max-tokens must be positive, got {self.max_tokens}")
        sampling = {**study.SAMPLING, "max_tokens": self.max_tokens} if self.reading == "generate" else {}
        self.settings = {"protocol": study.PROTOCOL, "reading": self.reading, "seed": self.seed, **sampling}

    @property
    def method(self) -> str:
        return f"listwise-{self.reading}"

    @property
    def fingerprint(self) -> str:
        payload = json.dumps({"model": self.ref.fingerprint, **self.settings}, sort_keys=True)
        return FINGERPRINT_PREFIX + hashlib.sha256(payload.encode()).hexdigest()[:16]

    @property
    def name(self) -> str:
        return self.label or f"{self.ref.label} listwise-{self.reading}" + (f" seed {self.seed}" if self.seed else "")


def run_listwise(store: Store, run: ListwiseRun, job: str, rankings: int, load_backend: Callable[[], Any], *,
                 batch_size: int = 4, progress: Progress | None = None, executor: Executor | None = None
                 ) -> tuple[RunSummary, list[int]]:
    """Score ``rankings`` rankings of ``job``; returns the summary and the numbers of unreadable replies."""
    if rankings < 1 or batch_size < 1:
        raise AuditError(f"--rankings and --batch-size must be positive, got {rankings} and {batch_size}")
    started = time.perf_counter()
    drawn = [study.draw(study.check_job(job), i, run.seed) for i in range(rankings)]
    prompts = [replace_options(study.ranking_prompt(r), r.names) for r in drawn]
    by_key = {p.key(): p for p in prompts}
    store.check_label(run.fingerprint, run.name)
    missing = store.missing_choice_prompts(run.fingerprint, run.method, by_key)
    summary = RunSummary(run.name, study.TASK, job, run.method, len(by_key), len(by_key) - len(missing))

    def record(first: Callable[[], None] = lambda: None) -> None:
        """The run and its prompts, then ``first`` (the first batch's results), in one transaction."""
        with store.transaction():
            store.register_model(run.fingerprint, run.name, {"kind": "listwise run", "model": run.ref.describe(),
                                                             **run.settings})
            store.save_plan(candidates=(), prompts=[(k, json.dumps(p.__dict__, ensure_ascii=False))
                                                    for k, p in by_key.items()])
            first()

    run_batches(missing, by_key, ListwiseJob(run.method, run.seed, run.max_tokens),
                lambda rows: store.save_choice_results(run.fingerprint, run.method, rows), summary,
                executor or InProcess(load_backend), batch_size, progress, record)
    answers = stored_answers(store, run, [p.key() for p in prompts])
    unreadable = [r.index for r, p in zip(drawn, prompts) if answers.get(p.key(), ("", ""))[1] == UNREADABLE]
    decisions = ranked_rows(run, drawn, prompts, answers)
    if len(decisions):
        write_rankings(store, run, decisions)
    statuses = [answers[p.key()][1] for p in prompts if p.key() in answers]
    if statuses:
        summary.quality = {s: statuses.count(s) / len(statuses) for s in (PARSED, PARTIAL, UNREADABLE)}
    summary.seconds = time.perf_counter() - started
    return summary, unreadable


def replace_options(chat: ChatPrompt, names: Sequence[str]) -> ChatPrompt:
    """``chat`` with the names as its options (what the parser and the likelihood reading look for)."""
    return ChatPrompt(chat.system, chat.user, chat.answer_prefix, tuple(names))


def stored_answers(store: Store, run: ListwiseRun, keys: list[str]) -> dict[str, tuple[str, str]]:
    """prompt key → (answer, status) of the run's stored results."""
    found = store.query("SELECT prompt, answer, choice FROM choice_results WHERE model = ? AND method = ?",
                        (run.fingerprint, run.method))
    wanted = set(keys)
    return {k: (a, c) for k, a, c in found.itertuples(index=False) if k in wanted}


def ranked_rows(run: ListwiseRun, drawn: list[study.Ranking], prompts: list[ChatPrompt],
                answers: dict[str, tuple[str, str]]) -> pd.DataFrame:
    """Decision rows (subtask, pool, position, group, value = rank, applicant) of every readable ranking."""
    rows = []
    for ranking, chat in zip(drawn, prompts):
        answer, status = answers.get(chat.key(), ("", UNREADABLE))
        if status == UNREADABLE:
            continue
        if run.reading == "generate":
            order = read_order(answer, list(ranking.names))
        else:
            probs = json.loads(answer)
            order = sorted(range(len(probs)), key=lambda i: (-probs[i], i))
        for rank, position in enumerate(order, start=1):
            rows.append((ranking.job, ranking.index, position, ranking.groups[position], rank, None))
    return pd.DataFrame(rows, columns=["subtask", "pool", "position", "group", "value", "applicant"])


def write_rankings(store: Store, run: ListwiseRun, decisions: pd.DataFrame) -> None:
    """The run's rankings as a recorded system of task ``study-gpt-hiring``, with the study's design."""
    with store.transaction() as db:
        store.check_importable(study.TASK)
        save_recorded(db, run.fingerprint, study.TASK, "rank", decisions)
        for job in decisions["subtask"].unique():
            design = AuditDesign(study.TASK, str(job), RANKING_RUN_REFERENCE, PoolDesign("observed"), ("rank",),
                                 (1.0,), "every candidate of a pool equally qualified (the study's design)",
                                 split_groupings(RANKING_RUN_GROUPINGS), "", names=dict(RANKING_RUN_NAMES))
            db.execute(SAVE_DESIGN, design.row())
