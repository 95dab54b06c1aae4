"""Run the 2024 study's listwise protocol on a model and store its rankings like the imported study's.

Each ranking (:mod:`audit.tasks.study`) is one prompt; its result is kept in the store's results table under the
run's fingerprint, so an interrupted run resumes where it stopped. Two readings:

- ``generate`` (the study's): a sampled answer with the study's settings (temperature 1, top-p 1, 500 tokens; the
  sample seeded per ranking), read by the import's parser (:func:`audit.recorded.ranking_runs.read_order`); a local
  model's reply stops once it names every name (the parser reads first mentions). A reply naming some but not all
  names is *partial* and kept, as the study keeps it; one naming none is *unreadable*, counted, listed and left out
  of the rankings (a run whose every reply is unreadable is an error: nothing to audit). A reply over
  :data:`KEPT_BYTES` is stored as its first :data:`KEPT_BYTES`, its size and SHA-256 and the order read from all
  of it (:func:`kept_reply`); shorter replies are stored as they are, as before.
- ``likelihood``: log P(name | prompt) of each name as the first tokens of the answer, normalised over the eight
  names: each name's probability of being ranked first. From the same KV cache, the full order: at each place the
  most likely of the names left (normalised over them), the answer so far written one name a line; the ranking is
  that order and its probability (the product of the places' normalised probabilities) is kept with it.

After the batches, the run's rankings are written as a recorded system (outcome ``rank``; pool = ranking number,
position = place shown, 0 = first), exactly as ``import --format ranking-runs`` writes the study's, so every command
reads them with no special case. The fingerprint covers the model, the protocol, the reading and its settings.
"""
from __future__ import annotations

import hashlib
import json
import math
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

import pandas as pd

from audit.backend import ModelRef
from audit.backend.causal_lm import CausalLM
from audit.backend.protocol import require
from audit.design import AuditDesign, PoolDesign, split_groupings
from audit.enums import Reading
from audit.errors import AuditError
from audit.prompts import ChatPrompt, check_new_tokens
from audit.recorded.ranking_runs import read_order
from audit.run.cached import CachedBackend, Executor, InProcess, Progress
from audit.run.scoring import RunSummary, check_rows
from audit.store.database import CHOICE_RESULTS, Store, save_design, save_recorded, storable
from audit.tasks import study
from audit.tasks.recorded import RANKING_RUN_GROUPINGS, RANKING_RUN_NAMES, RANKING_RUN_REFERENCE

READINGS = tuple(Reading)
FULL_ORDER = "greedy, one name a line"  # how the likelihood reading builds the full order (in the fingerprint)
PARSED, PARTIAL, UNREADABLE = "parsed", "partial", "unreadable"
FINGERPRINT_PREFIX = "lw-"
MAX_RANKINGS = 1_000_000
"""Most rankings one run may ask per job (``--rankings``): checked before anything is drawn or loaded."""
DRAW_BATCH = 1_024
"""Rankings drawn, requested and stored at a time, so memory before the first request does not grow with
``--rankings``."""
KEPT_BYTES = 64 * 1024
"""Most bytes of a generate reply stored as text; a longer one keeps its head, size, SHA-256 and parsed order."""
KEPT_KEYS = {"reply", "bytes", "sha256", "order"}


