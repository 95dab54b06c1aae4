"""The Run page's work: cached model loading and one scoring run per task into the chosen store, with progress bars."""
from __future__ import annotations

from typing import Sequence

import streamlit as st

from audit.backend.api import dashboard_key_env
from audit.backend.protocol import Backend
from audit.backend.spec import BackendSpec, ModelOptions, load_backend, spec_for
from audit.enums import Mode, Reading
from audit.run.scoring import RunSummary, backend_needs, run_scoring
from audit.store.database import Store
from audit.store.runs import data_reads, recording
from audit.tasks.base import Task


@st.cache_resource(show_spinner="Resolving model…")
def backend_spec(name: str, quant: str, batch_size: int, base_url: str = "", key_env: str = "",
                 logprobs: bool = True, needs: tuple[str, ...] = (), purpose: str = "this run") -> BackendSpec:
    """The model name resolved once per process (hashing a weights file, or checking an API, once); ``logprobs``:
    refuse an endpoint without log-probabilities (pointwise runs only); a backend lacking a capability in ``needs``
    (which ``purpose`` needs) is refused before the model is resolved."""
    return spec_for(name, ModelOptions(quant=quant, batch_size=batch_size, base_url=base_url or None,
                                       api_key_env=dashboard_key_env(key_env, base_url), need_logprobs=logprobs,
                                       needs=needs, purpose=purpose))


def model(spec: BackendSpec, needs: tuple[str, ...], purpose: str) -> Backend:
    """The loaded model (or API client), checked for ``needs``; a local model stays loaded across reruns and
    sessions."""
    with st.spinner(f"Loading {spec.ref.label} (the first load converts the weights once)…"):
        return load_backend(spec, needs, purpose)


def run_tasks(path: str, tasks: Sequence[Task], name: str, quant: str, *, batch_size: int, base_url: str = "",
              key_env: str = "", **options: object) -> list[RunSummary]:
    """Score every task with the model (a served one for ``openai:NAME`` at ``base_url``) into the store at ``path``,
    one progress bar per task; ``options`` go to :func:`audit.run.scoring.run_scoring`. A backend that cannot do the asked
    mode is refused before any scoring starts; an :class:`AuditError` stops the run (finished batches stay stored).
    The run is one row of the store's audit trail."""
    mode = Mode(options.get("mode", Mode.POINTWISE))
    needs, purpose = backend_needs(mode, Reading(options.get("pairwise_method", Reading.GENERATE)))
    spec = backend_spec(name, quant, batch_size, base_url, key_env, mode == Mode.POINTWISE, needs, purpose)
    ref = spec.ref
    summaries = []
    chosen = {"model": name, "quant": quant, "batch_size": batch_size, "base_url": base_url, "api_key_env": key_env,
              "task": tasks[0].name if tasks else "", "subtasks": [task.subtask for task in tasks], **options}
    with Store(path) as store, recording(store, "page: Run audit", chosen) as run:
        for task in tasks:
            bar = st.progress(0.0, text=f"{ref.label} · {task.subtask}")

            def progress(done: int, total: int, bar=bar, item=task.subtask) -> None:
                bar.progress(done / max(total, 1), text=f"{ref.label} · {item}: {done} / {total} prompts")

            summaries.append(run_scoring(store, task, ref, lambda: model(spec, needs, purpose),
                                         progress=progress,
                                         batch_size=batch_size, **options))
        run.reads = data_reads(store, chosen["task"], chosen["subtasks"], [ref.label])
    return summaries
