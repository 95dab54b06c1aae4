#!/usr/bin/env bash
# Build the dashboard's demo result store data/demo.db from scratch with real runs of the bundled offline models.
#
#   scripts/build_demo_store.sh            # writes data/demo.db (≈ 20 min on 2 CPU cores)
#
# Env: PYTHON (default .venv/bin/python), LIMIT (candidates per group, default 12), ROUNDS (pairwise pools, default 6),
# QLIMIT (candidates per group of the 4-bit SmolLM2 run, default 8: bitsandbytes NF4 on CPU is ≈ 3 s a prompt),
# GENERATE_ROUNDS (pools of the pairwise generate run, default 5: the first pools holding a qualified candidate of
# every group), OUT (default data/demo.db). The store is built in a temporary file and moved into place only when
# every run finished. The 4-bit and generate runs were added to the shipped data/demo.db in place with exactly their
# own commands (`python -m audit score … --db data/demo.db`).
# Every command records its own run in the store's audit trail (`python -m audit runs --db data/demo.db`); the runs
# of the store as shipped, built before runs were recorded, were backfilled by scripts/backfill_demo_runs.py.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
LIMIT=${LIMIT:-12}
ROUNDS=${ROUNDS:-6}
QLIMIT=${QLIMIT:-8}
GENERATE_ROUNDS=${GENERATE_ROUNDS:-5}
OUT=${OUT:-data/demo.db}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
DB="$TMP/demo.db"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1

score() { nice "$PYTHON" -m audit score --task resume --db "$DB" "$@"; }

for model in smollm2-135m qwen2.5-coder-0.5b gemma3-270m; do
  score --model "$model" --subtask all --mode pointwise --limit "$LIMIT"
done
# The same model at a second precision (bitsandbytes 4-bit NF4) on the first QLIMIT candidates of the same lists:
# a real quantisation comparison for `python -m audit compare` and the Compare page.
score --model smollm2-135m --quant 4bit --subtask all --mode pointwise --limit "$QLIMIT"
score --model smollm2-135m --subtask software_engineer --mode pairwise --pairwise-mode likelihood --rounds "$ROUNDS"
# the paper's generate-and-parse method on the first pools (≈ 13 min on 2 busy cores); answers are re-parsed when read
score --model smollm2-135m --subtask software_engineer --mode pairwise --pairwise-mode generate \
  --rounds "$GENERATE_ROUNDS"

"$PYTHON" - "$DB" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
db.execute("VACUUM")
db.close()
PY
mv "$DB" "$OUT"
echo "wrote $OUT ($(du -h "$OUT" | cut -f1))"
