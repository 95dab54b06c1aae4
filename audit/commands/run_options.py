"""What the ``score`` runs share (pointwise, pairwise and listwise): the ``--label`` check, the executor and backend
options checked together, and the model to load with its executor."""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import TYPE_CHECKING

from audit.backend.api import PREFIX
from audit.backend.spec import BackendSpec, check_offers, runtime_for, spec_for
from audit.commands.api_options import model_options
from audit.enums import Mode, Reading
from audit.errors import AuditError
from audit.run.scoring import backend_needs

if TYPE_CHECKING:
    from audit.run.distributed import RayExecutor


def checked_label(label: str) -> str:
    """``--label`` as given, if it is 1 to 100 printable characters."""
    if not label.strip() or len(label) > 100 or not label.isprintable():
        raise AuditError(f"--label {label!r}: give 1 to 100 printable characters")
    return label.strip()


def check_scale_options(args: argparse.Namespace) -> None:
    """Refuse executor and backend options that cannot work together, before anything is written."""
    if args.workers is not None and args.workers < 1:
        raise AuditError(f"--workers must be positive, got {args.workers}")
    if args.executor != "ray" and (args.address or args.workers):
        raise AuditError("--address and --workers only apply with --executor ray")
    if args.model.startswith(PREFIX) and args.backend != "transformers":
        raise AuditError(f"--model {PREFIX}NAME is served by its endpoint; leave out --backend {args.backend}")
    check_offers(runtime_for(args.model, args.backend), *run_needs(args))
    if args.base_url and not args.model.startswith(PREFIX):
        raise AuditError(f"--base-url applies only to --model {PREFIX}NAME")
    if args.backend == "vllm" and args.executor == "local":
        from audit.backend.vllm_backend import check_available

        check_available()


def run_needs(args: argparse.Namespace) -> tuple[tuple[str, ...], str]:
    """The backend capabilities the asked run needs, and the run as a refusal names it."""
    if args.mode == Mode.LISTWISE:
        reading = getattr(args, "reading", Reading.GENERATE)
        needs = ("option_logprobs",) if reading == Reading.LIKELIHOOD else ("sampling",)
        return needs, f"the listwise {reading} reading (--reading {reading})"
    return backend_needs(args.mode, args.pairwise_mode)


def backend_and_executor(args: argparse.Namespace) -> tuple[BackendSpec, "RayExecutor | None"]:
    """The model to load and, for ``--executor ray``, the executor that runs it on the cluster's workers.

    On Ray the cluster decides the device: workers get one GPU each when it has GPUs, so the model is
    resolved (quantisation, dtype, fingerprint) for that device, not this machine's.
    """
    cluster = None
    if args.executor == "ray":
        from audit.run.distributed import connect

        cluster = connect(args.address, args.workers)
        if args.backend == "vllm" and not cluster.gpus:
            raise AuditError("--backend vllm needs GPUs; the Ray cluster has none")
    options = replace(model_options(args, need_logprobs=args.mode == Mode.POINTWISE),
                      device=cluster.device if cluster else None)
    spec = spec_for(args.model, options)
    if cluster is None:
        return spec, None
    from audit.run.distributed import RayExecutor

    workers = f"{cluster.workers} worker{'s' * (cluster.workers != 1)}"
    print(f"ray: {workers} ({cluster.device}), {cluster.cpus} CPUs and {cluster.gpus} GPUs in the cluster",
          file=sys.stderr)
    return spec, RayExecutor(spec, cluster)
