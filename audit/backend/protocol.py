"""The interface every inference backend implements, and the optional capabilities some add.

``Backend`` is what every backend offers. ``OptionScoring`` (pairwise and listwise likelihood readings), ``Sampling``
(CAIRO's seeded continuations) and ``Tokenizing`` (the context window check) are capabilities: a backend declares one
by implementing its methods, and a caller names the ones it needs when it selects a runtime
(:func:`audit.backend.spec.spec_for`) and when it loads a model (:func:`audit.backend.spec.load_backend`), so a
backend without one is refused in one line before any work, not half-way through a run.
"""
from __future__ import annotations

from typing import Mapping, Protocol, Sequence, runtime_checkable

from audit.backend.sources import ModelRef
from audit.errors import AuditError
from audit.prompts import ChatPrompt, LabelScores


@runtime_checkable
class Backend(Protocol):
    """What scoring needs from every model: pointwise label probabilities and pairwise greedy answers."""

    ref: ModelRef

    def label_probabilities(self, prompts: Sequence[ChatPrompt], labels: Sequence[str]) -> list[LabelScores]:
        """One :class:`~audit.prompts.LabelScores` per prompt (pointwise)."""
        ...

    def generate(self, prompts: Sequence[ChatPrompt], *, max_new_tokens: int = 16) -> list[str]:
        """Greedy answers, decoded without special tokens (pairwise ``generate``)."""
        ...


@runtime_checkable
class OptionScoring(Protocol):
    """Log-probabilities of given answers (pairwise ``likelihood``, listwise ``likelihood``)."""

    def option_logprobs(self, prompts: Sequence[ChatPrompt], *, lead: str = " ") -> list[tuple[float, ...]]:
        """log P(option | prompt) of each of a prompt's options, written after ``lead``."""
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


CAPABILITIES: dict[str, type] = {"option_logprobs": OptionScoring, "sampling": Sampling, "tokenizing": Tokenizing}
DOES = {"option_logprobs": "score given answers by their log-probabilities", "sampling": "sample continuations",
        "tokenizing": "tokenize texts locally"}


def offers(backend: object, capability: str) -> bool:
    """Whether ``backend`` (an instance or a backend class) implements ``capability``."""
    if capability not in CAPABILITIES:
        raise AuditError(f"unknown backend capability {capability!r}; known: {sorted(CAPABILITIES)}")
    kind = CAPABILITIES[capability]
    return issubclass(backend, kind) if isinstance(backend, type) else isinstance(backend, kind)


def lacking(backend: object, needs: Sequence[str]) -> list[str]:
    """The capabilities in ``needs`` that ``backend`` (an instance or a class) does not offer."""
    return [name for name in needs if not offers(backend, name)]


def refusal(who: str, missing: Sequence[str], purpose: str, offered_by: Mapping[str, Sequence[str]]) -> AuditError:
    """The one error for a backend ``who`` lacking ``missing`` capabilities that ``purpose`` needs; ``offered_by``:
    capability → the backends that offer it."""
    parts = [f"{who} cannot {DOES[name]} ({name}), which {purpose} needs; backends that can: "
             f"{', '.join(offered_by.get(name, ())) or 'none'}" for name in missing]
    return AuditError("; ".join(parts))


def require(backend: Backend, needs: Sequence[str], purpose: str = "this command",
            offered_by: Mapping[str, Sequence[str]] | None = None) -> Backend:
    """``backend`` if it offers every capability in ``needs``; else one :class:`AuditError` naming what it lacks,
    what needs it and (given ``offered_by``) which backends offer it."""
    missing = lacking(backend, needs)
    if missing:
        raise refusal(f"{backend.ref.label} ({type(backend).__name__})", missing, purpose, offered_by or {})
    return backend
