"""Command-line options of ``--model openai:NAME`` (an OpenAI-compatible endpoint), shared by ``score`` and CAIRO."""
from __future__ import annotations

import argparse

from audit.backend.api import PREFIX
from audit.backend.spec import ModelOptions


def add_api_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--base-url", help=f"with --model {PREFIX}NAME: the API root, e.g. http://127.0.0.1:8000/v1")
    parser.add_argument("--api-key-env", help=f"with {PREFIX}: the environment variable holding the API key "
                                              "(the key is never stored or shown)")
    parser.add_argument("--concurrency", type=int, default=4, help=f"with {PREFIX}: requests in flight (default 4)")
    parser.add_argument("--max-requests", type=int, help=f"with {PREFIX}: request budget for this run (default: none)")
    parser.add_argument("--deadline", type=float, help=f"with {PREFIX}: seconds the whole run may take (default: none; "
                                                       "each call has its own 300 s either way)")


def model_options(args: argparse.Namespace, *, need_logprobs: bool = False) -> ModelOptions:
    """The model flags of a command as :class:`ModelOptions` (for :func:`audit.backend.spec.spec_for`)."""
    return ModelOptions(quant=getattr(args, "quant", "auto"), revision=getattr(args, "revision", None),
                        backend=getattr(args, "backend", "transformers"), batch_size=args.batch_size,
                        trust_remote_code=getattr(args, "trust_remote_code", False), base_url=args.base_url,
                        api_key_env=args.api_key_env, concurrency=args.concurrency, max_requests=args.max_requests,
                        deadline=getattr(args, "deadline", None),
                        need_logprobs=need_logprobs)
