"""The Run page's work: cached model loading and one scoring run per task into the chosen store, with progress bars."""
from __future__ import annotations

from typing import Sequence

import pandas as pd
import streamlit as st

from audit.backend import CausalLM, ModelRef, resolve
from audit.engine import RunSummary, run_scoring
from audit.store import Store
from audit.tasks.base import Task


@st.cache_resource(show_spinner="Resolving model…")
def reference(name: str, quant: str) -> ModelRef:
    """The fingerprinted reference of a model name (hashing a weights file once per process)."""
    return resolve(name, quant=quant)


@st.cache_resource(show_spinner="Loading model (the first load converts the weights once)…", max_entries=2)
def model(name: str, quant: str, batch_size: int) -> CausalLM:
    """The loaded model, kept across reruns and sessions."""
    return CausalLM.load(reference(name, quant), batch_size=batch_size)


def run_tasks(path: str, tasks: Sequence[Task], name: str, quant: str, *, batch_size: int,
              **options: object) -> list[RunSummary]:
    """Score every task with the model into the store at ``path``, one progress bar per task; ``options`` go to
    :func:`audit.engine.run_scoring`. An :class:`AuditError` stops the run (finished batches stay stored)."""
    ref = reference(name, quant)
    summaries = []
    with Store(path) as store:
        for task in tasks:
            bar = st.progress(0.0, text=f"{ref.label} · {task.subtask}")

            def progress(done: int, total: int, bar=bar, item=task.subtask) -> None:
                bar.progress(done / max(total, 1), text=f"{ref.label} · {item}: {done} / {total} prompts")

            summaries.append(run_scoring(store, task, ref, lambda: model(name, quant, batch_size), progress=progress,
                                         batch_size=batch_size, **options))
    return summaries


def summary_table(summaries: Sequence[RunSummary]) -> pd.DataFrame:
    """One row per run: prompts, scored, cached, seconds and the quality flags."""
    return pd.DataFrame([{"model": s.model, "task": s.task, "subtask": s.subtask, "mode": s.mode, "prompts": s.prompts,
                          "scored": s.scored, "cached": s.cached, "seconds": round(s.seconds, 1), **s.quality}
                         for s in summaries])
