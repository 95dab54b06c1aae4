"""Hardening round 4 (issue 39), the cases that take seconds: a hung API server against the call's and the run's
deadlines, memory under a byte cap, the headless browser's requests."""
from __future__ import annotations

import io
import json
import sqlite3
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest

from audit.backend import api
from audit.tasks import study
from helpers import serving_in_thread
from test_bad_inputs import run
from tests.listwise_server import NAME, Handler

CUT = 2.0  # the call deadline the tests shorten CALL_DEADLINE to (the shipped one is 300 s)


class Hanging(Handler):
    """The in-order ranker that answers the first :attr:`answered` ranking requests (the probe always) and then
    never answers; it notes when the first unanswered request came."""

    answered = 0
    seen = 0
    first_hang: float | None = None
    release = threading.Event()

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers["Content-Length"])
        body = self.rfile.read(length)
        user = next(m["content"] for m in json.loads(body)["messages"] if m["role"] == "user")
        with Handler.lock:
            ranking = study.SEPARATOR in user
            Hanging.seen += ranking
            hang = ranking and Hanging.seen > Hanging.answered
            if hang and Hanging.first_hang is None:
                Hanging.first_hang = time.monotonic()
        if hang:
            Hanging.release.wait(30)
            return
        self.rfile = io.BytesIO(body)  # the body already read, read again by the ranker
        super().do_POST()


@pytest.fixture()
def hanging() -> Iterator[str]:
    Hanging.seen, Hanging.first_hang = 0, None
    Hanging.release.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hanging)
    server.daemon_threads = True
    with serving_in_thread(server) as url:
        yield url
        Hanging.release.set()


def listwise(url: str, db: Path, *extra: str) -> list[str]:
    return ["score", "--task", study.TASK, "--mode", "listwise", "--model", f"openai:{NAME}", "--base-url", url,
            "--subtask", "retail", "--db", str(db), *extra]


def stored(db: Path) -> int:
    with sqlite3.connect(db) as con:
        return con.execute("SELECT COUNT(*) FROM choice_results WHERE model LIKE 'lw-%'").fetchone()[0]


def test_a_server_that_stops_answering_ends_the_run_within_one_call_deadline(hanging, tmp_path, monkeypatch):
    """Four rankings answered, then none: the second batch's two calls in flight and its two queued ones end
    together at the first call's deadline (not one deadline after another); the first batch stays stored."""
    monkeypatch.setattr(api, "CALL_DEADLINE", CUT)
    Hanging.answered = 4
    status, _, err = run(listwise(hanging, tmp_path / "s.db", "--rankings", "12", "--batch-size", "4",
                                  "--concurrency", "2"))
    ended = time.monotonic()
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert status == 2 and len(errors) == 1, err
    assert f"no answer within {CUT:g} s (the call's deadline" in errors[0] and "rerun to continue" in errors[0]
    assert Hanging.first_hang is not None and ended - Hanging.first_hang < 1.1 * CUT
    assert Hanging.seen == 4 + 2  # the queued calls of the batch were never sent
    assert stored(tmp_path / "s.db") == 4


def test_deadline_bounds_the_whole_run(hanging, tmp_path):
    """``--deadline 1.5`` with the shipped 300 s per call: the run ends at 1.5 s; ``--deadline`` is checked."""
    Hanging.answered = 0
    started = time.monotonic()
    status, _, err = run(listwise(hanging, tmp_path / "s.db", "--rankings", "8", "--deadline", "1.5"))
    assert status == 2 and time.monotonic() - started < 1.1 * 1.5 + 0.5, err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "the run's deadline (--deadline) passed" in errors[0], err
    for bad in ("0", "nan", "-1", "1e9"):
        status, _, err = run(listwise(hanging, tmp_path / "s.db", "--deadline", bad))
        assert status == 2 and err.startswith(f"error: --deadline {float(bad):g}: give seconds above 0"), err
