"""Listwise throughput of the 2024 study's protocol: rankings per second for the bundled SmolLM2 on this CPU, by the
likelihood and the generate readings (transformers, in process), and by the generate reading through the API backend
against ``vllm serve`` of the same model (the vLLM virtualenv, ``make vllm-env``). The same rankings (job ``retail``,
seed 0) each time, each run into a fresh store through :func:`audit.run.listwise.run_listwise`, timed with
``time.perf_counter``; the model is loaded (and vLLM started) before the clock starts.

    HF_HUB_OFFLINE=1 python bench/listwise.py [--rankings 3] [--no-vllm]
"""
from __future__ import annotations

import argparse
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from anywhere, no PYTHONPATH

import torch  # noqa: E402

from audit.backend import resolve  # noqa: E402
from audit.backend.loading import converted_dir  # noqa: E402
from audit.backend.spec import BackendSpec, ModelOptions, spec_for  # noqa: E402
from audit.run.listwise import ListwiseRun, run_listwise  # noqa: E402
from audit.store.database import Store  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
MODEL = "smollm2-135m"


def timed(label: str, spec: BackendSpec, reading: str, rankings: int, load: Callable[[], Any]) -> None:
    """Score ``rankings`` rankings into a fresh store and print rankings per second with the load average, and the
    CPU seconds of this process a ranking (the work in process, whatever the load; an API run's is the client's)."""
    before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as folder, Store(Path(folder) / "bench.db") as store:
        started, cpu = time.perf_counter(), time.process_time()
        outcome = run_listwise(store, ListwiseRun(spec.ref, reading), "retail", rankings, load)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    assert outcome.summary.scored == rankings
    print(f"{label:<34} {reading:<10} {rankings} rankings in {seconds:6.1f} s: {rankings / seconds:.3f} rankings/s "
          f"({seconds / rankings:.1f} s and {cpu / rankings:.1f} CPU s a ranking; load average {before:.1f} -> "
          f"{os.getloadavg()[0]:.1f})", flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_vllm(port: int) -> subprocess.Popen:
    """``vllm serve`` of the bundled model on 127.0.0.1 (full precision, eager), ready when this returns. A study
    prompt is prefilled in one chunk: vLLM's CPU runner fails on seeded requests whose prefill is chunked."""
    command = [str(VLLM_PYTHON), "-m", "vllm.entrypoints.openai.api_server", "--model", str(converted_dir(resolve(MODEL))),
               "--served-model-name", MODEL, "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32",
               "--enforce-eager", "--max-model-len", "4096", "--max-num-batched-tokens", "4096"]  # one prefill chunk
    server = subprocess.Popen(command, env={**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1"}, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"vllm serve exited with code {server.returncode}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=5).close()
            return server
        except OSError:
            time.sleep(2)
    server.kill()
    raise SystemExit("vllm serve did not start in 900 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rankings", type=int, default=3, help="rankings per reading (default 3)")
    parser.add_argument("--no-vllm", action="store_true", help="skip the API backend against vllm serve")
    args = parser.parse_args()
    print(f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPU cores, torch {torch.__version__} with {torch.get_num_threads()} threads")
    local = spec_for(MODEL)
    print(f"{MODEL}: {local.ref.device}, {local.ref.dtype}"
          + (f" ({torch.cuda.get_device_name()})" if local.ref.device == "cuda" else ""))
    backend = local.load()
    for reading in ("likelihood", "generate"):
        timed("transformers (in process)", local, reading, args.rankings, lambda: backend)
    if args.no_vllm or not VLLM_PYTHON.exists():
        print(f"API backend against vllm serve: skipped ({VLLM_PYTHON} absent or --no-vllm)")
        return
    port = free_port()
    server = serve_vllm(port)
    try:
        api = spec_for(f"openai:{MODEL}", ModelOptions(base_url=f"http://127.0.0.1:{port}/v1"))
        timed("openai API -> vllm serve (float32)", api, "generate", args.rankings, api.load)
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()
