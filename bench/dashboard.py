"""Dashboard timings on the demo store, from one run (Streamlit AppTest, no browser).

    python bench/dashboard.py [--task resume]

``--task`` picks the task the page shows (default: the one the store opens on, the recorded study in the demo store;
``resume`` is the task of the earlier rounds in bench/README.md).

Prints the cold start of the Allocation gaps page (fresh process: imports, store read, metric table with bootstrap
bands, figures) and the median time of quota-slider reruns: to a k seen before, to a new k, and a naive rerun with
every Streamlit cache cleared (what each move would cost without caching). Targets: cold start < 3 s, rerun < 300 ms.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("AUDIT_DB", str(ROOT / "data" / "demo.db"))

import streamlit as st  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

PAGE = "pages/allocation_gaps.py"
MOVES = (3, 4, 1, 5, 2, 6)


def timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", help="the task shown (default: the one the store opens on)")
    task = parser.parse_args().task
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    if task:
        at.session_state["task"] = task
    at.switch_page(PAGE)
    cpu = time.process_time()
    cold = timed(at.run)
    cold_cpu = time.process_time() - cpu  # CPU seconds of this process: steadier than wall time on a busy machine
    assert not at.exception, at.exception
    slider = lambda k: at.slider(key="k_gaps").set_value(k).run()  # noqa: E731
    first = [timed(lambda k=k: slider(k)) for k in MOVES]
    again = [timed(lambda k=k: slider(k)) for k in MOVES]

    def uncached(k: int) -> None:
        st.cache_data.clear()
        st.cache_resource.clear()
        slider(k)

    naive = [timed(lambda k=k: uncached(k)) for k in MOVES[:3]]
    assert not at.exception, at.exception
    median = lambda times: statistics.median(times) * 1000  # noqa: E731
    print(f"store: {os.environ['AUDIT_DB']}, task {at.sidebar.selectbox(key='task').value}")
    print(f"allocation page cold start (AppTest):   {cold:7.2f} s   target < 3 s")
    print(f"  of which CPU time of this process:    {cold_cpu:7.2f} s")
    print(f"k-slider rerun, k seen before:          {median(again):7.0f} ms  target < 300 ms (median of {len(again)})")
    print(f"k-slider rerun, k not seen before:      {median(first):7.0f} ms  (median of {len(first)})")
    print(f"k-slider rerun, nothing cached (naive): {median(naive):7.0f} ms  (median of {len(naive)})")
    print(f"speed-up of caching (seen / naive):     {median(naive) / median(again):7.1f} x")


if __name__ == "__main__":
    main()
