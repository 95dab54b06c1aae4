"""Bad inputs, table-driven: every class a hostile or careless user tried (issue 15) is one ``error:`` line and exit
status 2, with no traceback, the result store byte-identical and no file created where there was none.

Each case builds its inputs in a fresh folder holding a copy of the demo store; the runner snapshots every file of
that folder before and after. Cases marked ``holds`` already held before issue 15; they stay here so that a later
change cannot lose one silently.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from audit.cli import main
from audit.paths import DEMO_STORE
from audit.store.database import Store
from audit.tasks import get_task

ROOT = Path(__file__).resolve().parent.parent
SPEC = """name: {name}
instruction: You screen applications. Respond with only "Yes" or "No".
user: "Application: {{text}}\\nQuestion: approve?"
labels: {{"Yes": 1, "No": 0}}
pairwise: {{question: "Which application should be approved?"}}
reference_group: A
"""
BOMB = "\n".join(["a0: &a0 [x, x, x, x, x, x, x, x, x]"] + [  # ten anchors, each nine aliases of the one before
    f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)] + ["groups: [" + ", ".join(["*a8"] * 9) + "]"])


def spec(folder: Path, extra: str = "", name: str = "loan") -> str:
    path = folder / f"{name}.yaml"
    path.write_text(SPEC.format(name=name) + extra)
    return str(path)


def table(folder: Path, text: str, name: str = "cands.csv") -> str:
    path = folder / name
    path.write_text(text)
    return str(path)


def two_groups(n: int = 2, text: str = "Steady income, no debts.") -> str:
    return "text,group\n" + "".join(f"{text} {i},{g}\n" for g in "AB" for i in range(n))


def custom(folder: Path, data: str, *rest: str) -> list[str]:
    return ["score", "--task", "custom", "--subtask", "default", "--data", data, "--spec", spec(folder),
            "--db", str(folder / "store.db"), *rest]


def scores_csv(folder: Path, groups: str = "AB", tasks: tuple[str, ...] = ("t",)) -> str:
    rows = [f"m,{task},default,pointwise,{task}{g}{i},{g},{i % 2},{(i * 7 % 5) / 5 - 0.3:.2f}"
            for task in tasks for g in groups for i in range(4)]
    return table(folder, "model,task,subtask,mode,candidate_id,group,qualified,score\n" + "\n".join(rows) + "\n",
                 "scores.csv")


def metrics(folder: Path, *rest: str, scores: str | None = None) -> list[str]:
    return ["metrics", "--scores", scores or scores_csv(folder), "--reference", "A", *rest]


def foreign(path: Path) -> Path:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE notes (body TEXT)")
    db.execute("INSERT INTO notes VALUES ('not yours')")
    db.commit()
    db.close()
    return path


def newer_schema(folder: Path) -> Path:
    db = sqlite3.connect(folder / "store.db")
    db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    db.execute("DROP TABLE cairo_toxicity")  # a newer tool's layout: nothing may re-create it
    db.commit()
    db.close()
    return folder / "store.db"


def damaged(folder: Path) -> str:
    return str(garble(folder / "store.db"))


def garble(store: Path) -> Path:
    with store.open("r+b") as handle:  # a quarter of the data pages garbled, the schema pages intact
        handle.seek(store.stat().st_size // 2 // 4096 * 4096)
        handle.write(os.urandom(store.stat().st_size // 4 // 4096 * 4096))
    return store


def truncated(folder: Path) -> str:
    store = folder / "store.db"
    with store.open("r+b") as handle:
        handle.truncate(store.stat().st_size // 3)
    return str(store)


def renamed_store(folder: Path, name: str) -> str:
    """A copy of the case's store under ``name`` (a store need not end in .db)."""
    shutil.copyfile(folder / "store.db", folder / name)
    return str(folder / name)


