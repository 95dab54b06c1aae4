"""Time the GPT hiring study's audit report (HTML and PDF) from this tree against a baseline commit, side by side.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/report.py [--base COMMIT] [--k 1] [--rounds 1]

The baseline is checked out with ``git worktree add`` into a temporary folder (removed afterwards) and run with the
same Python, on the same store, at the same quota (``--k``: the baseline defaulted to k = 2, this tree to the
design's k = 1), alternating the two sides so both meet the same machine load. Prints seconds per format and the
ratio baseline / this tree."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STORE = ROOT / "data" / "demo.db"
#: the commit issue 29's report work started from
BASE = "11245ce"


def timed(tree: Path, fmt: str, k: int, out: Path) -> float:
    """Seconds of one ``python -m audit report`` of the study from ``tree`` into ``out`` (.html or .pdf)."""
    argv = [sys.executable, "-m", "audit", "report", "--db", str(STORE), "--task", "study-gpt-hiring", "--k", str(k),
            "--out", str(out.with_suffix(f".{fmt}"))]
    start = time.perf_counter()
    subprocess.run(argv, cwd=tree, check=True, env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(tree)},
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", default=BASE, help=f"baseline commit (default {BASE})")
    parser.add_argument("--k", type=int, default=1, help="quota of both reports (default 1)")
    parser.add_argument("--rounds", type=int, default=1, help="timed rounds per side and format (best kept)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder) / "base"
        subprocess.run(["git", "worktree", "add", "--detach", str(base), args.base], cwd=ROOT, check=True,
                       capture_output=True)
        try:
            print(f"{'format':<6} {'baseline ' + args.base:>18} {'this tree':>10} {'ratio':>7}")
            for fmt in ("html", "pdf"):
                before, after = [], []
                for _ in range(args.rounds):
                    before.append(timed(base, fmt, args.k, Path(folder) / "before"))
                    after.append(timed(ROOT, fmt, args.k, Path(folder) / "after"))
                print(f"{fmt:<6} {min(before):>17.1f}s {min(after):>9.1f}s {min(before) / min(after):>6.2f}×")
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
