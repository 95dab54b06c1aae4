"""Paraphrase a metric's original prompts with any loaded model into new prompt sets (CAIRO section 5.1).

The paper's prompts (appendix A.4): chat models get "Paraphrase each of the following while not writing the
original sentences: {prompt}"; completion models (no chat template) continue '"{prompt}" can be paraphrased as "'
(the paper's wording, with quotes so the paraphrase ends at the closing quote). The first non-empty line of the
answer, stripped of quotes and list markers, is the paraphrase.
"""
from __future__ import annotations

import re
from dataclasses import replace

from audit.backend import CausalLM
from audit.cairo.continuations import Decoding
from audit.cairo.prompts import ORIGINAL, PromptSets
from audit.errors import AuditError
from audit.prompts import ChatPrompt

CHAT_INSTRUCTION = "Paraphrase each of the following while not writing the original sentences: {prompt}"
COMPLETION_TEMPLATE = '"{prompt}" can be paraphrased as "'
ATTEMPTS = 5
MARKERS = re.compile(r'^\s*(?:[-*•]|\d+[.)]|paraphrase\s*\d*\s*:)?\s*["“”\']?', re.IGNORECASE)


def paraphrase_request(backend: CausalLM, prompt: str) -> str | ChatPrompt:
    """The paper's paraphrasing prompt for this model: chat instruction or completion template."""
    if getattr(backend.tokenizer, "chat_template", None):
        return ChatPrompt(system="You are a helpful assistant.", user=CHAT_INSTRUCTION.format(prompt=prompt.strip()),
                          answer_prefix="")
    return COMPLETION_TEMPLATE.format(prompt=prompt.strip())


def clean(answer: str) -> str:
    """The paraphrase in a raw answer: first non-empty line, cut at a closing quote, without markers."""
    for line in answer.splitlines():
        text = MARKERS.sub("", line).split('"')[0].split("”")[0].strip().strip("'")
        if text:
            return text
    return ""


def paraphrase_sets(prompt_sets: PromptSets, backend: CausalLM, *, sets: int, decoding: Decoding) -> PromptSets:
    """``prompt_sets`` with ``sets`` new paraphrase sets of its original, named ``{model}_{i}``, source = model."""
    label = backend.ref.label
    taken = [name for name in prompt_sets.sets if name.startswith(f"{label}_")]
    originals = prompt_sets.sets[ORIGINAL]
    new_sets, sources = dict(prompt_sets.sets), dict(prompt_sets.sources)
    for number in range(len(taken) + 1, len(taken) + sets + 1):
        name = f"{label}_{number}"
        out = [""] * len(originals)
        for attempt in range(ATTEMPTS):
            todo = [i for i, text in enumerate(out) if not text or text == originals[i].strip()]
            if not todo:
                break
            answers = backend.sample([paraphrase_request(backend, originals[i]) for i in todo],
                                     [decoding.seed_for(f"{name}|{originals[i]}", attempt) for i in todo],
                                     max_new_tokens=decoding.max_new_tokens, min_new_tokens=decoding.min_new_tokens,
                                     temperature=decoding.temperature, top_p=decoding.top_p)
            for i, answer in zip(todo, answers):
                out[i] = clean(answer)
        failed = [i for i, text in enumerate(out) if not text or text == originals[i].strip()]
        if failed:
            raise AuditError(f"{label} gave no usable paraphrase of {prompt_sets.metric}/{prompt_sets.dimension} "
                             f"prompt(s) {failed} in {ATTEMPTS} attempts (e.g. {originals[failed[0]]!r})")
        new_sets[name], sources[name] = tuple(out), label
    return replace(prompt_sets, sets=new_sets, sources=sources)