def parquet_bomb(folder: Path, rows: int = 5_000_000) -> str:
    """A ~100 KB dictionary-encoded Parquet file of ``rows`` rows (gigabytes once decoded into Python rows)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    indices = pa.array([0, 1] * (rows // 2), pa.int32())
    table = pa.table({"text": pa.DictionaryArray.from_arrays(indices, pa.array(["x" * 100, "y" * 100])),
                      "group": pa.DictionaryArray.from_arrays(indices, pa.array(["A", "B"]))})
    pq.write_table(table, folder / "bomb.parquet", compression="zstd")
    return str(folder / "bomb.parquet")


def bad_version(folder: Path) -> Path:
    db = sqlite3.connect(folder / "store.db")
    db.execute("UPDATE meta SET value='two' WHERE key='schema_version'")
    db.commit()
    db.close()
    return folder / "store.db"


def fifo(folder: Path) -> str:
    os.mkfifo(folder / "pipe")
    return str(folder / "pipe")


def fake_gguf(folder: Path, header: bytes) -> str:
    path = folder / "model.gguf"
    path.write_bytes(header + os.urandom(4096))
    return str(path)


def bad_cached_assembly(folder: Path) -> list[str]:
    """A cached Qwen assembly with one byte changed (a copy of the bundled GGUF stands in for it)."""
    from audit.backend.registry import smollm2_file

    cache = folder / "cache"
    (cache / "gguf").mkdir(parents=True)
    target = cache / "gguf" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    shutil.copyfile(smollm2_file(), target)
    with target.open("r+b") as handle:
        handle.seek(1000)
        byte = handle.read(1)
        handle.seek(1000)
        handle.write(bytes([byte[0] ^ 0xFF]))
    return ["score", "--subtask", "retail", "--model", "qwen2.5-coder-0.5b", "--db", str(folder / "store.db")]


LOG_SPEC = "applicant: id\ndemographics: [sex, race]\npool: req\n"


def imported_then_scored(folder: Path) -> list[str]:
    """A decision log imported as task "hiring", then a custom file scored under that name."""
    assert main([*decision_log(folder, "id,sex,race,req,rank\n1,F,W,p,1\n2,M,B,p,2\n"), "--task", "hiring"]) == 0
    return ["score", "--task", "custom", "--subtask", "default", "--data",
            table(folder, two_groups(text="Steady income and no debts.")), "--spec", spec(folder, name="hiring"),
            "--db", store(folder)]


def decision_log(folder: Path, text: str, name: str = "log.csv") -> list[str]:
    """``import --format decisions`` of ``text`` (a decision log) with :data:`LOG_SPEC`, into the case's store."""
    (folder / "log.yaml").write_text(LOG_SPEC)
    return ["import", "--format", "decisions", "--data", table(folder, text, name), "--spec", str(folder / "log.yaml"),
            "--db", str(folder / "store.db")]


@dataclass(frozen=True)
class Case:
    """One bad input: ``argv`` built in the case's folder; the error line must match ``error``."""

    name: str
    argv: Callable[[Path], list[str]]
    error: str
    holds: bool = False  # held before issue 15
    cache: bool = False  # point AUDIT_CACHE_DIR at the case folder's cache/


def store(folder: Path) -> str:
    return str(folder / "store.db")


def second_dataset(folder: Path) -> list[str]:
    """A store whose task "loan" was planned from one candidates file, and a run of another file under that name."""
    data = table(folder, two_groups(text="Steady income and no debts."), "first.csv")
    first = get_task("custom", "default", data=data, spec=spec(folder))
    rows = [(first.name, first.subtask, c.candidate_id, c.group, 1, "", c.text) for c in first.candidates()]
    with Store(store(folder)) as db:
        db.save_plan(candidates=rows, prompts=[], dataset=first.dataset)
    return custom(folder, table(folder, two_groups(text="Two missed payments.")))


def broken_runs(folder: Path) -> str:
    """A folder of ranking runs (<model>/<job>/<date>/*.json): one readable response, one broken file."""
    runs = folder / "runs" / "gpt-x" / "retail" / "1121"
    runs.mkdir(parents=True)
    response = {"context": {"default_order": ["Ann Lee", "Bo Diaz"], "demo_order": ["A_W", "H_M"]},
                "choices": [{"message": {"content": "1. Bo Diaz 2. Ann Lee"}}], "created": 1700000000}
    (runs / "run_0.json").write_text(json.dumps(response))
    (runs / "run_bad.json").write_text('{"choices": [')
    return str(folder / "runs")


