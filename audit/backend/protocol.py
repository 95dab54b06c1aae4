"""The interface every inference backend implements, and the optional capabilities some add.

``Backend`` is what scoring needs. ``Sampling`` (CAIRO's seeded continuations) and ``Tokenizing`` (the context
window check) are capabilities a caller names when it loads a model (:func:`audit.backend.spec.load_backend`), so a
backend without one is refused in one line before any work, not half-way through a run.
"""
from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

from audit.backend.sources import ModelRef
from audit.errors import AuditError
from audit.prompts import ChatPrompt, LabelScores


@runtime_checkable
class Backend(Protocol):
    """What scoring needs from a model; a backend that cannot do one operation raises AuditError saying so."""

    ref: ModelRef

    def label_probabilities(self, prompts: Sequence[ChatPrompt], labels: Sequence[str]) -> list[LabelScores]:
        """One :class:`~audit.prompts.LabelScores` per prompt (pointwise)."""
        ...

    def generate(self, prompts: Sequence[ChatPrompt], *, max_new_tokens: int = 16) -> list[str]:
        """Greedy answers, decoded without special tokens (pairwise ``generate``)."""
        ...

    def option_logprobs(self, prompts: Sequence[ChatPrompt]) -> list[tuple[float, ...]]:
        """log P(option | prompt) of each pairwise option (pairwise ``likelihood``)."""
        ...


@runtime_checkable
class Sampling(Protocol):
    """Seeded sampled continuations (CAIRO): a ``str`` is continued as plain text, a ChatPrompt as a chat."""

    def sample(self, prompts: Sequence[str | ChatPrompt], seeds: Sequence[int], *, max_new_tokens: int = 20,
               min_new_tokens: int = 1, temperature: float = 1.0, top_p: float = 1.0) -> list[str]:
        ...


@runtime_checkable
class Tokenizing(Protocol):
    """The model's own tokenizer and context window, for checking (or cutting) texts before scoring."""

    def encode(self, text: str) -> list[int]:
        ...

    def context_length(self) -> int | None:
        ...

    def prompt_length(self, prompt: ChatPrompt) -> int:
        ...

    def cut(self, text: str, tokens: int) -> str:
        ...


CAPABILITIES: dict[str, type] = {"sampling": Sampling, "tokenizing": Tokenizing}


def require(backend: Backend, needs: Sequence[str]) -> Backend:
    """``backend`` if it offers every capability in ``needs``; else one :class:`AuditError` naming what it lacks."""
    missing = [name for name in needs if not isinstance(backend, CAPABILITIES[name])]
    if missing:
        raise AuditError(f"{backend.ref.label} ({type(backend).__name__}) cannot do {' and '.join(missing)}, "
                         "which this command needs; choose another backend")
    return backend
