"""Run audit: score a task with a model into the result store, through the same engine and store as the CLI."""
import pandas as pd
import streamlit as st

from audit.backend import DEFAULT_MODEL, QUANTS, REGISTRY, CausalLM, ModelRef, installed_models, resolve
from audit.engine import PAIRWISE_METHODS, run_scoring
from audit.errors import AuditError
from audit.store import Store
from audit.tasks import TASKS, get_task, list_subtasks
from pages.shared import common

OTHER = "other: hub id or local path"


@st.cache_resource(show_spinner="Resolving model…")
def reference(name: str, quant: str) -> ModelRef:
    """The fingerprinted reference of a model name (hashing a weights file once per process)."""
    return resolve(name, quant=quant)


@st.cache_resource(show_spinner="Loading model (the first load converts the weights once)…", max_entries=2)
def model(name: str, quant: str, batch_size: int) -> CausalLM:
    """The loaded model, kept across reruns and sessions."""
    return CausalLM.load(reference(name, quant), batch_size=batch_size)


common.page()
st.title("Run audit")
st.caption("Scores go to the result store chosen in the sidebar; results already there are reused, never re-scored.")
store_path = st.session_state.get("store_path") or common.default_store()
st.text(f"store: {store_path}")

if st.session_state.pop("run_active", False):
    st.warning("The last run was stopped. Every finished batch is kept in the store; run again to resume.")

installed = set(installed_models())
names = sorted(REGISTRY, key=lambda n: (n not in installed, n != DEFAULT_MODEL, n)) + [OTHER]
left, right = st.columns(2)
choice = left.selectbox("model", names, key="run_model",
                        format_func=lambda n: n if n == OTHER or n in installed else f"{n} (not installed)")
name = left.text_input("hub id or local path", key="run_model_path") if choice == OTHER else choice
quant = right.selectbox("quantisation", QUANTS, key="run_quant", help="auto = 4-bit NF4 on CUDA, full precision on CPU")
task_name = left.selectbox("task", sorted(TASKS), index=sorted(TASKS).index("resume"), key="run_task")
subtask = right.selectbox("subtask", ["all", *list_subtasks(task_name)], index=1, key="run_subtask")
mode = left.radio("mode", ["pointwise", "pairwise"], key="run_mode", horizontal=True)
method = right.radio("pairwise method", PAIRWISE_METHODS, key="run_method", horizontal=True,
                     disabled=mode == "pointwise", help="generate: parse a generated answer (the paper); "
                     "likelihood: compare the two answers' log-probabilities (fast).")
limit = left.number_input("candidates per group", 1, 1000, 2, key="run_limit", disabled=mode == "pairwise",
                          help="Pairwise runs draw one candidate per group for each pool instead.")
rounds = right.number_input("pairwise pools", 1, 100, 2, key="run_rounds", disabled=mode == "pointwise")
batch_size = left.number_input("batch size", 1, 64, 8, key="run_batch")

if st.button("Run", type="primary", disabled=not name, key="run_start"):
    st.session_state["run_active"] = True
    st.button("Cancel", key="run_cancel", help="Stops after the batch in flight; finished batches stay stored.")
    summaries = []
    try:
        ref = reference(name, quant)
        subtasks = list_subtasks(task_name) if subtask == "all" else [subtask]
        with Store(store_path) as store:
            for item in subtasks:
                bar = st.progress(0.0, text=f"{ref.label} · {item}")

                def progress(done: int, total: int, bar=bar, item=item) -> None:
                    bar.progress(done / max(total, 1), text=f"{ref.label} · {item}: {done} / {total} prompts")

                summaries.append(run_scoring(
                    store, get_task(task_name, item), ref, lambda: model(name, quant, int(batch_size)), mode=mode,
                    pairwise_method=method, limit=int(limit) if mode == "pointwise" else None, rounds=int(rounds),
                    batch_size=int(batch_size), progress=progress))
    except AuditError as exc:
        st.error("The run stopped with an error:")
        st.code(str(exc), language=None)
    st.session_state["run_active"] = False
    if summaries:
        st.session_state["run_summaries"] = pd.DataFrame(
            [{"model": s.model, "task": s.task, "subtask": s.subtask, "mode": s.mode, "prompts": s.prompts,
              "scored": s.scored, "cached": s.cached, "seconds": round(s.seconds, 1), **s.quality} for s in summaries])

if "run_summaries" in st.session_state:
    st.subheader("Last run")
    st.dataframe(st.session_state["run_summaries"], hide_index=True, width="stretch", key="run_summary_table")
    st.caption("mean label mass: share of the next-token probability on the labels; regular / tie / flipped / "
               "inconsistent: shares of pairwise answers (the paper's Table 2).")
