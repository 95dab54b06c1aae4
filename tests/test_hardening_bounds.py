"""Hardening rounds 3 (issue 32) and 4 (issue 39): every reader bounded before it reads (in bytes, rows and columns),
every imported system a distinct system, every process ends, every parameter checked once, a listwise run's rankings
drawn a lot at a time.

The table runs each bad input in this process (one ``error:`` line, exit 2, the case folder byte-identical); memory
cases run in a child process under ``RLIMIT_AS`` and report its peak resident memory; process cases run the command
as a child and look for anything it left running.
"""
from __future__ import annotations

import http.server
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from audit.run import listwise as listwise_module
from audit.backend import ModelRef
from audit.bounded import MAX_COLUMNS, check_columns
from audit.errors import AuditError
from audit.run.listwise import DRAW_BATCH, MAX_RANKINGS, PARSED, ListwiseOutcome, ListwiseRun, run_listwise
from audit.paths import DEMO_STORE
from audit.store.database import Store
from audit.tasks import study
from audit.tasks.loaders import read_rows
from helpers import FEW_DRAWS, running_with
from test_bad_inputs import custom, run, snapshot, store, table, two_groups

ROOT = Path(__file__).resolve().parent.parent
RESPONSE = {"context": {"default_order": ["Ann Lee", "Bo Diaz"], "demo_order": ["A_W", "H_M"]},
            "choices": [{"message": {"content": "1. Bo Diaz 2. Ann Lee"}}], "created": 1700000000}
LOG_SPEC = "applicant: id\ndemographics: [sex, race]\npool: req\n"


def runs(folder: Path, model: str = "gpt-x", extra: Callable[[Path], None] | None = None, **changes) -> list[str]:
    """``import --format ranking-runs`` of a folder holding one readable response (with ``changes``), then ``extra``
    adds a file beside it."""
    day = folder / "runs" / model / "retail" / "1121"
    day.mkdir(parents=True)
    (day / "run_0.json").write_text(json.dumps({**RESPONSE, **changes}))
    if extra is not None:
        extra(day)
    return ["import", "--format", "ranking-runs", "--data", str(folder / "runs"), "--db", store(folder),
            "--task", "study-gpt-hiring" if model == "gpt-4" else "other"]


def decisions(folder: Path, path: str) -> list[str]:
    """``import --format decisions`` of the log at ``path`` with :data:`LOG_SPEC`, into the case's store."""
    (folder / "log.yaml").write_text(LOG_SPEC)
    return ["import", "--format", "decisions", "--data", path, "--spec", str(folder / "log.yaml"),
            "--db", store(folder), "--task", "hiring"]


def log_spec(folder: Path, path: str, extra: str) -> list[str]:
    """``import --format decisions`` of ``path`` with :data:`LOG_SPEC` plus ``extra``."""
    argv = decisions(folder, path)
    (folder / "log.yaml").write_text(LOG_SPEC + extra)
    return argv


def log(folder: Path, text: bytes, name: str = "log.csv") -> list[str]:
    (folder / name).write_bytes(text)
    return decisions(folder, str(folder / name))


def parquet(folder: Path, name: str, columns: dict) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table(columns), folder / name, compression="zstd")
    return str(folder / name)


def string_bomb(folder: Path, name: str, rows: int, width: int, **other) -> str:
    """A small Parquet file whose one text value, repeated ``rows`` times, decodes to ``rows × width`` bytes."""
    import pyarrow as pa

    same = pa.array([0] * rows, pa.int32())
    return parquet(folder, name, {**other, "text": pa.DictionaryArray.from_arrays(same, pa.array(["x" * width]))})


def wide(folder: Path, name: str, columns: int, rows: int = 2) -> str:
    """A table of ``rows`` rows of ``columns`` one-letter columns (CSV, JSON lines or Parquet, by ``name``)."""
    names = [f"c{i}" for i in range(columns)]
    if name.endswith(".parquet"):
        return parquet(folder, name, {column: ["x"] * rows for column in names})
    if name.endswith(".jsonl"):
        return table(folder, "".join(json.dumps(dict.fromkeys(names, "x")) + "\n" for _ in range(rows)), name)
    return table(folder, ",".join(names) + "\n" + ("x," * (columns - 1) + "x\n") * rows, name)


