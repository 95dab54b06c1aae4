"""The Run page's task inputs: nothing for shipped tasks, a folder for imports, uploads and a spec for custom tasks.

Uploads are kept under the cache, named by their content hash (:func:`audit.tasks.loaders.save_upload`), and removed
again when a check refuses them (:func:`discard_refused`); a spec
written in the form is saved the same way as JSON, so every custom run goes through the same validated spec file.
Only what was entered is checked; an uploaded file is previewed (first rows, groups, parsed spec) before any run.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import streamlit as st

from audit.tasks import DATA_TASKS
from audit.tasks.loaders import TABLE_SUFFIXES, save_upload
from audit.tasks.preview import preview, spec_table
from audit.tasks.specs import TaskSpec, labels_from_text, load_spec, parse_spec

SPEC_SUFFIXES = (".yaml", ".yml", ".json")
FOLDER_HELP = {
    "icnale": "Folder holding ratings.csv (essay_file, rating) and the ICNALE essay files W_<L1>_<PTJ|SMK>…txt.",
    "paper-resume": "The RABBI paper's resume_screening folder (job_descriptions.json, <job>.json, "
                    "resume_templates/, names/), or a clone of its repository.",
}


def task_inputs(task: str) -> dict[str, Path] | None:
    """The ``data`` / ``spec`` inputs ``task`` needs, from widgets; None until they are all given."""
    needs = DATA_TASKS[task].needs if task in DATA_TASKS else ()
    if not needs:
        return {}
    if task in FOLDER_HELP:
        folder = st.text_input("data folder", key=f"run_data_{task}", help=FOLDER_HELP[task]).strip()
        return {"data": Path(folder).expanduser()} if folder else None
    return custom_inputs()


def custom_inputs() -> dict[str, Path] | None:
    """Candidates file upload plus a spec, uploaded or written in a form; the upload and the spec are previewed."""
    upload = st.file_uploader("candidates (CSV, Parquet or JSONL)", type=[s[1:] for s in TABLE_SUFFIXES],
                              key="run_candidates", help="Columns: text and group (or the spec's group columns); "
                              "optional qualified, id, subtask. At most 20 MB.")
    source = st.radio("task spec", ["form", "upload a YAML / JSON spec"], key="run_spec_source", horizontal=True)
    spec_path = columns = spec = None
    st.session_state["run_saved_uploads"] = []
    if source == "form":
        raw = spec_form()
        columns = raw["group_columns"]
        if raw["reference_group"]:  # checked once the form is complete, never before anything was typed
            spec = parse_spec(raw, "spec form")
            spec_path = save_upload("spec.json", json.dumps(raw, sort_keys=True).encode(), SPEC_SUFFIXES)
            _remember(spec_path, "the spec form")
    else:
        spec_file = st.file_uploader("task spec", type=[s[1:] for s in SPEC_SUFFIXES], key="run_spec_file")
        if spec_file is not None:
            spec_path = save_upload(spec_file.name, spec_file.getvalue(), SPEC_SUFFIXES)
            _remember(spec_path, spec_file.name)
            spec = load_spec(spec_path)
            columns = spec.group_columns
    data = save_upload(upload.name, upload.getvalue(), TABLE_SUFFIXES) if upload is not None else None
    if data is not None:
        _remember(data, upload.name)
    show_preview(data, upload.name if upload is not None else "", columns or ("group",), spec)
    if data is None or spec_path is None:
        if data is not None and source == "form":
            st.info("Give the reference group in the form to check the spec and run.")
        return None
    return {"data": data, "spec": spec_path}


def _remember(saved: Path, name: str) -> None:
    """Note that the upload ``name`` is kept at ``saved`` (a hashed cache path), so errors can name the upload and a
    refused one can be removed."""
    st.session_state.setdefault("run_upload_names", {})[str(saved)] = name
    st.session_state.setdefault("run_saved_uploads", []).append(saved)


def discard_refused() -> None:
    """Remove the files saved for this rerun's uploads: a check refused them, so none is kept in the cache (an
    upload still in its widget is saved again on the next rerun)."""
    for saved in st.session_state.pop("run_saved_uploads", []):
        Path(saved).unlink(missing_ok=True)


def named_error(exc: Exception) -> str:
    """``exc``'s message with each saved upload's cache path replaced by the name of the file as uploaded."""
    text = str(exc)
    for saved, name in st.session_state.get("run_upload_names", {}).items():
        text = text.replace(saved, name)
    return text


def show_preview(data: Path | None, name: str, columns: tuple[str, ...] | list[str], spec: TaskSpec | None) -> None:
    """The upload (``name`` as uploaded)'s first rows and groups, and the parsed spec, in an expander each (errors
    raise AuditError)."""
    if data is not None:
        rows, groups, count = preview(data, columns)
        shown = re.sub(r"([\\`*_{}\[\]()#+\-.!|~<>$:])", r"\\\1", name)  # the file name as typed, not as Markdown
        with st.expander(f"preview: {count} candidates in {shown}", expanded=True):
            st.dataframe(rows, hide_index=True, width="stretch", key="run_preview_rows")
            if groups is None:
                st.caption(f"No group column {', '.join(columns)} in the file: name the file's group column(s) in "
                           "the spec.")
            else:
                st.dataframe(groups, hide_index=True, width="stretch", key="run_preview_groups")
    if spec is not None:
        with st.expander("parsed task spec"):
            st.dataframe(spec_table(spec), hide_index=True, width="stretch", key="run_preview_spec")


def spec_form() -> dict:
    """A task spec from form fields, not yet validated (labels are checked as typed)."""
    left, right = st.columns(2)
    return {
        "name": left.text_input("task name", "custom", key="spec_name",
                                help="Stored task name: keeps datasets apart in one store (a name already holding "
                                     "other data is refused)."),
        "reference_group": right.text_input("reference group", key="spec_reference",
                                            placeholder="one of the groups the preview lists"
                                            ).strip(),
        "instruction": st.text_area("instruction (system prompt)", key="spec_instruction",
                                    value='You are an assistant that screens applications. Respond with only '
                                          '"Yes" or "No".'),
        "user": st.text_area("candidate prompt ({text} is replaced by the candidate's text)", key="spec_user",
                             value="Candidate: {text}\nQuestion: Should this candidate be selected?"),
        "labels": labels_from_text(left.text_input("labels and relevance", "Yes=1, No=0", key="spec_labels"),
                                   "spec form: labels"),
        "pools": right.text_input("pool design", "per-group", key="spec_pools",
                                  help="How candidate pools are drawn: per-group (one candidate of every group) or "
                                       "random:N (N candidates drawn at random)"),
        "group_columns": [c.strip() for c in left.text_input("group column(s)", "group", key="spec_groups",
                                                             help="Several columns, comma-separated, are "
                                                                  "joined: race, gender → White_Male").split(",")
                          if c.strip()],
        "pairwise": {"question": right.text_input("pairwise question", key="spec_question",
                                                  value="Which of the following candidates should be selected?"),
                     "item": right.text_input("pairwise item name", "Candidate", key="spec_item")},
    }
