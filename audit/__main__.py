"""``python -m audit``: the headless command line."""
from audit.cli import main

raise SystemExit(main())
