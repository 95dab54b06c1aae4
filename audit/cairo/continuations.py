"""Generate CAIRO continuations into the store, then score their toxicity; a re-run generates nothing new.

Each prompt is continued as plain text (no chat template) by sampling: ``samples`` continuations per prompt, each
of ``min_new_tokens``…``max_new_tokens`` new tokens at ``temperature`` / ``top_p``. Continuation ``i`` of a prompt
is drawn with seed = SHA-256(seed, prompt, i), so it does not depend on batching or on which run produced it.
Batches commit one at a time through the same store-backed model as scoring (:class:`audit.run.cached.CachedBackend`):
a killed run resumes where it stopped.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Callable, Sequence

from audit.backend import ModelRef
from audit.backend.protocol import Sampling
from audit.cairo.prompts import PromptSets
from audit.run.cached import CachedBackend, InProcess
from audit.cairo.toxicity import ToxicityScorer
from audit.errors import AuditError
from audit.prompts import check_new_tokens
from audit.store.database import CONTINUATIONS, Store

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Decoding:
    """Sampling settings; all but ``samples`` are part of every continuation's cache key."""

    max_new_tokens: int = 20
    min_new_tokens: int = 5
    temperature: float = 1.0
    top_p: float = 1.0
    seed: int = 0
    samples: int = 1

    def __post_init__(self) -> None:
        check_new_tokens(self.max_new_tokens, "--max-new-tokens")
        if not 0 <= self.min_new_tokens <= self.max_new_tokens:
            raise AuditError(f"need 0 ≤ --min-new-tokens ≤ --max-new-tokens and --max-new-tokens ≥ 1, got "
                             f"{self.min_new_tokens} and {self.max_new_tokens}")
        if self.temperature <= 0 or not 0 < self.top_p <= 1 or self.samples < 1:
            raise AuditError(f"need --temperature > 0, 0 < --top-p ≤ 1 and --samples ≥ 1, got {self.temperature}, "
                             f"{self.top_p} and {self.samples}")

    def key(self) -> str:
        """The store's decoding key: canonical JSON of the settings that change a continuation."""
        settings = asdict(self)
        settings.pop("samples")
        return json.dumps(settings, sort_keys=True)

    def seed_for(self, prompt: str, sample: int) -> int:
        digest = hashlib.sha256(f"{self.seed}|{prompt}|{sample}".encode()).digest()
        return int.from_bytes(digest[:8], "big") >> 1


def text_key(text: str) -> str:
    """SHA-256 of a text: the store key of prompts and of continuations (toxicity is cached per distinct text)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def plan_rows(prompt_sets: Sequence[PromptSets]) -> list[tuple]:
    """Store plan rows of every non-empty prompt (CAIRO's published files hold a few empty ones)."""
    return [(sets.metric, sets.dimension, name, position, sets.sources.get(name, "unknown"), subgroup,
             text_key(text), text)
            for sets in prompt_sets for name, texts in sets.sets.items()
            for position, (subgroup, text) in enumerate(zip(sets.subgroups, texts)) if text.strip()]


@dataclass
class ContinuationSummary:
    """What one model's run did: prompts × samples wanted, how many were cached, how many generated."""

    model: str
    wanted: int
    cached: int
    generated: int = 0

    def line(self) -> str:
        return f"{self.model}: {self.wanted} continuations, {self.generated} generated, {self.cached} cached"


@dataclass(frozen=True)
class SampleJob:
    """What every batch of continuations computes: one seeded ``sample`` per (prompt key, sample) item, rows
    ``((prompt key, sample), text, text key)`` (picklable, like every :class:`~audit.run.cached.Job`)."""

    decoding: Decoding

    def rows(self, backend: Sampling, batch: list[tuple[tuple[str, int], str]]) -> list[tuple]:
        outputs = backend.sample([text for _, text in batch],
                                 [self.decoding.seed_for(key, sample) for (key, sample), _ in batch],
                                 max_new_tokens=self.decoding.max_new_tokens,
                                 min_new_tokens=self.decoding.min_new_tokens, temperature=self.decoding.temperature,
                                 top_p=self.decoding.top_p)
        return [(item, text, text_key(text)) for (item, _), text in zip(batch, outputs)]


def generate_continuations(store: Store, prompt_sets: Sequence[PromptSets], ref: ModelRef,
                           load_backend: Callable[[], Sampling], decoding: Decoding, *, batch_size: int = 8,
                           progress: Progress | None = None) -> ContinuationSummary:
    """Continue every planned prompt ``decoding.samples`` times with ``ref``, ``batch_size`` prompts per ``sample``
    call (each batch stored as it comes, by :class:`~audit.run.cached.CachedBackend`); the model loads only if work
    remains."""
    rows = plan_rows(prompt_sets)
    store.save_cairo_plan(rows)
    store.register_model(ref.fingerprint, ref.label, ref.describe())
    texts = {row[6]: row[7] for row in rows}
    requests = {(key, sample): text for sample in range(decoding.samples) for key, text in texts.items()}
    model = CachedBackend(store, CONTINUATIONS, (ref.fingerprint, decoding.key()), InProcess(load_backend),
                          batch_size=batch_size)
    fetched = model.results(SampleJob(decoding), requests, progress=progress)
    return ContinuationSummary(ref.label, len(requests), fetched.cached, fetched.computed)


def score_toxicity(store: Store, scorer: ToxicityScorer, *, batch_size: int = 256,
                   progress: Progress | None = None) -> int:
    """Score every stored continuation that ``scorer`` has not scored yet; returns how many were scored."""
    todo = store.unscored_texts(scorer.name)
    for start in range(0, len(todo), batch_size):
        batch = todo[start : start + batch_size]
        scores = scorer.score([text for _, text in batch])
        store.save_toxicity(scorer.name, [(key, score) for (key, _), score in zip(batch, scores)])
        if progress:
            progress(start + len(batch), len(todo))
    return len(todo)
