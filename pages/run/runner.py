"""The Run page's work: cached model loading and one scoring run per task into the chosen store, with progress bars."""
from __future__ import annotations

from typing import Sequence

import streamlit as st

from audit.backend.api import dashboard_key_env
from audit.backend.protocol import Backend
from audit.backend.spec import BackendSpec, ModelOptions, load_backend, spec_for
from audit.scoring import RunSummary, run_scoring
from audit.store import Store
from audit.tasks.base import Task


@st.cache_resource(show_spinner="Resolving model…")
def backend_spec(name: str, quant: str, batch_size: int, base_url: str = "", key_env: str = "",
                 logprobs: bool = True) -> BackendSpec:
    """The model name resolved once per process (hashing a weights file, or checking an API, once); ``logprobs``:
    refuse an endpoint without log-probabilities (pointwise runs only)."""
    return spec_for(name, ModelOptions(quant=quant, batch_size=batch_size, base_url=base_url or None,
                                       api_key_env=dashboard_key_env(key_env, base_url), need_logprobs=logprobs))


def model(spec: BackendSpec) -> Backend:
    """The loaded model (or API client); a local model stays loaded across reruns and sessions."""
    with st.spinner(f"Loading {spec.ref.label} (the first load converts the weights once)…"):
        return load_backend(spec)


def run_tasks(path: str, tasks: Sequence[Task], name: str, quant: str, *, batch_size: int, base_url: str = "",
              key_env: str = "", **options: object) -> list[RunSummary]:
    """Score every task with the model (a served one for ``openai:NAME`` at ``base_url``) into the store at ``path``,
    one progress bar per task; ``options`` go to :func:`audit.scoring.run_scoring`. An :class:`AuditError` stops the
    run (finished batches stay stored)."""
    spec = backend_spec(name, quant, batch_size, base_url, key_env, options.get("mode") == "pointwise")
    ref = spec.ref
    summaries = []
    with Store(path) as store:
        for task in tasks:
            bar = st.progress(0.0, text=f"{ref.label} · {task.subtask}")

            def progress(done: int, total: int, bar=bar, item=task.subtask) -> None:
                bar.progress(done / max(total, 1), text=f"{ref.label} · {item}: {done} / {total} prompts")

            summaries.append(run_scoring(store, task, ref, lambda: model(spec),
                                         progress=progress,
                                         batch_size=batch_size, **options))
    return summaries
