"""``python -m audit``: the headless command line."""
import signal

from audit.cli import main

if __name__ == "__main__":  # not when a spawned worker (vLLM's engine core) re-imports the main module
    if hasattr(signal, "SIGPIPE"):  # `... | head` ends quietly, like any Unix tool (never in-process callers)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    raise SystemExit(main())
