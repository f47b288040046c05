"""What an experiment varies: request mixes, the target's store strategies, sweep modes (step loads:
steps.py).

Named once here: the albums scenario builds its cycles under these mix names, the plugin validates
--albums-mix against them, the sweep plans over them, the CLI's help lists them.
"""

from __future__ import annotations

DEFAULT_MIX = "default"
READ_HEAVY = "read-heavy"
POST_HEAVY = "post-heavy"
MIXES: dict[str, str] = {DEFAULT_MIX: "3:1", READ_HEAVY: "9:1", POST_HEAVY: "1:3"}
"""Request mixes of the bundled albums scenario -> their GET:POST ratio (the cycles live in
locustfiles/albums.py). The store strategies differ most between a write-heavy and a read-heavy load."""

STORES = ("mutex", "rwmutex", "syncmap", "sharded")
"""The target's shared-state strategies (ALBUMS_STORE); target/store.go implements them."""

STRONG, WEAK = "strong", "weak"
SWEEP_MODES = (STRONG, WEAK)
"""strong: total users fixed as workers grow; weak: users per worker fixed, so the total grows."""
