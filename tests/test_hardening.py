"""Hardening round 2 (issue 22): nothing hangs when the browser cannot start, and a failed report keeps the last one."""
from __future__ import annotations

import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_backend import installed
from helpers import FEW_DRAWS, Done, audit
from loan_spec import loan_files

from audit.backend import api
from audit.paths import DEMO_STORE

ROOT = Path(__file__).resolve().parent.parent


def dead_browser(folder: Path) -> str:
    script = folder / "chrome"
    script.write_text("#!/bin/sh\nexit 1\n")
    script.chmod(0o755)
    return str(script)


@pytest.mark.parametrize("browser", ["missing", "exits at once"])
def test_report_without_a_working_browser_fails_in_seconds_and_keeps_the_previous_report(tmp_path, browser):
    store = tmp_path / "store.db"
    shutil.copyfile(DEMO_STORE, store)
    report = tmp_path / "report.html"
    report.write_text("previous report")
    path = str(tmp_path / "no-chrome") if browser == "missing" else dead_browser(tmp_path)
    env = {**os.environ, "BROWSER_PATH": path, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "audit", "report", "--db", str(store), "--task", "resume",
                           *FEW_DRAWS, "--out", str(report)], capture_output=True, text=True, env=env, timeout=120)
    assert time.monotonic() - started < 60
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr  # (the browser library may log a line)
    assert len(errors) == 1 and errors[0].startswith("error: the headless browser needs"), done.stderr
    assert report.read_text() == "previous report"