CASES = [
    # ---- classes that held before issue 15 ----------------------------------------------------------------
    Case("unknown model", lambda d: ["score", "--subtask", "retail", "--model", "no-such-model", "--db", store(d)],
         r"unknown model 'no-such-model'", holds=True),
    Case("unknown task", lambda d: ["score", "--task", "nope", "--subtask", "x", "--db", store(d)],
         r"unknown task", holds=True),
    Case("bad number", lambda d: ["score", "--subtask", "retail", "--limit", "0", "--db", store(d)],
         r"--limit must be positive", holds=True),
    Case("non-UTF-8 file", lambda d: custom(d, str((d / "c.csv").write_bytes(b"text,group\n\xff\xfe,A\n") and
                                                   d / "c.csv")), r"not UTF-8", holds=True),
    Case("oversize file", lambda d: custom(d, str(_sparse(d / "big.csv", 21 * 2**20))), r"the limit is 20 MiB",
         holds=True),
    Case("NaN score", lambda d: metrics(d, "--k", "1", scores=table(
        d, "model,task,subtask,mode,candidate_id,group,qualified,score\nm,t,s,pointwise,a,A,1,nan\n"
           "m,t,s,pointwise,b,B,1,0.5\n", "nan.csv")), r"column 'score' is empty \(NaN\)", holds=True),
    Case("duplicate ids", lambda d: custom(d, table(d, "id,text,group\n1,a,A\n1,b,A\n2,c,B\n")),
         r"duplicate of row 1", holds=True),
    Case("unsafe YAML tag", lambda d: ["score", "--task", "custom", "--subtask", "default", "--data",
                                       table(d, two_groups()), "--spec", spec(d, 'x: !!python/object/apply:os.system '
                                                                                 '["touch pwned"]\n'),
                                       "--db", store(d)], r"cannot be parsed", holds=True),
    Case("truncated store", lambda d: ["scores", "--db", truncated(d)], r"store.*(cannot be read|not a readable)",
         holds=True),
    Case("other program's database", lambda d: ["score", "--subtask", "retail", "--db", str(foreign(d / "o.db"))],
         r"SQLite database of another application", holds=True),
    # ---- issue 15, items 1-12 -------------------------------------------------------------------------------
    Case("1 YAML alias bomb", lambda d: ["score", "--task", "custom", "--subtask", "default", "--data",
                                         table(d, two_groups()), "--spec", spec(d, BOMB + "\n"), "--db", store(d)],
         r"more than 10000 values|nested more than"),
    Case("2 '#' in a foreign --db path", lambda d: ["scores", "--db", str(foreign(d / "other#1.db"))],
         r"SQLite database of another application"),
    Case("2 '?' and '%' in a foreign --db path", lambda d: ["score", "--subtask", "retail",
                                                           "--db", str(foreign(d / "o?x=1%20.db"))],
         r"SQLite database of another application"),
    Case("3 --out is the store", lambda d: ["scores", "--db", store(d), "--out", store(d)], r"is a result store"),
    Case("3 --out is the store's WAL", lambda d: ["pairs", "--db", store(d), "--out", store(d) + "-wal"],
         r"is a result store \(or one of its -wal"),
    Case("5 newer-schema store, writing", lambda d: ["score", "--subtask", "retail", "--db", str(newer_schema(d))],
         r"schema version 99"),
    Case("5 newer-schema store, reading", lambda d: ["scores", "--db", str(newer_schema(d))], r"schema version 99"),
    Case("6 too many pools", lambda d: ["score", "--subtask", "retail", "--mode", "pairwise", "--rounds", "1000",
                                        "--db", store(d)], r"1000 pairwise pools \(rounds\) need"),
    Case("6 too many pools, new store", lambda d: ["score", "--subtask", "retail", "--mode", "pairwise",
                                                   "--rounds", "1000", "--db", str(d / "new" / "fresh.db")],
         r"1000 pairwise pools \(rounds\) need"),
    Case("6 random bytes as .gguf", lambda d: ["score", "--subtask", "retail", "--model", fake_gguf(d, b""),
                                               "--db", store(d)], r"not a GGUF file"),
    Case("6 fake GGUF with a valid magic", lambda d: ["score", "--subtask", "retail", "--model",
                                                      fake_gguf(d, b"GGUF\x03\x00\x00\x00"), "--db", store(d)],
         r"cannot (convert|load)", cache=True),
    Case("8 one group in a custom CSV", lambda d: custom(d, table(d, "text,group\nx,A\ny,A\n")), r"ha(s|ve) one group"),
    Case("8 one group in a score table", lambda d: metrics(d, "--k", "1", scores=scores_csv(d, groups="A")),
         r"has one group"),
    Case("10 CSV field over 131072 characters", lambda d: custom(d, table(d, two_groups(text="x" * 200_000)),
                                                                 "--model", "no-such-model"),
         r"unknown model 'no-such-model'"),  # the file is read whole; the next check speaks
    Case("10 ragged CSV row", lambda d: custom(d, table(d, "group,text\nA,a\nB\nA,b,extra\n")),
         r"row 2: 1 fields but the header names 2"),
    Case("10 deeply nested JSONL", lambda d: custom(d, table(d, "[" * 100_000 + "]" * 100_000 + "\n", "c.jsonl")),
         r"line 1: (JSON nested too deeply|not valid JSON)"),
    Case("10 --k with a non-ASCII digit", lambda d: metrics(d, "--k", "²"), r"--k: '²' is not a quota"),
    Case("10 random:N with a non-ASCII digit", lambda d: metrics(d, "--k", "1", "--pool", "random:²"),
         r"random:²"),
    Case("10 --k range of 10^11", lambda d: metrics(d, "--k", "1-99999999999"), r"goes past 10000"),
    Case("10 corrupted data page", lambda d: ["scores", "--db", damaged(d)], r"cannot be read"),
    Case("10 --out into a missing folder", lambda d: ["scores", "--db", store(d), "--out", str(d / "no" / "x.csv")],
         r"folder .* does not exist"),
    Case("10 --out onto a folder", lambda d: ["answers", "--db", store(d), "--out", str(d)], r"is a folder"),
    Case("10 metrics --out into a missing folder", lambda d: metrics(d, "--k", "1", "--out", str(d / "no" / "m.json")),
         r"folder .* does not exist"),
    Case("10 cairo combos --max-m 50", lambda d: ["cairo", "combos", "--db", store(d), "--max-m", "50"],
         r"--max-m 50 exceeds the \d+ prompt set"),
    Case("11 duplicate CSV header", lambda d: custom(d, table(d, "text,group,group\na,A,B\nb,B,A\n")),
         r"header names column\(s\) \['group'\] more than once"),
    Case("11 folder as the store path", lambda d: ["scores", "--db", str(d)], r"is a folder"),
    # ---- issue 22: no command overwrites the store --------------------------------------------------------------
    *[Case(f"22 {command} --out onto the store", lambda d, c=command, a=extra: [c, "--db", store(d), *a, "--out",
                                                                               store(d)], r"is a result store")
      for command, extra in [("metrics", ["--task", "resume", "--k", "2", "--format", "json"]),
                             ("validity", ["--task", "resume", "--k", "2"]),
                             ("impact", ["--task", "resume", "--k", "2"]),
                             ("plan", ["--task", "resume", "--reference", "W_M", "--k", "2"]),
                             ("report", ["--task", "resume"])]],
    Case("22 report onto a store named store.html", lambda d: ["report", "--db", renamed_store(d, "store.html"),
                                                              "--task", "resume", "--out", str(d / "store.html")],
         r"is a result store"),
    Case("22 metrics --out onto another store's -shm", lambda d: [
        "metrics", "--db", store(d), "--task", "resume", "--k", "2", "--out", renamed_store(d, "other.db") + "-shm"],
         r"is a result store \(or one of its"),
    Case("22 --out onto a FIFO", lambda d: ["scores", "--db", store(d), "--out", fifo(d)], r"not a regular file"),
    Case("22 Parquet decompression bomb", lambda d: custom(d, parquet_bomb(d)), r"5,000,000 rows; the limit is 100,000"),
    Case("22 dict value as candidate text", lambda d: custom(d, table(d, '{"text": {"a": 1}, "group": "A"}\n'
                                                                         '{"text": "b", "group": "B"}\n', "c.jsonl")),
         r"row 1, column 'text': a JSON dict, not text"),
    Case("22 FIFO as the store", lambda d: ["scores", "--db", fifo(d)], r"not a regular file"),
    Case("22 /dev/null as the store", lambda d: ["score", "--subtask", "retail", "--limit", "1", "--db", "/dev/null"],
         r"not a regular file"),
    Case("22 score into a store with a damaged page", lambda d: ["score", "--subtask", "retail", "--limit", "1",
                                                                "--db", damaged(d)], r"damaged|cannot be read"),
    Case("22 non-integer schema version", lambda d: ["scores", "--db", str(bad_version(d))],
         r"schema version 'two', not a whole number"),
    Case("22 a second dataset under a task name that holds another", second_dataset,
         r"task 'loan' in .* already holds the dataset with SHA-256 \w{16}…; this data \(SHA-256 \w{16}…\) would "
         r"merge with it into one audit"),
    Case("22 impact --bootstrap 0", lambda d: ["impact", "--db", store(d), "--task", "resume", "--k", "2",
                                               "--bootstrap", "0"], r"--bootstrap 0: give 1 to 100,000"),
    Case("22 metrics --permutations 10^9", lambda d: metrics(d, "--k", "1", "--permutations", "1000000000"),
         r"--permutations 1000000000: give 1 to 100,000"),
    Case("21 decision log without an outcome column", lambda d: decision_log(d, "id,sex,race,req\n1,F,W,p\n"),
         r"log\.csv, header row, column \(none\): no outcome column"),
    Case("21 decision log with a missing outcome", lambda d: decision_log(
        d, "id,sex,race,req,rank\n1,F,W,p,1\n2,M,B,p,\n"), r"log\.csv, row 2, column 'rank': missing outcome"),
    Case("21 decision log with two outcomes", lambda d: decision_log(
        d, "id,sex,race,req,selected,score\n1,F,W,p,1,0.5\n"), r"log\.csv, header row, columns \['selected', "
         r"'score'\]: two outcomes"),
    Case("21 decision log with a non-numeric score", lambda d: decision_log(
        d, "id,sex,race,req,score\n1,F,W,p,0.5\n2,M,B,p,0.7\n3,F,B,p,high\n"),
         r"log\.csv, row 3, column 'score': score 'high' is not a number"),
    Case("21 decision log with a duplicate applicant id", lambda d: decision_log(
        d, "id,sex,race,req,selected\na1,F,W,p,1\na2,M,B,p,0\na3,F,B,q,0\na1,M,W,q,1\n"),
         r"log\.csv, row 4, column 'id': applicant 'a1' also on row 1"),
    Case("21 decision log with two rank-1 rows in a pool", lambda d: decision_log(
        d, "id,sex,race,req,rank\n1,F,W,p1,1\n2,M,B,p2,1\n3,F,B,p1,1\n"),
         r"log\.csv, row 3, column 'rank': rank 1 appears twice in pool 'p1' \(also row 1\)"),
    Case("21 decision log with an all-unknown column", lambda d: decision_log(
        d, "id,sex,race,req,selected\n1,F,unknown,p,1\n2,M,,p,0\n3,F,Unknown,p,0\n"),
         r"log\.csv, rows 1–3, column 'race': every value is missing or unknown"),
    Case("21 empty decision log", lambda d: decision_log(d, ""), r"log\.csv, row 1: empty file"),
    Case("22 decisions imported under a task whose candidates models scored", lambda d: [*decision_log(
        d, "id,sex,race,req,rank\n1,F,W,p,1\n2,M,B,p,2\n"), "--task", "resume"],
         r"task 'resume' in .* holds candidates scored by models; import recorded decisions under their own task"),
    Case("22 scoring under a task name that holds imported decisions", imported_then_scored,
         r"task 'hiring' in .* holds imported decisions; score under another task name"),
    Case("21 decision log (JSONL) with a rank beyond its pool", lambda d: decision_log(
        d, '{"id": 1, "sex": "F", "race": "W", "req": "p", "rank": 1}\n'
           '{"id": 2, "sex": "M", "race": "B", "req": "p", "rank": 3}\n', "log.jsonl"),
         r"log\.jsonl, row 2, column 'rank': rank 3 but its pool holds 2 applicants"),
    Case("21 ranking runs with a broken JSON file", lambda d: ["import", "--format", "ranking-runs", "--data",
                                                               broken_runs(d), "--db", store(d)],
         r"run_bad\.json: not a readable chat-completion response \(not valid JSON\)"),
    Case("12 cached assembly with one byte changed", bad_cached_assembly,
         r"cached model file .* does not match its pinned SHA-256 \(found [0-9a-f]{64}, expected "
         r"1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32\)", cache=True),
]


