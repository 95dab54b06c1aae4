"""Ray-distributed scoring: batches of missing prompts go to a pool of Ray actors, one model replica each.

The driver (this process) stays the store's only writer: :class:`RayExecutor` plugs into
:func:`audit.run.scoring.run_scoring`, which commits every batch as it streams back. A batch whose worker dies
(killed process, lost node) is resubmitted to another worker and the dead one is replaced, a bounded number
of times; a batch is never committed twice, and a re-run after a crash dispatches only what is missing.

Models reach the workers by what :class:`~audit.backend.sources.ModelRef` names: a hub id (each worker
downloads or reads its cache), a folder path (must exist on every worker, e.g. a shared file system), or a
bundled GGUF file, found again in the worker's own installed package when the path differs there.
"""
from __future__ import annotations

import logging
import os
import socket
from collections import Counter, deque
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any, Generator, Sequence

from audit.backend.registry import REGISTRY
from audit.backend.sources import ModelRef, file_sha256
from audit.backend.spec import BackendSpec
from audit.run.scoring import Batch, BatchJob
from audit.errors import AuditError

ROOT = Path(__file__).resolve().parents[2]
PASSED_ENV = ("HF_HUB_OFFLINE", "HF_HOME", "AUDIT_CACHE_DIR", "TRANSFORMERS_OFFLINE")
CONNECT_TIMEOUT_S = 5


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise AuditError("--executor ray needs the ray package (pip install 'ray[default]')") from None
    return ray


