"""``python -m audit`` and the ``audit`` console script: the headless command line."""
import gc
import signal

from audit.cli import main


def run() -> int:
    """Run the command line as a process of its own (the console script's entry point)."""
    if hasattr(signal, "SIGPIPE"):  # `... | head` ends quietly, like any Unix tool (never in-process callers)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    status = main()
    gc.freeze()  # the process ends now: its last garbage collection would walk every object (≈ 0.2 s) for nothing
    return status


if __name__ == "__main__":  # not when a spawned worker (vLLM's engine core) re-imports the main module
    raise SystemExit(run())
