"""Shared fixtures: the real bundled model (loaded once per session) and fresh result stores."""
from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):  # pytest -n N: the cores shared out, N workers never oversubscribed
    # (torch's and BLAS's thread pools read these at import, which follows; the processes the tests start inherit them)
    threads = str(max(1, (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])))
    for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(variable, threads)

import functools  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
from streamlit.components.v2 import manifest_scanner  # noqa: E402
from streamlit.testing.v1 import local_script_runner  # noqa: E402

from audit.backend import CausalLM, ModelRef, resolve  # noqa: E402
from audit.backend.spec import BackendSpec, load_backend  # noqa: E402
from audit.tasks import get_task  # noqa: E402
from audit.tasks.resume import ResumeTask  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
#: the modules of over 20 s (bench/README.md, "The test suite on CI"), longest first: run before the rest, so that the
#: suite ends on short modules, not one worker alone on a long one (``make test`` passes ``--no-loadscope-reorder``, or
#: xdist would order the files by their number of tests). xdist hands each worker two modules at the start: the two
#: vLLM ones (which mostly wait on a vLLM process) go to one worker, one after the other, beside the model-bound ones
#: on the other, rather than both vLLM starts at once with both workers waiting
FIRST = ("test_api_backend.py", "test_listwise.py", "test_vllm_backend.py", "test_precision.py", "test_browser.py",
         "test_scale_ray.py", "test_one_computation.py", "test_app_pages.py", "test_hardening_bounds.py",
         "test_check_policy.py", "test_monitor_page.py", "test_audit_report.py", "test_design.py", "test_packaging.py",
         "test_hardening.py", "test_runs.py", "test_backend.py", "test_tasks_cli.py", "test_report_page1.py",
         "test_store.py", "test_labels.py", "test_metrics_uncertainty.py", "test_verdict_calibration.py",
         "test_bad_inputs.py", "test_listwise_backends.py", "test_recorded_import.py")


def _wait_for_the_script(runner, timeout: float = 3) -> None:
    """Streamlit AppTest's wait for a script run (``require_widgets_deltas``), polling every 10 ms instead of every
    1 ms: its check walks every event of the run, and the poll, run a thousand times a second, took the interpreter
    from the script it waits for (18 % of a Monitor page test's CPU). Same end and same timeout error."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.01)
        if runner.script_stopped():
            return
    runner.request_stop()
    runner.join()
    raise RuntimeError(f"AppTest script run timed out after {timeout}(s)")


local_script_runner.require_widgets_deltas = _wait_for_the_script
# Streamlit scans every installed distribution for component manifests at each new AppTest (≈ 0.3 s; ≈ 20 CPU s of a
# whole run): once per process, the packages installed do not change during a run
manifest_scanner.scan_component_manifests = functools.cache(manifest_scanner.scan_component_manifests)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The modules of :data:`FIRST` first, in that order; every other module after them, in collection order."""
    rank = {name: i for i, name in enumerate(FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(FIRST)))


@pytest.fixture(scope="session")
def smollm_ref() -> ModelRef:
    return resolve("smollm2-135m")


@pytest.fixture(scope="session")
def smollm(smollm_ref: ModelRef) -> CausalLM:
    """The bundled model, loaded once per session: the very object ``python -m audit score --model smollm2-135m``
    gets when the tests run it in this process (:func:`audit.backend.spec.load_backend` keeps it)."""
    backend = load_backend(BackendSpec(smollm_ref))
    assert isinstance(backend, CausalLM)
    return backend


@pytest.fixture
def resume_task() -> ResumeTask:
    return get_task("resume", "software_engineer")


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "results.db"