@dataclass(frozen=True)
class Cluster:
    """The Ray cluster this process is connected to and how many scoring workers it will run."""

    gpus: int
    cpus: int
    workers: int

    @property
    def device(self) -> str:
        """Where workers run models: every worker gets one GPU when the cluster has GPUs."""
        return "cuda" if self.gpus else "cpu"

    def actor_resources(self) -> dict[str, float]:
        if self.gpus:
            return {"num_gpus": 1, "num_cpus": 1}
        return {"num_cpus": max(1, self.cpus // self.workers)}


def connect(address: str | None = None, workers: int | None = None) -> Cluster:
    """Join the cluster at ``address`` (``auto``, ``HOST:PORT`` or ``ray://HOST:PORT``) or start a local one.

    A process already connected (a test, a notebook) keeps its connection. ``workers`` defaults to one per
    GPU, or one per CPU on a cluster without GPUs, and may not exceed that.
    """
    if workers is not None and workers < 1:
        raise AuditError(f"--workers must be positive, got {workers}")
    ray = _ray()
    if not ray.is_initialized():
        if address not in (None, "auto"):
            _check_reachable(address)
        try:
            if address is None:
                ray.init(include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
            else:  # remote workers need our code: ship the package with the job
                ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR,
                         runtime_env={"py_modules": [str(ROOT / "audit")]})
        except (ConnectionError, ValueError, RuntimeError, TimeoutError) as exc:
            raise AuditError(f"cannot connect to the Ray cluster at {address}: {str(exc).splitlines()[0]}") from None
    resources = ray.cluster_resources()
    gpus, cpus = int(resources.get("GPU", 0)), int(resources.get("CPU", 0))
    capacity = gpus or cpus
    if capacity < 1:
        raise AuditError("the Ray cluster has no CPUs or GPUs to run scoring workers on")
    if workers is not None and workers > capacity:
        raise AuditError(f"--workers {workers} is more than the cluster's {capacity} "
                         f"{'GPUs' if gpus else 'CPUs'}; the extra workers would wait forever")
    return Cluster(gpus, cpus, workers or capacity)


def _check_reachable(address: str) -> None:
    """Fail in seconds, not after Ray's long reconnect loop, when nothing listens at ``address``."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise AuditError(f"--address {address!r} is not auto, HOST:PORT or ray://HOST:PORT")
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise AuditError(f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}") from None


def localise(ref: ModelRef) -> ModelRef:
    """``ref`` as this machine finds it: a bundled GGUF file may live at another path on a worker."""
    if ref.kind != "gguf":
        return ref
    here = Path(ref.location)
    if here.is_file() and file_sha256(here) == ref.content_id:
        return ref
    for entry in REGISTRY.values():
        if ref.label.startswith(entry.name) and entry.installed():
            path = entry.locate()
            if file_sha256(path) == ref.content_id:
                return replace(ref, location=str(path))
    raise AuditError(f"model file {ref.location} (SHA-256 {ref.content_id[:12]}…) is not on worker "
                     f"{socket.gethostname()}; install its package there or put the file on a shared path")


class ScoringWorker:
    """A Ray actor holding one model replica, loaded on its first batch (again after a restart)."""

    def __init__(self, spec: BackendSpec, threads: int):
        self.spec = spec
        self.threads = threads
        self.backend: Any = None

    def where(self) -> dict[str, Any]:
        """Host, process id and GPU ids of this worker (shown by the CLI, used by tests to kill one)."""
        import ray

        return {"host": socket.gethostname(), "pid": os.getpid(), "gpus": [str(g) for g in ray.get_gpu_ids()]}

    def rows(self, job: BatchJob, batch: Batch) -> list[tuple]:
        if self.backend is None:
            if self.spec.ref.device == "cpu":
                import torch

                torch.set_num_threads(self.threads)
            self.backend = replace(self.spec, ref=localise(self.spec.ref)).load()
        return job.rows(self.backend, batch)


@cache
def _actor_class() -> Any:
    return _ray().remote(max_restarts=0, max_task_retries=0)(ScoringWorker)


def worker_env() -> dict[str, str]:
    """Environment for workers: this checkout on ``PYTHONPATH`` plus offline and cache settings."""
    env = {name: os.environ[name] for name in PASSED_ENV if name in os.environ}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return env


class RayExecutor:
    """An :class:`audit.run.scoring.Executor` on Ray actors; use as a context manager (the actors end with it)."""

    def __init__(self, spec: BackendSpec, cluster: Cluster, *, retries: int = 3):
        self.spec = spec
        self.cluster = cluster
        self.retries = retries
        self.retried = 0  # batches resubmitted after a worker was lost
        self.actors: list[Any] = []

    def __enter__(self) -> "RayExecutor":
        return self

    def __exit__(self, *_: object) -> None:
        self.shutdown()

    def _new_actor(self) -> Any:
        resources = self.cluster.actor_resources()
        return _actor_class().options(**resources, runtime_env={"env_vars": worker_env()}).remote(
            self.spec, int(resources["num_cpus"]))

    def start(self) -> list[dict[str, Any]]:
        """Start the workers (models load on their first batch); returns where each one runs."""
        self._fill()
        return _ray().get([actor.where.remote() for actor in self.actors])

    def _fill(self) -> None:
        while len(self.actors) < self.cluster.workers:
            self.actors.append(self._new_actor())

    def shutdown(self) -> None:
        ray = _ray()
        for actor in self.actors:
            ray.kill(actor)
        self.actors = []

    def map(self, job: BatchJob, batches: Sequence[Batch]) -> Generator[list[tuple], None, None]:
        """Rows of each batch as soon as any worker finishes it; lost workers' batches run again elsewhere.

        Closed early (a cancelled run), it leaves the batches in flight to finish unread: nothing is written.
        """
        ray = _ray()
        self._fill()
        queue, idle = deque(range(len(batches))), deque(self.actors)
        pending: dict[Any, tuple[int, Any]] = {}
        failures: Counter[int] = Counter()

        def submit() -> None:
            while queue and idle:
                index, actor = queue.popleft(), idle.popleft()
                pending[actor.rows.remote(job, batches[index])] = (index, actor)

        submit()
        while pending:
            [done], _ = ray.wait(list(pending), num_returns=1)
            index, actor = pending.pop(done)
            try:
                rows = ray.get(done)
            except ray.exceptions.RayTaskError as exc:  # the batch itself failed: report, do not retry
                if isinstance(exc.cause, AuditError):
                    raise AuditError(str(exc.cause)) from None
                raise
            except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError,
                    ray.exceptions.ObjectLostError) as exc:
                failures[index] += 1
                if failures[index] > self.retries:
                    raise AuditError(f"a batch failed on {failures[index]} workers; last error: "
                                     f"{str(exc).strip().splitlines()[0]}") from None
                self.retried += 1
                queue.appendleft(index)
                idle.append(self._replace(actor))
                submit()
                continue
            idle.append(actor)
            submit()  # keep workers busy while the caller commits this batch
            yield rows

    def _replace(self, actor: Any) -> Any:
        """A fresh worker in place of a lost one (scheduled wherever the cluster has room)."""
        _ray().kill(actor, no_restart=True)
        fresh = self._new_actor()
        self.actors[self.actors.index(actor)] = fresh
        return fresh