def maps(parent: Path, name: str) -> str:
    """``name``, a link to ``/proc/self/maps`` (a text file whose first line is a memory mapping), in a folder beside
    ``parent`` (the case's folder is compared before and after, and that file changes with every read)."""
    links = parent.parent / f"{parent.name}-links"
    links.mkdir(exist_ok=True)
    (links / name).symlink_to("/proc/self/maps")
    return str(links / name)


QUIET = r"^(?!.*(r-xp|r--p|rw-p|/usr/|/lib)).*"  # an error line that echoes no line of /proc/self/maps


def folder(parent: Path, name: str) -> str:
    (parent / name).mkdir()
    return str(parent / name)


def fifo(folder: Path, name: str) -> str:
    os.mkfifo(folder / name)
    return str(folder / name)


def sparse(path: Path, size: int) -> None:
    with path.open("wb") as handle:
        handle.truncate(size)


def nul(path: Path, size: int) -> str:
    """A sparse file of ``size`` NUL bytes at ``path``."""
    sparse(path, size)
    return str(path)


@dataclass(frozen=True)
class Case:
    name: str
    argv: Callable[[Path], list[str]]
    error: str


CASES = [
    # ---- High: one bounded reader --------------------------------------------------------------------------------
    Case("ranking run linked to /dev/zero", lambda d: runs(d, extra=lambda day: (day / "run_2.json").symlink_to(
        "/dev/zero")), r"run_2\.json: a link to /dev/zero, outside .*runs"),
    Case("ranking run linked to a file outside the folder", lambda d: runs(d, extra=lambda day: (
        day / "run_2.json").symlink_to(table(d, json.dumps(RESPONSE), "elsewhere.json"))),
         r"run_2\.json: a link to .*elsewhere\.json, outside"),
    Case("ranking run that is a FIFO", lambda d: runs(d, extra=lambda day: fifo(day, "run_2.json")),
         r"run_2\.json: not a regular file \(a FIFO"),
    Case("ranking run over 1 MiB", lambda d: runs(d, extra=lambda day: sparse(day / "run_2.json", 2**20 + 1)),
         r"run_2\.json: file is 1\.0 MiB; the limit is 1 MiB"),
    Case("ranking run nested 100,000 deep", lambda d: runs(d, extra=lambda day: (day / "run_2.json").write_text(
        "[" * 100_000 + "]" * 100_000)), r"run_2\.json, line 1: JSON nested more than 64 deep"),
    Case("ranking run naming 20,000 candidates", lambda d: runs(d, context={
        "default_order": [f"N{i}" for i in range(20_000)], "demo_order": ["A_W"] * 20_000}),
         r"run_0\.json: context\.default_order names 20,000 candidates; the limit is 1,000"),
    Case("candidates file that is a FIFO", lambda d: custom(d, fifo(d, "cands.csv")), r"cands\.csv: not a regular file"),
    Case("candidates CSV of 100,001 rows", lambda d: custom(d, table(d, "text,group\n" + "x,A\n" * 100_001)),
         r"cands\.csv, row 100,001: more than 100,000 rows"),
    Case("candidates JSONL of 100,001 rows", lambda d: custom(d, table(d, '{"text": "x", "group": "A"}\n' * 100_001,
                                                                     "cands.jsonl")),
         r"cands\.jsonl, row 100,001: more than 100,000 rows"),
    Case("1.6 KB candidates Parquet decoding to 2.6 GB", lambda d: custom(d, string_bomb(
        d, "bomb.parquet", 2_600, 2**20, group=["A", "B"] * 1_300)), r"bomb\.parquet: more than 64 MiB of column data "
                                                                       r"once decoded"),
    Case("decision log whose strings decode to 2 GiB", lambda d: decisions(d, string_bomb(
        d, "log.parquet", 10**6, 2048, id=range(10**6))),
         r"log\.parquet: more than 1,024 MiB of column data once decoded"),
    Case("decision log with a struct demographic", lambda d: decisions(d, parquet(d, "log.parquet", {
        "id": [1, 2], "sex": [{"v": "F"}, {"v": "M"}], "race": ["W", "B"], "req": ["p", "p"], "rank": [1, 2]})), r"log\.parquet, rows 1–2, column 'sex': nested values \(struct"),
    Case("decision log that is a FIFO", lambda d: decisions(d, fifo(d, "log.csv")),
         r"log\.csv: not a regular file"),
    Case("decision log JSONL of 20,000 keys", lambda d: decisions(d, wide(d, "log.jsonl", 20_000)),
         r"log\.jsonl, row 1: 20,000 columns; the limit is 10,000"),
    Case("decision log Parquet of 10,001 columns", lambda d: decisions(d, wide(d, "log.parquet", 10_001)),
         r"log\.parquet: 10,001 columns; the limit is 10,000"),
    Case("candidates JSONL whose second record adds 10,000 keys", lambda d: custom(d, table(
        d, '{"text": "x", "group": "A"}\n' + json.dumps({"text": "y", "group": "B", **dict.fromkeys(
            map(str, range(10_000)), 1)}) + "\n", "cands.jsonl")),
         r"cands\.jsonl: 10,002 columns; the limit is 10,000"),
    Case("listwise --rankings 1,000,001", lambda d: ["score", "--task", "study-gpt-hiring", "--mode", "listwise",
                                                   "--subtask", "retail", "--rankings", "1000001", "--db", store(d)],
         r"--rankings 1000001: give at most 1,000,000 rankings per job"),
    *[Case(f"listwise --max-tokens {n}", lambda d, n=n: [
        "score", "--task", "study-gpt-hiring", "--mode", "listwise", "--subtask", "retail", "--max-tokens", n,
        "--model", "openai:x", "--base-url", "http://127.0.0.1:9/v1", "--db", store(d)],
        rf"--max-tokens {n}: give 1 to 4,096 tokens") for n in ("999999999999", "4097", "0")],
    Case("cairo run --max-new-tokens 999999999999", lambda d: [
        "cairo", "run", "--db", store(d), "--prompts", str(d / "p"), "--models", "m", "--max-new-tokens",
        "999999999999"],
        r"--max-new-tokens 999999999999: give 1 to 4,096 tokens"),
    *[Case(f"{command} --seed -1", lambda d, argv=argv: [*argv(d), "--seed", "-1"],
           r"--seed -1: give a seed of 0 or more") for command, argv in (
        ("impact", lambda d: ["impact", "--db", store(d), "--task", "resume", "--k", "2"]),
        ("compare", lambda d: ["compare", "--db", store(d), "--task", "resume", "--a", "smollm2-135m", "--b",
                               "smollm2-135m@4bit", "--k", "2"]),
        ("report", lambda d: ["report", "--db", store(d), "--task", "resume", "--k", "2", "--out",
                              str(d / "report.html")]),
        ("verdict", lambda d: ["verdict", "--db", store(d), "--task", "resume", "--k", "2"]))],
    Case("decision log linked to /proc/self/maps", lambda d: log_spec(d, maps(d, "log.csv"), "outcome: {rank: rank}\n"),
         QUIET + r"log\.csv, header row, column 'rank'.*do not look like column names \(is it a CSV file\?\)$"),
    Case("candidates file linked to /proc/self/maps", lambda d: custom(d, maps(d, "cands.csv")),
         QUIET + r"cands\.csv: missing column\(s\) \['text', 'group'\].*do not look like column names"),
    Case("score table linked to /proc/self/maps", lambda d: ["metrics", "--scores", maps(d, "s.csv"), "--reference",
                                                            "A", "--k", "1"],
         QUIET + r"s\.csv: no column\(s\) \['model', 'task', 'subtask', 'group', 'score'\]; a score table needs"),
    Case("decision log whose header is one 2 MiB name", lambda d: log(d, b"x" * 2**21 + b",rank\n1,2\n"),
         r"log\.csv, header row: 2\.0 MiB long; the limit is 1 MiB"),
    Case("decision log that is a folder named log.csv", lambda d: decisions(d, folder(d, "log.csv")),
         r"log\.csv: is a folder, not a file"),
    Case("candidates file that is a folder named cands.parquet", lambda d: custom(d, folder(d, "cands.parquet")),
         r"cands\.parquet: is a folder, not a file"),
    Case("ranking run that is a folder named run_2.json",
         lambda d: runs(d, extra=lambda day: folder(day, "run_2.json")), r"run_2\.json: is a folder, not a file"),
    Case("score table that is a FIFO", lambda d: ["metrics", "--scores", fifo(d, "s.csv"), "--reference", "A",
                                                  "--k", "1"], r"cannot read score table .*s\.csv: not a regular file"),
    # ---- Medium: systems are identities ----------------------------------------------------------------------------
    Case("second folder with a gpt-4 model into the study's task", lambda d: runs(d, "gpt-4"),
         r"label 'gpt-4' already names another model in .* \(fingerprint rec-7bcebe3fe0f576b3, .*\); name this "
         r"system's folder"),
    # ---- Medium: parameters checked once -----------------------------------------------------------------------
    *[Case(f"ll144 --k {k}", lambda d, k=k: ["ll144", "--db", store(d), "--k", k], error)
      for k, error in (("0", r"--k 0: give a quota of at least 1"), ("-1", r"--k -1: give a quota of at least 1"),
                       ("9999", r"quota k=9999 is not below the pool size 8 of the .* grouping: at k = pool size everyone is "
                                r"selected; choose k in 1 … 7"))],
    *[Case(f"ll144 --ci {ci}", lambda d, ci=ci: ["ll144", "--db", store(d), "--ci", ci],
           rf"--ci {ci}: give a confidence level strictly between 0 and 1") for ci in ("nan", "0", "1")],
    Case("verdict --ci 0", lambda d: ["verdict", "--db", store(d), "--task", "resume", "--k", "2", "--ci", "0"],
         r"--ci 0: give a confidence level"),
    Case("verdict --threshold inf", lambda d: ["verdict", "--db", store(d), "--task", "resume", "--k", "2",
                                               "--threshold", "inf"], r"--threshold inf: give an impact-ratio"),
    Case("compare --k 8 (the pool size)", lambda d: ["compare", "--db", store(d), "--task", "resume", "--a",
                                                     "smollm2-135m", "--b", "smollm2-135m@4bit", "--k", "8"],
         r"quota k=8 is not below the pool size 8"),
    # ---- Low -------------------------------------------------------------------------------------------------------
    Case("ranking run created 10^20", lambda d: runs(d, created=10**20),
         r"run_0\.json, created: 100000000000000000000 is not a Unix time"),
    Case("ranking run created -10^15", lambda d: runs(d, created=-10**15), r"created: -1000000000000000 is not a"),
    Case("ranking runs --reference '<b>NOPE</b>'", lambda d: [*runs(d), "--reference", "<b>NOPE</b>"],
         r"--reference '<b>NOPE</b>' is not a group code of job 'retail'; its codes: A_W, H_M"),
    Case("decision date 1/2/3", lambda d: decisions(d, table(d, "id,sex,race,req,rank,day\n1,F,W,p,1,2024-03-01\n"
                                                               "2,M,B,p,2,1/2/3\n", "log.csv")) and [
        *decisions(d, str(d / "log.csv")), "--spec", table(d, LOG_SPEC + "date: day\n", "dated.yaml")],
         r"log\.csv, row 2, column 'day': date '1/2/3' not understood \(use YYYY-MM-DD\)"),
    Case("ll144 --exclude-small ' '", lambda d: ["ll144", "--db", store(d), "--exclude-small", " "],
         r"--exclude-small: give the justification"),
    Case("ranking run group code with two '_'", lambda d: runs(d, context={
        "default_order": ["Ann Lee", "Bo Diaz"], "demo_order": ["A_W", "B_M_X"]}),
         r"run_0\.json, context\.demo_order item 2: group code 'B_M_X' is not <race>_<gender>"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_is_one_error_line_and_changes_nothing(case: Case, tmp_path: Path):
    shutil.copyfile(DEMO_STORE, tmp_path / "store.db")
    argv = case.argv(tmp_path)
    before = snapshot(tmp_path)
    started = time.monotonic()
    status, _, err = run(argv)
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == 2, (status, err)
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert re.search(case.error, lines[0]), lines[0]
    assert snapshot(tmp_path) == before
    assert time.monotonic() - started < 20


def test_ll144_reads_only_recorded_systems():
    status, out, err = run(["ll144", "--db", str(DEMO_STORE)])
    assert status == 0, err
    sections = re.findall(r"^## (\S+):", out, re.M)
    # the recorded systems (the study's two and the synthetic dated log's), never the scored smollm2-135m's pools
    assert set(sections) == {"gpt-3.5-turbo", "gpt-4", "synthetic-screener"}, sections


MEASURE = """
import re, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))
from audit.cli import main
import audit.recorded.decision_logs, audit.tasks.custom, pyarrow.parquet, pandas  # imported before measuring
def peak():  # VmHWM starts afresh at exec (ru_maxrss keeps the parent's peak across fork and exec)
    return int(re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read()).group(1))
start = peak()
status = main(sys.argv[1:])
print("PEAK", (peak() - start) / 1024, status)
"""


def measured(argv: list[str]) -> tuple[int, float, str]:
    """(exit status, MiB the peak resident memory grew while the command ran, stderr) of ``argv`` in a child
    process limited to 3 GB of address space."""
    done = subprocess.run([sys.executable, "-c", MEASURE, *argv], capture_output=True, text=True, timeout=300,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"})
    assert "Traceback" not in done.stderr and "PEAK" in done.stdout, done.stderr[-2000:]
    _, grown, status = done.stdout.split()
    return int(status), float(grown), done.stderr


@pytest.mark.parametrize("name, make, error, cap_mib", [
    ("229 MiB CSV of 24 M tiny rows", lambda d: log(d, b"id,sex,race,req,rank\n" + b"1,F,W,p,1\n" * 24_000_000),
     r"log\.csv, row 2,000,001: more than 2,000,000 rows", 256),
    ("252 MiB JSONL of 11 M rows", lambda d: log(d, b'{"id":1,"sex":"F","race":"W","req":"p","rank":1}\n' * 5_000_000,
                                                 "log.jsonl"), r"log\.jsonl, row 2,000,001: more than 2,000,000", 256),
    ("200 MiB of NUL bytes as a decision log", lambda d: decisions(d, nul(d / "log.csv", 200 * 2**20)),
     r"log\.csv, line 1: a NUL byte \(offset 0\), so not UTF-8 text", 256),
    ("Parquet log decoding to 2 GiB", lambda d: decisions(d, string_bomb(
        d, "log.parquet", 10**6, 2048, id=range(10**6))), r"once decoded", 1024),
    ("1.6 KB candidates Parquet decoding to 2.6 GB", lambda d: custom(d, string_bomb(
        d, "bomb.parquet", 2_600, 2**20, group=["A", "B"] * 1_300)), r"once decoded", 64),
])
def test_a_refused_file_peaks_under_twice_its_cap(name, make, error, cap_mib, tmp_path):
    shutil.copyfile(DEMO_STORE, tmp_path / "store.db")
    argv = make(tmp_path)
    before = snapshot(tmp_path)
    status, grown, err = measured(argv)
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == 2 and len(lines) == 1 and re.search(error, lines[0]), err
    assert grown < 2 * cap_mib, f"{name}: grew {grown:.0f} MiB"
    assert snapshot(tmp_path) == before


def test_a_browser_that_never_answers_ends_with_its_whole_group(tmp_path):
    """The report's figure export past its deadline (shortened to 3 s here) is one error line, and the browser it
    started (a script that never answers) is killed with every process of its group."""
    browser = tmp_path / "silent-chrome"
    browser.write_text("#!/bin/sh\nsleep 600 &\nsleep 600\n")
    browser.chmod(0o755)
    shutil.copyfile(DEMO_STORE, tmp_path / "store.db")
    script = ("import sys, audit.present.browser\naudit.present.browser.DEADLINE = 3.0\n"
              "from audit.cli import main\nsys.exit(main(sys.argv[1:]))")
    env = {**os.environ, "BROWSER_PATH": str(browser), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script, "report", "--db", str(tmp_path / "store.db"), "--task",
                           "resume", *FEW_DRAWS, "--out", str(tmp_path / "report.html")], capture_output=True, text=True,
                          env=env, timeout=120)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert lines[0] == ("error: the headless browser needs a working Chrome/Chromium (apt-get install chromium; "
                        "BROWSER_PATH): no answer within 3 s")
    time.sleep(0.5)
    left = running_with(str(browser))
    assert not left, left
    assert not (tmp_path / "report.html").exists() and not list(tmp_path.glob("*.partial"))



class Dripping:
    """A server on 127.0.0.1 that sends its status line and then one byte a second (``headers``: of its headers,
    else of a body it promised 100 bytes of)."""

    def __init__(self, headers: bool):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                try:
                    if headers:
                        self.wfile.write(b"HTTP/1.1 200 OK\r\n")
                        for _ in range(100):
                            self.wfile.write(b"X")
                            self.wfile.flush()
                            time.sleep(1)
                    self.send_response(200)
                    self.send_header("Content-Length", "100")
                    self.end_headers()
                    for _ in range(100):
                        self.wfile.write(b" ")
                        self.wfile.flush()
                        time.sleep(1)
                except OSError:  # the client cut it, as it should
                    pass

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def __enter__(self) -> int:
        return self.server.server_address[1]

    def __exit__(self, *_: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("headers", [True, False], ids=["drip-fed headers", "drip-fed body"])
def test_a_drip_feeding_server_is_cut_at_the_call_deadline(headers):
    from audit.backend.api import ApiClient, served_models

    with Dripping(headers) as port:
        client = ApiClient(f"http://127.0.0.1:{port}/v1", None, retries=0, timeout=30, deadline=2.5)
        started = time.monotonic()
        with pytest.raises(AuditError, match=r"no answer within 2\.5 s \(the call's deadline"):
            served_models(client)
        assert 2.4 < time.monotonic() - started < 3.0


@pytest.mark.parametrize("location", ["http://127.0.0.1:99999/v1/models", "http://[::1"])
def test_a_redirect_to_an_invalid_url_is_one_error(location):
    from audit.backend.api import ApiClient, served_models

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            self.send_response(307)
            self.send_header("Location", location)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        client = ApiClient(f"http://127.0.0.1:{server.server_address[1]}/v1", None, retries=0, deadline=5)
        with pytest.raises(AuditError, match=r"redirected to .*(not a valid URL|a URL that is not valid)"):
            served_models(client)
    finally:
        server.shutdown()
        server.server_close()


def test_a_full_disk_at_the_first_results_write_leaves_the_store_as_it_was(tmp_path, monkeypatch):
    """The store stops growing (SQLite's page limit, as a full disk) just as the first batch's results are written:
    the model, candidates, prompts, plan rows and design written before them in the run roll back with them."""
    import sqlite3

    from audit.store.database import Store

    shutil.copyfile(DEMO_STORE, tmp_path / "store.db")
    original = Store.save_results

    def full_disk(self, *args, **kwargs):
        pages = self.db.execute("PRAGMA page_count").fetchone()[0]
        self.db.execute(f"PRAGMA max_page_count = {pages}")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Store, "save_results", full_disk)
    data = table(tmp_path, two_groups(n=40, text="Steady income and no debts " + "and a long history " * 40))
    argv = custom(tmp_path, data, "--limit", "2")
    before = snapshot(tmp_path)
    status, _, err = run(argv)
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert status == 2 and "Traceback" not in err, err
    assert len(errors) == 1 and re.fullmatch(r"error: cannot write result store .*: database or disk is full",
                                             errors[0]), err
    assert snapshot(tmp_path) == before
    with sqlite3.connect(tmp_path / "store.db") as db:
        assert db.execute("SELECT COUNT(*) FROM designs WHERE task = 'loan'").fetchone()[0] == 0


def test_markdown_text_is_escaped_in_one_function():
    from audit.formatting import md_text

    assert md_text("a|b\nc") == "a\\|b c"
    assert md_text("[x](javascript:alert(1))") == "\\[x\\](javascript:alert(1))"
    assert md_text("<b>NOPE</b> & ## x") == "&lt;b&gt;NOPE&lt;/b&gt; &amp; \\#\\# x"
    assert md_text("A\u202eB\u200bC") == "A⟨U+202E⟩B⟨U+200B⟩C"  # bidi and zero-width controls shown, not obeyed
    assert md_text("e\u0301") == "é" and md_text("W_M") == "W_M" and md_text(None) == ""


def test_names_from_a_decision_log_cannot_break_markdown_tables(tmp_path):
    """Categories with pipes, line breaks, HTML, links and bidi controls: every row of ``ll144`` and ``impact``
    Markdown keeps its columns, and nothing renders as a heading, tag or link."""
    shutil.copyfile(DEMO_STORE, tmp_path / "store.db")
    hostile = ['F|x', 'M\n## heading\n| a | b |', '<b>[x](javascript:alert(1))</b>', 'A\u202eB']
    rows = "".join(f'{i},"{hostile[i % 4]}",{"WB"[i % 2]},p{i // 8},{i % 8 + 1}\n' for i in range(64))
    status, _, err = run(log(tmp_path, ("id,sex,race,req,rank\n" + rows).encode()))
    assert status == 0, err
    for argv in (["ll144", "--db", store(tmp_path), "--format", "md", "--exclude-small", "tiny\n## injected\n| x |"],
                 ["impact", "--db", store(tmp_path), "--task", "hiring", "--k", "1", "--format", "md"]):
        status, out, err = run(argv)
        assert status == 0, err
        assert "<b>" not in out and "\u202e" not in out and "⟨U+202E⟩" in out
        assert not re.search(r"(?<!\\)\[x(?<!\\)\]\(javascript", out)  # the link's brackets come escaped
        assert not re.search(r"^#+ (heading|injected)", out, re.M)
        for block in re.findall(r"(?:^\|.*\n)+", out, re.M):
            widths = {len(re.findall(r"(?<!\\)\|", line)) for line in block.splitlines()}
            assert len(widths) == 1, block


def test_a_report_that_cannot_be_written_leaves_no_partial_file(tmp_path):
    """A full disk (a 64 KiB tmpfs) while the report is written: one error, and no ``.partial`` file beside it."""
    from audit.store.output import write_atomic

    small = tmp_path / "small"
    small.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(small)], capture_output=True).returncode:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        with pytest.raises(AuditError, match=r"cannot write .*report\.html: No space left on device"):
            write_atomic(small / "report.html", b"x" * 2**20)
        assert list(small.iterdir()) == []
    finally:
        subprocess.run(["umount", str(small)], check=True)


