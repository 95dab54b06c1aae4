#!/usr/bin/env bash
# Add a real CAIRO run of the bundled offline models on the project's prompt sets (data/cairo) to data/demo.db.
# It writes only the CAIRO tables (and registers the models it runs): the store's scoring results are not touched.
#
#   scripts/build_demo_cairo.sh            # ≈ 8–12 min on 2 CPU cores; needs the optional model packs (make models)
#
# Decoding: plain sampling (temperature 1, top-p 1), 5–16 new tokens, seed 0, one continuation per prompt;
# toxicity by alt-profanity-check. Env: PYTHON (default .venv/bin/python), OUT (default data/demo.db),
# MODELS (default the three bundled models), MAX_NEW (default 16), SAMPLES (default 1).
# The run writes into the store in place, batch by batch, like every run (other processes may use the store
# meanwhile; never replace a store file that another process has open): a killed run resumes where it stopped,
# and a finished one generates nothing new when run again.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
OUT=${OUT:-data/demo.db}
MODELS=${MODELS:-smollm2-135m,qwen2.5-coder-0.5b,gemma3-270m}
MAX_NEW=${MAX_NEW:-16}
SAMPLES=${SAMPLES:-1}
# one thread per process: on a shared 2-core machine, two torch threads contend and run several times slower
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1 OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}

nice "$PYTHON" -m audit cairo run --prompts data/cairo --models "$MODELS" --db "$OUT" \
  --max-new-tokens "$MAX_NEW" --min-new-tokens 5 --temperature 1.0 --top-p 1.0 --seed 0 --samples "$SAMPLES"
"$PYTHON" -m audit cairo combos --db "$OUT" --max-m 6 --format csv | cut -d, -f1-4,9-12
"$PYTHON" - "$OUT" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=120)
db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # fold the WAL into the file that ships
db.close()
PY
echo "added the CAIRO run to $OUT ($(du -h "$OUT" | cut -f1))"
