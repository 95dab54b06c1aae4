"""Command-line options of ``--model openai:NAME`` (an OpenAI-compatible endpoint), shared by ``score`` and CAIRO."""
from __future__ import annotations

import argparse

from audit.backend.api import PREFIX, api_ref
from audit.backend.sources import resolve
from audit.backend.spec import BackendSpec
from audit.errors import AuditError


def add_api_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--base-url", help=f"with --model {PREFIX}NAME: the API root, e.g. http://127.0.0.1:8000/v1")
    parser.add_argument("--api-key-env", help=f"with {PREFIX}: the environment variable holding the API key "
                                              "(the key is never stored or shown)")
    parser.add_argument("--concurrency", type=int, default=4, help=f"with {PREFIX}: requests in flight (default 4)")
    parser.add_argument("--max-requests", type=int, help=f"with {PREFIX}: request budget for this run (default: none)")


def api_spec(model: str, args: argparse.Namespace, *, need_logprobs: bool) -> BackendSpec:
    """Check the endpoint (before anything is written) and the spec that calls it."""
    for name in ("concurrency", "max_requests"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise AuditError(f"--{name.replace('_', '-')} must be positive, got {value}")
    ref = api_ref(model, args.base_url, args.api_key_env, need_logprobs=need_logprobs)
    return BackendSpec(ref, "openai", args.batch_size, api_key_env=args.api_key_env, concurrency=args.concurrency,
                       max_requests=args.max_requests)


def model_spec(model: str, args: argparse.Namespace, *, need_logprobs: bool = False) -> BackendSpec:
    """A local model (transformers) or, for ``openai:NAME``, the endpoint in ``args``."""
    if model.startswith(PREFIX):
        return api_spec(model, args, need_logprobs=need_logprobs)
    if args.base_url:
        raise AuditError(f"--base-url applies only to --model {PREFIX}NAME")
    return BackendSpec(resolve(model), batch_size=args.batch_size)
