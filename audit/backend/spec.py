"""Which inference engine runs a model, as a small picklable recipe: the CLI and Ray workers load from it.

``transformers`` (the default, :class:`~audit.backend.causal_lm.CausalLM`) runs anywhere; ``vllm``
(:mod:`audit.backend.vllm_backend`) needs the optional vLLM package; ``openai`` (:mod:`audit.backend.api`) calls a
served model over an OpenAI-compatible API. Every backend implements :class:`~audit.backend.protocol.Backend` and
is loaded through :func:`load_backend`.
"""
from __future__ import annotations

from dataclasses import dataclass

from audit.backend.protocol import Backend
from audit.backend.sources import ModelRef
from audit.errors import AuditError

BACKENDS = ("transformers", "vllm", "openai")


@dataclass(frozen=True)
class BackendSpec:
    """A resolved model plus the engine and options to load it with."""

    ref: ModelRef
    engine: str = "transformers"
    batch_size: int = 8
    trust_remote_code: bool = False
    api_key_env: str | None = None  # openai: the variable holding the key (the key itself never travels)
    concurrency: int = 4  # openai: requests in flight
    max_requests: int | None = None  # openai: request budget (None: no cap)

    def __post_init__(self) -> None:
        if self.engine not in BACKENDS:
            raise AuditError(f"unknown backend {self.engine!r}; choose one of {list(BACKENDS)}")

    def load(self) -> Backend:
        return load_backend(self)


def load_backend(spec: BackendSpec) -> Backend:
    """The loaded backend for ``spec``: the one place the CLI, the dashboard, CAIRO and Ray workers load models."""
    if spec.engine == "openai":
        from audit.backend.api import ApiBackend

        return ApiBackend(spec.ref, spec.api_key_env, concurrency=spec.concurrency, max_requests=spec.max_requests)
    if spec.engine == "vllm":
        from audit.backend.vllm_backend import VLLMBackend

        return VLLMBackend.load(spec.ref, trust_remote_code=spec.trust_remote_code)
    from audit.backend.causal_lm import CausalLM

    return CausalLM.load(spec.ref, trust_remote_code=spec.trust_remote_code, batch_size=spec.batch_size)
