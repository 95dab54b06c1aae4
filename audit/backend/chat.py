"""Render a :class:`ChatPrompt` into token ids with the model's own chat template.

- A template with a system role: system + user turns, generation prompt, then the answer prefix.
- A template that rejects or drops the system role: the system text is folded into the user turn.
- No template at all (base models): the documented plain fallback
  ``"{system}\\n\\n{user}\\n\\n{answer_prefix}"`` with the tokenizer's usual special tokens (e.g. BOS).
"""
from __future__ import annotations

from typing import Any, Sequence

from audit.errors import AuditError
from audit.prompts import ChatPrompt

PLAIN_FALLBACK = "{system}\n\n{user}\n\n{answer_prefix}"


def render_text(tokenizer: Any, prompt: ChatPrompt) -> tuple[str, bool]:
    """``(text, uses_template)``: the full text up to the model's answer."""
    if not getattr(tokenizer, "chat_template", None):
        return PLAIN_FALLBACK.format(system=prompt.system, user=prompt.user, answer_prefix=prompt.answer_prefix), False
    with_system = [{"role": "system", "content": prompt.system}, {"role": "user", "content": prompt.user}]
    try:
        text = tokenizer.apply_chat_template(with_system, tokenize=False, add_generation_prompt=True)
    except Exception:  # jinja raises its own TemplateError when a template forbids the system role
        text = None
    if text is None or prompt.system not in text:
        folded = [{"role": "user", "content": f"{prompt.system}\n\n{prompt.user}"}]
        text = tokenizer.apply_chat_template(folded, tokenize=False, add_generation_prompt=True)
    return text + prompt.answer_prefix, True


def render_ids(tokenizer: Any, prompt: ChatPrompt) -> list[int]:
    """Token ids of :func:`render_text`; templates carry their own special tokens, the fallback gets the usual."""
    text, uses_template = render_text(tokenizer, prompt)
    return list(tokenizer(text, add_special_tokens=not uses_template)["input_ids"])


def sampling_ids(tokenizer: Any, prompts: Sequence[str | ChatPrompt], seeds: Sequence[int], max_new_tokens: int,
                 min_new_tokens: int, temperature: float, top_p: float) -> list[list[int]]:
    """Token ids of the prompts of a ``sample`` call, after checking its settings: a ``str`` as plain text (the
    tokenizer's usual special tokens), a :class:`ChatPrompt` with the chat template."""
    if len(seeds) != len(prompts):
        raise AuditError(f"sample() needs one seed per prompt, got {len(seeds)} seeds for {len(prompts)} prompts")
    if temperature <= 0 or not 0 < top_p <= 1 or not 0 <= min_new_tokens <= max_new_tokens:
        raise AuditError(f"bad decoding settings: temperature {temperature} (> 0), top_p {top_p} (0 < p ≤ 1), "
                         f"min/max new tokens {min_new_tokens}/{max_new_tokens} (0 ≤ min ≤ max)")
    return [render_ids(tokenizer, p) if isinstance(p, ChatPrompt) else list(tokenizer(p)["input_ids"])
            for p in prompts]
