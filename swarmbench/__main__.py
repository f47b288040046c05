"""`python -m swarmbench ...`: the command line (swarmbench/cli.py)."""

from swarmbench.cli import main

raise SystemExit(main())
