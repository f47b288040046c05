"""`python -m swarmbench.compare`: what `python -m swarmbench compare` runs (in the venv)."""

import sys

from swarmbench.compare.commands import main

sys.exit(main())
