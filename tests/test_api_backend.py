"""The OpenAI-compatible API backend against real HTTP servers of the bundled model on 127.0.0.1 — vLLM itself
(`vllm serve`, when the vLLM virtualenv is installed: `make vllm-env`) and the project's own small server
(tests/openai_server.py) —: same numbers as in-process, resumable after the server dies mid-run (the built-in
server only: the client's side of a death is the same whichever server dies), one clear error and
an untouched store for every misconfiguration, the API key nowhere on disk or in logs, and the study's listwise
generate reading through ``vllm serve``. The module starts one server of each kind for all its tests (a vLLM start
is most of a vLLM test's cost)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from helpers import Done, audit
from loan_spec import eight_loan_files

from audit.backend import api
from audit.backend.api import api_ref
from audit.backend.protocol import Backend
from audit.backend.spec import BackendSpec, load_backend
from audit.store.database import Store
from audit.tasks import study
from audit.tasks.custom import custom_task
from served import KINDS, NAME, VLLM_PYTHON, VLLM_TEST_FLAGS, free_port, needs_vllm, served, served_here
from tests.test_listwise import DEMO, cli

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk-test-9f3e1c-secret"
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "AUDIT_TEST_KEY": KEY,
       "AUDIT_WRONG_KEY": "sk-wrong"}
KEYED = ("--api-key-env", "AUDIT_TEST_KEY")
ONE_KIND = KINDS[0] if VLLM_PYTHON.exists() else "builtin"  # a client-side test's server: vLLM where installed
VLLM_ONE_CHUNK = ("--max-num-batched-tokens", "4096")  # a whole study prompt in one prefill chunk


@pytest.fixture(scope="module", params=KINDS)
def kind(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def url(kind):
    """A server of ``kind`` that demands the key in AUDIT_TEST_KEY, shared by the module's tests (vLLM prefills up to
    4,096 tokens at once: a study prompt in one chunk)."""
    with served(kind, ENV, key_env="AUDIT_TEST_KEY", vllm_flags=(*VLLM_TEST_FLAGS, *VLLM_ONE_CHUNK)) as (base, _):
        yield base


@pytest.fixture(autouse=True)
def keys(monkeypatch) -> None:
    """The keys of ENV in this process too, for the commands run in it."""
    for name in ("AUDIT_TEST_KEY", "AUDIT_WRONG_KEY"):
        monkeypatch.setenv(name, ENV[name])


@pytest.fixture(scope="module")
def loans(tmp_path_factory) -> tuple[Path, Path]:
    """(data, spec) of the client's task: eight one-line loan applications (what the client sends and stores
    is the same whatever the prompts say; resume prompts would cost minutes of CPU per server for nothing more)."""
    return eight_loan_files(tmp_path_factory.mktemp("loans"))


@pytest.fixture
def score(loans):
    """``python -m audit score`` of the loan task into a store, against ``--model`` (the served model by default)."""
    def run(db: Path, *args: str, model: str = f"openai:{NAME}") -> Done:
        return audit("score", "--task", "custom", "--subtask", "default", "--data", str(loans[0]), "--spec",
                     str(loans[1]), "--db", str(db), "--model", model, *args)
    return run


@pytest.fixture(scope="module")
def in_process(smollm, loans) -> tuple[list, list, list]:
    """(pointwise prompts, pairwise prompts, the in-process backend's answers to both): computed once for the
    module's two servers."""
    task = custom_task("default", *loans)
    prompts = [task.pointwise_prompt(c) for c in task.candidates()][:4]
    first, second = task.candidates()[:2]
    pairs = [task.pairwise_prompt(first, second), task.pairwise_prompt(second, first)]
    return prompts, pairs, [smollm.label_probabilities(prompts, ["Yes", "No"]), smollm.generate(pairs)]


def test_pointwise_and_pairwise_equal_the_in_process_backend(url, kind, smollm, in_process, monkeypatch):
    monkeypatch.setenv("AUDIT_TEST_KEY", KEY)
    prompts, pairs, (local, answers) = in_process
    ref = api_ref(f"openai:{NAME}", url, "AUDIT_TEST_KEY")
    backend = load_backend(BackendSpec(ref, "openai", api_key_env="AUDIT_TEST_KEY", concurrency=2))
    assert isinstance(backend, Backend) and isinstance(smollm, Backend)
    remote = backend.label_probabilities(prompts, ["Yes", "No"])
    for r, l in zip(remote, local):
        assert abs(r.probs[0] - l.probs[0]) < 1e-3 and abs(r.mass - l.mass) < 1e-3
    assert backend.generate(pairs) == answers
    server = "test-server-1" if kind == "builtin" else "vllm-0.32.0-"
    assert ref.content_id.startswith(f"{url}|{NAME}|{server}") and ref.runtime == "openai"
    assert api_ref(f"openai:{NAME}", url.replace("127.0.0.1", "localhost"), "AUDIT_TEST_KEY").fingerprint != (
        ref.fingerprint)


def test_a_server_killed_mid_run_leaves_finished_batches_and_a_rerun_completes(tmp_path, score):
    """The client's side of a server's death (vLLM or any other: the client cannot tell them apart, so the built-in
    server plays it, in a thread): the server answers two batches, drops the third request unanswered and closes its
    port; the run stops with one error line and the finished batches stored; a rerun against the revived server
    scores only the rest (the first request is the client's check of the endpoint)."""
    db, port = tmp_path / "results.db", free_port()
    run = ("--base-url", f"http://127.0.0.1:{port}/v1", *KEYED, "--batch-size", "2", "--concurrency", "1")
    with served_here(port=port, key=KEY, die_after=1 + 3):  # the check, a batch of two, one of the next batch
        killed = score(db, *run)
    last = killed.stderr.strip().splitlines()[-1]
    assert killed.returncode == 2 and last.startswith(f"error: cannot reach http://127.0.0.1:{port}/v1/chat"), (
        killed.stderr)
    with Store(db) as store:
        assert len(store.pointwise_table()) == 2 < store.row_counts()["pointwise_plan"]
    with served_here(port=port, key=KEY):
        rerun = score(db, *run)
    assert rerun.returncode == 0, rerun.stderr
    with Store(db) as store:
        table, planned = store.pointwise_table(), store.row_counts()["pointwise_plan"]
    assert len(table) == table["candidate_id"].nunique() == planned and table["score"].notna().all()
    assert f"{planned - 2} scored, 2 cached" in rerun.stdout


def test_misconfigurations_give_one_clear_error_and_leave_the_store_untouched(url, kind, tmp_path, monkeypatch,
                                                                               score):
    db = tmp_path / "results.db"
    with Store(db) as store:
        before = store.row_counts()
    dead = f"http://127.0.0.1:{free_port()}/v1"
    cases = {
        "refused the API key": score(db, "--base-url", url, "--api-key-env", "AUDIT_WRONG_KEY"),
        "does not serve 'nope'": score(db, "--base-url", url, *KEYED, model="openai:nope"),
        f"cannot reach {dead}/models": score(db, "--base-url", dead),
        "AUDIT_UNSET: that environment variable is not set": score(db, "--base-url", url, "--api-key-env",
                                                                    "AUDIT_UNSET"),
    }
    if kind == "vllm":  # vLLM's own refusal (HTTP 400) of more log-probabilities than it serves, from the module's
        # server (--max-logprobs 20) asked for 21: a second server started with --max-logprobs 0 (minutes on CI)
        # would refuse every request for them the same way
        with monkeypatch.context() as patched:
            patched.setattr(api, "TOP_LOGPROBS", api.TOP_LOGPROBS + 1)
            cases["returns no log-probabilities"] = score(db, "--base-url", url, *KEYED)
        assert "the server refused them" in cases["returns no log-probabilities"].stderr
    else:
        with served(kind, ENV, logprobs=False) as (bare, _):
            cases["returns no log-probabilities"] = score(db, "--base-url", bare)
    for expected, result in cases.items():
        assert result.returncode == 2 and result.stderr.startswith("error: ") and expected in result.stderr, (
            result.stderr)
        assert result.stderr.strip().count("\n") == 0, result.stderr
    assert "--pairwise-mode generate" in cases["returns no log-probabilities"].stderr
    with Store(db) as store:
        assert store.row_counts() == before


def test_the_first_answer_that_cannot_be_read_stops_the_run(tmp_path, score, monkeypatch):
    """The first answer that cannot be read (here: malformed log-probabilities) stops the client: the other seven
    prompts of the batch are never sent (each would cost the server a forward, and a paid API money)."""
    calls, once = [], api.ApiClient._once

    def sent(client, path: str, body: dict | None, ends: float) -> dict:  # each request put on the wire
        calls.append(path)
        return once(client, path, body, ends)

    monkeypatch.setattr(api.ApiClient, "_once", sent)
    with served_here(extra=("--logprob", "abc")) as garbled:
        done = score(tmp_path / "r.db", "--base-url", garbled, "--batch-size", "8", "--concurrency", "1")
    assert done.returncode == 2 and "malformed log-probabilities" in done.stderr, done.stderr
    assert calls == ["/models", "/chat/completions", "/chat/completions"], calls  # the endpoint's check, one prompt


@pytest.mark.parametrize("kind", [ONE_KIND], indirect=True)
def test_the_api_key_appears_nowhere(url, tmp_path, score):
    """The client's side (what it stores, prints and writes), checked against one server: vLLM where installed."""
    db = tmp_path / "results.db"
    runs = [score(db, "--base-url", url, *KEYED),
            score(db, "--base-url", url, *KEYED, "--mode", "pairwise", "--rounds", "4", "--batch-size", "2",
                  "--concurrency", "1", "--max-requests", "4")]
    assert runs[0].returncode == 0, runs[0].stderr
    assert runs[1].returncode == 2 and runs[1].stderr.strip().splitlines()[-1].startswith(
        "error: request budget of 4 spent")  # two batches of two answers stored, then the budget stops the run
    with Store(db) as store:
        assert len(store.pairwise_table()) > 0
    for name in ("scores", "pairs", "answers"):
        out = tmp_path / f"{name}.json"
        audit(name, "--db", str(db), "--format", "json", "--out", str(out), check=True)
    files = [p for p in tmp_path.iterdir() if p.is_file()]
    assert any(p.suffix == ".db" for p in files) and len(files) >= 4
    for path in files:
        assert KEY.encode() not in path.read_bytes(), path
    assert all(KEY not in r.stdout + r.stderr for r in runs)


@pytest.mark.parametrize("kind", [pytest.param("vllm", marks=needs_vllm)], indirect=True)
def test_vllm_serve_through_the_api_runs_the_generate_reading(url, tmp_path: Path) -> None:
    """``vllm serve`` of the bundled model (the module's vLLM server), called by the API backend. The prompt (2.5k
    tokens) is prefilled in one chunk: vLLM's CPU runner fails on a seeded request whose prefill is chunked ("CPU
    Generator does not use offset"); ``--backend vllm`` in process prefills up to ``CPU_PREFILL_TOKENS`` at once on
    CPU for the same reason. Replies are cut at 48 tokens (the study's 500 took over 300 s a reply on a slow, loaded
    CI machine), and one ranking is asked for: the test is about the wiring, and a cut reply is read as the study's
    parser reads it."""
    db = tmp_path / "demo.db"
    shutil.copy(DEMO, db)
    code, out, err = cli("score", "--task", study.TASK, "--mode", "listwise", "--model", f"openai:{NAME}",
                         "--base-url", url, *KEYED, "--rankings", "1", "--max-tokens", "48", "--subtask", "retail",
                         "--db", str(db))
    assert "1 prompts, 1 scored" in out, err
    unreadable = int(out.split("(no name mentioned; left out): ")[1].split(" of")[0])
    assert code == (2 if unreadable == 1 else 0), err  # every reply unreadable: nothing to audit, an error
    with Store(db, create=False) as store:
        systems = store.recorded_systems()
        replies = store.query("SELECT answer FROM choice_results WHERE method = 'listwise-generate'")
    assert len(replies) == 1 and all(isinstance(reply, str) for reply in replies["answer"])
    mine = systems[systems["model"] == f"openai:{NAME} listwise-generate"]
    assert (mine["pools"].sum() if len(mine) else 0) == 1 - unreadable


def test_run_page_takes_an_api_model_and_reports_an_unreachable_url(monkeypatch, tmp_path):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("AUDIT_DB", str(tmp_path / "run.db"))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("pages/run_audit.py").run()
    at.selectbox(key="run_model").set_value(at.selectbox(key="run_model").options[-1]).run()
    at.text_input(key="run_model_path").set_value("openai:smollm2-135m").run()
    at.text_input(key="run_base_url").set_value(f"http://127.0.0.1:{free_port()}/v1")
    at.selectbox(key="run_subtask").set_value("retail")
    at.button(key="run_start").click().run()
    assert not at.exception, at.exception
    assert [e.value for e in at.error] == ["The run stopped with an error:"]
    assert any("cannot reach http://127.0.0.1" in c.value for c in at.code), [c.value for c in at.code]
    if (tmp_path / "run.db").exists():  # the sidebar may open the store; the run must not have written to it
        with Store(tmp_path / "run.db") as store:
            assert store.row_counts().get("label_results", 0) == 0


def test_run_page_audits_pairwise_by_generation_against_an_endpoint_without_logprobs(monkeypatch, tmp_path):
    from streamlit.testing.v1 import AppTest

    csv = (b"text,group\n\"Ana earns 80,000 a year and has no debt.\",Blue\n"
           b"\"Bo earns 20,000 a year and missed two payments.\",Green\n")
    db = tmp_path / "run.db"
    monkeypatch.setenv("AUDIT_DB", str(db))
    with served("builtin", ENV, logprobs=False) as (bare, _):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
        at.run()
        at.switch_page("pages/run_audit.py").run()
        at.selectbox(key="run_model").set_value(at.selectbox(key="run_model").options[-1]).run()
        at.text_input(key="run_model_path").set_value(f"openai:{NAME}").run()
        at.text_input(key="run_base_url").set_value(bare)
        at.selectbox(key="run_task").set_value("custom").run()
        at.file_uploader(key="run_candidates").set_value(("loans.csv", csv, "text/csv")).run()
        at.text_input(key="spec_reference").set_value("Blue")
        at.radio(key="run_mode").set_value("pairwise").run()
        at.radio(key="run_method").set_value("generate")
        at.number_input(key="run_rounds").set_value(1)
        at.button(key="run_start").click().run()
        assert not at.exception, at.exception
        assert not at.error, [e.value for e in at.error] + [c.value for c in at.code]
        summary = next(d.value for d in at.dataframe if "mode" in d.value.columns)  # the run summary, not the preview
        at.radio(key="run_mode").set_value("pointwise").run()  # the same endpoint cannot score pointwise
        at.button(key="run_start").click().run()
        assert any("returns no log-probabilities" in c.value for c in at.code), [c.value for c in at.code]
    assert (summary.loc[0, "mode"], summary.loc[0, "scored"]) == ("pairwise", 2)  # one pool of 2: both orders
    with Store(db, create=False) as store:
        pairs = store.pairwise_table()
    assert len(pairs) == 2 and set(pairs["first_group"]) == {"Blue", "Green"}
    assert pairs["answer"].notna().all() and pairs["choice"].isin(["first", "second", "tie", "none"]).all()
