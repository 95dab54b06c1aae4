"""Run audit: score a task with a model into the result store, through the same scoring run and store as the CLI."""
from collections import Counter

import streamlit as st

from audit.present import readable
from audit.backend import DEFAULT_MODEL, QUANTS, REGISTRY, installed_models
from audit.backend.api import PREFIX
from audit.enums import Mode
from audit.run.scoring import MODES, PAIRWISE_METHODS
from audit.errors import AuditError
from audit.store.files import is_demo, run_store, user_store
from audit.tasks import DATA_TASKS, TASKS, get_task, list_subtasks
from pages.frame import sidebar
from pages.shared import common
from pages.run.runner import run_tasks
from pages.run.task_inputs import discard_refused, named_error, task_inputs

OTHER = "other: hub id, local path or openai:NAME"
TASK_TITLES = {"resume": "resume screening (shipped)", "essay": "essay grading (shipped demo essays)",
               "custom": "my own candidates (upload + spec)", "icnale": "ICNALE essays (licensed folder)",
               "paper-resume": "RABBI paper's resume data (folder)"}


sidebar.page()
st.title("Run audit")
st.caption("Scores go to the result store chosen in the sidebar; results already there are reused, never re-scored.")
store_path = st.session_state.get("store_path") or common.default_store()
target = str(user_store()) if is_demo(store_path) else store_path
st.text(f"store: {target}" + (" (your own store: the shipped demo store is only read)" if target != store_path else ""))

if st.session_state.pop("run_active", False):
    st.warning("The last run was stopped. Every finished batch is kept in the store; run again to resume.")

installed = set(installed_models())
names = sorted(REGISTRY, key=lambda n: (n not in installed, n != DEFAULT_MODEL, n)) + [OTHER]
left, right = st.columns(2)
choice = left.selectbox("model", names, key="run_model",
                        format_func=lambda n: n if n == OTHER or n in installed else f"{n} (not installed)")
name = left.text_input("hub id, local path or openai:NAME", key="run_model_path") if choice == OTHER else choice
base_url = key_env = ""
if name.startswith(PREFIX):
    base_url = left.text_input("API base URL", key="run_base_url", placeholder="http://127.0.0.1:8000/v1")
    key_env = right.text_input("API key environment variable", key="run_key_env",
                               help="The key is read from this variable of the dashboard's process; it is never "
                                    "stored or shown. Only variables the operator lists in AUDIT_API_KEY_ENVS "
                                    "(NAME or NAME=ORIGIN) are accepted. Leave empty for a server without a key.")
quant = right.selectbox("quantisation", QUANTS, key="run_quant",
                        help="auto = 4-bit NF4 on CUDA, full precision on CPU; bf16 = faster on CPUs with native bf16, "
                             "but it moves scores (bench/README.md)")
task_names = [*TASKS, *DATA_TASKS]
task_name = st.selectbox("task", task_names, key="run_task", format_func=lambda t: TASK_TITLES.get(t, t))
try:
    inputs = task_inputs(task_name)
    subtasks = list_subtasks(task_name, **inputs) if inputs is not None else []
except AuditError as exc:
    common.error("The task input is not usable:", named_error(exc))
    discard_refused()
    inputs, subtasks = None, []
if inputs is None:
    st.info("Give the task's data above to choose a subtask and run.")
left, right = st.columns(2)
subtask = right.selectbox("subtask", ["all", *subtasks], index=1 if subtasks else 0, key="run_subtask",
                          disabled=not subtasks)
try:  # every input is read and checked here, before the Run button can write anything
    tasks = [get_task(task_name, item, **inputs) for item in (subtasks if subtask == "all" else [subtask])
             ] if subtasks else []
except AuditError as exc:
    common.error("The task input is not usable:", named_error(exc))
    discard_refused()
    tasks = []
mode = left.radio("mode", MODES, key="run_mode", horizontal=True)
method = right.radio("pairwise method", PAIRWISE_METHODS, key="run_method", horizontal=True,
                     disabled=mode == Mode.POINTWISE, help="generate: parse a generated answer (the paper); "
                     "likelihood: compare the two answers' log-probabilities (fast).")
sizes = [Counter(c.group for c in task.candidates()) for task in tasks]
most = max((max(size.values()) for size in sizes if size), default=1)
limit = left.number_input("candidates per group", 1, most, most if task_name == "custom" else min(2, most),
                          key=f"run_limit_{task_name}" if tasks else "run_limit_none",  # starts once the data is read
                          disabled=mode == Mode.PAIRWISE or not tasks,
                          help="Pairwise runs draw one candidate per group for each pool instead.")
if sizes and mode == Mode.POINTWISE:
    total = sum(sum(size.values()) for size in sizes)
    scored = sum(min(n, int(limit)) for size in sizes for n in size.values())
    left.caption(f"{scored:,} of {total:,} candidates will be scored (at most {int(limit)} per group and subtask).")
rounds = right.number_input("pairwise pools to draw", 1, 100, 2, key="run_rounds", disabled=mode == Mode.POINTWISE,
                            help="How many pools of candidates a pairwise run draws and compares pair by pair.")
batch_size = left.number_input("batch size", 1, 64, 8, key="run_batch")
truncate = right.checkbox("cut texts too long for the model's context", key="run_truncate",
                          help="Off: a run with a text longer than the context stops before scoring and names it.")

if st.button("Run", type="primary", disabled=not name or not tasks, key="run_start"):
    st.session_state["run_active"] = True
    st.button("Cancel", key="run_cancel", help="Stops after the batch in flight; finished batches stay stored.")
    summaries = []
    try:
        summaries = run_tasks(run_store(store_path), tasks, name, quant, batch_size=int(batch_size), mode=mode,
                              pairwise_method=method, limit=int(limit) if mode == Mode.POINTWISE else None,
                              rounds=int(rounds), truncate=truncate, base_url=base_url, key_env=key_env)
    except AuditError as exc:
        common.error("The run stopped with an error:", named_error(exc))
    st.session_state["run_active"] = False
    if summaries:
        st.session_state["run_summaries"] = readable.run_table(summaries)
        sidebar.set_next("store_path", target)
        sidebar.set_next("task", summaries[0].task)
        st.rerun()  # the sidebar shows the store and task just written

if "run_summaries" in st.session_state:
    st.subheader("Last run")
    st.dataframe(st.session_state["run_summaries"], hide_index=True, width="stretch", key="run_summary_table")
    st.caption("mean label mass: share of the next-token probability on the labels; regular / tie / flipped / "
               "inconsistent: shares of pairwise answers (the paper's Table 2).")
    st.page_link("pages/allocation_gaps.py", label="See the results: Allocation gaps", icon=":material/scatter_plot:")
