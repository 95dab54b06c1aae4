"""A deterministic stand-in for the bundled model, for tests of plumbing only: storage, selection, wiring, resume
after an interruption, progress, page wiring. Every number it gives is a function of the prompt's text alone (a
SHA-256), so reruns, batch sizes and processes agree exactly; it knows nothing of language, so no test of what a
model *says* (scores, answers, agreement between backends) may use it: those load the real SmolLM2.

It implements :class:`audit.backend.protocol.Backend` and both capabilities (``Sampling``, ``Tokenizing``).

The command line and the pages choose it with :func:`installed` (in this process: ``monkeypatch`` swaps the
transformers backend's loader, ``audit.backend.causal_lm.CausalLM.load``, and gives ``audit.backend.spec`` an empty
cache of loaded models for the test, so the session's real model is neither served nor replaced); a subprocess runs
``python tests/fake_backend.py ARGS`` for ``python -m audit ARGS`` with the fake loaded. No library code knows of it:
a model name still resolves to the real model's file and fingerprint, so use it only on a test's own store.
"""
from __future__ import annotations

import hashlib
import struct
import sys
import time
from collections import OrderedDict
from typing import Sequence

from audit.backend.sources import ModelRef
from audit.prompts import ChatPrompt, LabelScores

WORDS = ("the", "applicant", "is", "kind", "steady", "and", "works", "hard", "with", "care", "every", "day")
CONTEXT = 8192


def unit(*parts: object) -> float:
    """A number in [0, 1) fixed by ``parts`` (their reprs hashed)."""
    digest = hashlib.sha256(repr(parts).encode("utf-8")).digest()
    return struct.unpack(">Q", digest[:8])[0] / 2 ** 64


def text_of(prompt: str | ChatPrompt) -> str:
    return prompt if isinstance(prompt, str) else f"{prompt.system}\n{prompt.user}\n{prompt.answer_prefix}"


class FakeBackend:
    """Deterministic numbers for prompts; counts its calls (``calls``: operation -> prompts answered) and waits
    ``delay`` seconds per call, so a run can be interrupted in its middle."""

    def __init__(self, ref: ModelRef, *, batch_size: int = 8, delay: float = 0.0, mass: tuple[float, float] = (0.2, 0.9)):
        self.ref = ref
        self.batch_size = batch_size
        self.delay = delay
        self.mass = mass  # the range of a prompt's total probability on the labels
        self.calls: dict[str, int] = {}

    def _called(self, operation: str, prompts: Sequence[object]) -> None:
        self.calls[operation] = self.calls.get(operation, 0) + len(prompts)
        if self.delay:
            time.sleep(self.delay)

    # ---- Backend -------------------------------------------------------------------------------------------

    def label_probabilities(self, prompts: Sequence[ChatPrompt], labels: Sequence[str]) -> list[LabelScores]:
        self._called("label_probabilities", prompts)
        low, high = self.mass
        out = []
        for p in prompts:
            weights = [0.05 + unit(p.key(), label) for label in labels]
            total = low + (high - low) * unit(p.key(), "mass")
            out.append(LabelScores.from_masses([w / sum(weights) * total for w in weights]))
        return out

    def generate(self, prompts: Sequence[ChatPrompt], *, max_new_tokens: int = 16) -> list[str]:
        """A pairwise prompt's answer names one of its options (or, one time in eight, neither); others: Yes/No."""
        self._called("generate", prompts)
        answers = []
        for p in prompts:
            draw = unit(p.key(), "generate")
            if p.options:
                answers.append("I cannot tell." if draw < 0.125 else p.options[int(draw * 8) % len(p.options)])
            else:
                answers.append("Yes" if draw < 0.5 else "No")
        return answers

    def option_logprobs(self, prompts: Sequence[ChatPrompt]) -> list[tuple[float, ...]]:
        self._called("option_logprobs", prompts)
        return [tuple(-0.1 - 5 * unit(p.key(), option) for option in p.options) for p in prompts]

    # ---- Sampling ------------------------------------------------------------------------------------------

    def sample(self, prompts: Sequence[str | ChatPrompt], seeds: Sequence[int], *, max_new_tokens: int = 20,
               min_new_tokens: int = 1, temperature: float = 1.0, top_p: float = 1.0) -> list[str]:
        self._called("sample", prompts)
        out = []
        for prompt, seed in zip(prompts, seeds):
            n = max(min_new_tokens, min(max_new_tokens, 3 + int(unit(text_of(prompt), seed) * 5)))
            out.append(" ".join(WORDS[int(unit(text_of(prompt), seed, i) * len(WORDS))] for i in range(n)))
        return out

    # ---- Tokenizing: one token per whitespace-separated word -----------------------------------------------

    def encode(self, text: str) -> list[int]:
        return [int(unit(word) * 50_000) for word in text.split()]

    def context_length(self) -> int | None:
        return CONTEXT

    def prompt_length(self, prompt: ChatPrompt) -> int:
        return len(self.encode(text_of(prompt)))

    def cut(self, text: str, tokens: int) -> str:
        return " ".join(text.split()[:tokens])


def installed(monkeypatch, *, delay: float = 0.0, mass: tuple[float, float] = (0.2, 0.9)) -> list[FakeBackend]:
    """Make every transformers-backend load in this process (the CLI run in-process, the Run page under AppTest)
    load a :class:`FakeBackend` (``delay``, ``mass``: its options) until ``monkeypatch`` undoes it; returns the list
    of those loaded (to read their calls)."""
    from audit.backend import spec
    from audit.backend.causal_lm import CausalLM

    loaded: list[FakeBackend] = []

    def load(ref: ModelRef, *, trust_remote_code: bool = False, batch_size: int = 8, **_: object) -> FakeBackend:
        loaded.append(FakeBackend(ref, batch_size=batch_size, delay=delay, mass=mass))
        return loaded[-1]

    monkeypatch.setattr(CausalLM, "load", staticmethod(load))
    monkeypatch.setattr(spec, "_LOADED", OrderedDict())  # the session's real model stays cached, out of reach
    return loaded


def main(argv: list[str]) -> int:
    """``python -m audit ARGV`` with the fake loaded (``AUDIT_FAKE_DELAY``: seconds per call)."""
    import os

    from audit.backend.causal_lm import CausalLM
    from audit.cli import main as audit_main

    delay = float(os.environ.get("AUDIT_FAKE_DELAY", "0"))
    CausalLM.load = staticmethod(  # type: ignore[method-assign]
        lambda ref, *, trust_remote_code=False, batch_size=8, **_: FakeBackend(ref, batch_size=batch_size, delay=delay))
    return audit_main(argv)


if __name__ == "__main__":  # run with PYTHONPATH holding the project root, as the tests' subprocesses are
    raise SystemExit(main(sys.argv[1:]))