@dataclass(frozen=True)
class ListwiseJob:
    """What every batch of a listwise run computes (picklable for the Ray executor): rows
    ``(key, answer, status, None, None)``; ``answer`` is the reply (generate) or the JSON of
    :func:`likelihood_answer` (likelihood)."""

    method: str  # "listwise-generate" or "listwise-likelihood"
    seed: int
    max_tokens: int = study.SAMPLING["max_tokens"]

    def rows(self, backend: Any, batch: list[tuple[str, ChatPrompt]]) -> list[tuple]:
        keys, prompts = [k for k, _ in batch], [p for _, p in batch]
        if self.method == "listwise-generate":
            seeds = [int(hashlib.sha256(f"{self.seed}:{k}".encode()).hexdigest()[:8], 16) for k in keys]
            # a local model stops a reply once it names every name: later text cannot change any first mention
            stop = {"until_mentioned": [p.options for p in prompts]} if isinstance(backend, CausalLM) else {}
            answers = require(backend, ["sampling"]).sample(
                prompts, seeds, max_new_tokens=self.max_tokens, min_new_tokens=1,
                temperature=study.SAMPLING["temperature"], top_p=study.SAMPLING["top_p"], **stop)
            return [(k, kept_reply(a, p.options), reply_status(a, p.options), None, None)
                    for k, a, p in zip(keys, answers, prompts)]
        if not isinstance(backend, CausalLM):
            raise AuditError("--reading likelihood needs a local transformers or GGUF model; use --reading generate")
        return [(k, json.dumps(likelihood_answer(backend.sequential_logprobs(p, picks=len(p.options) - 1), k)),
                 PARSED, None, None) for k, p in zip(keys, prompts)]  # one ranking at a time: one KV cache each


def likelihood_answer(steps: Sequence[dict[int, float]], key: str = "") -> dict[str, Any]:
    """``top1``: each name's probability of being ranked first (in the order shown, sums to 1); ``order``: the
    places shown (0 = first) from most to least likely, each the most likely of the names left; ``order_p``: that
    order's probability, the product over places of the pick's probability normalised over the names left."""
    top1 = top1_probabilities([steps[0][i] for i in sorted(steps[0])], key)
    order, order_p = [], 1.0
    for at, step in enumerate(steps):
        names = sorted(step)
        probs = top1_probabilities([step[i] for i in names], key)
        later = steps[at + 1] if at + 1 < len(steps) else {}
        picked = [j for j, name in enumerate(names) if name not in later]  # the pick the next step followed
        best = picked[0] if len(picked) == 1 else max(range(len(names)), key=lambda j: (probs[j], -names[j]))
        order.append(names[best])
        order_p *= probs[best]
    order.extend(sorted(set(steps[0]) - set(order)))
    return {"top1": top1, "order": order, "order_p": order_p}


def top1_probabilities(logps: Sequence[float], key: str = "") -> list[float]:
    """Softmax of the names' log-probabilities: each name's probability of being ranked first (sums to 1)."""
    if not logps or not all(isinstance(v, (int, float)) and math.isfinite(v) and v <= 1e-6 for v in logps):
        raise AuditError(f"the model returned impossible name log-probabilities {list(logps)} for ranking {key}; "
                         "nothing of this batch was stored")
    top = max(logps)
    weights = [math.exp(v - top) for v in logps]
    return [w / sum(weights) for w in weights]


def kept_reply(reply: str, names: Sequence[str]) -> str:
    """What the store keeps of a generate reply: the reply itself up to :data:`KEPT_BYTES` (UTF-8), else the JSON of
    its first :data:`KEPT_BYTES` (``reply``), its size (``bytes``), the SHA-256 of all of it (``sha256``) and the
    order read from all of it (``order``, as :func:`audit.recorded.ranking_runs.read_order` reads it)."""
    raw = storable(reply).encode()  # an unpaired surrogate as U+FFFD, as the store keeps it
    if len(raw) <= KEPT_BYTES:
        return reply
    return json.dumps({"reply": raw[:KEPT_BYTES].decode("utf-8", "ignore"), "bytes": len(raw),
                       "sha256": hashlib.sha256(raw).hexdigest(), "order": read_order(reply, list(names))})


def stored_order(answer: str, names: Sequence[str]) -> list[int]:
    """The ranked order of a stored generate reply: the order :func:`kept_reply` kept with a cut reply, else the
    order read from the reply (every store before the cut, and every short reply)."""
    if answer.startswith("{") and len(answer.encode("utf-8", "surrogatepass")) > KEPT_BYTES:
        try:
            kept = json.loads(answer)
        except ValueError:
            kept = None
        if isinstance(kept, dict) and set(kept) == KEPT_KEYS and sorted(kept["order"]) == list(range(len(names))):
            return kept["order"]
    return read_order(answer, list(names))


