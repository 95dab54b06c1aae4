#!/usr/bin/env bash
# Add the model-written paraphrase sets to the project's CAIRO prompt files (data/cairo/*.json), as shipped:
# one set by Qwen2.5-Coder-0.5B-Instruct (chat prompt of the paper) and one by Gemma 3 270M base (completion prompt).
# The original prompts and the hand_* sets are hand-written; run this once on files that lack the model sets.
#
#   scripts/cairo_paraphrase_sets.sh          # ≈ 4 min on 2 CPU cores
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1 OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}

for file in data/cairo/bold.json data/cairo/honest.json data/cairo/holisticbias.json; do
  for model in qwen2.5-coder-0.5b gemma3-270m; do
    nice "$PYTHON" -m audit cairo paraphrase --prompts "$file" --model "$model" --sets 1 --out "$file" \
      --temperature 0.7 --max-new-tokens 32 --seed 7
  done
done