def _sparse(path: Path, size: int) -> Path:
    with path.open("wb") as handle:
        handle.truncate(size)
    return path


def snapshot(folder: Path) -> dict[str, str]:
    """SHA-256 of every file under ``folder`` (a store's -wal/-shm left out: SQLite's own, not content; and the
    tool's own cache/ folder)."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.name.endswith(("-wal", "-shm"))
            and "cache" not in p.relative_to(folder).parts}


def run(argv: list[str]) -> tuple[int, str, str]:
    """``python -m audit argv`` in this process: exit status, stdout, stderr (a traceback fails the test)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(argv)
        except SystemExit as exc:
            status = exc.code
        except BaseException:
            pytest.fail(f"traceback instead of an error line:\n{traceback.format_exc()}")
    return status, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_is_one_error_line_and_changes_nothing(case: Case, tmp_path: Path, monkeypatch):
    shutil.copyfile(DEMO_STORE, tmp_path / "store.db")
    if case.cache:
        monkeypatch.setenv("AUDIT_CACHE_DIR", str(tmp_path / "cache"))
    argv = case.argv(tmp_path)
    before = snapshot(tmp_path)
    status, _, err = run(argv)
    lines = [line for line in err.splitlines() if line.strip() and "prompt/s]" not in line]  # minus progress bars
    assert status == 2, (status, err)
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert re.search(case.error, lines[0]), lines[0]
    assert snapshot(tmp_path) == before  # nothing changed, nothing created


