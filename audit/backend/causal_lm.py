"""Turn prompts into numbers with a causal language model: label probabilities (pointwise), answer
log-likelihoods and greedy answers (pairwise). The backend knows nothing of groups or metrics.

Speed without changing results: prompts that share a system text (the job description) share a token
prefix; its key/value cache is computed once, kept in a small LRU, and expanded over each batch of suffixes.
Batches are left-padded with explicit position ids, so every row sees exactly the positions and context it
would see alone (agreement with one-by-one scoring is tested to 1e-4).
"""
from __future__ import annotations

import copy
from collections import OrderedDict
from typing import Any, Callable, Sequence

from audit.backend.chat import render_ids, sampling_ids
from audit.backend.loading import load
from audit.backend.sources import ModelRef
from audit.errors import AuditError
from audit.prompts import ChatPrompt, LabelScores

PREFIX_SLOTS = 4  # shared-prefix caches kept (one per job description in flight is plenty)


class CausalLM:
    """A loaded model with the three operations scoring needs."""

    def __init__(self, ref: ModelRef, model: Any, tokenizer: Any, *, batch_size: int = 8, prefix_cache: bool = True):
        self.ref = ref
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.prefix_cache = prefix_cache
        self.pad_id = next(t for t in (tokenizer.pad_token_id, tokenizer.eos_token_id, 0) if t is not None)
        self._prefixes: OrderedDict[tuple[int, ...], Any] = OrderedDict()
        self._sequential: tuple[list[int], Any] = ([], None)  # tokens and KV cache of the last ranking

    @classmethod
    def load(cls, ref: ModelRef, *, trust_remote_code: bool = False, **options: Any) -> "CausalLM":
        model, tokenizer = load(ref, trust_remote_code=trust_remote_code)
        return cls(ref, model, tokenizer, **options)

    # ---- public operations -------------------------------------------------------------------------------

    def label_probabilities(self, prompts: Sequence[ChatPrompt], labels: Sequence[str]) -> list[LabelScores]:
        """P_n(y) for each label y, summing every single-token spelling of y ("Yes", " Yes")."""
        variants = self.label_token_ids(labels)
        rows = self._tail_logprobs(prompts, [[] for _ in prompts], tail=1)
        out = []
        for row in rows:
            probs = row[-1].exp()
            out.append(LabelScores.from_masses([float(probs[ids].sum()) for ids in variants]))
        return out

    def option_logprobs(self, prompts: Sequence[ChatPrompt], *, lead: str = " ") -> list[tuple[float, ...]]:
        """log P(option | prompt) of each of a prompt's ``options`` as the answer (teacher-forced, summed), each
        written after ``lead`` (a space after an answer prefix; nothing when the answer opens the turn)."""
        flat_prompts, continuations = [], []
        for prompt in prompts:
            for option in prompt.options:
                flat_prompts.append(prompt)
                continuations.append(self.encode(lead + option))
        rows = self._tail_logprobs(flat_prompts, continuations, tail=1)
        scores = [float(row[range(len(ids)), ids].sum()) for row, ids in zip(rows, continuations)]
        out, at = [], 0
        for prompt in prompts:
            out.append(tuple(scores[at : at + len(prompt.options)]))
            at += len(prompt.options)
        return out

    def sequential_logprobs(self, prompt: ChatPrompt, *, picks: int = 1, sep: str = "\n") -> list[dict[int, float]]:
        """For each of ``picks`` steps, log P(option | prompt, options picked before) of every option not yet picked:
        step 0 scores each option as the answer's first tokens (as ``option_logprobs(lead="")``), each later step
        after the most likely option of the step before, written with ``sep`` after it.

        One prefill of the prompt into a KV cache, which starts (with ``prefix_cache``) from the previous call's cache
        cut back to the tokens both prompts share (the job description); each step's options run together in one
        packed row (each option attends to the cache and its own tokens only), and the cache is cut back after it.
        A model whose sliding-window layers are shorter than this work (Gemma 3's 512 tokens) keeps only the window
        in those layers, which can be neither cut back nor addressed by a packed row's mask: its prompt is prefilled
        afresh and each step's options run as a batch over copies of the cache.
        """
        from transformers import DynamicCache

        options = [self.encode(option) for option in prompt.options]
        if not options or not all(options):
            raise AuditError(f"every option needs at least one token; got {list(prompt.options)}")
        ids = render_ids(self.tokenizer, prompt)
        held, cache = self._sequential if self.prefix_cache else ([], None)
        self._sequential = ([], None)  # until this call has finished with the cache
        if cache is None:
            cache = DynamicCache(config=self.model.config)
        # the most the cache holds: the prompt, the picks written, and the options packed after them
        windowed = window_below(cache, len(ids) + 2 * sum(map(len, options)) + picks * len(self.encode(sep)))
        if windowed:
            held, cache = [], DynamicCache(config=self.model.config)
        shared = 0
        while shared < min(len(held), len(ids) - 1) and held[shared] == ids[shared]:
            shared += 1
        if shared < len(held):
            cache.crop(shared - len(held))
        last = self._extend(cache, ids[shared:])
        held = list(ids)
        score = self._batched_logprobs if windowed else self._packed_logprobs
        steps: list[dict[int, float]] = []
        remaining = list(range(len(options)))
        for _ in range(min(picks, len(options))):
            scores = score(cache, len(held), last, [options[i] for i in remaining])
            steps.append(dict(zip(remaining, scores)))
            pick = max(remaining, key=lambda i: (steps[-1][i], -i))
            remaining.remove(pick)
            if remaining and len(steps) < picks:
                written = options[pick] + self.encode(sep)
                last = self._extend(cache, written)
                held.extend(written)
        self._sequential = (held, cache)
        return steps

    def generate(self, prompts: Sequence[ChatPrompt], *, max_new_tokens: int = 16) -> list[str]:
        """Greedy answers (the paper's decoding), decoded without special tokens.

        The first token may not end the turn (``min_new_tokens=1``): small models often close the turn right
        after "Answer:", which says nothing about whom they prefer.
        """
        seqs = [render_ids(self.tokenizer, p) for p in prompts]
        return [answer.strip() for answer in self._generated(seqs, max_new_tokens, 1)]

    def sample(self, prompts: Sequence[str | ChatPrompt], seeds: Sequence[int], *, max_new_tokens: int = 20,
               min_new_tokens: int = 1, temperature: float = 1.0, top_p: float = 1.0,
               until_mentioned: Sequence[Sequence[str]] | None = None) -> list[str]:
        """Sampled continuations (CAIRO's decoding), one per prompt, decoded without special tokens.

        A ``str`` is continued as plain text (the tokenizer's usual special tokens, e.g. BOS, no chat template);
        a :class:`ChatPrompt` is rendered with the chat template. Row ``j`` draws its tokens from its own
        generator seeded with ``seeds[j]``, so a continuation does not depend on which batch it ran in (up to the
        floating-point effect of padding): at each step, p(t) ∝ softmax(logits / temperature) restricted to the
        top-p nucleus, then t ~ p. With ``until_mentioned``, row ``j`` stops once its text mentions every string of
        ``until_mentioned[j]`` (case-insensitive): the rest could not move any string's first mention.
        """
        seqs = sampling_ids(self.tokenizer, prompts, seeds, max_new_tokens, min_new_tokens, temperature, top_p)

        def extra(start: int) -> dict[str, Any]:
            rows = slice(start, start + self.batch_size)
            options: dict[str, Any] = {"logits_processor": [_RowSampler(seeds[rows], temperature, top_p)]}
            if until_mentioned is not None:
                options["stopping_criteria"] = [_AllMentioned(self.tokenizer, until_mentioned[rows],
                                                              max(len(s) for s in seqs[rows]))]
            return options

        return self._generated(seqs, max_new_tokens, min_new_tokens, extra)

    def _generated(self, seqs: list[list[int]], max_new_tokens: int, min_new_tokens: int,
                   extra: Callable[[int], dict[str, Any]] = lambda start: {}) -> list[str]:
        """The decoded new tokens of each sequence, generated greedily batch by batch; ``extra(start)``: more
        ``generate`` arguments for the batch starting at ``start`` (a sampler)."""
        import torch

        texts: list[str] = []
        for start in range(0, len(seqs), self.batch_size):
            ids, mask, *_ = self._padded(seqs[start : start + self.batch_size], prefix_len=0, right=False)
            with torch.inference_mode():
                out = self.model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=max_new_tokens,
                                          min_new_tokens=min_new_tokens, do_sample=False, pad_token_id=self.pad_id,
                                          **extra(start))
            texts.extend(self.tokenizer.decode(row, skip_special_tokens=True) for row in out[:, ids.shape[1]:])
        return texts

    # ---- helpers -----------------------------------------------------------------------------------------

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def context_length(self) -> int | None:
        """The most tokens the model attends to (its ``max_position_embeddings``), if it says."""
        return getattr(self.model.config, "max_position_embeddings", None)

    def prompt_length(self, prompt: ChatPrompt) -> int:
        """Tokens of ``prompt`` as rendered with the chat template."""
        return len(render_ids(self.tokenizer, prompt))

    def cut(self, text: str, tokens: int) -> str:
        """``text`` cut to its first ``tokens`` tokens."""
        return self.tokenizer.decode(self.encode(text)[:tokens])

    def label_token_ids(self, labels: Sequence[str]) -> list[list[int]]:
        """Token ids standing for each label: its single-token spellings with and without a leading space.

        A label with no single-token spelling falls back to the first token of its bare spelling. Two labels
        sharing a token would make the probabilities ambiguous, so that is refused.
        """
        variants = []
        for label in labels:
            singles = {ids[0] for ids in (self.encode(label), self.encode(" " + label)) if len(ids) == 1}
            variants.append(sorted(singles) or [self.encode(label)[0]])
        seen: dict[int, str] = {}
        for label, ids in zip(labels, variants):
            for token in ids:
                if token in seen:
                    raise AuditError(f"labels {seen[token]!r} and {label!r} share token {token} in {self.ref.label}")
                seen[token] = label
        return variants

    def _tail_logprobs(self, prompts: Sequence[ChatPrompt], continuations: Sequence[list[int]], *, tail: int) -> list:
        """For each prompt + continuation, log-softmax rows over the continuation's tokens plus ``tail`` more.

        Row ``i`` of the result predicts continuation token ``i``; the last row predicts the next token after it.
        """
        seqs = [render_ids(self.tokenizer, p) + list(c) for p, c in zip(prompts, continuations)]
        tails = [len(c) + tail for c in continuations]
        results: list[Any] = [None] * len(seqs)
        groups: dict[str, list[int]] = {}
        for index, prompt in enumerate(prompts):
            groups.setdefault(prompt.system, []).append(index)
        for members in groups.values():
            prefix, cache = self._shared_prefix([seqs[i] for i in members], [tails[i] for i in members])
            for start in range(0, len(members), self.batch_size):
                chunk = members[start : start + self.batch_size]
                rows = self._forward([seqs[i][len(prefix):] for i in chunk], [tails[i] for i in chunk],
                                     prefix_len=len(prefix), cache=cache)
                for i, row in zip(chunk, rows):
                    results[i] = row
        return results

    def _shared_prefix(self, seqs: list[list[int]], tails: list[int]) -> tuple[list[int], Any]:
        """The longest reusable prefix of ``seqs`` and its KV cache (from the LRU when already computed)."""
        if not self.prefix_cache or len(seqs) < 2 and not self._prefixes:
            return [], None
        limit = min(len(s) - t for s, t in zip(seqs, tails))
        for known in reversed(self._prefixes):
            if len(known) <= limit and all(tuple(s[: len(known)]) == known for s in seqs):
                self._prefixes.move_to_end(known)
                return list(known), self._prefixes[known]
        if len(seqs) < 2:
            return [], None
        length = 0
        first = seqs[0]
        while length < limit and all(s[length] == first[length] for s in seqs):
            length += 1
        if length == 0:
            return [], None
        prefix = first[:length]
        cache = self._prefill(prefix)
        self._prefixes[tuple(prefix)] = cache
        while len(self._prefixes) > PREFIX_SLOTS:
            self._prefixes.popitem(last=False)
        return prefix, cache

    def _prefill(self, prefix: list[int]) -> Any:
        import torch
        from transformers import DynamicCache

        cache = DynamicCache(config=self.model.config)
        ids = torch.tensor([prefix], device=self.model.device)
        with torch.inference_mode():
            self.model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1)
        return cache

    def _extend(self, cache: Any, ids: list[int]) -> Any:
        """Run ``ids`` after what ``cache`` holds (batch of one; the cache grows); the next token's log-softmax."""
        import torch

        with torch.inference_mode():
            logits = self.model(input_ids=torch.tensor([ids], device=self.model.device), past_key_values=cache,
                                use_cache=True, logits_to_keep=1).logits
        return torch.log_softmax(logits[0, -1].float(), dim=-1).cpu()

    def _packed_logprobs(self, cache: Any, length: int, last: Any, options: list[list[int]]) -> list[float]:
        """log P(option) of each option after ``cache`` (``length`` tokens; its next-token log-softmax is ``last``),
        all options in one row: a 4-D mask lets each token see the cache and its own option's earlier tokens, position
        ids restart after the cache for each option. The cache is cut back to its length afterwards."""
        import torch

        flat = [token for option in options for token in option]
        starts = [sum(len(o) for o in options[:i]) for i in range(len(options))]
        mask = torch.zeros((1, 1, len(flat), length + len(flat)), dtype=torch.bool)
        mask[..., :length] = True
        positions = torch.empty((1, len(flat)), dtype=torch.long)
        for start, option in zip(starts, options):
            span = slice(start, start + len(option))
            mask[0, 0, span, length + start : length + start + len(option)] = torch.ones(
                len(option), len(option), dtype=torch.bool).tril()
            positions[0, span] = torch.arange(length, length + len(option))
        device = self.model.device
        with torch.inference_mode():
            logits = self.model(input_ids=torch.tensor([flat], device=device), attention_mask=mask.to(device),
                                position_ids=positions.to(device), past_key_values=cache, use_cache=True).logits
        cache.crop(-len(flat))
        rows = torch.log_softmax(logits[0].float(), dim=-1).cpu()
        return [float(last[option[0]]) + sum(float(rows[start + j - 1, option[j]]) for j in range(1, len(option)))
                for start, option in zip(starts, options)]

    def _batched_logprobs(self, cache: Any, length: int, last: Any, options: list[list[int]]) -> list[float]:
        """As :meth:`_packed_logprobs`, the options as a batch over copies of the cache (which is left as it was):
        for caches with sliding-window layers."""
        rows = self._forward(options, [len(o) for o in options], prefix_len=length, cache=cache)
        return [float(last[option[0]]) + sum(float(row[i - 1, option[i]]) for i in range(1, len(option)))
                for row, option in zip(rows, options)]

    def _padded(self, rows: list[list[int]], *, prefix_len: int, right: bool) -> tuple[Any, Any, Any, list[int]]:
        """Padded ids, the attention mask over prefix + rows, each token's true position, and where each row starts.

        Rows are padded on the left (each row's last tokens line up, so the logits kept are few), except after a
        cached prefix that a sliding window reaches past: a window counts padding slots as tokens, so there each row
        starts right after the prefix, padded on the right (padding between them moved Gemma 3's P(Yes) by up to
        0.026)."""
        import torch

        width = max(len(r) for r in rows)
        starts = [0 if right else width - len(r) for r in rows]
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), prefix_len + width), dtype=torch.long)
        mask[:, :prefix_len] = 1
        positions = torch.full((len(rows), width), prefix_len, dtype=torch.long)
        for j, (row, start) in enumerate(zip(rows, starts)):
            ids[j, start : start + len(row)] = torch.tensor(row)
            mask[j, prefix_len + start : prefix_len + start + len(row)] = 1
            positions[j, start : start + len(row)] = torch.arange(prefix_len, prefix_len + len(row))
        device = self.model.device
        return ids.to(device), mask.to(device), positions.to(device), starts

    def _forward(self, rows: list[list[int]], tails: list[int], *, prefix_len: int, cache: Any) -> list[Any]:
        """Log-softmax over the last ``tails[j]`` positions of each row, after an optional cached prefix."""
        import torch

        right = cache is not None and window_below(cache, prefix_len + max(map(len, rows)))
        ids, mask, positions, starts = self._padded(rows, prefix_len=prefix_len, right=right)
        past = None
        if cache is not None:
            past = copy.deepcopy(cache)
            if len(rows) > 1:
                past.batch_repeat_interleave(len(rows))
        ends = [start + len(row) for start, row in zip(starts, rows)]
        keep = ids.shape[1] - min(end - t for end, t in zip(ends, tails))  # every row's tail among the last `keep`
        with torch.inference_mode():
            logits = self.model(input_ids=ids, attention_mask=mask, position_ids=positions, past_key_values=past,
                                use_cache=past is not None, logits_to_keep=keep).logits
        logprobs = torch.log_softmax(logits.float(), dim=-1).cpu()
        skipped = ids.shape[1] - keep
        return [logprobs[j, end - t - skipped : end - skipped] for j, (end, t) in enumerate(zip(ends, tails))]


