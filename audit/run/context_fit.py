"""Check candidate texts against the model's context before anything is scored; cut them only when asked.

A prompt is the task's fixed text (instruction, question, answer prefix) plus one candidate text (pointwise) or two
(pairwise). Each text gets an equal share of what the context leaves after the fixed text and a margin for the
answer; a longer text is named in the error, or, with ``truncate``, cut to its share. A backend that does not know
its tokenizer (an API endpoint: not :class:`~audit.backend.protocol.Tokenizing`) gets only a bound in characters
(:data:`MAX_API_TEXT`); the server checks its own context.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from audit.backend.protocol import Backend, Tokenizing
from audit.errors import AuditError
from audit.tasks.base import Candidate, Task

ANSWER_MARGIN = 32  # tokens kept free for the answer (generation, option continuations, label token)
SHOWN = 5
MAX_API_TEXT = 200_000
"""Characters one candidate text may have for a backend without a local tokenizer (an API endpoint): far above any
served context, so only a runaway text (a 1 MB file cell) is stopped before it is sent."""


def fit_candidates(task: Task, candidates: Sequence[Candidate], backend: Backend, *, pairwise: bool, model: str,
                   truncate: bool = False) -> list[Candidate]:
    """``candidates`` unchanged when every prompt fits ``backend``'s context; else an :class:`AuditError` naming
    the candidates too long, or (``truncate``) the same candidates with the long texts cut to fit."""
    if not isinstance(backend, Tokenizing):
        return _bounded(candidates, model=model, truncate=truncate)
    context = backend.context_length()
    if not context or not candidates:
        return list(candidates)
    blank = replace(candidates[0], text="")
    fixed = backend.prompt_length(task.pairwise_prompt(blank, blank) if pairwise else task.pointwise_prompt(blank))
    budget = (context - fixed - ANSWER_MARGIN) // (2 if pairwise else 1)
    lengths = [len(backend.encode(c.text)) for c in candidates]
    long = [(c, n) for c, n in zip(candidates, lengths) if n > budget]
    if not long:
        return list(candidates)
    if budget < 1:
        raise AuditError(f"the task's own prompt text ({fixed} tokens) leaves no room in {model}'s context of "
                         f"{context} tokens")
    if not truncate:
        named = ", ".join(f"{c.candidate_id} ({n} tokens)" for c, n in long[:SHOWN])
        more = f" and {len(long) - SHOWN} more" if len(long) > SHOWN else ""
        raise AuditError(f"{len(long)} candidate text(s) do not fit {model}'s context of {context} tokens (at most "
                         f"{budget} tokens per text in this task): {named}{more}; shorten them, or pass --truncate to "
                         "cut them to fit")
    return [replace(c, text=backend.cut(c.text, budget)) if n > budget else c for c, n in zip(candidates, lengths)]


def _bounded(candidates: Sequence[Candidate], *, model: str, truncate: bool) -> list[Candidate]:
    """``candidates`` whose texts are at most :data:`MAX_API_TEXT` characters; longer ones named, or cut."""
    long = [c for c in candidates if len(c.text) > MAX_API_TEXT]
    if long and not truncate:
        named = ", ".join(f"{c.candidate_id} ({len(c.text):,} characters)" for c in long[:SHOWN])
        raise AuditError(f"{len(long)} candidate text(s) are longer than {MAX_API_TEXT:,} characters, too long to "
                         f"send to {model}: {named}; shorten them, or pass --truncate to cut them")
    return [replace(c, text=c.text[:MAX_API_TEXT]) if len(c.text) > MAX_API_TEXT else c for c in candidates]
