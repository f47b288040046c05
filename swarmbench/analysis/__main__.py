"""`python -m analysis ...`: see analysis/cli.py."""

from swarmbench.analysis.cli import main

raise SystemExit(main())