def reply_status(reply: str, names: Sequence[str]) -> str:
    """``parsed`` (every name mentioned), ``partial`` (some) or ``unreadable`` (none), as the import reads it."""
    mentioned = sum(name.lower() in reply.lower() for name in names)
    return PARSED if mentioned == len(names) else PARTIAL if mentioned else UNREADABLE


@dataclass
class ListwiseRun:
    """A run's settings; ``fingerprint`` and ``label`` name it in the store."""

    ref: ModelRef
    reading: Reading = Reading.GENERATE
    seed: int = 0
    max_tokens: int = study.SAMPLING["max_tokens"]
    label: str | None = None
    settings: dict = field(init=False)

    def __post_init__(self) -> None:
        if self.reading not in READINGS:
            raise AuditError(f"unknown reading {self.reading!r}; choose one of {[str(r) for r in READINGS]}")
        check_new_tokens(self.max_tokens, "--max-tokens")
        reading = ({**study.SAMPLING, "max_tokens": self.max_tokens} if self.reading == Reading.GENERATE
                   else {"order": FULL_ORDER})
        self.settings = {"protocol": study.PROTOCOL, "reading": self.reading, "seed": self.seed, **reading}

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


@dataclass
class ListwiseOutcome:
    """What a run of one job did: its summary, the numbers of its unreadable replies (generate) and its rankings'
    likelihood answers (likelihood: :func:`likelihood_answer` of each)."""

    summary: RunSummary
    rankings: int
    unreadable: list[int]
    likelihood: list[dict[str, Any]]

    @property
    def nothing_readable(self) -> bool:
        """Whether every reply was unreadable (generate): the run left nothing to audit."""
        return self.summary.quality.get(UNREADABLE) == 1.0

    def lines(self) -> list[str]:
        """The summary line, then the unreadable replies (generate) or the top-1 and full-order figures."""
        if not self.likelihood:
            listed = f": rankings {', '.join(map(str, self.unreadable))}" if self.unreadable else ""
            return [self.summary.line(),
                    f"unreadable replies (no name mentioned; left out): {len(self.unreadable)} of {self.rankings}"
                    + listed]
        top = sorted(max(a["top1"]) for a in self.likelihood)
        full = sorted(a["order_p"] for a in self.likelihood)
        return [self.summary.line(),
                f"top-1 probability of the most likely name: median {top[len(top) // 2]:.3f} "
                f"(min {top[0]:.3f}, max {top[-1]:.3f}) over {len(top)} rankings",
                f"probability of the most likely full order ({FULL_ORDER}): median {full[len(full) // 2]:.2e} "
                f"(min {full[0]:.2e}, max {full[-1]:.2e}; 1/8! = {1 / math.factorial(8):.2e})"]


def check_sizes(rankings: int, batch_size: int) -> None:
    """Refuse ``--rankings`` outside 1 … :data:`MAX_RANKINGS` and a ``--batch-size`` below 1."""
    if rankings < 1 or batch_size < 1:
        raise AuditError(f"--rankings and --batch-size must be positive, got {rankings} and {batch_size}")
    if rankings > MAX_RANKINGS:
        raise AuditError(f"--rankings {rankings}: give at most {MAX_RANKINGS:,} rankings per job")


Lot = list[tuple[study.Ranking, ChatPrompt]]


def drawn_lots(job: str, rankings: int, seed: int, size: int) -> Iterator[tuple[int, Lot]]:
    """(first index, rankings with their prompts) of ``job``'s rankings 0 … ``rankings`` − 1, ``size`` at a time:
    each lot is drawn only when the one before has been handled."""
    for start in range(0, rankings, size):
        drawn = (study.draw(job, i, seed) for i in range(start, min(start + size, rankings)))
        yield start, [(r, replace_options(study.ranking_prompt(r), r.names)) for r in drawn]


