"""`python -m analysis ...`: see analysis/cli.py."""

from .cli import main

raise SystemExit(main())
