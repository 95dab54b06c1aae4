"""``monitor`` on the issue's dated 0/1 log (seeded synthetic, audit/recorded/synthetic.py), and its time on 1M rows.

The log: 31 jobs × 52 weekly looks × 400 decisions a job-week (≈ 645k decisions, selection rate 0.3, sex F/M); 30
jobs fair, one (job-31) whose women's rate falls to 0.6 of men's from week 27 on. Imported through the CLI, then
watched weekly with the defaults (α = 0.05 over 52 looks, threshold 0.8, family system). Printed per seed: the
drifting job's first alarm and its delay in weeks after the drop, the fair jobs alarmed, and the monitor's time;
then the time of ``monitor`` on a log of about 1,000,000 decisions (31 jobs × 52 weeks × 620).

Usage (from the project root): python bench/monitor_log.py [--seeds 1] [--skip-million]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from audit.cli import main  # noqa: E402
from audit.recorded.synthetic import SPEC, dated_log  # noqa: E402

JOBS, WEEKS, DROP_WEEK, RATIO = 31, 52, 26, 0.6  # DROP_WEEK counted from 0: the 27th week


def cli(*argv: str) -> tuple[str, float]:
    out = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out):
        if main(list(argv)) != 0:
            raise SystemExit(f"failed: {' '.join(argv)}")
    return out.getvalue(), time.perf_counter() - start


def watched(folder: Path, per_week: int, seed: int) -> tuple[dict, float, int]:
    """(the monitor's JSON, its wall time, the log's rows) of a fresh log."""
    frame = dated_log(JOBS, WEEKS, per_week, drifts={JOBS - 1: (DROP_WEEK, RATIO)}, seed=seed)
    data, db = folder / f"log-{seed}-{per_week}.csv", folder / f"s-{seed}-{per_week}.db"
    frame.to_csv(data, index=False)
    cli("import", "--format", "decisions", "--data", str(data), "--spec", str(folder / "spec.yaml"), "--task",
        "monitored", "--label", "screener", "--db", str(db))
    text, seconds = cli("monitor", "--db", str(db), "--task", "monitored", "--format", "json")
    return json.loads(text), seconds, len(frame)


def run(seeds: int, million: bool) -> None:
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        (folder / "spec.yaml").write_text(SPEC)
        drift = f"job-{JOBS:02d}"
        for seed in range(seeds):
            result, seconds, rows = watched(folder, 400, seed)
            summary = {row["subtask"]: row for row in result["summary"]}
            drop = result["periods"][DROP_WEEK]
            first = summary[drift]["first_alarm"]
            delay = result["periods"].index(first) - DROP_WEEK if first else None
            fair = sorted(s for s, row in summary.items() if s != drift and row["first_alarm"])
            print(f"seed {seed}: {rows:,} decisions; {drift} (drop in the week of {drop}): first alarm "
                  f"{first or 'none'}" + (f", {delay} week(s) after the drop" if first else "")
                  + f"; fair jobs alarmed: {len(fair)} of {JOBS - 1} {fair if fair else ''}; monitor {seconds:.2f} s")
        if million:
            result, seconds, rows = watched(folder, 620, 100)
            print(f"monitor over {rows:,} decisions ({len(result['periods'])} weekly looks): {seconds:.2f} s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--skip-million", action="store_true")
    options = parser.parse_args()
    run(options.seeds, not options.skip_million)
