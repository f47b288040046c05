"""`python -m analysis report|summary|checks`: the analysis commands of `swarmbench` (swarmbench/cli.py)
under the short name the README and make use."""

from swarmbench.cli import analysis_main

raise SystemExit(analysis_main())