def test_every_issue_item_and_every_older_class_has_a_case():
    items = {c.name.split()[0] for c in CASES if not c.holds}
    assert {"1", "2", "3", "5", "6", "8", "10", "11", "12", "22"} <= items  # 4, 7 and 9 need a model or a page: below
    assert sum(c.holds for c in CASES) >= 10


def test_a_hash_or_question_mark_in_our_store_path_reads_that_store_and_creates_nothing(tmp_path):
    """Item 2: the path is a file name, not a URI; the old check opened (and created) ``…/st`` instead."""
    shutil.copyfile(DEMO_STORE, tmp_path / "st#1?x=%41.db")
    status, out, err = run(["scores", "--db", str(tmp_path / "st#1?x=%41.db")])
    assert status == 0, err
    assert out.startswith("model,task,subtask")
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(("-wal", "-shm"))) == ["st#1?x=%41.db"]


def test_alias_bomb_refused_in_under_a_second_with_bounded_memory(tmp_path):
    """Item 1, measured in a fresh process: time and peak memory (``resource``) of loading the 1.5 KB spec."""
    bomb = Path(spec(tmp_path, BOMB + "\n"))
    assert bomb.stat().st_size < 2000
    probe = f"""
import resource, time
from audit.errors import AuditError
from audit.tasks.specs import load_spec
import yaml  # imported before measuring
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
try:
    load_spec({str(bomb)!r})
except AuditError as exc:
    print("refused:", exc)
print(time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
"""
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    refusal, measures = done.stdout.strip().splitlines()
    seconds, grown_kib = (float(x) for x in measures.split())
    assert refusal.startswith("refused:") and "groups" not in refusal.split(":", 1)[0]
    assert seconds < 1.0
    assert grown_kib < 50 * 1024  # the expanded text would be gigabytes


