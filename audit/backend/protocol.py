"""The interface every inference backend implements (transformers, vLLM, an OpenAI-compatible API)."""
from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

from audit.backend.sources import ModelRef
from audit.tasks.base import ChatPrompt


@runtime_checkable
class Backend(Protocol):
    """What scoring needs from a model; a backend that cannot do one operation raises AuditError saying so."""

    ref: ModelRef

    def label_probabilities(self, prompts: Sequence[ChatPrompt], labels: Sequence[str]) -> list:
        """One :class:`~audit.backend.causal_lm.LabelScores` per prompt (pointwise)."""
        ...

    def generate(self, prompts: Sequence[ChatPrompt], *, max_new_tokens: int = 16) -> list[str]:
        """Greedy answers, decoded without special tokens (pairwise ``generate``)."""
        ...

    def option_logprobs(self, prompts: Sequence[ChatPrompt]) -> list[tuple[float, ...]]:
        """log P(option | prompt) of each pairwise option (pairwise ``likelihood``)."""
        ...
