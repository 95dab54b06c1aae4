"""Which inference engine runs a model, as a small picklable recipe: the CLI and Ray workers load from it.

``transformers`` (the default, :class:`~audit.backend.causal_lm.CausalLM`) runs anywhere; ``vllm``
(:mod:`audit.backend.vllm_backend`) needs the optional vLLM package and a CUDA GPU.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from audit.backend.sources import ModelRef
from audit.errors import AuditError

BACKENDS = ("transformers", "vllm")


@dataclass(frozen=True)
class BackendSpec:
    """A resolved model plus the engine and options to load it with."""

    ref: ModelRef
    engine: str = "transformers"
    batch_size: int = 8
    trust_remote_code: bool = False

    def __post_init__(self) -> None:
        if self.engine not in BACKENDS:
            raise AuditError(f"unknown backend {self.engine!r}; choose one of {list(BACKENDS)}")

    def load(self) -> Any:
        """The loaded backend: ``label_probabilities``, ``generate`` (and ``option_logprobs`` where supported)."""
        if self.engine == "vllm":
            from audit.backend.vllm_backend import VLLMBackend

            return VLLMBackend.load(self.ref, trust_remote_code=self.trust_remote_code)
        from audit.backend.causal_lm import CausalLM

        return CausalLM.load(self.ref, trust_remote_code=self.trust_remote_code, batch_size=self.batch_size)
