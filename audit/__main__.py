"""``python -m audit``: the headless command line."""
from audit.cli import main

if __name__ == "__main__":  # not when a spawned worker (vLLM's engine core) re-imports the main module
    raise SystemExit(main())
