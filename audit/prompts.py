"""What a backend is asked: a chat prompt and the label-score normalisation shared by every backend.

Neutral ground between tasks (which build prompts) and backends (which answer them).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Sequence

from audit.errors import AuditError

MAX_NEW_TOKENS = 4_096
"""Most tokens one generated answer may ask for (``--max-tokens``, ``--max-new-tokens``): 8× the listwise study's
500, and a bound on what a server is asked to produce per request."""


def check_new_tokens(value: int, flag: str) -> int:
    """``value`` if it is 1 … :data:`MAX_NEW_TOKENS`; else one clear error naming ``flag``."""
    if not 1 <= value <= MAX_NEW_TOKENS:
        raise AuditError(f"{flag} {value}: give 1 to {MAX_NEW_TOKENS:,} tokens")
    return value


@dataclass(frozen=True)
class ChatPrompt:
    """A chat exchange up to the point where the model must answer.

    The backend renders ``system`` and ``user`` with the model's chat template and appends ``answer_prefix``
    to the assistant turn (the paper's "Answer:"), so the next token is the model's answer.
    ``options`` names the two acceptable answers of a pairwise prompt (first candidate, second candidate).
    """

    system: str
    user: str
    answer_prefix: str = "Answer:"
    options: tuple[str, ...] = ()

    def key(self) -> str:
        """Stable SHA-256 of everything that reaches the model: the store's prompt key."""
        payload = json.dumps(asdict(self), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class LabelScores:
    """Next-token probabilities of each label normalised over the label set, and the raw mass they had."""

    probs: tuple[float, ...]
    mass: float

    @classmethod
    def from_masses(cls, per_label: Sequence[float]) -> "LabelScores":
        """Each label's probability mass normalised over the labels (uniform when they have none)."""
        mass = float(sum(per_label))
        if mass > 0:
            return cls(tuple(float(x) / mass for x in per_label), mass)
        return cls(tuple(1 / len(per_label) for _ in per_label), mass)
