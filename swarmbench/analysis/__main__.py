"""`python -m analysis ...`: see analysis/commands.py."""

from swarmbench.analysis.commands import main

raise SystemExit(main())
