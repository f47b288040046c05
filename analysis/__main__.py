"""`python -m analysis ...` = `python -m swarmbench.analysis ...` (the name the README and make use)."""

from swarmbench.analysis.commands import main

raise SystemExit(main())
