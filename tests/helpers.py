"""Helpers shared by the test files: ``python -m audit`` run in this process, and an HTTP server served from a thread.

A subprocess pays 3–5 s of imports (torch, transformers, pandas) and loads the bundled model again on every call; in
this process the imports are paid once and the model is loaded once per session (``audit.backend.spec`` keeps it).
Where process behaviour itself is under test (a kill, a signal, a module hidden from the interpreter) the tests keep
their subprocess.
"""
from __future__ import annotations

import contextlib
import io
import json
import threading
import traceback
import warnings
from collections.abc import Iterator
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from http.server import HTTPServer
from pathlib import Path

import pandas as pd
import pytest

from audit.cli import main

ROOT = Path(__file__).resolve().parent.parent
#: a report's resampling cut to 20 draws each, where a test reads no number that depends on it
FEW_DRAWS = ("--bootstrap", "20", "--permutations", "20")

needs_cuda = pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA GPU")


@dataclass(frozen=True)
class Done:
    """What a finished ``python -m audit`` left: the fields of :class:`subprocess.CompletedProcess` the tests read."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    def check_returncode(self) -> None:
        assert self.returncode == 0, f"python -m audit {' '.join(self.args)} exited {self.returncode}:\n{self.stderr}"


def audit(*args: str | Path, cwd: Path = ROOT, check: bool = False) -> Done:
    """``python -m audit *args`` run in this process, in ``cwd``: exit status, stdout and stderr as a subprocess's.

    As in a fresh interpreter, an uncaught exception is a traceback on stderr and exit status 1 (a test that wants
    one clear ``error:`` line fails on it), and warnings are shown on stderr under Python's default filters (pytest
    would otherwise record them, out of sight of the tests that count stderr's lines)."""
    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            warnings.catch_warnings():
        warnings.resetwarnings()  # the interpreter's defaults (no -W, not in development mode)
        warnings.simplefilter("default")
        for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
            warnings.simplefilter("ignore", category)
        try:
            status = main(argv)
        except SystemExit as exc:  # argparse's usage errors and --help
            status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if isinstance(exc.code, str):
                print(exc.code, file=err)
        except Exception:  # noqa: BLE001 - a subprocess would print it and exit 1
            traceback.print_exc(file=err)
            status = 1
    done = Done(tuple(argv), int(status or 0), out.getvalue(), err.getvalue())
    if check:
        done.check_returncode()
    return done


SCORE_COLUMNS = ["model", "task", "subtask", "mode", "candidate_id", "group", "qualified", "score"]


def score_table(groups: Mapping[str, tuple[Iterable[float], Iterable[int | bool]]], *, model: str = "m",
                task: str = "t", subtask: str = "s", mode: str = "pointwise") -> pd.DataFrame:
    """A score table in the contract's columns (what ``python -m audit scores`` exports): ``groups`` maps each group
    to its candidates' scores and qualified flags; the candidates of group ``g`` are ``g0``, ``g1``, …"""
    rows = [(model, task, subtask, mode, f"{group}{i}", group, int(qualified), float(score))
            for group, (scores, flags) in groups.items()
            for i, (score, qualified) in enumerate(zip(scores, flags, strict=True))]
    return pd.DataFrame(rows, columns=SCORE_COLUMNS)


def audit_json(*args: str | Path, cwd: Path = ROOT) -> object:
    """The JSON that ``python -m audit *args`` (run in this process, which must succeed) prints."""
    return json.loads(audit(*args, cwd=cwd, check=True).stdout)


def audit_status(*args: str | Path, cwd: Path = ROOT) -> tuple[int, str, str]:
    """``python -m audit *args`` in this process as (exit status, stdout, stderr)."""
    done = audit(*args, cwd=cwd)
    return done.returncode, done.stdout, done.stderr


@contextlib.contextmanager
def serving_in_thread(server: HTTPServer) -> Iterator[str]:
    """Serve ``server`` from a daemon thread of this process; yields its base URL (``http://127.0.0.1:PORT/v1``) and
    stops it on exit."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def running_with(text: str) -> list[Path]:
    """The ``/proc/<pid>/cmdline`` files of the processes whose command line holds ``text`` (a test's fake browser
    left running)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if text.encode() in cmdline.read_bytes():
                found.append(cmdline)
        except OSError:
            continue  # the process ended while we looked
    return found
