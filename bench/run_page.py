"""Run page latency: click "Run" to the first stored result, for 8 uploaded candidates, on a cold model (first run of
the process: the model is loaded) and on a warm one (the next run, new candidates: the loaded model is kept across
reruns). Streamlit AppTest on a fresh store, the bundled offline model, one run each; the cold figure is also split
into the model load (timed alone, in a fresh process beforehand) and the rest.

    .venv/bin/python bench/run_page.py [--quant auto]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from streamlit.testing.v1 import AppTest  # noqa: E402

from audit.store.database import Store  # noqa: E402
from audit.store.tables import score_table  # noqa: E402

LOAD = ("import time, os; os.environ['HF_HUB_OFFLINE'] = '1'; start = time.perf_counter(); "
        "from audit.backend import CausalLM, resolve; CausalLM.load(resolve('smollm2-135m', quant='{quant}')); "
        "print(time.perf_counter() - start)")


def candidates(first: int) -> bytes:
    """8 loan applications (4 per group) numbered from ``first``, so a second run scores new prompts."""
    rows = [f"\"Applicant {first + i} earns {20 + 10 * i},000 a year and has {'no' if i % 2 else 'some'} debt.\","
            f"{'Blue' if i % 2 else 'Green'},{i % 2}" for i in range(8)]
    return ("text,group,qualified\n" + "\n".join(rows) + "\n").encode()


def click_to_result(at: AppTest, store: Path, first: int) -> float:
    """Upload 8 candidates, click Run; seconds until the run's results are in the store."""
    at.file_uploader(key="run_candidates").set_value((f"loans{first}.csv", candidates(first), "text/csv")).run()
    at.text_input(key="spec_reference").set_value("Blue")
    at.text_input(key="spec_name").set_value(f"loans{first}")  # a dataset of its own: its own task name
    at.number_input(key="run_limit").set_value(4).run()  # all 4 of each group
    start = time.perf_counter()
    at.button(key="run_start").click().run()
    seconds = time.perf_counter() - start
    assert not at.exception and not at.error, [e.value for e in at.error] + [c.value for c in at.code]
    with Store(store, create=False) as opened:
        found = len(score_table(opened))
        assert found == first + 8, f"the run stored {found} results, expected {first + 8}"
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quant", default="auto", help="the Run page's quantisation (auto, none, bf16, …)")
    quant = parser.parse_args().quant
    load = float(subprocess.run([sys.executable, "-c", LOAD.format(quant=quant)], cwd=ROOT, check=True,
                                capture_output=True, text=True).stdout.split()[-1])
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "run.db"
        os.environ["AUDIT_DB"] = str(store)
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
        at.run()
        at.switch_page("pages/run_audit.py").run()
        at.selectbox(key="run_quant").set_value(quant).run()
        at.selectbox(key="run_task").set_value("custom").run()
        cold = click_to_result(at, store, 0)
        warm = click_to_result(at, store, 8)
    print(f"Run page, 8 uploaded candidates, --quant {quant}: click to first stored result")
    print(f"  cold (model loaded by the run): {cold:6.2f} s   of which loading the model alone takes {load:.2f} s")
    print(f"  warm (model kept, new prompts): {warm:6.2f} s")


if __name__ == "__main__":
    main()