@pytest.mark.parametrize("redirect", ["> /dev/full", ">&-"], ids=["full", "closed"])
def test_a_full_or_closed_standard_output_is_one_error_line(redirect):
    done = subprocess.run(["bash", "-c", f"{sys.executable} -m audit scores --db {DEMO_STORE} {redirect}"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 2 and re.fullmatch(r"error: (cannot write to standard output: No space left on device|"
                                                 r"standard output is closed); give --out FILE\n", done.stderr), \
        done.stderr


# ---- Hardening round 4 (issue 39) ----------------------------------------------------------------------------------
@pytest.mark.parametrize("argv", [lambda d, data: decisions(d, data), lambda d, data: custom(d, data)],
                         ids=["import --format decisions", "score --data"])
def test_a_csv_of_200000_columns_is_refused_from_its_header_in_seconds(argv, tmp_path):
    """Header checks are linear and the columns capped (audit.bounded.MAX_COLUMNS), counted on the header line
    before a row is parsed: 2 × 200,000 columns took hours when each name was counted against the whole header."""
    shutil.copyfile(DEMO_STORE, tmp_path / "store.db")
    command = argv(tmp_path, wide(tmp_path, "log.csv", 200_000))
    before = snapshot(tmp_path)
    started = time.monotonic()
    status, _, err = run(command)
    assert time.monotonic() - started < 5
    assert status == 2 and err.strip() == (f"error: {tmp_path / 'log.csv'}, header row: 200,000 columns; the limit "
                                           "is 10,000"), err
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("header, count", [(b'a,"b,c",d\n1,2,3\n', 3), (b'\xef\xbb\xbf\n\n"x""y,z",w', 2)])
def test_columns_are_counted_on_the_header_line_outside_quotes(header, count):
    check_columns(header, Path("t.csv"), ".csv", limit=count)
    with pytest.raises(AuditError, match=rf"t\.csv, header row: {count} columns; the limit is {count - 1}"):
        check_columns(header, Path("t.csv"), ".csv", limit=count - 1)


def test_a_table_at_the_column_cap_is_read(tmp_path):
    rows = read_rows(Path(wide(tmp_path, "cands.csv", MAX_COLUMNS)))
    assert len(rows) == 2 and len(rows[0]) == MAX_COLUMNS


class InOrder:
    """An executor whose model ranks every ranking in the order shown (``reply`` written after the names); it notes
    how many rankings were drawn (``drawn``) when each batch reached it."""

    def __init__(self, drawn: list, reply: str = ""):
        self.drawn, self.reply, self.seen = drawn, reply, []

    def map(self, job, batches):
        for batch in batches:
            self.seen.append(len(self.drawn))
            yield [(key, "\n".join(chat.options) + self.reply, PARSED, None, None) for key, chat in batch]


def listwise(folder: Path, rankings: int, executor: InOrder, **options) -> ListwiseOutcome:
    """A listwise run of ``rankings`` rankings of job retail on a copy of the demo store, through ``executor``."""
    shutil.copyfile(DEMO_STORE, folder / "store.db")
    run = ListwiseRun(ModelRef("in-order", "gguf", "x.gguf", "ab" * 32, "none", "float32", "cpu"))
    with Store(folder / "store.db") as db:
        return run_listwise(db, run, "retail", rankings, lambda: None, executor=executor, **options)


@pytest.fixture
def drawn(monkeypatch) -> list:
    """Every ranking drawn (its arguments), in order."""
    calls, draw = [], study.draw
    monkeypatch.setattr(study, "draw", lambda *args: calls.append(args) or draw(*args))
    return calls


def test_a_million_rankings_are_drawn_one_lot_at_a_time(drawn, tmp_path):
    """--rankings 1,000,000: the first request goes out once the first lot (DRAW_BATCH rankings) is drawn; the run,
    cancelled after its first batch, has drawn nothing more."""
    executor = InOrder(drawn)
    started = time.monotonic()
    outcome = listwise(tmp_path, MAX_RANKINGS, executor, batch_size=64, progress=lambda done, total: done == 0)
    assert executor.seen == [DRAW_BATCH] and len(drawn) == DRAW_BATCH
    assert outcome.summary.cancelled and outcome.summary.scored == 64
    assert time.monotonic() - started < 20


def test_rankings_drawn_in_lots_are_the_rankings_drawn_at_once(drawn, tmp_path, monkeypatch):
    monkeypatch.setattr(listwise_module, "DRAW_BATCH", 16)
    told = []
    executor = InOrder(drawn)
    outcome = listwise(tmp_path, 40, executor, batch_size=8, progress=lambda done, total: told.append((done, total)))
    assert [args[1] for args in drawn] == list(range(40)) and executor.seen[::2] == [16, 32, 40]
    assert (outcome.summary.prompts, outcome.summary.scored, outcome.unreadable) == (40, 40, [])
    assert told[-1] == (40, 40) and [done for done, _ in told] == sorted(done for done, _ in told)
    with Store(tmp_path / "store.db", create=False) as db:
        mine = db.pointwise_table().query("model == 'in-order listwise-generate'")
    assert sorted(mine["pool"].unique()) == list(range(40)) and len(mine) == 40 * 8


def test_a_reply_with_an_unpaired_surrogate_is_stored_with_a_replacement_character(drawn, tmp_path):
    """A server's reply holding ``\\ud800`` (valid JSON, not encodable as UTF-8) is stored with U+FFFD in its place,
    and read as the rest of the reply says."""
    outcome = listwise(tmp_path, 4, InOrder(drawn, reply=" \ud800"))
    assert (outcome.summary.scored, outcome.unreadable) == (4, [])
    with sqlite3.connect(tmp_path / "store.db") as db:
        answers = [a for (a,) in db.execute("SELECT answer FROM choice_results WHERE method = 'listwise-generate'")]
    assert len(answers) >= 4 and sum(a.endswith(" \ufffd") for a in answers) == 4


def test_a_csv_read_leaves_the_csv_field_limit_as_it_was(tmp_path):
    """The candidates reader takes fields as long as the file, but only for its own parse."""
    import csv

    before = csv.field_size_limit()
    rows = read_rows(Path(table(tmp_path, "text,group\n" + "x" * 200_000 + ",A\n")))
    assert len(rows[0]["text"]) == 200_000 and csv.field_size_limit() == before