def test_read_only_store_serves_every_reading_command_and_refuses_writes(tmp_path):
    """Item 4: an immutable store file in an immutable folder (``chattr +i``; as root, permissions do not bind)."""
    store_path = tmp_path / "ro" / "store.db"
    store_path.parent.mkdir()
    shutil.copyfile(DEMO_STORE, store_path)
    if subprocess.run(["chattr", "+i", str(store_path)], capture_output=True).returncode != 0:
        os.chmod(store_path, 0o444)
        os.chmod(store_path.parent, 0o555)
        if os.access(store_path, os.W_OK):
            pytest.skip("cannot make a file read-only here (no chattr, running as root)")
    else:
        subprocess.run(["chattr", "+i", str(store_path.parent)], check=True)
    try:
        before = snapshot(store_path.parent)
        for command in ("scores", "pairs", "answers"):
            status, out, err = run([command, "--db", str(store_path)])
            assert status == 0 and out and not err, (command, err)
        status, out, err = run(["cairo", "combos", "--db", str(store_path), "--max-m", "2"])
        assert status == 0, err
        status, _, err = run(["score", "--subtask", "retail", "--limit", "1", "--db", str(store_path)])
        assert status == 2 and err.startswith("error: ") and len(err.splitlines()) == 1, err
        assert snapshot(store_path.parent) == before
    finally:
        subprocess.run(["chattr", "-i", str(store_path.parent), str(store_path)], capture_output=True)
        os.chmod(store_path.parent, 0o755)