def window_below(cache: Any, length: int) -> bool:
    """Whether a KV cache has a sliding-window layer that would keep fewer than ``length`` tokens (a window of unknown
    size counts as short)."""
    return any(getattr(layer, "is_sliding", False) and getattr(layer, "sliding_window", 0) <= length
               for layer in cache.layers)


class _RowSampler:
    """A logits processor that samples each row with its own seeded generator and leaves only that token.

    Greedy decoding over its output is then seeded sampling; HF's min-length and end-of-sequence handling
    (applied before it) still hold.
    """

    def __init__(self, seeds: Sequence[int], temperature: float, top_p: float):
        import torch

        self.generators = [torch.Generator().manual_seed(int(seed)) for seed in seeds]
        self.temperature = temperature
        self.top_p = top_p

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        probs = torch.softmax(scores.float().cpu() / self.temperature, dim=-1)
        if self.top_p < 1:
            ordered, order = probs.sort(dim=-1, descending=True)
            outside = ordered.cumsum(dim=-1) - ordered >= self.top_p
            probs = probs.scatter(-1, order, ordered.masked_fill(outside, 0.0))
        chosen = [int(torch.multinomial(row, 1, generator=g)) for row, g in zip(probs, self.generators)]
        out = torch.full_like(scores, float("-inf"))
        out[torch.arange(len(chosen), device=scores.device), torch.tensor(chosen, device=scores.device)] = 0.0
        return out


class _AllMentioned:
    """A stopping criterion: row ``j`` is done once its new text mentions every string of ``wanted[j]``."""

    def __init__(self, tokenizer: Any, wanted: Sequence[Sequence[str]], start: int):
        self.tokenizer = tokenizer
        self.wanted = [[w.lower() for w in row] for row in wanted]
        self.start = start

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        texts = self.tokenizer.batch_decode(input_ids[:, self.start:], skip_special_tokens=True)
        return torch.tensor([all(w in text.lower() for w in row) for text, row in zip(texts, self.wanted)],
                            device=input_ids.device)