def run_listwise(store: Store, run: ListwiseRun, job: str, rankings: int, load_backend: Callable[[], Any], *,
                 batch_size: int = 4, progress: Progress | None = None, executor: Executor | None = None
                 ) -> ListwiseOutcome:
    """Score ``rankings`` rankings of ``job``, :data:`DRAW_BATCH` at a time: each lot is drawn, requested and stored
    before the next is drawn, so nothing grows with ``rankings`` before the first request. A cancelled lot stops
    the run; the rankings of every lot are written together at the end."""
    check_sizes(rankings, batch_size)
    started = time.perf_counter()
    store.check_label(run.fingerprint, run.name)
    model = CachedBackend(store, CHOICE_RESULTS, (run.fingerprint, run.method), executor or InProcess(load_backend),
                          batch_size=batch_size)
    listwise_job = ListwiseJob(run.method, run.seed, run.max_tokens)
    summary = RunSummary(run.name, study.TASK, job, run.method, 0, 0, 0)
    parts, unreadable, statuses, likelihood = [], [], Counter(), []
    for offset, lot in drawn_lots(study.check_job(job), rankings, run.seed, DRAW_BATCH):
        by_key = {p.key(): p for _, p in lot}
        fetched = model.results(listwise_job, by_key, check=lambda rows: check_rows(run.method, rows),
                                record=lambda first: record_plan(store, run, by_key, first),
                                progress=shifted(progress, offset, rankings))
        summary.prompts += len(by_key)
        summary.cached += fetched.cached
        summary.scored += fetched.computed
        answers = {key: (values[0], values[1]) for key, values in fetched.results.items()}
        unreadable += [r.index for r, p in lot if answers.get(p.key(), ("", ""))[1] == UNREADABLE]
        parts.append(ranked_rows(run, lot, answers))
        statuses.update(answers[p.key()][1] for _, p in lot if p.key() in answers)
        likelihood += [json.loads(answers[p.key()][0]) for _, p in lot
                       if run.reading == Reading.LIKELIHOOD and p.key() in answers]
        if fetched.cancelled:
            summary.cancelled = True
            break
    readable = [part for part in parts if len(part)]
    if readable:
        write_rankings(store, run, pd.concat(readable, ignore_index=True))
    if statuses:
        summary.quality = {s: statuses[s] / statuses.total() for s in (PARSED, PARTIAL, UNREADABLE)}
    summary.seconds = time.perf_counter() - started
    return ListwiseOutcome(summary, rankings, unreadable, likelihood)


def shifted(progress: Progress | None, offset: int, total: int) -> Progress | None:
    """``progress`` told a lot's counts as the run's: ``offset`` rankings before the lot, ``total`` in all."""
    return None if progress is None else lambda done, _: progress(offset + done, total)


def record_plan(store: Store, run: ListwiseRun, by_key: dict[str, ChatPrompt], first: Callable[[], None]) -> None:
    """The model and a lot's prompts, with the lot's first results (``first``), in one transaction (a failed write
    leaves the store as it was)."""
    with store.transaction():
        store.register_model(run.fingerprint, run.name, {"kind": "listwise run", "model": run.ref.describe(),
                                                         **run.settings})
        store.save_plan(candidates=(), prompts=[(k, json.dumps(p.__dict__, ensure_ascii=False))
                                                for k, p in by_key.items()])
        first()


def replace_options(chat: ChatPrompt, names: Sequence[str]) -> ChatPrompt:
    """``chat`` with the names as its options (what the parser and the likelihood reading look for)."""
    return ChatPrompt(chat.system, chat.user, chat.answer_prefix, tuple(names))


def ranked_rows(run: ListwiseRun, lot: Lot, answers: dict[str, tuple[str, str]]) -> pd.DataFrame:
    """Decision rows (subtask, pool, position, group, value = rank, applicant) of every readable ranking."""
    rows = []
    for ranking, chat in lot:
        answer, status = answers.get(chat.key(), ("", UNREADABLE))
        if status == UNREADABLE:
            continue
        if run.reading == Reading.GENERATE:
            order = stored_order(answer, ranking.names)
        else:
            order = json.loads(answer)["order"]
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
            save_design(db, design)