def test_two_custom_datasets_with_the_same_subtask_are_analysed_apart(tmp_path):
    """Item 7: metrics are keyed by (model, task, subtask, mode)."""
    status, out, err = run(metrics(tmp_path, "--k", "1", scores=scores_csv(tmp_path, tasks=("loan", "hire"))))
    assert status == 0, err
    rows = json.loads(out)
    assert {(r["task"], r["subtask"]) for r in rows} == {("loan", "default"), ("hire", "default")}


def test_csv_exports_neutralise_formulas_and_keep_negative_numbers(tmp_path):
    """Item 11: text cells starting = + - @ get a leading quote; numbers stay numbers; metrics reads them back."""
    from audit.store.output import csv_text

    import pandas as pd

    frame = pd.DataFrame({"group": ["=HYPERLINK(\"x\")", "+1", "-A", "@SUM(A1)", "B"], "score": [-0.5, 1, -2, 0, 3]})
    text = csv_text(frame)
    assert "'=HYPERLINK" in text and "\n'+1," in text and "\n'-A," in text and "\n'@SUM" in text
    assert ",-0.5\n" in text and ",-2.0\n" in text
    exported = tmp_path / "neutralised.csv"  # an export whose reference group starts with "-" feeds metrics as is
    scores = pd.read_csv(scores_csv(tmp_path)).replace({"group": {"A": "-A"}})
    exported.write_text(csv_text(scores))
    assert "'-A" in exported.read_text()
    status, out, err = run(["metrics", "--scores", str(exported), "--reference=-A", "--k", "1"])
    assert status == 0, err
    assert {r["group"] for r in json.loads(out)} == {"B"}
    status, out, err = run(["scores", "--db", str(DEMO_STORE)])
    assert status == 0 and "\n'" not in out and ",-" not in out.split("\n", 1)[0]


def test_chart_titles_escape_tags_once_and_keep_quotes():
    """Item 11: a group named with quotes shows its quotes, and tags in it never render."""
    import pandas as pd

    from audit.present import charts

    rows = pd.DataFrame({"model": ["m"] * 2, "subtask": ["s"] * 2, "group": ['say "hi"', "<b>x</b>"], "k": [1, 1],
                         "dp_gap": [0.1, -0.1]})
    fig = charts.gap_curves(rows, title='reference "W_M" <script>')
    assert fig.layout.title.text == 'reference "W_M" &lt;script&gt;'
    assert {t.name for t in fig.data} == {'say "hi"', "&lt;b&gt;x&lt;/b&gt;"}


