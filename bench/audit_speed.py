"""Issue 30's timings, a baseline checkout and this tree side by side: the GPT hiring study's audit report (HTML and
PDF), ``impact --k 1`` and ``verdict --k 1`` on it, the Overview and Allocation pages cold and warm, and a quota change on
the Allocation page.

    git worktree add --detach ../baseline 11245ce   # once: the baseline checkout (11245ce: issue 29's start)
    HF_HUB_OFFLINE=1 .venv/bin/python bench/audit_speed.py --baseline ../baseline [--rounds 3]
        [--only report-html,report-pdf,impact,verdict,overview,allocation] [--k 1] [--new-k 2]

The baseline (``--baseline``, required) is any checkout of the project, e.g. the worktree above. Both trees run with this Python, on one copy of the demo store (it holds
the study's recorded rankings, task ``study-gpt-hiring``, imported from the study's tarball), each in a fresh process
whose working folder and ``PYTHONPATH`` are that tree. Every round runs each measurement once per tree, alternating
which tree goes first, so both meet the same machine load. Prints the median seconds of each and the ratio
baseline / this tree.

Pages run in Streamlit's AppTest (no browser): *cold* is the first run of the page in a fresh process (the app's
imports, the store read and every computation), *warm* a new session of the same page in the same process (what a
second browser tab costs once the process's caches are filled), *k change* moving the Allocation page's quota slider
to ``--new-k`` after the cold run. Commands and reports are whole processes, start-up included.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STORE = ROOT / "data" / "demo.db"
TASK = "study-gpt-hiring"
MEASURES = ("report-html", "report-pdf", "impact", "verdict", "overview", "allocation")
PAGES = {"overview": "pages/overview.py", "allocation": "pages/allocation_gaps.py"}

#: run in the tree's folder: one page cold, then a new session warm, then (Allocation) the quota slider; prints JSON
PAGE_RUN = """
import json, sys, time
from streamlit.testing.v1 import AppTest
app, page, task, new_k = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])

def session():
    at = AppTest.from_file(app, default_timeout=900)
    at.session_state["task"] = task
    if not page.endswith("overview.py"):
        at.switch_page(page)
    start = time.perf_counter()
    at.run()
    seconds = time.perf_counter() - start
    assert not at.exception, at.exception
    return at, seconds

at, cold = session()
out = {"cold": cold, "warm": session()[1]}
if new_k:
    start = time.perf_counter()
    at.slider(key="k_gaps").set_value(new_k).run()
    out["k change"] = time.perf_counter() - start
    assert not at.exception, at.exception
print(json.dumps(out))
"""


def environment(tree: Path, store: Path) -> dict[str, str]:
    """The child's environment: ``tree`` importable first, the bench's store, offline."""
    return {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(tree), "AUDIT_DB": str(store)}


def command_seconds(tree: Path, store: Path, argv: list[str]) -> float:
    """Wall seconds of ``python -m audit ARGV`` run from ``tree`` (start-up included)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "audit", *argv], cwd=tree, env=environment(tree, store), check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def page_seconds(tree: Path, store: Path, page: str, new_k: int) -> dict[str, float]:
    """{cold, warm[, k change]} seconds of one page of ``tree``'s dashboard, from a fresh process."""
    done = subprocess.run([sys.executable, "-c", PAGE_RUN, str(tree / "app.py"), page, TASK, str(new_k)], cwd=tree,
                          env=environment(tree, store), check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(name: str, tree: Path, store: Path, folder: Path, k: int, new_k: int) -> dict[str, float]:
    """Seconds of measurement ``name`` (one of :data:`MEASURES`) on ``tree``, by row label."""
    study = ["--db", str(store), "--task", TASK]
    if name.startswith("report-"):
        fmt = name.split("-")[1]
        out = folder / f"report.{fmt}"
        return {f"report {fmt.upper()}": command_seconds(tree, store, ["report", *study, "--k", str(k), "--out",
                                                                        str(out)])}
    if name == "impact":
        return {f"impact --k {k}": command_seconds(tree, store, ["impact", *study, "--k", str(k)])}
    if name == "verdict":
        return {f"verdict --k {k}": command_seconds(tree, store, ["verdict", *study, "--k", str(k)])}
    times = page_seconds(tree, store, PAGES[name], new_k if name == "allocation" else 0)
    return {f"{name.capitalize()} {part}": seconds for part, seconds in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, required=True,
                        help="baseline checkout (git worktree add --detach ../baseline 11245ce)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; each runs every measurement once per tree")
    parser.add_argument("--only", default=",".join(MEASURES), help=f"comma-separated subset of {','.join(MEASURES)}")
    parser.add_argument("--k", type=int, default=1, help="quota of the report, impact and verdict (default 1)")
    parser.add_argument("--new-k", type=int, default=2, help="the Allocation page's quota after the change")
    args = parser.parse_args()
    names = [name for name in args.only.split(",") if name]
    unknown = set(names) - set(MEASURES)
    if unknown or not (args.baseline / "audit").is_dir():
        parser.error(f"unknown measurement {sorted(unknown)}" if unknown else f"{args.baseline} is no checkout")
    trees = {"baseline": args.baseline.resolve(), "this tree": ROOT}
    times: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        store = folder / "study.db"
        shutil.copyfile(STORE, store)  # the study's store, built once: both trees read the same file
        for round_ in range(args.rounds):
            for name in names:
                order = list(trees.items()) if round_ % 2 == 0 else list(trees.items())[::-1]
                for side, tree in order:
                    for label, seconds in measure(name, tree, store, folder, args.k, args.new_k).items():
                        times.setdefault(label, {}).setdefault(side, []).append(seconds)
            print(f"round {round_ + 1} of {args.rounds} done", file=sys.stderr)
    print(f"medians of {args.rounds} rounds; baseline {trees['baseline']}")
    print("| | baseline | this tree | ratio |\n|---|---|---|---|")
    for label, sides in times.items():
        before, after = statistics.median(sides["baseline"]), statistics.median(sides["this tree"])
        print(f"| {label} | {before:.2f} s | {after:.2f} s | {before / after:.2f}× |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
