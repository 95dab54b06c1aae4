"""The bundled model served on 127.0.0.1 for the API backend's tests, by a real vLLM (`vllm serve`, from the vLLM
virtualenv that `make vllm-env` builds) or by the project's own small OpenAI-protocol server (tests/openai_server.py,
the transformers backend behind HTTP: it also runs where vLLM is not installed). The built-in server runs in a thread
of the test process over the session's loaded model, unless a test needs it as a process of its own (to kill it)."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from audit.backend import resolve
from audit.backend.loading import converted_dir
from tests.helpers import serving_in_thread

ROOT = Path(__file__).resolve().parent.parent
NAME = "smollm2-135m"
VLLM_PYTHON = Path(os.environ.get("AUDIT_VLLM_PYTHON", ROOT / ".venv-vllm" / "bin" / "python"))
needs_vllm = pytest.mark.skipif(not VLLM_PYTHON.exists(), reason=f"needs the vLLM virtualenv {VLLM_PYTHON} "
                                                                 "(make vllm-env)")
#: server kinds as test parameters: vLLM itself, and the built-in server
KINDS = [pytest.param("vllm", marks=needs_vllm), "builtin"]
VLLM_TEST_FLAGS = ("--dtype", "float32", "--enforce-eager")  # full precision; eager starts faster than compiled
#: a 1 GiB KV cache, and vLLM's engine in the process that serves or calls it: one interpreter fewer to start and
#: import vLLM in (a server up in ≈ 43 s instead of ≈ 63 s on 2 idle cores); vLLM's sampler and log-probability ops
#: run eager: torch.compile'd, each engine compiles them with a C++ compiler on its first request on a fresh machine
#: (test_vllm_backend 90.8 → 81.1 CPU s with an empty inductor cache, as on CI)
VLLM_TEST_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_ENABLE_V1_MULTIPROCESSING": "0", "TORCH_COMPILE_DISABLE": "1"}
START_TIMEOUT = 900  # vLLM on 2 busy CPU cores: about 45 s; its first start ever compiles kernels


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def command(kind: str, port: int, *, key_env: str | None, logprobs: bool, extra: tuple[str, ...] = (),
            vllm_flags: tuple[str, ...] = VLLM_TEST_FLAGS) -> list[str]:
    """The server's command line (a vLLM key comes from ``VLLM_API_KEY`` in its environment, never argv)."""
    if kind == "vllm":
        return [str(VLLM_PYTHON), "-m", "vllm.entrypoints.openai.api_server", "--model",
                str(converted_dir(resolve(NAME))), "--served-model-name", NAME, "--host", "127.0.0.1", "--port",
                str(port), *vllm_flags, "--max-model-len", "4096", "--max-logprobs", "20" if logprobs else "0"]
    return [sys.executable, str(ROOT / "tests" / "openai_server.py"), "--port", str(port),
            *(["--key-env", key_env] if key_env else []), *([] if logprobs else ["--no-logprobs"]), *extra]


@contextmanager
def served(kind: str, env: dict[str, str], *, port: int | None = None, key_env: str | None = None,
           logprobs: bool = True, extra: tuple[str, ...] = (), vllm_flags: tuple[str, ...] = VLLM_TEST_FLAGS,
           process: bool = False) -> Iterator[tuple[str, subprocess.Popen | None]]:
    """A running server of the bundled model: yields (base URL, process) and kills it (with its engine processes)
    on exit. ``key_env`` names the variable of ``env`` holding the key the server demands; ``vllm_flags``: vLLM's
    precision and compilation flags. The built-in server runs in a thread of this process (process None) unless
    ``process``."""
    if kind == "builtin" and not process:
        with served_here(port=port or 0, key=env[key_env] if key_env else None, logprobs=logprobs,
                         extra=extra) as url:
            yield url, None
        return
    port = port or free_port()
    server_env = {**env, **VLLM_TEST_ENV, "VLLM_API_KEY": env[key_env] if key_env else ""}
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command(kind, port, key_env=key_env, logprobs=logprobs, extra=extra,
                                           vllm_flags=vllm_flags), cwd=ROOT,
                                   env=server_env,
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        url = f"http://127.0.0.1:{port}/v1"
        try:
            wait_until_up(url, process, log, env[key_env] if key_env else None)
            yield url, process
        finally:
            stop(process)


def wait_until_up(url: str, process: subprocess.Popen, log, key: str | None) -> None:
    """Poll ``GET /models`` until the server answers; fail with its log's tail if it dies or never answers."""
    request = urllib.request.Request(url + "/models", headers={"Authorization": f"Bearer {key}"} if key else {})
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(request, timeout=5):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.5)
    stop(process)
    log.seek(0)
    pytest.fail(f"server {' '.join(process.args[:4])}… did not come up:\n{log.read().decode()[-3000:]}")


def stop(process: subprocess.Popen) -> None:
    """Kill the server and every process it started (vLLM's engine core and workers)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:  # the group is gone already
        pass
    process.wait()


@contextmanager
def served_here(*, port: int = 0, key: str | None = None, logprobs: bool = True, extra: tuple[str, ...] = (),
                die_after: int | None = None) -> Iterator[str]:
    """tests/openai_server.py in a thread of this process over the bundled model as loaded for the session (no
    second interpreter importing torch and loading it again); yields the base URL, stops on exit. ``extra``: the
    script's misbehaviour flags (``--logprob VALUE``); ``die_after``: completions answered before it dies."""
    import argparse

    from audit.backend import CausalLM
    from audit.backend.spec import BackendSpec, load_backend
    from openai_server import make_server

    parser = argparse.ArgumentParser()
    parser.add_argument("--logprob")
    flags = parser.parse_args(list(extra))
    loaded = load_backend(BackendSpec(resolve(NAME)))  # the session's model (tests/conftest.py's ``smollm``)
    lm = CausalLM(loaded.ref, loaded.model, loaded.tokenizer, batch_size=1)  # as the script loads it
    with serving_in_thread(make_server(port, key, logprobs, flags.logprob, lm, die_after=die_after)) as url:
        yield url
