#!/usr/bin/env bash
# Build the dashboard's demo result store data/demo.db from scratch with real runs of the bundled offline models.
#
#   scripts/build_demo_store.sh            # writes data/demo.db (≈ 20 min on 2 CPU cores)
#
# Env: PYTHON (default .venv/bin/python), LIMIT (candidates per group, default 12), ROUNDS (pairwise pools, default 6),
# GENERATE_ROUNDS (pools of the pairwise generate run, default 2), OUT (default data/demo.db). The store is built in a
# temporary file and moved into place only when every run finished. The generate run was added to the shipped
# data/demo.db in place with exactly its own command (`python -m audit score … --pairwise-mode generate --rounds 2
# --db data/demo.db`). Two pools give real answers and pair outcomes to inspect (`python -m audit answers`); the
# metrics need a qualified candidate of every group, which the first pools only hold from GENERATE_ROUNDS=5 on.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
LIMIT=${LIMIT:-12}
ROUNDS=${ROUNDS:-6}
GENERATE_ROUNDS=${GENERATE_ROUNDS:-2}
OUT=${OUT:-data/demo.db}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
DB="$TMP/demo.db"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1

score() { nice "$PYTHON" -m audit score --task resume --db "$DB" "$@"; }

for model in smollm2-135m qwen2.5-coder-0.5b gemma3-270m; do
  score --model "$model" --subtask all --mode pointwise --limit "$LIMIT"
done
score --model smollm2-135m --subtask software_engineer --mode pairwise --pairwise-mode likelihood --rounds "$ROUNDS"
# the paper's generate-and-parse method on the first pools (≈ 5 min on 2 cores); answers are re-parsed when read
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