@pytest.mark.parametrize("logprob, error", [
    ("inf", r"non-finite label probabilities"),
    ("5", r"impossible label probabilities .* a log-probability above 0"),
    ("abc", r"malformed log-probabilities"),
])
def test_garbage_log_probabilities_stop_the_run_and_nothing_is_cached(tmp_path, logprob, error):
    """Four one-line loan applications (the same API path and checks as resumes; the task is not under test): the
    first garbled answer stops the run (tests/test_api_backend.py counts the requests sent)."""
    from served import served

    data, spec = loan_files(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    db = tmp_path / "store.db"
    with served("builtin", env, extra=("--logprob", logprob)) as (url, _):
        done = audit("score", "--task", "custom", "--data", str(data), "--spec", str(spec), "--subtask", "all",
                     "--model", "openai:smollm2-135m", "--base-url", url, "--db", str(db))
    lines = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert done.returncode == 2 and len(lines) == 1 and re.search(error, lines[0]), done.stderr
    if db.exists():  # nothing scored was cached, and a run that failed before its first result left no rows at all
        with sqlite3.connect(db) as connection:
            for table in ("label_results", "models", "pointwise_plan", "candidates"):
                assert connection.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == 0, table


class Misbehaving:
    """An HTTP server on 127.0.0.1 answering every request the way ``mode`` says (one thread per request)."""

    def __init__(self, mode: str, other_port: int = 0):
        import http.server
        import threading

        self.requests: list[dict] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def answer(self, code: int, body: bytes, **headers: str) -> None:
                self.send_response(code)
                for name, value in {"Content-Type": "application/json", "Content-Length": str(len(body)),
                                    **headers}.items():
                    self.send_header(name.replace("_", "-"), value)
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802
                outer.requests.append({"path": self.path, "auth": self.headers.get("Authorization"),
                                       "time": time.monotonic()})
                if mode == "drip":
                    self.send_response(200)
                    self.send_header("Content-Length", "100")
                    self.end_headers()
                    try:
                        for _ in range(100):
                            self.wfile.write(b" ")
                            self.wfile.flush()
                            time.sleep(0.5)
                    except (BrokenPipeError, ConnectionResetError):  # the client gave up, as it should
                        pass
                elif mode == "huge":
                    self.answer(200, b'{"data": "' + b"x" * (9 * 2**20) + b'"}')
                elif mode == "redirect":
                    self.answer(307, b"", Location=f"http://127.0.0.1:{other_port}{self.path}")
                elif mode == "retry-after":
                    self.answer(429, b"{}", Retry_After="1")
                elif mode == "truncated":
                    self.send_response(200)
                    self.send_header("Content-Length", "1000")
                    self.end_headers()
                    self.wfile.write(b'{"data": [')
                else:
                    self.answer(200, mode.encode())

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def __enter__(self) -> "Misbehaving":
        return self

    def __exit__(self, *_: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("mode, error", [
    ("drip", r"did not finish within|no answer within"),
    ("huge", r"more than 8 MiB"),
    ("truncated", r"cut off \(10 of 1000 bytes\)"),
    ('{"data": "abc"}', r"no model list"),
    ("[]", r"list JSON, not an object"),
    ('{"data": [{"name": "m"}]}', r"no model list"),
])
def test_a_misbehaving_server_is_one_error_within_the_deadline(mode, error, monkeypatch):
    from audit.backend.api import ApiClient, served_models
    from audit.errors import AuditError

    monkeypatch.setenv("AUDIT_TEST_KEY", "sk-secret-123")
    with Misbehaving(mode) as server:
        client = ApiClient(f"http://127.0.0.1:{server.port}/v1", "AUDIT_TEST_KEY", retries=1, backoff=0.1,
                           timeout=2, deadline=4)
        started = time.monotonic()
        with pytest.raises(AuditError, match=error) as caught:
            served_models(client)
        assert time.monotonic() - started < 10
        assert "sk-secret-123" not in str(caught.value)


def test_the_key_never_follows_a_redirect_to_another_origin(monkeypatch):
    from audit.backend.api import ApiClient, served_models
    from audit.errors import AuditError

    monkeypatch.setenv("AUDIT_TEST_KEY", "sk-secret-123")
    with Misbehaving('{"data": [{"id": "m"}]}') as elsewhere, Misbehaving("redirect", elsewhere.port) as server:
        client = ApiClient(f"http://127.0.0.1:{server.port}/v1", "AUDIT_TEST_KEY", retries=0)
        with pytest.raises(AuditError, match="redirected to another origin"):
            served_models(client)
        assert elsewhere.requests == []


def test_retry_after_is_honoured_within_the_deadline(monkeypatch):
    from audit.backend.api import ApiClient, served_models
    from audit.errors import AuditError

    with Misbehaving("retry-after") as server:
        client = ApiClient(f"http://127.0.0.1:{server.port}/v1", None, retries=3, backoff=0.01, deadline=10)
        with pytest.raises(AuditError, match="HTTP 429"):
            served_models(client)
        gaps = [b["time"] - a["time"] for a, b in zip(server.requests, server.requests[1:])]
        assert len(server.requests) == 4 and min(gaps) >= 0.95  # waited the server's 1 s, not 0.01-0.08 s
        slow = ApiClient(f"http://127.0.0.1:{server.port}/v1", None, retries=20, backoff=0.01, deadline=2.5)
        started = time.monotonic()
        with pytest.raises(AuditError, match=r"no answer within 2\.5 s"):
            served_models(slow)
        assert time.monotonic() - started < 3


@pytest.mark.parametrize("url", ["http://127.0.0.1:99999/v1", "http://[::1/v1"])
def test_a_bad_base_url_is_one_error_line(url, tmp_path):
    done = audit("score", "--subtask", "retail", "--model", "openai:m", "--base-url", url, "--db", str(tmp_path / "s.db"))
    assert done.returncode == 2 and done.stderr.strip().startswith("error: --base-url") and "\n" not in \
        done.stderr.strip(), done.stderr
    assert not (tmp_path / "s.db").exists()


def test_the_dashboard_sends_only_keys_its_operator_allows_and_only_where_it_says(monkeypatch):
    from audit.backend.api import dashboard_key_env
    from audit.errors import AuditError

    monkeypatch.delenv("AUDIT_API_KEY_ENVS", raising=False)
    assert dashboard_key_env("", "http://127.0.0.1:8000/v1") is None
    with pytest.raises(AuditError, match="not one the dashboard's operator allows .*none are listed"):
        dashboard_key_env("AWS_SECRET_ACCESS_KEY", "http://127.0.0.1:8000/v1")
    monkeypatch.setenv("AUDIT_API_KEY_ENVS", "LOCAL_KEY, OPENAI_API_KEY=https://api.openai.com")
    assert dashboard_key_env("LOCAL_KEY", "http://evil.example:8000/v1") == "LOCAL_KEY"
    assert dashboard_key_env("OPENAI_API_KEY", "https://api.openai.com/v1") == "OPENAI_API_KEY"
    with pytest.raises(AuditError, match="may only be sent to https://api.openai.com"):
        dashboard_key_env("OPENAI_API_KEY", "https://attacker.example/v1")
    with pytest.raises(AuditError, match="not one the dashboard's operator allows .*LOCAL_KEY, OPENAI_API_KEY"):
        dashboard_key_env("HOME", "https://api.openai.com/v1")


def test_run_page_refuses_a_key_variable_the_operator_did_not_allow(monkeypatch, tmp_path):
    from streamlit.testing.v1 import AppTest

    from audit.store.database import Store

    with Misbehaving('{"data": [{"id": "smollm2-135m"}]}') as server:
        monkeypatch.setenv("AUDIT_DB", str(tmp_path / "run.db"))
        monkeypatch.setenv("SERVER_SECRET", "sk-secret-123")
        monkeypatch.delenv("AUDIT_API_KEY_ENVS", raising=False)
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        at.run()
        at.switch_page("pages/run_audit.py").run()
        at.selectbox(key="run_model").set_value(at.selectbox(key="run_model").options[-1]).run()
        at.text_input(key="run_model_path").set_value("openai:smollm2-135m").run()
        at.text_input(key="run_base_url").set_value(f"http://127.0.0.1:{server.port}/v1")
        at.text_input(key="run_key_env").set_value("SERVER_SECRET")
        at.selectbox(key="run_subtask").set_value("retail")
        at.button(key="run_start").click().run()
        assert not at.exception, at.exception
        assert any("'SERVER_SECRET' is not one the dashboard's operator allows" in c.value for c in at.code), \
            [c.value for c in at.code]
        assert server.requests == []  # nothing, let alone the secret, was sent
    if (tmp_path / "run.db").exists():
        with Store(tmp_path / "run.db") as store:
            assert store.row_counts().get("label_results", 0) == 0


def test_two_models_under_one_label_are_refused_and_label_names_them_apart(tmp_path, monkeypatch):
    """Two local folders both named ``final`` would both be 'final': the second is refused until --label names it
    (the folders are resolved and fingerprinted for real; the deterministic fake backend scores for them)."""
    from audit.backend import resolve
    from audit.backend.loading import converted_dir

    source = converted_dir(resolve("smollm2-135m"))
    for parent in ("a", "b"):
        shutil.copytree(source, tmp_path / parent / "final", copy_function=os.link)  # the weights are not copied
    config = tmp_path / "b" / "final" / "config.json"
    text = config.read_text()
    config.unlink()  # a new file, not a write through the link into the cache
    config.write_text(text + "\n")  # the same weights, another folder hash: another model
    db = tmp_path / "store.db"
    installed(monkeypatch)

    def score(folder: str, *extra: str) -> Done:
        return audit("score", "--subtask", "retail", "--limit", "1", "--model", str(tmp_path / folder / "final"),
                     "--db", str(db), *extra)

    assert score("a").returncode == 0
    before = db.read_bytes()
    refused = score("b")
    assert refused.returncode == 2 and "label 'final' already names another model" in refused.stderr \
        and "--label" in refused.stderr, refused.stderr
    assert db.read_bytes() == before
    assert score("b", "--label", "final-b").returncode == 0
    listed = audit("scores", "--db", str(db), "--format", "csv")
    models = {line.split(",")[0] for line in listed.stdout.splitlines()[1:]}
    assert listed.returncode == 0 and models == {"final", "final-b"}, listed.stderr


def test_nfc_and_nfd_spellings_are_one_group_and_impact_csv_neutralises_formulas(tmp_path):
    from audit.tasks.custom import load_candidates
    from audit.tasks.specs import load_spec

    data = tmp_path / "c.csv"
    data.write_text("text,group\nfirst,Andr\u00e9\nsecond,Andre\u0301\nthird,Bo\nfourth,Bo\n", encoding="utf-8")
    spec = tmp_path / "s.yaml"
    spec.write_text('name: t\ninstruction: Screen.\nuser: "{text}"\nlabels: {"Yes": 1, "No": 0}\n'
                    'pairwise: {question: "Which?"}\nreference_group: "Andre\u0301"\n', encoding="utf-8")
    candidates = load_candidates(data, load_spec(spec))
    assert {c.group for cs in candidates.values() for c in cs} == {"Andr\u00e9", "Bo"}

    scores = tmp_path / "scores.csv"
    scores.write_text("model,task,subtask,mode,candidate_id,group,qualified,score\n" + "".join(
        f"m,t,s,pointwise,{g}{i},{g},1,{0.1 * i + (0.5 if g == 'B' else 0)}\n" for g in ("=HYPERLINK(1)", "B")
        for i in range(4)))
    done = audit("impact", "--scores", str(scores), "--k", "1", "--format", "csv")
    assert done.returncode == 0 and "HYPERLINK" in done.stdout, done.stderr
    assert not any(cell.startswith(("=", "+", "@")) for line in done.stdout.splitlines() for cell in line.split(","))


def test_a_runaway_text_is_not_sent_to_an_api_model(tmp_path):
    from served import served

    data = tmp_path / "c.csv"
    data.write_text("text,group\n" + "x" * 250_000 + ",A\nshort,B\n")
    spec = tmp_path / "s.yaml"
    spec.write_text('name: t\ninstruction: Screen.\nuser: "{text}"\nlabels: {"Yes": 1, "No": 0}\n'
                    'pairwise: {question: "Which?"}\nreference_group: A\n')
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    db = tmp_path / "store.db"
    with served("builtin", env) as (url, _):
        done = audit("score", "--task", "custom", "--data", str(data), "--spec", str(spec), "--subtask", "all",
                     "--model", "openai:smollm2-135m", "--base-url", url, "--db", str(db))
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert done.returncode == 2 and len(errors) == 1, done.stderr
    assert "longer than 200,000 characters" in errors[0] and "(250,000 characters)" in errors[0], errors[0]
    assert not db.exists()


def test_a_call_cut_before_its_socket_connected_is_cut_as_it_connects():
    """Ctrl-C (or another call's failure) cuts every API call in flight; a call already noted in flight whose socket
    connects just after that cut is cut as it connects, not left open until its 300 s deadline (the race behind a
    Ctrl-C that once left a listwise run waiting on its hung calls)."""
    mine, server = socket.socketpair()
    with mine, server:
        mine.settimeout(5)
        api._calls.call = ([], [True])  # as ApiClient.stop leaves a call it cut before the call connected
        try:
            api._opened(mine)
        finally:
            api._calls.call = ([], [])
        assert mine.recv(1) == b""  # shut: a read ends at once (an open socket would wait for the server)
