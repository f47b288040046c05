"""`python -m swarmbench ...`: the host CLI (swarmbench.runner.cli)."""

import sys

from swarmbench.runner.cli import main

sys.exit(main())