def test_converted_folder_with_one_byte_changed_is_refused(tmp_path, monkeypatch):
    """Item 12: a converted safetensors folder is checked against the manifest written when it was made."""
    from audit.backend.loading import converted_dir
    from audit.backend.sources import ModelRef
    from audit.errors import AuditError

    monkeypatch.setenv("AUDIT_CACHE_DIR", str(tmp_path))
    ref = ModelRef("fake", "gguf", str(tmp_path / "x.gguf"), "ab" * 32, "none", "float32", "cpu")
    folder = tmp_path / "converted" / ref.content_id[:24]
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(bytes(range(256)) * 64)
    assert converted_dir(ref) == folder  # first use records the manifest
    assert converted_dir(ref) == folder
    weights = folder / "model.safetensors"
    before = weights.stat()
    data = bytearray(weights.read_bytes())
    data[100] ^= 1
    with weights.open("r+b") as handle:  # in place: same inode and size
        handle.write(bytes(data))
    os.utime(weights, ns=(before.st_atime_ns, before.st_mtime_ns))  # issue 22: `touch -r` hides the change
    assert (weights.stat().st_ino, weights.stat().st_size, weights.stat().st_mtime_ns) == \
        (before.st_ino, before.st_size, before.st_mtime_ns)
    with pytest.raises(AuditError, match=r"model.safetensors do not match the SHA-256 recorded at conversion "
                                         r"\(found [0-9a-f]{64}, expected [0-9a-f]{64}\); delete the folder"):
        converted_dir(ref)


def test_registry_pins_every_package_version_and_gguf_hash():
    from audit.backend.registry import REGISTRY

    makefile = (ROOT / "Makefile").read_text() + (ROOT / "requirements-models.txt").read_text()
    for entry in REGISTRY.values():
        assert len(entry.sha256) == 64 and int(entry.sha256, 16) >= 0
        for package in entry.packages:
            assert "==" in package and package in makefile, package


def test_text_longer_than_the_context_is_named_before_scoring_and_cut_only_when_asked(tmp_path, smollm):
    """Item 9, real model: a 100k-character candidate is refused by name in seconds, the store untouched; with
    ``truncate`` the texts are cut so that every prompt fits the context."""
    import time

    from audit.run.context_fit import fit_candidates
    from audit.tasks import get_task

    data = table(tmp_path, "id,text,group\nlong1," + "lorem ipsum " * 8500 + ",A\nshort1,Steady income.,B\n"
                 "short2,Two jobs.,A\n")
    shutil.copyfile(DEMO_STORE, tmp_path / "store.db")
    argv = custom(tmp_path, data)
    before = snapshot(tmp_path)
    started = time.perf_counter()
    status, _, err = run(argv)
    assert time.perf_counter() - started < 120
    assert status == 2
    line = [x for x in err.splitlines() if x.startswith("error: ")]
    assert len(line) == 1 and re.search(r"1 candidate text\(s\) do not fit smollm2-135m's context of 8192 tokens "
                                        r".*long1 \(\d{5} tokens\).*--truncate", line[0]), err
    assert snapshot(tmp_path) == before
    task = get_task("custom", "default", data=data, spec=str(tmp_path / "loan.yaml"))
    fitted = fit_candidates(task, task.candidates(), smollm, pairwise=True, model="smollm2-135m", truncate=True)
    assert [c.candidate_id for c in fitted] == ["long1", "short1", "short2"]
    assert fitted[1:] == task.candidates()[1:]
    longest = smollm.prompt_length(task.pairwise_prompt(fitted[0], fitted[0]))
    assert 4000 < longest <= smollm.context_length() - 32


def test_pages_read_a_read_only_or_damaged_store_and_refuse_a_folder(tmp_path, monkeypatch):
    """Items 4, 10, 11 on the dashboard: an immutable store renders; a damaged one and a folder are one message."""
    from streamlit.testing.v1 import AppTest

    read_only = tmp_path / "ro.db"
    shutil.copyfile(DEMO_STORE, read_only)
    locked = subprocess.run(["chattr", "+i", str(read_only)], capture_output=True).returncode == 0
    broken = tmp_path / "broken.db"
    shutil.copyfile(DEMO_STORE, broken)
    garble(broken)
    try:
        for path, expect in ((read_only, None), (broken, "Cannot read the store"), (tmp_path, "is a folder")):
            monkeypatch.setenv("AUDIT_DB", str(path))
            at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
            at.run()
            assert not at.exception, (path, at.exception)
            errors = " ".join(e.value for e in at.error)
            if expect is None:
                assert not errors and at.dataframe, errors
            else:
                assert expect in errors, errors
    finally:
        if locked:
            subprocess.run(["chattr", "-i", str(read_only)], check=True)
