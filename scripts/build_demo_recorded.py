"""Add the 2024 GPT hiring study's recorded rankings (GPT-3.5 and GPT-4) to a result store as task
``study-gpt-hiring``: the study's data tarball is extracted to a temporary folder and imported with
``python -m audit import --format ranking-runs`` (derived rows only; the raw files are never kept).

    python scripts/build_demo_recorded.py --db data/demo.db [--tarball PATH]
"""
from __future__ import annotations

import argparse
import sqlite3
import sys
import tarfile
import tempfile
from pathlib import Path

from audit.cli import main as audit_main

TARBALL = Path("/work/shared/anchors/bloomberg-gpt-hiring.tar.gz")
RUNS = "bloomberg-gpt-hiring/data/intermediary/resume_ranking"
TASK = "study-gpt-hiring"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", required=True, help="result store to add the study to")
    parser.add_argument("--tarball", type=Path, default=TARBALL, help=f"the study's data (default {TARBALL})")
    args = parser.parse_args(argv)
    if not args.tarball.is_file():
        print(f"error: {args.tarball} not found", file=sys.stderr)
        return 2
    db = Path(args.db)
    before = db.stat().st_size if db.exists() else 0
    with tempfile.TemporaryDirectory() as folder:
        with tarfile.open(args.tarball) as archive:
            archive.extractall(folder, filter="data")
        status = audit_main(["import", "--format", "ranking-runs", "--data", str(Path(folder) / RUNS),
                             "--task", TASK, "--db", str(db)])
    if status:
        return status
    with sqlite3.connect(db) as connection:  # fold the WAL in, so the file size is the store's size
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    after = db.stat().st_size
    print(f"{db}: {before / 1e6:.1f} MB -> {after / 1e6:.1f} MB (+{(after - before) / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
