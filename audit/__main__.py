"""``python -m audit``: the headless command line."""
import gc
import signal

from audit.cli import main

if __name__ == "__main__":  # not when a spawned worker (vLLM's engine core) re-imports the main module
    if hasattr(signal, "SIGPIPE"):  # `... | head` ends quietly, like any Unix tool (never in-process callers)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    status = main()
    gc.freeze()  # the process ends now: its last garbage collection would walk every object (≈ 0.2 s) for nothing
    raise SystemExit(status)
