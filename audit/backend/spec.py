"""Which runtime runs a model, as a small picklable recipe: the CLI, the Run page, CAIRO and Ray workers load
from it.

``transformers`` (the default, :class:`~audit.backend.causal_lm.CausalLM`) runs anywhere; ``vllm``
(:mod:`audit.backend.vllm_backend`) needs the optional vLLM package; ``openai`` (:mod:`audit.backend.api`) calls a
served model over an OpenAI-compatible API. A model name becomes a spec in one place, :func:`spec_for`; every backend
implements :class:`~audit.backend.protocol.Backend` and is loaded through :func:`load_backend`.
"""
from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Sequence

from audit.backend.protocol import CAPABILITIES, Backend, lacking, refusal, require
from audit.backend.sources import ModelRef, resolve
from audit.errors import AuditError

BACKENDS = ("transformers", "vllm", "openai")
API_PREFIX = "openai:"  # = audit.backend.api.PREFIX (imported lazily: the API client is not needed to load locally)
KEPT = 2  # loaded local models kept per process (a model and one alternative; each holds its weights)


@dataclass(frozen=True)
class BackendSpec:
    """A resolved model plus the runtime and options to load it with."""

    ref: ModelRef
    runtime: str = "transformers"  # the inference library: a key of BACKENDS
    batch_size: int = 8
    trust_remote_code: bool = False
    api_key_env: str | None = None  # openai: the variable holding the key (the key itself never travels)
    concurrency: int = 4  # openai: requests in flight
    max_requests: int | None = None  # openai: request budget (None: no cap)
    run_until: float | None = None  # openai: time.time() by which every call of the run ends (--deadline)

    def __post_init__(self) -> None:
        if self.runtime not in BACKENDS:
            raise AuditError(f"unknown backend {self.runtime!r}; choose one of {list(BACKENDS)}")

    def load(self) -> Backend:
        return load_backend(self)


@dataclass(frozen=True)
class ModelOptions:
    """How the user asked for a model, beside its name (the CLI's flags, the Run page's widgets)."""

    quant: str = "auto"
    revision: str | None = None
    device: str | None = None  # None: this machine's (a Ray cluster passes its workers')
    backend: str = "transformers"  # local runtime: transformers or vllm; openai:NAME models ignore it
    batch_size: int = 8
    trust_remote_code: bool = False
    base_url: str | None = None  # openai:NAME only
    api_key_env: str | None = None
    concurrency: int = 4
    max_requests: int | None = None
    deadline: float | None = None  # openai: seconds the whole run may take, its probe included (None: no bound)
    need_logprobs: bool = False  # openai: refuse an endpoint without log-probabilities (pointwise scoring)
    needs: tuple[str, ...] = ()  # capabilities the run needs (audit.backend.protocol.CAPABILITIES)
    purpose: str = "this command"  # what needs them, as the refusal names it (e.g. "--pairwise-mode likelihood")


def backend_class(runtime: str) -> type:
    """The class implementing ``runtime`` (imported without its inference library, which loads on first use)."""
    if runtime == "openai":
        from audit.backend.api import ApiBackend

        return ApiBackend
    if runtime == "vllm":
        from audit.backend.vllm_backend import VLLMBackend

        return VLLMBackend
    from audit.backend.causal_lm import CausalLM

    return CausalLM


def offered_by() -> dict[str, list[str]]:
    """Capability → the runtimes whose backend declares it (by implementing its methods)."""
    return {name: [r for r in BACKENDS if not lacking(backend_class(r), [name])] for name in CAPABILITIES}


def runtime_for(name: str, backend: str = "transformers") -> str:
    """The runtime a model name is run with: its endpoint for ``openai:NAME``, else ``backend``."""
    return "openai" if name.startswith(API_PREFIX) else backend


def check_offers(runtime: str, needs: Sequence[str], purpose: str = "this command") -> None:
    """Refuse, before any model is resolved or loaded, a runtime whose backend lacks a capability in ``needs``."""
    if runtime not in BACKENDS:
        raise AuditError(f"unknown backend {runtime!r}; choose one of {list(BACKENDS)}")
    missing = lacking(backend_class(runtime), needs)
    if missing:
        raise refusal(f"the {runtime} backend", missing, purpose, offered_by())


def spec_for(name: str, options: ModelOptions = ModelOptions()) -> BackendSpec:
    """The one place a model name becomes a :class:`BackendSpec`: a registry name, file, folder or hub id resolved
    and fingerprinted for its runtime, or ``openai:NAME`` checked against its endpoint (before anything is written).
    A runtime lacking a capability in ``options.needs`` is refused first."""
    check_offers(runtime_for(name, options.backend), options.needs, options.purpose)
    if name.startswith(API_PREFIX):
        from audit.backend.api import api_ref

        if options.backend != "transformers":
            raise AuditError(f"--model {API_PREFIX}NAME is served by its endpoint; leave out --backend "
                             f"{options.backend}")
        for flag, value in (("concurrency", options.concurrency), ("max-requests", options.max_requests)):
            if value is not None and value < 1:
                raise AuditError(f"--{flag} must be positive, got {value}")
        run_until = None if options.deadline is None else time.time() + options.deadline
        ref = api_ref(name, options.base_url, options.api_key_env, need_logprobs=options.need_logprobs,
                      run_until=run_until)
        return BackendSpec(ref, "openai", options.batch_size, api_key_env=options.api_key_env,
                           concurrency=options.concurrency, max_requests=options.max_requests, run_until=run_until)
    for flag, value in (("base-url", options.base_url), ("deadline", options.deadline)):
        if value is not None:
            raise AuditError(f"--{flag} applies only to --model {API_PREFIX}NAME")
    ref = resolve(name, quant=options.quant, revision=options.revision, device=options.device)
    if options.backend == "vllm":
        from audit.backend.vllm_backend import vllm_ref

        ref = vllm_ref(ref)
    return BackendSpec(ref, options.backend, options.batch_size, options.trust_remote_code)


_LOADED: OrderedDict[BackendSpec, Backend] = OrderedDict()


def load_backend(spec: BackendSpec, needs: Sequence[str] = (), purpose: str = "this command") -> Backend:
    """The loaded backend for ``spec``, checked for the capabilities in ``needs`` (``option_logprobs``,
    ``sampling``, ``tokenizing``) that ``purpose`` needs.

    Local models are loaded once per process and spec (the :data:`KEPT` most recent stay); an API client is built
    afresh each time, so each run gets its own request budget."""
    if spec.runtime == "openai":
        from audit.backend.api import ApiBackend

        return require(ApiBackend(spec.ref, spec.api_key_env, concurrency=spec.concurrency,
                                  max_requests=spec.max_requests, run_until=spec.run_until), needs, purpose,
                       offered_by())
    if spec not in _LOADED:
        if spec.runtime == "vllm":
            from audit.backend.vllm_backend import VLLMBackend

            backend: Backend = VLLMBackend.load(spec.ref, trust_remote_code=spec.trust_remote_code)
        else:
            from audit.backend.causal_lm import CausalLM

            backend = CausalLM.load(spec.ref, trust_remote_code=spec.trust_remote_code, batch_size=spec.batch_size)
        _LOADED[spec] = backend
        while len(_LOADED) > KEPT:
            _LOADED.popitem(last=False)
    _LOADED.move_to_end(spec)
    return require(_LOADED[spec], needs, purpose, offered_by())
